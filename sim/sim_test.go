package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

func spec(id, gpus int, submit, iters float64) workload.Spec {
	return workload.Spec{ID: id, GPUs: gpus, Submit: submit, Iterations: iters, IterTime: 1, Model: "m", Tracked: true, Source: "t.csv", Line: id + 2}
}

// A hand-computed run on two 1-GPU nodes, round 100 s, locality 2, GPU 1
// 25% slower than GPU 0.
func TestHandComputedRun(t *testing.T) {
	cl, _ := cluster.New(2, 1)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		spec(0, 1, 0, 150),  // GPU 0 at T=0; 100 it/round -> done at T=200
		spec(1, 2, 50, 100), // arrives T=100, waits for job 0; on both GPUs from T=200: 100/(1.25*2)=40 it/round -> done T=500
		spec(2, 1, 100, 30), // arrives T=100 (inclusive), blocked behind job 1 (FIFO head-of-line) until T=500 -> done T=600
	}}
	raw := &variability.Table{}
	for c := range raw.Values {
		raw.Values[c] = []float64{1.0, 1.25}
	}
	res, err := Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"),
		Round: 100, Locality: ConstantLocality(2), Raw: raw})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][3]float64{0: {0, 200, 200}, 1: {200, 500, 450}, 2: {500, 600, 500}} // first start, completion, JCT
	if len(res.Jobs) != len(want) {
		t.Fatalf("%d jobs finished, want %d", len(res.Jobs), len(want))
	}
	for _, j := range res.Jobs {
		w := want[j.ID]
		if j.FirstStart != w[0] || j.Completion != w[1] || j.JCT != w[2] {
			t.Errorf("job %d: start %v completion %v JCT %v, want %v", j.ID, j.FirstStart, j.Completion, j.JCT, w)
		}
	}
	s := res.Summary
	if s.AvgJCT != (200+450+500)/3.0 || s.Makespan != 600 || s.Utilization != 0.75 {
		t.Errorf("summary %+v", s)
	}
	wantUse := []int{1, 1, 2, 2, 2, 1}
	for i, r := range res.Rounds {
		if r.GPUsInUse != wantUse[i] {
			t.Errorf("round %d: %d GPUs in use, want %d", i, r.GPUsInUse, wantUse[i])
		}
	}
}

func mustPlacer(t testing.TB, name string) policy.Placer {
	p, err := place.New(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDemandLargerThanClusterIsAnError(t *testing.T) {
	cl, _ := cluster.New(2, 4)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{spec(0, 1, 0, 1), spec(1, 16, 0, 1)}}
	_, err := Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "pal"), Round: 10, Locality: ConstantLocality(1)})
	if err == nil || err.Error() != `t.csv:3: field "num_gpus": job 1 asks for 16 GPUs but the cluster (2x4) has 8` {
		t.Fatalf("got %v", err)
	}
}

func TestExtraLoadCompetesButIsNotMeasured(t *testing.T) {
	cl, _ := cluster.New(1, 2)
	tr := &workload.Trace{Name: "t", Jobs: []workload.Spec{spec(0, 1, 0, 50), spec(1, 1, 0, 5000)}}
	run := func(extra float64) *Result {
		res, err := Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"),
			Round: 100, Locality: ConstantLocality(1), ExtraLoad: extra, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	none, some := run(0), run(50)
	if none.Summary.Jobs != 2 || some.Summary.Jobs != 2 {
		t.Fatalf("tracked jobs: %d, %d", none.Summary.Jobs, some.Summary.Jobs)
	}
	extras := 0
	for _, j := range some.Jobs {
		if !j.Tracked {
			extras++
			if j.ID < 2 || j.Arrival <= 0 {
				t.Fatalf("extra job %+v", j)
			}
		}
	}
	// FIFO: extras queue behind the trace; here they only use the GPU the
	// trace leaves idle, so tracked JCTs are unchanged.
	if extras == 0 || some.Summary.AvgJCT != none.Summary.AvgJCT {
		t.Fatalf("extras %d, avg %v vs %v", extras, some.Summary.AvgJCT, none.Summary.AvgJCT)
	}
}

// Invariants over many seeded random traces and clusters, for every
// scheduler and placement.
func TestInvariantsOnRandomTraces(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 1))
	for trial := 0; trial < 40; trial++ {
		nodes, per := 1+rng.IntN(5), 1+rng.IntN(6)
		cl, _ := cluster.New(nodes, per)
		size := cl.Size()
		var jobs []workload.Spec
		tm := 0.0
		for i := 0; i < 25+rng.IntN(25); i++ {
			tm += float64(rng.IntN(400))
			s := spec(i, 1+rng.IntN(size), tm, float64(1+rng.IntN(2000)))
			s.Class = variability.Class(rng.IntN(variability.NumClasses))
			jobs = append(jobs, s)
		}
		tr := &workload.Trace{Name: fmt.Sprintf("trial-%d", trial), Jobs: jobs}
		raw := &variability.Table{}
		sc := &policy.Scores{}
		for c := range raw.Values {
			for g := 0; g < size; g++ {
				raw.Values[c] = append(raw.Values[c], 0.9+0.3*rng.Float64())
				sc.SF[c] = append(sc.SF[c], []float64{0.95, 1.0, 2.5}[rng.IntN(3)])
			}
			for _, v := range []float64{0.95, 1.0, 2.5} {
				sc.LV[c] = append(sc.LV[c], policy.LVStep{V: v})
			}
			for _, v := range []float64{0.95, 1.0, 2.5} {
				sc.LV[c] = append(sc.LV[c], policy.LVStep{V: v, Across: true})
			}
		}
		for _, sn := range schedule.Names() {
			for _, pn := range place.Names() {
				sched, _ := schedule.New(sn)
				pl := mustPlacer(t, pn)
				name := fmt.Sprintf("trial %d %s %s %dx%d", trial, sn, pn, nodes, per)
				checkInvariants(t, name, Config{Cluster: cl, Trace: tr, Scheduler: sched, Placer: pl, Round: 300,
					Locality: ConstantLocality(1.5), Raw: raw, Scores: sc, ExtraLoad: 2, Seed: uint64(trial),
					StarvationGuard: 20000, MaxRounds: 100000})
			}
		}
	}
}

func checkInvariants(t *testing.T, name string, cfg Config) {
	t.Helper()
	var gpuSeconds float64
	cfg.Observe = func(T float64, order []*workload.Job, alloc [][]int) {
		held := map[int]int{}
		blocked := false
		for i, j := range order {
			g := alloc[i]
			if g == nil {
				if !j.Running() || !cfg.Placer.Sticky() {
					blocked = true
				}
				continue
			}
			if len(g) != j.GPUs {
				t.Fatalf("%s T=%v: job %d got %d GPUs, demand %d", name, T, j.ID, len(g), j.GPUs)
			}
			for _, x := range g {
				if other, ok := held[x]; ok {
					t.Fatalf("%s T=%v: GPU %d given to jobs %d and %d", name, T, x, other, j.ID)
				}
				held[x] = j.ID
			}
			if cfg.Placer.Sticky() && j.Running() && !slices.Equal(g, j.GPUsHeld) {
				t.Fatalf("%s T=%v: sticky placer moved job %d from %v to %v", name, T, j.ID, j.GPUsHeld, g)
			}
			newStart := !j.Running()
			// FIFO-style frames stop at the first job that does not fit: no
			// later job starts ahead of it. (PM-First/PAL reorder only inside
			// the must-schedule prefix, which always runs whole.)
			if blocked && newStart {
				t.Fatalf("%s T=%v: job %d started behind a blocked job", name, T, j.ID)
			}
			gpuSeconds += float64(len(g)) * cfg.Round
		}
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var run float64
	tracked := 0
	for _, j := range res.Jobs {
		run += j.Run * float64(j.GPUs)
		if j.Tracked {
			tracked++
		}
		if j.Completion < j.Arrival || j.FirstStart < j.Arrival-cfg.Round || j.JCT < cfg.Round {
			t.Fatalf("%s: job %+v", name, j)
		}
	}
	if tracked != len(cfg.Trace.Jobs) {
		t.Fatalf("%s: %d of %d tracked jobs finished", name, tracked, len(cfg.Trace.Jobs))
	}
	// GPU-time conservation: what placement handed out equals what jobs
	// ran, plus what unfinished background jobs ran.
	if run > gpuSeconds+1e-6 {
		t.Fatalf("%s: jobs ran %v GPU-s but only %v were allocated", name, run, gpuSeconds)
	}
}

// A --track window past the trace's ids measures the generated extras, and
// the run waits for them.
func TestTrackWindowCoversExtras(t *testing.T) {
	cl, _ := cluster.New(1, 2)
	tr := &workload.Trace{Name: "t", Jobs: []workload.Spec{spec(0, 1, 0, 50), spec(1, 1, 0, 500)}}
	res, err := Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"),
		Round: 100, Locality: ConstantLocality(1), ExtraLoad: 20, Seed: 5, Track: &[2]int{1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, j := range res.Jobs {
		if j.Tracked {
			ids = append(ids, j.ID)
		}
	}
	if !slices.Equal(ids, []int{1, 2, 3, 4}) || res.Summary.Jobs != 4 {
		t.Fatalf("tracked %v (summary %d jobs), want ids 1..4", ids, res.Summary.Jobs)
	}
}

// A placement model's factor applies to a job on one GPU too (the
// simulator takes a lone GPU's locality as 1 without asking only when
// there is no model): on 1x2, with a model that gives GPU 0 a factor of
// 1 and GPU 1 one of 2, job 0 (GPU 0) runs 100 it/round and job 1 (GPU
// 1) 50, under both loops.
func TestPlacementModelOnOneGPU(t *testing.T) {
	cl, _ := cluster.New(1, 2)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{spec(0, 1, 0, 200), spec(1, 1, 0, 200)}}
	model := func(_ *workload.Spec, g []int) float64 { return float64(1 + g[0]) }
	for _, plain := range []bool{false, true} {
		res, err := Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"),
			Round: 100, Locality: ConstantLocality(1), Placement: model, Plain: plain})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]float64{0: 200, 1: 400} // completion
		for _, j := range res.Jobs {
			if j.Completion != want[j.ID] {
				t.Errorf("plain %v: job %d completes at %v, want %v", plain, j.ID, j.Completion, want[j.ID])
			}
		}
	}
}
