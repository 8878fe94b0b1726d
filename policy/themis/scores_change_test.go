package themis_test

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// scoresAt is a score hook that hands the run new scores at its first
// round boundary at or after T (learnt scores, or a GPU quarantined).
type scoresAt struct {
	T    float64
	sc   *policy.Scores
	done bool
}

func (h *scoresAt) Round(T float64, _ []*workload.Job) (*policy.Scores, bool) {
	if h.done || T < h.T {
		return nil, false
	}
	h.done = true
	return h.sc, false
}

// uniformScores gives every GPU of every class score v, except those in
// slow, which score 2v.
func uniformScores(gpus int, v float64, slow ...int) *policy.Scores {
	sc := &policy.Scores{}
	for c := range variability.NumClasses {
		sc.SF[c] = make([]float64, gpus)
		for g := range sc.SF[c] {
			sc.SF[c][g] = v
		}
		for _, g := range slow {
			sc.SF[c][g] = 2 * v
		}
	}
	return sc
}

// Scores that change during a run reach the bids: on 3 machines x 2 GPUs
// of equal speed, B's 2-GPU job takes machine 0 at 0; at 300 machine 1's
// GPUs turn twice as slow (what a learner or a quarantine hands the
// simulator); A's 2-GPU job arriving at 400 must win machine 2's GPUs, not
// machine 1's, which the speeds of the first round would have given it.
func TestBidsFollowScoresThatChange(t *testing.T) {
	cl, err := cluster.New(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []workload.Spec{spec(0, 2, 0, 5000, "B"), spec(1, 2, 400, 3000, "A")}
	var aGPUs []int
	_, err = sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
		Scores: uniformScores(6, 1), Hook: &scoresAt{T: 300, sc: uniformScores(6, 1, 2, 3)},
		Observe: func(now float64, order []*workload.Job, alloc [][]int) {
			for i, j := range order {
				if j.ID == 1 && aGPUs == nil && alloc[i] != nil {
					aGPUs = alloc[i]
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(aGPUs) != "[4 5]" {
		t.Errorf("A's job won GPUs %v, want [4 5] (machine 1's [2 3] turned slow at 300)", aGPUs)
	}
}
