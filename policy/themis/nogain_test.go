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
// leave GPUs it held to jobs that could not, all together, have taken
// as many of the GPUs it was moved to instead, each at least as fast
// (forced): a move whose old GPUs all go unused, or only to jobs that
// could be so dealt, gains nobody anything. A job planned on its GPUs
// and on others too counts (the kwok trial's 20-GPU gang over five
// nodes, one of them the mover's, which an earlier check let pass). The policy's
// Stats.MovesWithoutGain counts the moves that remain, and the rule keeps
// jobs in this run (KeptWithoutGain > 0), so the check is not empty.
func TestNoMoveWithoutGainOverARun(t *testing.T) {
	for _, tc := range []struct {
		name          string
		opts          workload.ThemisOptions
		machines, per int
		pods          bool
	}{
		{"quick 4x4", workload.ThemisOptions{Apps: 12, Rate: 2, Seed: 42, MaxJobs: 12, SingleShare: 0.1, MaxSeconds: 6 * 3600}, 4, 4, false},
		{"quick 8x8", workload.ThemisOptions{Apps: 12, Rate: 2, Seed: 42, MaxJobs: 12, SingleShare: 0.1, MaxSeconds: 6 * 3600}, 8, 8, false},
		{"quick 8x4 pods", workload.ThemisOptions{Apps: 12, Rate: 2, Seed: 42, MaxJobs: 12, SingleShare: 0.1, MaxSeconds: 6 * 3600}, 8, 4, true},
		{"seed4 4x4 pods", workload.ThemisOptions{Apps: 25, Rate: 6, Seed: 4, MaxJobs: 12, SingleShare: 0.1, Kill: 0.3, MaxSeconds: 6 * 3600}, 4, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) { noMoveWithoutGainOverARun(t, tc.opts, tc.machines, tc.per, tc.pods) })
	}
}

func noMoveWithoutGainOverARun(t *testing.T, opts workload.ThemisOptions, machines, per int, pods bool) {
	jobs, err := workload.GenerateThemisEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	if pods {
		for i := range jobs {
			switch g := jobs[i].GPUs; {
			case g%per == 0:
				jobs[i].PodGPUs = per
			case g%2 == 0:
				jobs[i].PodGPUs = 2
			case g < per:
				jobs[i].PodGPUs = g
			}
		}
	}
	cl, err := cluster.New(machines, per)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := themis.Topology(cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	models := workload.DefaultModels()
	// The auction's GPUs per app (held and won), to hold the answer to:
	// keeping a job and dealing its planned GPUs to others relabels
	// GPUs, it gives no app more or fewer.
	won, wonAt := map[string]int{}, -1.0
	p, err := themis.New(themis.Config{Auction: fairness.DefaultOptions(), Models: models,
		OnAuction: func(in fairness.Input, res *fairness.Result) {
			clear(won)
			for x, a := range in.Apps {
				won[a.Name] = len(res.Apps[x].Final)
			}
			wonAt = in.Now
		}})
	if err != nil {
		t.Fatal(err)
	}
	moves, bad, counted, idled := 0, 0, 0, 0
	_, err = sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "quick", Jobs: jobs, HasApp: true}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
		Observe: func(now float64, order []*workload.Job, alloc [][]int) {
			// A gang kept from idling, or whose pods fit nowhere, changes
			// its app's count on purpose: those rounds are not compared.
			if k := p.Stats().KeptFromIdling; wonAt == now && k == idled && !pods {
				got := map[string]int{}
				for i, j := range order {
					got[themis.AppOf(&j.Spec)] += len(alloc[i])
				}
				for a, n := range won {
					if got[a] != n {
						t.Errorf("t=%g: app %s runs on %d GPUs, the auction gave it %d", now, a, got[a], n)
					}
				}
				counted++
			}
			idled = p.Stats().KeptFromIdling
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
	if counted == 0 && !pods {
		t.Errorf("no auction's GPUs per app compared")
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
// ("": it could): the jobs on the GPUs it left (back) cannot all take,
// in exchange, as many of the GPUs it was moved to (away), keeping the
// rest of their GPUs, none given twice, each running at least as fast
// there (placement factor times GPUs; the run's GPUs are all of one
// speed). Every way of dealing away is tried: a brute force of its own,
// not the policy's search, so that a case the policy misses shows.
func forced(topo *fairness.Topology, models *workload.Models, order []*workload.Job, alloc [][]int, i int) string {
	held, g := order[i].GPUsHeld, alloc[i]
	back := slices.DeleteFunc(slices.Clone(held), func(x int) bool { return slices.Contains(g, x) })
	away := slices.DeleteFunc(slices.Clone(g), func(x int) bool { return slices.Contains(held, x) })
	type taker struct {
		k    int
		keep []int
		need int
		rate float64
		sens fairness.Sensitivity
		pod  int
	}
	var ts []taker
	for k, h := range alloc {
		if k == i || !slices.ContainsFunc(h, func(x int) bool { return slices.Contains(back, x) }) {
			continue
		}
		s := themis.SensitivityOf(models, order[k].Model)
		tk := taker{k: k, sens: s, rate: topo.Placement(h, s) * float64(len(h)), pod: order[k].PodGPUs}
		for _, x := range h {
			if slices.Contains(back, x) {
				tk.need++
			} else {
				tk.keep = append(tk.keep, x)
			}
		}
		ts = append(ts, tk)
	}
	used := make([]bool, len(away))
	var deal func(x int) bool
	deal = func(x int) bool {
		if x == len(ts) {
			return true
		}
		tk := ts[x]
		var pick []int
		var sub func(from int) bool
		sub = func(from int) bool {
			if len(pick) == tk.need {
				set := slices.Clone(tk.keep)
				for _, a := range pick {
					set = append(set, away[a])
				}
				if topo.Placement(set, tk.sens)*float64(len(set)) < tk.rate*(1-1e-12) || tk.pod > 0 && !podsFit(topo, set, tk.pod) {
					return false
				}
				for _, a := range pick {
					used[a] = true
				}
				if deal(x + 1) {
					return true
				}
				for _, a := range pick {
					used[a] = false
				}
				return false
			}
			for a := from; a < len(away); a++ {
				if !used[a] {
					pick = append(pick, a)
					if sub(a + 1) {
						return true
					}
					pick = pick[:len(pick)-1]
				}
			}
			return false
		}
		return sub(0)
	}
	if deal(0) {
		return ""
	}
	var who []string
	for _, tk := range ts {
		who = append(who, fmt.Sprintf("job %d on %v", order[tk.k].ID, alloc[tk.k]))
	}
	return fmt.Sprintf("no way to deal %v to %v", away, who)
}

// podsFit says whether gpus split into whole pods of pod GPUs per
// machine.
func podsFit(topo *fairness.Topology, gpus []int, pod int) bool {
	n := map[int]int{}
	for _, g := range gpus {
		n[topo.MachineOf(g)]++
	}
	for _, c := range n {
		if c%pod != 0 {
			return false
		}
	}
	return true
}

func sameSet(a, b []int) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return fmt.Sprint(x) == fmt.Sprint(y)
}
