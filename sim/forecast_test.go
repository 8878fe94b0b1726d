package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/workload"
)

// With exact durations (the simulator's own model) and no arrivals
// after T, the forecast made at T gives every job waiting then the start
// the run itself gives it, and the end. Random traces (seeded) of 1- to
// 16-GPU jobs on 4x4 GPUs with locality 1.5, FIFO and SRTF, three
// placements, strict order and EASY backfill.
func TestForecastMatchesRun(t *testing.T) {
	startsCompared = 0
	compared := 0
	for seed := uint64(1); seed <= 12; seed++ {
		for _, sched := range []string{"fifo", "srtf"} {
			for _, pl := range []string{"packed-sticky", "pal", "packed-nonsticky"} {
				for _, m := range []backfill.Mode{backfill.None, backfill.EASY} {
					compared += forecastCase(t, seed, sched, pl, m)
				}
			}
		}
	}
	t.Logf("%d waiting jobs compared, %d of them also to the last start", compared, startsCompared)
	if startsCompared < 50 {
		t.Errorf("only %d waiting jobs compared to the last start", startsCompared)
	}
	if compared < 200 {
		t.Errorf("only %d waiting jobs compared", compared)
	}
}

var startsCompared int

func forecastCase(t *testing.T, seed uint64, sched, pl string, m backfill.Mode) int {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	cl, _ := cluster.New(4, 4)
	sizes := []int{1, 2, 2, 4, 8, 16}
	tr := &workload.Trace{Name: "t.csv"}
	at := 0.0
	for i := range 25 {
		at += r.Float64() * 200
		tr.Jobs = append(tr.Jobs, spec(i, sizes[r.IntN(len(sizes))], at, 60+r.Float64()*3000))
	}
	T := 60 * float64(int(at/60)) // the last boundary before the last arrival ...
	T += 60                       // ... and the next: no arrival after T
	mk := func() (policy.Scheduler, policy.Placer) {
		var s policy.Scheduler = schedule.FIFO{}
		if sched == "srtf" {
			s = schedule.SRTF{}
		}
		return s, mustPlacer(t, pl)
	}
	s, base := mk()
	cfg := Config{Cluster: cl, Trace: tr, Scheduler: s, Round: 60, Locality: ConstantLocality(1.5), Seed: seed,
		Scores: tenant.UniformScores(cl)}
	est := cfg
	cfg.Placer = backfill.Wrap(base, m, est.Estimate)
	launches := map[int][]float64{}
	cfg.Observe = func(T float64, order []*workload.Job, alloc [][]int) {
		for i, j := range order {
			if alloc[i] != nil && !j.Running() {
				launches[j.ID] = append(launches[j.ID], T)
			}
		}
	}
	var fc map[int]Outcome
	var waiting []int
	var at0 float64
	cfg.SnapshotAt = T
	cfg.Snapshot = func(T float64, order []*workload.Job) {
		at0 = T
		for _, j := range order {
			if !j.Running() {
				waiting = append(waiting, j.ID)
			}
		}
		s2, b2 := mk()
		f := cfg
		f.Scheduler, f.Placer, f.Observe = s2, backfill.Fork(cfg.Placer, b2), nil
		var err error
		if fc, err = Forward(f, T, order); err != nil {
			t.Fatal(err)
		}
		if sched == "fifo" && pl == "packed-sticky" && m == backfill.None {
			// Nothing moves or preempts a started job: a run that stops
			// at the last start and projects the ends says the same.
			s3, b3 := mk()
			f.Scheduler, f.Placer = s3, backfill.Fork(cfg.Placer, b3)
			w := map[int]bool{}
			for _, id := range waiting {
				w[id] = true
			}
			f.NoRoundStats = seed%2 == 0 // the ends do not hang on the round lines
			st, err := ForwardWatch(f, T, order, Watch{Of: func(j *workload.Job) bool { return w[j.ID] }, Starts: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range waiting {
				if st[id] != fc[id] {
					t.Errorf("seed %d: job %d: forecast to the last start %+v, to the end %+v", seed, id, st[id], fc[id])
				}
			}
			startsCompared += len(waiting)
		}
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	end := map[int]float64{}
	for _, j := range res.Jobs {
		end[j.ID] = j.Completion
	}
	for _, id := range waiting {
		actual := -1.0
		for _, l := range launches[id] {
			if l > at0 {
				actual = l
				break
			}
		}
		if got := fc[id]; got.Start != actual || got.Finish != end[id] {
			t.Errorf("seed %d %s/%s/%s: job %d waiting at %v: forecast start %v end %v, run %v and %v",
				seed, sched, pl, m, id, at0, got.Start, got.Finish, actual, end[id])
		}
	}
	return len(waiting)
}

// A forecast for some jobs, among running ones whose work is not known
// (Iterations +Inf): 1 node x 4 GPUs, FIFO, packed-sticky, rounds of
// 100 s, 1 s per iteration. Worked out by hand: a (2 GPUs, 300 s left)
// and u (2 GPUs, unknown) run; w (2 GPUs, 500 s) waits and starts when a
// ends (300), ending at 800; x (4 GPUs) waits behind it and never starts
// (u never ends): within a 2,000 s horizon it has no start, and the run
// stops there instead of failing. Without x, the run ends once w has
// ended, and v (2 GPUs, unknown, waiting after w) counts once started.
func TestForwardWatch(t *testing.T) {
	inf := math.Inf(1)
	mk := func(id, gpus int, iters float64, held []int) *workload.Job {
		j := workload.NewJob(workload.Spec{ID: id, GPUs: gpus, Submit: float64(id), Iterations: iters, IterTime: 1})
		j.GPUsHeld, j.PM, j.Loc = held, 1, 1
		return j
	}
	run := func(jobs []*workload.Job, horizon float64) (map[int]Outcome, error) {
		cl, _ := cluster.New(1, 4)
		cfg := Config{Cluster: cl, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"), Round: 100,
			Locality: ConstantLocality(1), MaxRounds: 1000}
		return ForwardWatch(cfg, 0, jobs, Watch{Of: func(j *workload.Job) bool { return !j.Running() }, Horizon: horizon})
	}
	a, u := mk(0, 2, 300, []int{0, 1}), mk(1, 2, inf, []int{2, 3})
	out, err := run([]*workload.Job{a, u, mk(2, 2, 500, nil), mk(3, 4, 100, nil)}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if w, x := out[2], out[3]; w != (Outcome{300, 800}) || x != (Outcome{-1, -1}) {
		t.Errorf("w %+v, x %+v; want w {300 800}, x {-1 -1}", w, x)
	}
	out, err = run([]*workload.Job{a, u, mk(2, 2, 500, nil), mk(4, 2, inf, nil)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w, v := out[2], out[4]; w != (Outcome{300, 800}) || v != (Outcome{800, -1}) {
		t.Errorf("w %+v, v %+v; want w {300 800}, v {800 -1}", w, v)
	}
	if _, err := run([]*workload.Job{a, u, mk(3, 4, 100, nil)}, 0); err == nil {
		t.Error("a job that never starts, no horizon: no error")
	}
}

// An assumed arrival can move a forecast: 1 node x 4 GPUs, SRTF, rounds
// of 100 s. a (2 GPUs) runs until 300; w (4 GPUs, 200 s) waits for it.
// Alone, w starts at 300. With x (2 GPUs, 100 s) assumed to arrive at
// 250, SRTF puts x first at 300 and w waits for x's end: 400.
func TestForwardArrivals(t *testing.T) {
	run := func(arr []workload.Spec) Outcome {
		cl, _ := cluster.New(1, 4)
		a := workload.NewJob(workload.Spec{ID: 0, GPUs: 2, Iterations: 300, IterTime: 1})
		a.GPUsHeld, a.PM, a.Loc = []int{0, 1}, 1, 1
		w := workload.NewJob(workload.Spec{ID: 1, GPUs: 4, Iterations: 200, IterTime: 1})
		cfg := Config{Cluster: cl, Scheduler: schedule.SRTF{}, Placer: mustPlacer(t, "packed-sticky"), Round: 100,
			Locality: ConstantLocality(1)}
		out, err := ForwardWatch(cfg, 0, []*workload.Job{a, w}, Watch{Of: func(j *workload.Job) bool { return j.ID == 1 }, Arrivals: arr})
		if err != nil {
			t.Fatal(err)
		}
		return out[1]
	}
	if got := run(nil); got != (Outcome{300, 500}) {
		t.Errorf("alone: w %+v, want {300 500}", got)
	}
	if got := run([]workload.Spec{{ID: 2, GPUs: 2, Submit: 250, Iterations: 100, IterTime: 1}}); got != (Outcome{400, 600}) {
		t.Errorf("with x: w %+v, want {400 600}", got)
	}
}

// SnapshotAlso calls Snapshot again at the first boundary at or after
// each later time, once per boundary: with 60 s rounds, times 100, 130,
// 180 and 185 s give boundaries 120, 180 (130's and 180's: one call)
// and 240 (185's). SnapshotAt 0 is the first round itself.
func TestSnapshotAlso(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{spec(0, 1, 0, 1000)}}
	cfg := Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"), Round: 60,
		Locality: ConstantLocality(1), Scores: tenant.UniformScores(cl)}
	var got []float64
	cfg.SnapshotAlso = []float64{100, 130, 180, 185}
	cfg.Snapshot = func(T float64, _ []*workload.Job) { got = append(got, T) }
	if _, err := Run(cfg); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 120, 180, 240}; !slices.Equal(got, want) {
		t.Errorf("snapshots at %v, want %v", got, want)
	}
}
