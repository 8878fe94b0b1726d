package fairness

import (
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/variability"
)

// Job is one training job of an app, as the app's scheduler sees it.
type Job struct {
	ID int
	// Remaining is the job's remaining work in GPU-seconds at ideal
	// placement (oracle by default; see App.Noise).
	Remaining float64
	// MaxGPUs is the most GPUs the job can use. A Gang job runs on
	// exactly MaxGPUs or not at all; otherwise it is elastic: it starts on
	// MinGPUs (0: one) and scales linearly up to MaxGPUs, one GPU a grant.
	MaxGPUs int
	MinGPUs int
	Gang    bool
	// Held are the GPUs it runs on now, on unexpired leases.
	Held []int
	// Prev are GPUs it ran on until its lease expired just now (they are
	// on offer again). They count in the app's current ρ, which ranks the
	// apps, but not in its bids.
	Prev []int
	// Doomed jobs will be stopped by the app's hyper-parameter optimiser:
	// they get no new GPUs and their work does not count.
	Doomed bool
	// Unplaceable jobs get no new GPUs this auction (no set of the offered
	// GPUs fits them: a driver whose jobs' pods may not span nodes), but
	// their work counts, as a waiting job's does.
	Unplaceable bool
}

// App is the unit of fairness: a group of jobs with one owner.
type App struct {
	Name    string
	Arrival float64 // seconds
	// TotalWork is W, the app's total GPU-seconds at ideal placement.
	TotalWork float64
	// Demand is D_max, the most GPUs the app can use at once.
	Demand int
	Jobs   []Job
	Sens   Sensitivity
	Class  variability.Class
	// NAvg is the time-average number of active apps since the app
	// arrived (floor 1); the driver keeps it.
	NAvg float64
	// IsoTime is Gavel's cumulative isolated time: the work done so far
	// charged at the rate the app would have had on 1/m of the cluster.
	IsoTime float64
	// Noise multiplies the remaining-work estimate (1 or 0: oracle).
	Noise float64
	// Since is when the app last held GPUs (0: its arrival); among apps
	// with equal ρ the one waiting longest ranks first.
	Since float64
	// Critical is the app's longest job's run time at ideal placement
	// (seconds; 0: unknown). No share of the cluster finishes the app
	// sooner, so T_id is at least this long ([D]: the paper's T_id for an
	// app of gangs is not verified).
	Critical float64
}

// Validate checks the fields a user can get wrong.
func (a *App) Validate() error {
	if a.TotalWork <= 0 || math.IsInf(a.TotalWork, 0) || math.IsNaN(a.TotalWork) {
		return fmt.Errorf("app %s: total work must be positive and finite, got %v", a.Name, a.TotalWork)
	}
	if a.Demand < 1 {
		return fmt.Errorf("app %s: demand must be at least 1 GPU, got %d", a.Name, a.Demand)
	}
	if err := a.Sens.Validate(); err != nil {
		return fmt.Errorf("app %s: %v", a.Name, err)
	}
	for i, j := range a.Jobs {
		if j.Remaining < 0 || math.IsInf(j.Remaining, 0) || math.IsNaN(j.Remaining) {
			return fmt.Errorf("app %s job %d: remaining work must be >= 0 and finite, got %v", a.Name, i, j.Remaining)
		}
		if j.MaxGPUs < 1 {
			return fmt.Errorf("app %s job %d: max GPUs must be at least 1, got %d", a.Name, i, j.MaxGPUs)
		}
		if j.MinGPUs < 0 || j.MinGPUs > j.MaxGPUs {
			return fmt.Errorf("app %s job %d: min GPUs must be in 0..%d, got %d", a.Name, i, j.MaxGPUs, j.MinGPUs)
		}
		if len(j.Held) > j.MaxGPUs || (j.Gang && len(j.Held) != 0 && len(j.Held) != j.MaxGPUs) || (len(j.Held) != 0 && len(j.Held) < j.MinGPUs) {
			return fmt.Errorf("app %s job %d: holds %d GPUs, can use %d", a.Name, i, len(j.Held), j.MaxGPUs)
		}
	}
	return nil
}

// Remaining is the app's remaining-work estimate: the sum over surviving
// jobs, times the noise factor.
func (a *App) Remaining() float64 {
	r := 0.0
	for i := range a.Jobs {
		if !a.Jobs[i].Doomed {
			r += a.Jobs[i].Remaining
		}
	}
	if a.Noise > 0 {
		r *= a.Noise
	}
	return r
}

// Held is every GPU the app holds, ascending.
func (a *App) Held() []int {
	var h []int
	for i := range a.Jobs {
		h = append(h, a.Jobs[i].Held...)
	}
	slices.Sort(h)
	return h
}

func (a *App) heldCount() int {
	n := 0
	for i := range a.Jobs {
		n += len(a.Jobs[i].Held)
	}
	return n
}

// Context is the cluster-wide state ρ depends on.
type Context struct {
	Now         float64
	ClusterGPUs int
	ActiveApps  int // m, for Gavel's 1/m share (floor 1)
}

// Metric is the denominator of ρ: the app's finish time on its fair slice.
// Both metrics share the numerator, T_sh = (now − arrival) + R/rate.
type Metric interface {
	Name() string
	Ideal(a *App, c Context) float64
}

// Themis is our [D] reading of the paper's ideal time (fairness/doc.go): T_id = W / min(C/N_avg, D_max).
type Themis struct{}

// Name implements Metric.
func (Themis) Name() string { return "themis" }

// Ideal implements Metric.
func (Themis) Ideal(a *App, c Context) float64 {
	return IdealTime(a.TotalWork, a.Critical, a.Demand, a.NAvg, c.ClusterGPUs)
}

// IdealTime is Themis' T_id: W / min(C/N_avg, D_max), N_avg floored at
// 1, and never below the longest job's own run time.
func IdealTime(work, critical float64, demand int, nAvg float64, clusterGPUs int) float64 {
	share := min(float64(clusterGPUs)/max(nAvg, 1), float64(max(demand, 1)))
	return max(work/share, critical)
}

// Gavel is Gavel's finish-time-fairness denominator (the Gavel paper's finish-time fairness):
// the isolated time already charged for done work plus the remaining work
// at the isolated rate min(C/m, D_max).
type Gavel struct{}

// Name implements Metric.
func (Gavel) Name() string { return "gavel" }

// Ideal implements Metric.
func (Gavel) Ideal(a *App, c Context) float64 {
	return a.IsoTime + a.Remaining()/IsoRate(a, c)
}

// IsoRate is the app's rate on 1/m of the cluster, capped by its demand.
func IsoRate(a *App, c Context) float64 {
	m := max(c.ActiveApps, 1)
	return min(float64(c.ClusterGPUs)/float64(m), float64(a.Demand))
}

// ParseMetric accepts "themis" and "gavel".
func ParseMetric(s string) (Metric, error) {
	switch s {
	case "", "themis":
		return Themis{}, nil
	case "gavel":
		return Gavel{}, nil
	}
	return nil, fmt.Errorf("unknown fairness metric %s (want themis or gavel)", quote.Value(s))
}

// RhoAt is ρ at a given total rate: +Inf when the rate is 0 and work
// remains.
func RhoAt(a *App, c Context, m Metric, rate float64) float64 {
	r := a.Remaining()
	elapsed := max(c.Now-a.Arrival, 0)
	ideal := m.Ideal(a, c)
	if r <= 0 {
		return elapsed / ideal
	}
	if rate <= 0 {
		return math.Inf(1)
	}
	return (elapsed + r/rate) / ideal
}

// NoiseFactor is the app's multiplicative error on remaining work, drawn
// uniformly from [1−p, 1+p] by a stream seeded with (seed, key), so that
// an app's error does not depend on which other apps exist.
func NoiseFactor(p float64, seed uint64, key uint64) float64 {
	if p <= 0 {
		return 1
	}
	x := splitmix(seed ^ splitmix(key+0x9e3779b97f4a7c15))
	u := float64(x>>11) / (1 << 53)
	return 1 - p + 2*p*u
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Rate is the app's total rate, in ideal-GPU units, on the GPUs its
// surviving jobs hold: Σ_j |G_j|·S(G_j)·speed(G_j).
func Rate(t *Topology, a *App) float64 {
	r := 0.0
	for i := range a.Jobs {
		if !a.Jobs[i].Doomed {
			r += t.jobRate(a.Jobs[i].Held, a.Sens, a.Class, true)
		}
	}
	return r
}

// RhoHeld is the app's ρ on the GPUs it holds.
func RhoHeld(t *Topology, a *App, c Context, m Metric) float64 {
	return RhoAt(a, c, m, Rate(t, a))
}

// SingleJob is an app of one elastic job (1..maxGPUs GPUs, linear
// scaling), the shape of the auction file's apps.
func SingleJob(name string, arrival, remaining, total float64, maxGPUs int, s Sensitivity, held []int) *App {
	return &App{
		Name: name, Arrival: arrival, TotalWork: total, Demand: maxGPUs, Sens: s,
		Jobs: []Job{{Remaining: remaining, MaxGPUs: maxGPUs, Held: held}},
	}
}
