package fairness

import (
	"fmt"
	"math/rand/v2"

	"github.com/palsched/pal/variability"
)

// RandomOptions shape a synthetic auction for benchmarks and property
// tests.
type RandomOptions struct {
	Apps, Machines, GPUsPerMachine int
	// HeldShare of the GPUs is held on unexpired leases (0..1); the rest
	// is offered.
	HeldShare float64
	// Speeds attaches random PM-scores (bins 1.0/1.05/1.1/1.3).
	Speeds bool
	// Elastic makes every job elastic (1..its GPUs) instead of a gang.
	Elastic bool
	Seed    uint64
}

// RandomInput builds a Themis-like auction: apps of 1–100 gang jobs (10%
// single-job) of 1, 2, 4 or 8 GPUs with the Themis simulator's placement
// factors, arrivals over the last 10 hours, part of the cluster held.
func RandomInput(o RandomOptions) (Input, error) {
	if o.Apps <= 0 || o.Machines <= 0 || o.GPUsPerMachine <= 0 || o.HeldShare < 0 || o.HeldShare > 1 {
		return Input{}, fmt.Errorf("random auction: bad options %+v", o)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x7e3))
	tp, err := UniformTopology(o.Machines, o.GPUsPerMachine, 0)
	if err != nil {
		return Input{}, err
	}
	if o.Speeds {
		bins := []float64{1.0, 1.05, 1.1, 1.3}
		var sf [variability.NumClasses][]float64
		for c := range sf {
			sf[c] = make([]float64, tp.NumGPUs())
			for g := range sf[c] {
				sf[c][g] = bins[rng.IntN(len(bins))]
			}
		}
		if tp, err = tp.WithSpeeds(sf); err != nil {
			return Input{}, err
		}
	}
	now := 36000.0
	factors := []float64{1, 0.98, 0.96, 0.9, 0.8, 0.7}
	in := Input{Topo: tp, Now: now}
	perm := rng.Perm(tp.NumGPUs())
	nHeld := int(o.HeldShare * float64(tp.NumGPUs()))
	free := perm[nHeld:]
	held := perm[:nHeld]
	for i := range o.Apps {
		jobs := 1
		if rng.IntN(10) != 0 {
			jobs = 2 + rng.IntN(99)
		}
		a := &App{Name: fmt.Sprintf("app%d", i), Arrival: now * rng.Float64(), Sens: Sensitivity{Machine: factors[rng.IntN(len(factors))]},
			Class: variability.Class(rng.IntN(variability.NumClasses)), NAvg: 1 + float64(o.Apps)*rng.Float64()}
		for range jobs {
			g := []int{1, 2, 4, 8}[rng.IntN(4)]
			w := float64(g) * 3600 * (0.5 + 4*rng.Float64())
			a.Jobs = append(a.Jobs, Job{Remaining: w * rng.Float64(), MaxGPUs: g, Gang: !o.Elastic})
			a.TotalWork += w
			a.Demand += g
		}
		// Hand out held GPUs to this app's jobs, whole gangs only.
		for j := range a.Jobs {
			if g := a.Jobs[j].MaxGPUs; len(held) >= g && rng.IntN(3) == 0 {
				a.Jobs[j].Held, held = held[:g:g], held[g:]
			}
		}
		in.Apps = append(in.Apps, a)
	}
	in.Offer = append(free, held...)
	return in, nil
}
