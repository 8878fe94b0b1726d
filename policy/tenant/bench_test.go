package tenant

import (
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// BenchmarkPhillyHiveD runs the whole Philly trace with its real VCs
// (82,229 jobs, 11 VCs, 352 nodes of 8 GPUs) under HiveD with Tiresias
// inside every VC (its own tiresias-las order and packed-sticky placer),
// 60 s rounds: the acceptance bound is 60 s on 2 cores.
func BenchmarkPhillyHiveD(b *testing.B) {
	p, err := workload.EmbeddedPhillyVCTrace(8)
	if err != nil {
		b.Fatal(err)
	}
	l, err := NewLayout(PhillyCells(p.VCs))
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Validate(p.Trace, true); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		h, err := NewHiveD(l)
		if err != nil {
			b.Fatal(err)
		}
		mk := func() (policy.Placer, error) {
			p, err := place.New("packed-sticky")
			return place.PodGuard{Placer: p}, err
		}
		h.SetIntraVC(&IntraVC{NewPlacer: mk})
		per, err := NewPerVC(l, func() (policy.Scheduler, error) { return schedule.New("tiresias-las") })
		if err != nil {
			b.Fatal(err)
		}
		pl, _ := mk()
		res, err := sim.Run(sim.Config{Cluster: l.Cluster, Trace: p.Trace, Scheduler: per, Placer: pl, Tenancy: h,
			Round: 60, Locality: sim.ConstantLocality(1)})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Jobs) != len(p.Trace.Jobs) {
			b.Fatalf("%d of %d jobs finished", len(res.Jobs), len(p.Trace.Jobs))
		}
	}
}
