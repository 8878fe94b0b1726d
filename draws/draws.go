// Package draws makes the seeded draws that a forecast or a backfill
// takes for what it cannot know: how much work a job has left (a
// lognormal factor of mean 1 on what it states) and which jobs arrive
// after now (a Poisson process of copies of the jobs it knows). pal sim's
// forecast, the backfill's noisy estimates and pal-kube forecast all draw
// here, so that one flag means one thing in every driver. It imports no
// driver.
package draws

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/workload"
)

// Horizon is how far a forecast looks, in the jobs' seconds, and how far
// assumed arrivals go.
const Horizon = 30 * 24 * 3600.0

// MaxDraws bounds a forecast's draws, and MaxArrivals the arrivals it
// assumes.
const (
	MaxDraws    = 10000
	MaxArrivals = 100_000
)

// Lognormal is a multiplicative noise of mean 1 and coefficient of
// variation CV: exp(mu + sigma Z) with sigma² = ln(1 + CV²) and
// mu = -sigma²/2. CV 0 is no noise (every factor 1).
type Lognormal struct {
	CV        float64
	mu, sigma float64
}

// NewLognormal checks cv (>= 0, finite).
func NewLognormal(cv float64) (Lognormal, error) {
	if !(cv >= 0) || math.IsInf(cv, 1) {
		return Lognormal{}, fmt.Errorf("--duration-noise %v: want a coefficient of variation >= 0", cv)
	}
	s := math.Sqrt(math.Log1p(cv * cv))
	return Lognormal{CV: cv, mu: -s * s / 2, sigma: s}, nil
}

// Draw is one factor from r.
func (l Lognormal) Draw(r *rand.Rand) float64 { return math.Exp(l.mu + l.sigma*r.NormFloat64()) }

// Factor is key's own factor under seed: the same key and seed, the same
// factor, whatever else is drawn and in whatever order (a job's estimate
// that is off by the same factor every time it is read).
func (l Lognormal) Factor(seed, key uint64) float64 {
	return l.Draw(rand.New(rand.NewPCG(seed, key^0x6e6f697365)))
}

// Perturb is draw d of seed: copies of jobs with every stated remaining
// work (Iterations - Executed, when finite and > 0) scaled by its own
// factor, drawn in the jobs' order. The jobs are not changed; a copy
// shares GPUsHeld with its job.
func Perturb(jobs []*workload.Job, l Lognormal, seed uint64, d int) []*workload.Job {
	r := rand.New(rand.NewPCG(seed, uint64(d)))
	out := make([]*workload.Job, len(jobs))
	for i, j := range jobs {
		c := *j
		if left := c.Iterations - c.Executed; !math.IsInf(c.Iterations, 1) && left > 0 {
			c.Iterations = c.Executed + left*l.Draw(r)
		}
		out[i] = &c
	}
	return out
}

// Spread is a start over draws: the 10th, 50th and 90th percentiles
// (nearest rank), -1 where that many draws see no start.
type Spread struct {
	P10, P50, P90 float64
}

// SpreadOf reads starts (one per draw, -1 or +Inf: none), sorting them.
func SpreadOf(starts []float64) Spread {
	for i, s := range starts {
		if s < 0 {
			starts[i] = math.Inf(1) // never: after every start
		}
	}
	slices.Sort(starts)
	at := func(p float64) float64 {
		if len(starts) == 0 {
			return -1
		}
		v := starts[max(0, int(math.Ceil(p*float64(len(starts))))-1)]
		if math.IsInf(v, 1) {
			return -1
		}
		return v
	}
	return Spread{at(0.1), at(0.5), at(0.9)}
}

// Over runs a forecast k times, draw d on Perturb(jobs, cv, seed, d), and
// spreads each of the starts run returns (the same number every draw:
// one per waiting job, -1 for none).
func Over(jobs []*workload.Job, k int, cv float64, seed uint64, run func(d int, jobs []*workload.Job) ([]float64, error)) ([]Spread, error) {
	if k <= 0 || k > MaxDraws {
		return nil, fmt.Errorf("--forecast-draws %d: want 1 to %d draws", k, MaxDraws)
	}
	l, err := NewLognormal(cv)
	if err != nil {
		return nil, err
	}
	var starts [][]float64
	for d := range k {
		got, err := run(d, Perturb(jobs, l, seed, d))
		if err != nil {
			return nil, fmt.Errorf("draw %d: %v", d, err)
		}
		if starts == nil {
			starts = make([][]float64, len(got))
		}
		if len(got) != len(starts) {
			return nil, fmt.Errorf("draw %d: %d starts, want %d", d, len(got), len(starts))
		}
		for i, s := range got {
			starts[i] = append(starts[i], s)
		}
	}
	out := make([]Spread, len(starts))
	for i, s := range starts {
		out[i] = SpreadOf(s)
	}
	return out, nil
}

// Arrivals are jobs assumed to arrive after from, up to until: a Poisson
// process of perSecond (in the jobs' time), each a copy of one of jobs
// drawn at random with its whole work, untracked (never waited for), ids
// after every job's, at most MaxArrivals. Seeded: the same seed, the
// same arrivals.
func Arrivals(jobs []*workload.Job, perSecond, from, until float64, seed uint64) ([]workload.Spec, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return nil, fmt.Errorf("--assume-arrivals %v: want jobs per hour > 0", perSecond*3600)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	id := 0
	for _, j := range jobs {
		id = max(id, j.ID+1)
	}
	r := rand.New(rand.NewPCG(seed, 0xa441))
	var out []workload.Spec
	for t := from + r.ExpFloat64()/perSecond; t <= until && len(out) < MaxArrivals; t += r.ExpFloat64() / perSecond {
		sp := jobs[r.IntN(len(jobs))].Spec
		sp.ID, sp.Submit, sp.Tracked = id+len(out), t, false
		out = append(out, sp)
	}
	return out, nil
}
