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

// No move without gain, checked from outside the policy over a whole
// run: the quick reproduction's workload (12 apps of up to 12 jobs, seed
// 42) on 4 machines of 4 GPUs, every GPU at the median speed. Every
// round, a running job the answer puts on as many other GPUs on which
// its placement factor is no higher (as spread as before, or more) must
// leave a GPU it held to a job that could not as well have taken the
// GPUs it was moved to (it also holds others, or runs slower there): a
// move whose old GPUs all go unused, or only to such jobs, gains nobody
// anything. The policy's
// Stats.MovesWithoutGain counts the moves that remain, and the rule keeps
// jobs in this run (KeptWithoutGain > 0), so the check is not empty.
func TestNoMoveWithoutGainOverARun(t *testing.T) {
	jobs, err := workload.GenerateThemisEmbedded(workload.ThemisOptions{Apps: 12, Rate: 2, Seed: 42, MaxJobs: 12, SingleShare: 0.1, MaxSeconds: 6 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := themis.Topology(cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	models := workload.DefaultModels()
	p, err := themis.New(themis.Config{Auction: fairness.DefaultOptions(), Models: models})
	if err != nil {
		t.Fatal(err)
	}
	moves, bad := 0, 0
	_, err = sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "quick", Jobs: jobs, HasApp: true}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
		Observe: func(now float64, order []*workload.Job, alloc [][]int) {
			for i, j := range order {
				g := alloc[i]
				if !j.Running() || g == nil || len(g) != len(j.GPUsHeld) || sameSet(g, j.GPUsHeld) {
					continue
				}
				s := themis.SensitivityOf(models, j.Model)
				if topo.Placement(g, s) > topo.Placement(j.GPUsHeld, s)*(1+1e-12) {
					continue // a gain: a better placement
				}
				moves++
				if why := forced(topo, models, order, alloc, i); why == "" {
					bad++
					if bad <= 5 {
						t.Errorf("t=%g: job %d (app %s) moved from %v to %v (placement %.3g -> %.3g), and no job took the GPUs it left that could not as well have taken those it was moved to",
							now, j.ID, j.App, j.GPUsHeld, g, topo.Placement(j.GPUsHeld, s), topo.Placement(g, s))
					}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if bad > 0 {
		t.Errorf("%d of %d moves without gain could have been undone", bad, moves)
	}
	if st.MovesWithoutGain != moves {
		t.Errorf("Stats.MovesWithoutGain = %d, the run saw %d", st.MovesWithoutGain, moves)
	}
	if st.KeptWithoutGain == 0 {
		t.Errorf("no job kept its GPUs without gain: the run does not exercise the rule")
	}
	if len(st.Violations) > 0 {
		t.Errorf("violations: %v", st.Violations)
	}
	t.Logf("kept %d jobs without gain; %d moves without gain remain (another job planned on their GPUs); %d lease changes", st.KeptWithoutGain, moves, st.LeaseChanges)
}

// forced says why the move of order[i] to alloc[i] could not be undone
// ("": it could): a job on one of the GPUs it left also holds GPUs
// outside them, or would run slower on the GPUs it was moved to (GPU
// for GPU, in order, of those it left and those it took).
func forced(topo *fairness.Topology, models *workload.Models, order []*workload.Job, alloc [][]int, i int) string {
	held, g := order[i].GPUsHeld, alloc[i]
	back := slices.DeleteFunc(slices.Clone(held), func(x int) bool { return slices.Contains(g, x) })
	away := slices.DeleteFunc(slices.Clone(g), func(x int) bool { return slices.Contains(held, x) })
	slices.Sort(back)
	slices.Sort(away)
	for k, h := range alloc {
		if k == i || !slices.ContainsFunc(h, func(x int) bool { return slices.Contains(back, x) }) {
			continue
		}
		var there []int
		for _, x := range h {
			at := slices.Index(back, x)
			if at < 0 {
				return fmt.Sprintf("job %d on %v spans other GPUs", order[k].ID, h)
			}
			there = append(there, away[at])
		}
		s := themis.SensitivityOf(models, order[k].Model)
		if topo.Placement(there, s) < topo.Placement(h, s)*(1-1e-12) {
			return fmt.Sprintf("job %d runs slower on %v than on %v", order[k].ID, there, h)
		}
	}
	return ""
}

func sameSet(a, b []int) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return fmt.Sprint(x) == fmt.Sprint(y)
}
