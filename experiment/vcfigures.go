package experiment

import (
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/variability"
)

// VCFigures is one VC's outcome in a run under tenancy: what it waited
// and the speed it was given. Under --tenancy private with draws they
// pool every draw's run (each draw runs the same jobs, so a mean over the
// pool is the mean over draws).
type VCFigures struct {
	VC       string  `json:"vc"`
	Jobs     int     `json:"jobs"`        // tracked jobs finished (times draws)
	MeanWait float64 `json:"mean_wait_s"` // JCT minus run time
	MeanJCT  float64 `json:"mean_jct_s"`
	// Speed is the VC's delivered speed per class (A..D): the mean
	// slowdown (1 = a median GPU, higher is slower) of the GPUs its
	// tracked jobs of that class last ran on, one term per GPU a job was
	// given (not weighted by time, which would count slow GPUs twice:
	// jobs stay on them longer); 0 where it ran no job of the class.
	Speed [variability.NumClasses]float64 `json:"speed"`
}

// vcAcc sums the records of VCFigures.
type vcAcc struct {
	order []string
	by    map[string]*vcSums
}

type vcSums struct {
	jobs        int
	wait, jct   float64
	speed, wsum [variability.NumClasses]float64
}

// add counts a run's tracked records; raw gives the GPUs' true values
// in that run's numbering (nil: every GPU a median one, as the simulator
// runs it).
func (a *vcAcc) add(recs []metrics.JobRecord, raw *variability.Table) {
	if a.by == nil {
		a.by = map[string]*vcSums{}
	}
	for i := range recs {
		r := &recs[i]
		if !r.Tracked {
			continue
		}
		s := a.by[r.VC]
		if s == nil {
			s = &vcSums{}
			a.by[r.VC] = s
			a.order = append(a.order, r.VC)
		}
		s.jobs++
		s.wait += r.Wait
		s.jct += r.JCT
		c, err := variability.ParseClass(r.Class)
		if err != nil {
			continue
		}
		for _, g := range r.GPUIDs {
			v := 1.0
			if raw != nil {
				v = raw.Values[c][g]
			}
			s.speed[c] += v
			s.wsum[c]++
		}
	}
}

// figures lists the VCs in the order given (those that ran no tracked
// job left out).
func (a *vcAcc) figures(vcs []string) []VCFigures {
	var out []VCFigures
	for _, vc := range vcs {
		s := a.by[vc]
		if s == nil || s.jobs == 0 {
			continue
		}
		f := VCFigures{VC: vc, Jobs: s.jobs, MeanWait: s.wait / float64(s.jobs), MeanJCT: s.jct / float64(s.jobs)}
		for c := range f.Speed {
			if s.wsum[c] > 0 {
				f.Speed[c] = s.speed[c] / s.wsum[c]
			}
		}
		out = append(out, f)
	}
	return out
}

// clusterSpeed is each class's mean value over the cluster's GPUs.
func clusterSpeed(raw *variability.Table) *[variability.NumClasses]float64 {
	if raw == nil || raw.NumGPUs() == 0 {
		return nil
	}
	var out [variability.NumClasses]float64
	for c := range out {
		for _, v := range raw.Values[c] {
			out[c] += v
		}
		out[c] /= float64(raw.NumGPUs())
	}
	return &out
}

// subTable is the rows of t for the GPUs ids, in that order.
func subTable(t *variability.Table, ids []int) *variability.Table {
	out := &variability.Table{}
	for c := range out.Values {
		out.Values[c] = make([]float64, len(ids))
		for i, g := range ids {
			out.Values[c][i] = t.Values[c][g]
		}
	}
	return out
}

func clusterSpeedIf(on bool, raw *variability.Table) *[variability.NumClasses]float64 {
	if !on {
		return nil
	}
	return clusterSpeed(raw)
}
