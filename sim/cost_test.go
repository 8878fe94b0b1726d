package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// script is a placer that gives each job, in round r, the GPUs
// rounds[r][job id] (a missing id or round: nothing), so a test decides
// every move by hand.
type script struct {
	rounds []map[int][]int
	r      int
}

func (s *script) Name() string { return "script" }
func (s *script) Sticky() bool { return false }
func (s *script) Place(_ *policy.Env, order []*workload.Job) [][]int {
	out := make([][]int, len(order))
	if s.r < len(s.rounds) {
		for i, j := range order {
			out[i] = s.rounds[s.r][j.ID]
		}
	}
	s.r++
	return out
}

func scripted(t *testing.T, cl *cluster.Cluster, jobs []workload.Spec, costs workload.MoveCost, rounds ...map[int][]int) *Result {
	t.Helper()
	res, err := Run(Config{Cluster: cl, Trace: &workload.Trace{Name: "t.csv", Jobs: jobs}, Scheduler: schedule.FIFO{},
		Placer: &script{rounds: rounds}, Round: 100, Locality: ConstantLocality(1), Costs: workload.Costs{Default: costs}, MaxRounds: 50})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Hand-computed: a 2-GPU job of 300 iterations (1 s each, median GPUs,
// 100 s rounds) moves once, after its first round. Free, it finishes at
// T=300. With a 30 s migration cost it makes 100, then 70 (30 s restoring),
// 100, 30: done at T=400, having lost 30 s x 2 GPUs = 60 GPU-s, once.
func TestMigrationCostIsChargedOncePerMove(t *testing.T) {
	cl, _ := cluster.New(2, 2)
	a, b := map[int][]int{0: {0, 1}}, map[int][]int{0: {2, 3}}
	rounds := []map[int][]int{a, b, b, b, b, b}
	jobs := []workload.Spec{spec(0, 2, 0, 300)}
	for _, tc := range []struct {
		cost       float64
		completion float64
		lost       float64
	}{
		{0, 300, 0},
		{30, 400, 60},
		// More than a round: 100 + 0 + 0 + 50 + 100 + 50 iterations,
		// paying 100, 100 and 50 s: done at T=600, 500 GPU-s lost.
		{250, 600, 500},
	} {
		res := scripted(t, cl, jobs, workload.MoveCost{Migration: tc.cost, Preemption: 1e6}, rounds...)
		j := res.Jobs[0]
		if j.Migrations != 1 || j.Preemptions != 0 || j.Completion != tc.completion || j.LostGPUSeconds != tc.lost || res.Summary.LostGPUSeconds != tc.lost {
			t.Errorf("migration cost %v: %d migrations, %d preemptions, completion %v, lost %v (summary %v); want 1, 0, %v, %v",
				tc.cost, j.Migrations, j.Preemptions, j.Completion, j.LostGPUSeconds, res.Summary.LostGPUSeconds, tc.completion, tc.lost)
		}
	}
}

// Hand-computed: a 1-GPU job of 270 iterations runs a round, is suspended
// for a round and restarts on the same GPU. Free, it makes 100, (none),
// 100, 70: done at T=400. The 40 s preemption cost is paid on restart:
// 100, (none), 60, 100, 10: done at T=500, 40 GPU-s lost.
func TestPreemptionCostIsPaidOnRestart(t *testing.T) {
	cl, _ := cluster.New(1, 1)
	on, off := map[int][]int{0: {0}}, map[int][]int{}
	rounds := []map[int][]int{on, off, on, on, on, on}
	jobs := []workload.Spec{spec(0, 1, 0, 270)}
	for _, tc := range []struct {
		cost, completion, lost float64
	}{{0, 400, 0}, {40, 500, 40}} {
		res := scripted(t, cl, jobs, workload.MoveCost{Migration: 1e6, Preemption: tc.cost}, rounds...)
		j := res.Jobs[0]
		if j.Preemptions != 1 || j.Migrations != 0 || j.Completion != tc.completion || j.LostGPUSeconds != tc.lost {
			t.Errorf("preemption cost %v: %d preemptions, %d migrations, completion %v, lost %v; want 1, 0, %v, %v",
				tc.cost, j.Preemptions, j.Migrations, j.Completion, j.LostGPUSeconds, tc.completion, tc.lost)
		}
	}
}

// Two moves before the first is paid add up: a 150 s migration after
// round 1 and another after round 2 leave 300 s of debt, paid over three
// rounds; the job loses exactly 2 x 150 s.
func TestDebtsOfSuccessiveMovesAddUp(t *testing.T) {
	cl, _ := cluster.New(3, 1)
	rounds := []map[int][]int{{0: {0}}, {0: {1}}, {0: {2}}}
	for range 10 {
		rounds = append(rounds, map[int][]int{0: {2}})
	}
	res := scripted(t, cl, []workload.Spec{spec(0, 1, 0, 200)}, workload.MoveCost{Migration: 150}, rounds...)
	j := res.Jobs[0]
	// Progress: 100 (T=100), 0 (paid 100 of 150, then +150: 200 owed), 0
	// (100 owed), 0 (paid), 100 at T=500: done.
	if j.Migrations != 2 || j.LostGPUSeconds != 300 || j.Completion != 500 {
		t.Fatalf("%d migrations, lost %v, completion %v; want 2, 300, 500", j.Migrations, j.LostGPUSeconds, j.Completion)
	}
}

// The model table prices a model on its own; other models keep the
// flags' cost.
func TestPerModelCostWins(t *testing.T) {
	models, err := workload.ParseModels("m.yaml", []byte("models:\n  - name: m\n    iter_time_s: 1\n    class: A\n    migration_cost_s: 70\n  - name: n\n    iter_time_s: 1\n    class: A\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := workload.Costs{Default: workload.MoveCost{Migration: 10, Preemption: 20}, Models: models}
	if got := c.For(&workload.Spec{Model: "m"}); got != (workload.MoveCost{Migration: 70, Preemption: 20}) {
		t.Errorf("m: %+v", got)
	}
	if got := c.For(&workload.Spec{Model: "n"}); got != (workload.MoveCost{Migration: 10, Preemption: 20}) {
		t.Errorf("n: %+v", got)
	}
	if _, err := workload.ParseModels("m.yaml", []byte("models:\n  - name: m\n    iter_time_s: 1\n    class: A\n    preemption_cost_s: -1\n")); err == nil ||
		err.Error() != `m.yaml:2: models[0] (m): field "preemption_cost_s" must be finite seconds >= 0, got -1` {
		t.Errorf("negative cost: %v", err)
	}
}

// On random traces, under every scheduler and every placement that moves
// jobs, each finished job has lost exactly its moves' cost times its
// GPUs, and the run's total is the sum over every job.
func TestLostTimeIsEveryMoveOnceOnRandomTraces(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 7))
	const mc, pc = 45.0, 120.0
	for trial := range 12 {
		nodes, per := 2+rng.IntN(3), 2+rng.IntN(3)
		cl, _ := cluster.New(nodes, per)
		size := cl.Size()
		jobs := randomJobs(rng, size, 20+rng.IntN(20), 300)
		raw, sc := randomTables(rng, size)
		for _, sn := range []string{"fifo", "las", "srtf"} {
			for _, pn := range []string{"pal", "pm-first", "packed-nonsticky", "packed-sticky"} {
				sched, _ := schedule.New(sn)
				res, err := Run(Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: sched, Placer: mustPlacer(t, pn),
					Round: 300, Locality: ConstantLocality(1.5), Raw: raw, Scores: sc, Seed: uint64(trial),
					Costs: workload.Costs{Default: workload.MoveCost{Migration: mc, Preemption: pc}}})
				if err != nil {
					t.Fatal(err)
				}
				sum := 0.0
				for _, j := range res.Jobs {
					want := float64(j.GPUs) * (mc*float64(j.Migrations) + pc*float64(j.Preemptions))
					if math.Abs(j.LostGPUSeconds-want) > 1e-6 {
						t.Fatalf("trial %d %s/%s: job %d lost %v GPU-s for %d migrations and %d preemptions on %d GPUs, want %v",
							trial, sn, pn, j.ID, j.LostGPUSeconds, j.Migrations, j.Preemptions, j.GPUs, want)
					}
					sum += j.LostGPUSeconds
				}
				if math.Abs(res.Summary.LostGPUSeconds-sum) > 1e-6 {
					t.Fatalf("trial %d %s/%s: summary lost %v, jobs %v", trial, sn, pn, res.Summary.LostGPUSeconds, sum)
				}
			}
		}
	}
}

// randomTables draws per-GPU values and binned scores with an L×V order
// for every class.
// randomJobs draws n jobs of 1..size GPUs and 1..3000 iterations, each of
// a random class, arriving up to maxGap seconds apart.
func randomJobs(rng *rand.Rand, size, n, maxGap int) []workload.Spec {
	var jobs []workload.Spec
	tm := 0.0
	for i := range n {
		tm += float64(rng.IntN(maxGap))
		s := spec(i, 1+rng.IntN(size), tm, float64(1+rng.IntN(3000)))
		s.Class = variability.Class(rng.IntN(variability.NumClasses))
		jobs = append(jobs, s)
	}
	return jobs
}

func randomTables(rng *rand.Rand, size int) (*variability.Table, *policy.Scores) {
	raw := &variability.Table{}
	sc := &policy.Scores{}
	bins := []float64{0.95, 1.0, 2.5}
	for c := range raw.Values {
		for range size {
			raw.Values[c] = append(raw.Values[c], 0.9+0.3*rng.Float64())
			sc.SF[c] = append(sc.SF[c], bins[rng.IntN(len(bins))])
		}
		for _, across := range []bool{false, true} {
			for _, v := range bins {
				sc.LV[c] = append(sc.LV[c], policy.LVStep{V: v, Across: across})
			}
		}
	}
	return raw, sc
}
