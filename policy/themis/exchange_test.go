package themis_test

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// The kwok trial's move without gain, by hand: six 4-GPU nodes (n0 is
// GPUs 0-3, n5 GPUs 20-23), every GPU of one speed, lease 600 s. Apps
// j1 and j2, each one gang of two 2-GPU pods, start at 0 whole on n0 and
// n1. j3, one gang of five 4-GPU pods (20 GPUs), arrives at 30; the 16
// free GPUs do not hold it, so it waits for the lease end. At 600 the
// auction gives j3 twenty GPUs and one of j1 and j2 four: the one kept
// must stay where it runs, and j3 take the other twenty. Before the
// exchange across jobs the plan put j1 on n5 and j3 on n0-n4, and the
// swap served only a job planned wholly on j1's old GPUs, so j1 moved,
// "expected slowdown 1 on the old GPUs, 1 on the new".
func TestMoverKeepsItsNodeFromASpanningGang(t *testing.T) {
	cl, err := cluster.New(6, 4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	j1, j2, j3 := spec(1, 4, 0, 900, "j1"), spec(2, 4, 0, 900, "j2"), spec(3, 20, 30, 900, "j3")
	j1.PodGPUs, j2.PodGPUs, j3.PodGPUs = 2, 2, 4
	got := map[float64]string{}
	_, err = sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: []workload.Spec{j1, j2, j3}}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
		Observe: func(now float64, order []*workload.Job, alloc [][]int) {
			if now != 0 && now != 600 && now != 1200 {
				return
			}
			s := ""
			for i, j := range order {
				s += fmt.Sprintf(" j%d%v", j.ID, alloc[i])
			}
			got[now] = s[1:]
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  float64
		want string
	}{
		{0, "j1[0 1 2 3] j2[4 5 6 7]"},
		// j2 preempted (its turn), j1 kept on n0, j3 on n1-n5.
		{600, "j1[0 1 2 3] j2[] j3[4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23]"},
	} {
		if got[tc.now] != tc.want {
			t.Errorf("t=%g: %s, want %s", tc.now, got[tc.now], tc.want)
		}
	}
	st := p.Stats()
	if st.MovesWithoutGain != 0 || st.KeptWithoutGain == 0 {
		t.Errorf("moves without gain %d, kept %d; want 0 and at least 1", st.MovesWithoutGain, st.KeptWithoutGain)
	}
	if len(st.Violations) > 0 {
		t.Errorf("violations: %v", st.Violations)
	}
}
