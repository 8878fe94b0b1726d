package themis_test

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// Each app's GPU time is what its jobs held, an elastic job's growth
// included. TestElasticShrinksAtLeaseEnd's run, worked by hand (60 s
// rounds on one 4-GPU machine): elastic A (1..4 GPUs) holds 4 GPUs for
// the 10 rounds to its lease end at 600 s, then 2 for the 7 rounds to
// 1020: 4·600 + 2·420 = 3240 GPU-s (its minimum times its run time
// would say 1·1020). B (a 2-GPU gang) holds 2 GPUs from 600 to 3600:
// 6000 GPU-s. Together they are every GPU-second the run used.
func TestAppHeldTimeElastic(t *testing.T) {
	a := spec(0, 1, 0, 3200, "A")
	a.MaxGPUs = 4
	tr := &workload.Trace{Name: "t", Jobs: []workload.Spec{a, spec(1, 2, 100, 3000, "B")}}
	cl, err := cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: cl, Trace: tr, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1})
	if err != nil {
		t.Fatal(err)
	}
	used := 0.0
	for _, r := range res.Rounds {
		used += float64(r.GPUsInUse) * themis.DefaultRound
	}
	held := map[string]float64{}
	for _, st := range fairness.Measure(tr, res.Jobs, cl.Size()).PerApp {
		held[st.Name] = st.Held
	}
	if held["A"] != 4*600+2*420 || held["B"] != 2*3000 {
		t.Errorf("held A %v B %v GPU-s, want %v and %v", held["A"], held["B"], 4*600+2*420, 2*3000)
	}
	if held["A"]+held["B"] != used {
		t.Errorf("apps held %v GPU-s in all, the run used %v", held["A"]+held["B"], used)
	}
}
