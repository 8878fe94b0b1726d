package fairness

import (
	"cmp"
	"math"
	"slices"
)

// AppRun is what happened to one app in a run.
type AppRun struct {
	Name    string
	Arrival float64 // its first job's arrival
	Finish  float64 // its last job's completion
	Work    float64 // W, GPU-seconds at ideal placement
	Demand  int     // D_max: Σ gang sizes
	Jobs    int
	// Critical is the longest job's run time at ideal placement.
	Critical float64
	// Held is the GPU-seconds its jobs held GPUs (JobRecord.GPUSeconds:
	// what each held, round by round, an elastic job's growth included).
	Held float64
}

// AppStat is one app's finish-time fairness after a run.
type AppStat struct {
	AppRun
	TShared float64 `json:"t_shared_s"` // finish − arrival
	NAvg    float64 `json:"n_avg"`      // time-average active apps over its life
	TIdeal  float64 `json:"t_ideal_s"`  // W / min(C/N_avg, D_max)
	Rho     float64 `json:"rho"`
}

// AppStats computes every app's ρ after a run on clusterGPUs GPUs, with
// T_id as in Themis.Ideal. N_avg is the exact time-average, over the
// app's life, of the number of apps alive (arrived, not finished), itself
// included.
func AppStats(runs []AppRun, clusterGPUs int) []AppStat {
	type ev struct {
		t float64
		d int
	}
	evs := make([]ev, 0, 2*len(runs))
	for _, r := range runs {
		evs = append(evs, ev{r.Arrival, +1}, ev{r.Finish, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(b.d, a.d) // arrivals first at equal times
	})
	// F(t) = ∫_0^t n(s) ds at each distinct event time.
	times := []float64{}
	integ := []float64{}
	count := []int{} // n just after the time
	n, F, last := 0, 0.0, 0.0
	for i, e := range evs {
		F += float64(n) * (e.t - last)
		last = e.t
		n += e.d
		if i+1 < len(evs) && evs[i+1].t == e.t {
			continue
		}
		times = append(times, e.t)
		integ = append(integ, F)
		count = append(count, n)
	}
	at := func(t float64) (float64, int) {
		i, _ := slices.BinarySearch(times, t)
		return integ[i], count[i]
	}
	out := make([]AppStat, len(runs))
	for i, r := range runs {
		s := AppStat{AppRun: r, TShared: r.Finish - r.Arrival}
		fa, na := at(r.Arrival)
		ff, _ := at(r.Finish)
		if s.TShared > 0 {
			s.NAvg = (ff - fa) / s.TShared
		} else {
			s.NAvg = float64(na)
		}
		s.NAvg = max(s.NAvg, 1)
		s.TIdeal = IdealTime(r.Work, r.Critical, r.Demand, s.NAvg, clusterGPUs)
		s.Rho = s.TShared / s.TIdeal
		out[i] = s
	}
	return out
}

// FairSummary is the fairness of a whole run.
type FairSummary struct {
	Apps    int     `json:"apps"`
	MaxRho  float64 `json:"max_rho"`
	MeanRho float64 `json:"mean_rho"`
	// P95Rho is the nearest-rank 95th percentile of the apps' ρ;
	// Over2 counts the apps with ρ > 2.
	P95Rho float64 `json:"p95_rho"`
	Over2  int     `json:"apps_rho_over_2"`
	// Jain is Jain's index over the apps' ρ: (Σρ)² / (n·Σρ²), 1 = all equal.
	Jain float64 `json:"jain"`
}

// Summarize is max ρ, mean ρ and Jain's index.
func Summarize(stats []AppStat) FairSummary {
	s := FairSummary{Apps: len(stats)}
	if len(stats) == 0 {
		return s
	}
	sum, sq := 0.0, 0.0
	for _, a := range stats {
		s.MaxRho = math.Max(s.MaxRho, a.Rho)
		sum += a.Rho
		sq += a.Rho * a.Rho
	}
	s.MeanRho = sum / float64(len(stats))
	rhos := make([]float64, len(stats))
	for i, a := range stats {
		rhos[i] = a.Rho
		if a.Rho > 2 {
			s.Over2++
		}
	}
	slices.Sort(rhos)
	s.P95Rho = rhos[(95*len(rhos)+99)/100-1]
	if sq > 0 {
		s.Jain = sum * sum / (float64(len(stats)) * sq)
	}
	return s
}

// JobRun is one finished job, for the per-job ρ the authors' simulator
// prints.
type JobRun struct {
	Arrival, Finish float64
	// Ideal is its run time alone on its GPUs at ideal placement.
	Ideal float64
	GPUs  int
}

// JobRhos is each job's ρ as the authors' simulator reports it, without
// its accounting slips: (finish − arrival) / (ideal × N_avg), where N_avg
// is the exact time-average over the job's life of max(1, D(t)/C), D(t)
// the GPUs of the jobs arrived and not finished, C the cluster's GPUs
// (contention in GPU demand, not in apps).
func JobRhos(jobs []JobRun, clusterGPUs int) []float64 {
	type ev struct {
		t float64
		d int
	}
	evs := make([]ev, 0, 2*len(jobs))
	for _, j := range jobs {
		evs = append(evs, ev{j.Arrival, j.GPUs}, ev{j.Finish, -j.GPUs})
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	var times, integ []float64
	d, F, last := 0, 0.0, 0.0
	for i, e := range evs {
		F += max(1, float64(d)/float64(clusterGPUs)) * (e.t - last)
		last = e.t
		d += e.d
		if i+1 < len(evs) && evs[i+1].t == e.t {
			continue
		}
		times = append(times, e.t)
		integ = append(integ, F)
	}
	at := func(t float64) float64 {
		i, _ := slices.BinarySearch(times, t)
		return integ[i]
	}
	out := make([]float64, len(jobs))
	for i, j := range jobs {
		life := j.Finish - j.Arrival
		n := 1.0
		if life > 0 {
			n = max(1, (at(j.Finish)-at(j.Arrival))/life)
		}
		if j.Ideal > 0 {
			out[i] = life / (j.Ideal * n)
		}
	}
	return out
}
