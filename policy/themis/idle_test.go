package themis_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// No eviction into idleness. On two 8-GPU machines app A's 16-GPU gang
// (1500 s of work) runs from 0, leased until 600; app B's 1-GPU job
// arrives at 100 and waits. At 600 the auction offers A's sixteen GPUs:
// B, the worst-off (ρ +Inf), is the only bidder (f = 0.8) and wins one
// of them, and the fifteen left fit no gang, A's included. A's eviction
// would leave fifteen GPUs idle to run one: A keeps its GPUs, leased
// again until 1200, and again at 1200 until it finishes at 1500, when B
// starts. When B needs half of a gang's GPUs (2 of a 4-GPU gang's four)
// the eviction puts as many GPUs to use as it idles, and Themis'
// time-sharing stands: B starts at 600 and A waits.
func TestNoEvictionIntoIdleness(t *testing.T) {
	for _, c := range []struct {
		name                string
		machines, per, a, b int
		aAt600, bAt600      string
		bStart              float64
		leaseEnd            float64 // GPU 0's lease after the auction at 600
		leaseApp            string
		kept                int
	}{
		{"16-GPU gang, 1-GPU job", 2, 8, 16, 1, "[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]", "[]", 1500, 1200, "A", 2},
		{"4-GPU gang, 2-GPU job", 1, 4, 4, 2, "[]", "[0 1]", 600, 1200, "B", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := cluster.New(c.machines, c.per)
			if err != nil {
				t.Fatal(err)
			}
			p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions()})
			if err != nil {
				t.Fatal(err)
			}
			jobs := []workload.Spec{spec(0, c.a, 0, 1500, "A"), spec(1, c.b, 100, 3000, "B")}
			var aAt600, bAt600 string
			var leaseApp string
			var leaseEnd float64
			res, err := sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
				Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
				Observe: func(now float64, order []*workload.Job, alloc [][]int) {
					if now != 600 {
						return
					}
					for i, j := range order {
						g := fmt.Sprint(slices.Clone(alloc[i]))
						if alloc[i] == nil {
							g = "[]"
						}
						if j.ID == 0 {
							aAt600 = g
						} else {
							bAt600 = g
						}
					}
					leaseApp, leaseEnd = p.Lease(0, 600)
				}})
			if err != nil {
				t.Fatal(err)
			}
			start := map[int]float64{}
			for _, r := range res.Jobs {
				start[r.ID] = r.FirstStart
			}
			if aAt600 != c.aAt600 || bAt600 != c.bAt600 {
				t.Errorf("t=600: A's gang on %s, B on %s; want A on %s, B on %s", aAt600, bAt600, c.aAt600, c.bAt600)
			}
			if leaseApp != c.leaseApp || leaseEnd != c.leaseEnd {
				t.Errorf("after the auction at 600 GPU 0 is leased to %q until %v, want %q until %v", leaseApp, leaseEnd, c.leaseApp, c.leaseEnd)
			}
			if start[1] != c.bStart {
				t.Errorf("B starts at %v, want %v", start[1], c.bStart)
			}
			st := p.Stats()
			if st.KeptFromIdling != c.kept {
				t.Errorf("kept from idling %d, want %d", st.KeptFromIdling, c.kept)
			}
			if len(st.Violations) > 0 {
				t.Errorf("violations: %v", st.Violations)
			}
		})
	}
}
