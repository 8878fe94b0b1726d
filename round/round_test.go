package round

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/workload"
)

func job(id, gpus int, held []int) *workload.Job {
	j := workload.NewJob(workload.Spec{ID: id, GPUs: gpus})
	j.GPUsHeld = held
	return j
}

// hold builds a 2x2 cluster where each job holds what it says.
func hold(t *testing.T, jobs ...*workload.Job) *cluster.Cluster {
	t.Helper()
	cl, err := cluster.New(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.GPUsHeld != nil {
			if err := cl.Assign(j.ID, j.GPUsHeld); err != nil {
				t.Fatal(err)
			}
		}
	}
	return cl
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		held, next []int
		want       Kind
	}{
		{nil, nil, Wait},
		{nil, []int{1}, Launch},
		{[]int{1}, []int{1}, Keep},
		{[]int{1}, nil, Preempt},
		{[]int{1}, []int{2}, Migrate},
		{[]int{1, 2}, []int{1, 3}, Migrate},
	} {
		if got := Classify(c.held, c.next); got != c.want {
			t.Errorf("Classify(%v, %v) = %v, want %v", c.held, c.next, got, c.want)
		}
	}
}

// A swap of GPUs between two running jobs only works because every
// release happens before any assignment; a launch onto a preempted job's
// GPUs likewise.
func TestApplySwapPreemptLaunch(t *testing.T) {
	a, b := job(1, 1, []int{0}), job(2, 1, []int{1})
	c, d := job(3, 2, []int{2, 3}), job(4, 2, nil)
	e := job(5, 1, nil)
	order := []*workload.Job{d, b, a, c, e}
	alloc := [][]int{{2, 3}, {0}, {1}, nil, nil}
	cl := hold(t, a, b, c)
	var kinds []Kind
	if err := Apply(cl, order, alloc, func(i int, k Kind) {
		if !slices.Equal(order[i].GPUsHeld, map[int][]int{1: {0}, 2: {1}, 3: {2, 3}, 4: nil, 5: nil}[order[i].ID]) {
			t.Errorf("Apply changed job %d's GPUsHeld", order[i].ID)
		}
		kinds = append(kinds, k)
	}); err != nil {
		t.Fatal(err)
	}
	if want := []Kind{Launch, Migrate, Migrate, Preempt, Wait}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for g, want := range []int{2, 1, 4, 4} {
		if cl.Owner(g) != want {
			t.Errorf("GPU %d owned by %d, want %d", g, cl.Owner(g), want)
		}
	}
}

// Stream, fed one line at a time from another goroutine, leaves the
// owner table and the visits exactly as Apply does: job 2 moves onto GPU 1
// before job 1 (later in the order) has left it, so its assignment waits
// for the end; job 1 moves onto a free GPU and takes it at once.
func TestStreamMatchesApply(t *testing.T) {
	build := func() ([]*workload.Job, [][]int) {
		a, b := job(1, 1, []int{1}), job(2, 1, []int{0})
		c, d := job(3, 2, nil), job(4, 1, []int{3})
		return []*workload.Job{b, a, c, d}, [][]int{{1}, {2}, nil, {0}}
	}
	order, alloc := build()
	want := hold(t, order...)
	var wantKinds []Kind
	if err := Apply(want, order, alloc, func(_ int, k Kind) { wantKinds = append(wantKinds, k) }); err != nil {
		t.Fatal(err)
	}
	order, alloc = build()
	cl := hold(t, order...)
	r := NewRelay()
	var a Applier
	streamLikeApply(t, &a, r, cl, order, alloc, 0, want, wantKinds)
	// A GPU given twice still fails, on either job.
	order, _ = build()
	cl = hold(t, order...)
	r.Reset()
	go r.Ready(len(order))
	if err := a.Stream(cl, order, [][]int{{1}, {2}, nil, {2}}, r, func(int, Kind) {}); err == nil || !strings.Contains(err.Error(), "GPU 2 already held") {
		t.Fatalf("err %v, want GPU 2 given twice", err)
	}
}

// TestStreamReadsOnlyFinalLines streams a round of more jobs than apply
// reads ahead in one block (touchBlock) with the placer pausing after
// each line, so that apply sees few lines final while it reads ahead.
// It must read no line the placer has not declared final: under -race,
// reading ahead into lines still being written is a reported race. The
// kinds and the owner table are Apply's either way.
func TestStreamReadsOnlyFinalLines(t *testing.T) {
	const n = touchMin // long enough to read ahead
	build := func() ([]*workload.Job, [][]int, *cluster.Cluster) {
		cl, err := cluster.New(n/4, 4)
		if err != nil {
			t.Fatal(err)
		}
		order := make([]*workload.Job, n)
		alloc := make([][]int, n)
		for i := range order {
			var held []int
			if i%3 != 0 {
				held = []int{i}
				if err := cl.Assign(i, held); err != nil {
					t.Fatal(err)
				}
			}
			order[i] = job(i, 1, held)
			switch i % 4 {
			case 0, 1:
				alloc[i] = []int{i} // launch, keep
			case 2:
				alloc[i] = []int{i + 1} // move to the next job's GPU, which it loses
			}
		}
		return order, alloc, cl
	}
	order, alloc, want := build()
	var wantKinds []Kind
	if err := Apply(want, order, alloc, func(_ int, k Kind) { wantKinds = append(wantKinds, k) }); err != nil {
		t.Fatal(err)
	}
	order, alloc, cl := build()
	var a Applier
	streamLikeApply(t, &a, NewRelay(), cl, order, alloc, 100*time.Microsecond, want, wantKinds)
}

// TestApplierReadsAheadOnlyInLongOrders checks where apply reads ahead:
// an order of touchMin waiting jobs that stay waiting, job i with id i,
// sums their ids (the only nonzero word touch reads of a job that holds
// nothing and gets nothing): 0 + 1 + ... + 1023 = 523,776; one job
// shorter, it reads nothing ahead.
func TestApplierReadsAheadOnlyInLongOrders(t *testing.T) {
	for _, tc := range []struct {
		n, want int
	}{{touchMin, 523776}, {touchMin - 1, 0}} {
		cl, err := cluster.New(1, 4)
		if err != nil {
			t.Fatal(err)
		}
		order := make([]*workload.Job, tc.n)
		for i := range order {
			order[i] = job(i, 1, nil)
		}
		var a Applier
		waits := 0
		if err := a.Apply(cl, order, make([][]int, tc.n), func(_ int, k Kind) {
			if k == Wait {
				waits++
			}
		}); err != nil {
			t.Fatal(err)
		}
		if a.touched != tc.want || waits != tc.n {
			t.Errorf("%d jobs: read ahead %d, %d waits; want %d, %d", tc.n, a.touched, waits, tc.want, tc.n)
		}
	}
}

// streamLikeApply streams alloc into a from another goroutine, one line
// at a time with pause after each, and checks the visits' kinds and the
// owner table against what Apply gave (wantKinds, want).
func streamLikeApply(t *testing.T, a *Applier, r *Relay, cl *cluster.Cluster, order []*workload.Job, alloc [][]int, pause time.Duration, want *cluster.Cluster, wantKinds []Kind) {
	t.Helper()
	lines := make([][]int, len(alloc))
	go func() {
		for i := range alloc {
			lines[i] = alloc[i]
			r.Ready(i + 1)
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}()
	var kinds []Kind
	if err := a.Stream(cl, order, lines, r, func(i int, k Kind) { kinds = append(kinds, k) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("kinds %v, want %v", kinds, wantKinds)
	}
	for g := range cl.Size() {
		if cl.Owner(g) != want.Owner(g) {
			t.Errorf("GPU %d owned by %d, Apply gives %d", g, cl.Owner(g), want.Owner(g))
		}
	}
}

func TestApplyErrors(t *testing.T) {
	a, b := job(1, 1, nil), job(2, 2, nil)
	for _, c := range []struct {
		name  string
		order []*workload.Job
		alloc [][]int
		want  string
	}{
		{"short answer", []*workload.Job{a, b}, [][]int{{0}}, "answered for 1 jobs, 2 were ordered"},
		{"wrong size", []*workload.Job{b}, [][]int{{0}}, "job 2 got 1 GPUs, its demand is 2"},
		{"given twice", []*workload.Job{a, b}, [][]int{{1}, {1, 2}}, "GPU 1 already held by job 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Apply(hold(t), c.order, c.alloc, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestPlanReasons(t *testing.T) {
	a, b, c := job(1, 2, []int{0, 1}), job(2, 2, []int{2, 3}), job(3, 2, nil)
	// c takes a's GPUs, a moves nowhere (preempted), b is kept.
	ds, err := Plan(hold(t, a, b), []*workload.Job{c, b, a}, [][]int{{0, 1}, {2, 3}, nil})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.Kind.String()+" "+d.Reason)
	}
	want := []string{
		"launch launched on GPUs 0,1",
		"preempt preempted at queue position 3: its GPUs 0,1 go to job(s) 3 ordered ahead of it",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	// A job moved onto GPUs that overlap its own is not its own taker: a
	// holds {0,1} and gets {1,2}; GPU 0 goes to no one.
	a = job(1, 2, []int{0, 1})
	ds, err = Plan(hold(t, a), []*workload.Job{a}, [][]int{{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Reason != "migrated from GPUs 0,1 to 1,2: the placer re-planned it without taking its GPUs for another job" {
		t.Fatalf("got %+v, want one migration that names no taker", ds)
	}
}

// Stream returns only once the placer has declared every line final,
// even when a line fails early: the caller may reuse order and alloc
// as soon as it returns. Line 0 gives a 1-GPU job two GPUs; the placer
// has declared only it final, so Stream must still be waiting 50 ms
// later (a Stream that returned early would have done so at once), and
// returns the error once the last line is declared.
func TestStreamWaitsForThePlacerAfterAnError(t *testing.T) {
	order := []*workload.Job{job(1, 1, nil), job(2, 1, nil)}
	cl := hold(t, order...)
	r := NewRelay()
	done := make(chan error, 1)
	var a Applier
	go func() { done <- a.Stream(cl, order, [][]int{{0, 1}, {2}}, r, func(int, Kind) {}) }()
	r.Ready(1)
	select {
	case err := <-done:
		t.Fatalf("Stream returned (%v) before the placer finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	r.Ready(2)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "job 1 got 2 GPUs") {
		t.Fatalf("err %v, want job 1's size error", err)
	}
}

// An elastic job runs on any count from its minimum to its maximum; one
// GPU fewer or one more is the placer's bug, named as such. A rigid gang
// given more than its demand is the same bug.
func TestApplyElasticBounds(t *testing.T) {
	elastic := func() *workload.Job { return workload.NewJob(workload.Spec{ID: 7, GPUs: 2, MaxGPUs: 3}) }
	for _, c := range []struct {
		name  string
		j     *workload.Job
		alloc []int
		want  string // "" for no error
	}{
		{"elastic at its minimum", elastic(), []int{0, 1}, ""},
		{"elastic at its maximum", elastic(), []int{0, 1, 2}, ""},
		{"elastic below its minimum", elastic(), []int{0}, "job 7 got 1 GPUs, it runs on 2..3"},
		{"elastic past its maximum", elastic(), []int{0, 1, 2, 3}, "job 7 got 4 GPUs, it runs on 2..3"},
		{"rigid past its demand", job(8, 2, nil), []int{0, 1, 2}, "job 8 got 3 GPUs, its demand is 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := hold(t)
			err := Apply(cl, []*workload.Job{c.j}, [][]int{c.alloc}, nil)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range c.alloc {
					if cl.Owner(g) != c.j.ID {
						t.Errorf("GPU %d owned by %d, want job %d", g, cl.Owner(g), c.j.ID)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	// Streamed, a job whose count is out of bounds must not take its GPUs
	// early either: the error is the same.
	r := NewRelay()
	go r.Ready(1)
	var a Applier
	if err := a.Stream(hold(t), []*workload.Job{elastic()}, [][]int{{0, 1, 2, 3}}, r, func(int, Kind) {}); err == nil || !strings.Contains(err.Error(), "got 4 GPUs, it runs on 2..3") {
		t.Fatalf("streamed: err %v, want the elastic bound", err)
	}
}

// Rewrite on a 2x2 cluster (GPUs 0-3), worked by hand:
//   - job 1 holds {0,1} and the answer moves it to {2,3}: a driver that
//     cannot migrate stops it (alloc nil, Moved {2,3}) and {0,1} are
//     vacated this round;
//   - job 2 holds {2} and is preempted: {2} is vacated;
//   - job 3 is new and launched onto {0}: vacated by job 1's stop, so it
//     waits (nil);
//   - job 4 is new and launched onto {2}: vacated by job 2's preemption,
//     so it waits;
//   - job 5 is new and launched onto {3}: nobody held it, so it starts;
//   - job 6 is new and gets nothing: it stays waiting.
//
// Planting fallthrough -> continue (a stop that does not vacate) lets job
// 3 start on GPU 0 while job 1's pods may still run there.
func TestEvictionsRewrite(t *testing.T) {
	order := []*workload.Job{
		job(1, 2, []int{0, 1}), job(2, 1, []int{2}), job(3, 1, nil),
		job(4, 1, nil), job(5, 1, nil), job(6, 1, nil),
	}
	alloc := [][]int{{2, 3}, nil, {0}, {2}, {3}, nil}
	var e Evictions
	e.Rewrite(4, order, alloc)
	want := [][]int{nil, nil, nil, nil, {3}, nil}
	for i := range order {
		if !slices.Equal(alloc[i], want[i]) || (alloc[i] == nil) != (want[i] == nil) {
			t.Errorf("job %d: alloc %v, want %v", order[i].ID, alloc[i], want[i])
		}
	}
	wantMoved := [][]int{{2, 3}, nil, nil, nil, nil, nil}
	for i := range order {
		if !slices.Equal(e.Moved[i], wantMoved[i]) || (e.Moved[i] == nil) != (wantMoved[i] == nil) {
			t.Errorf("job %d: Moved %v, want %v", order[i].ID, e.Moved[i], wantMoved[i])
		}
	}
	// The scratch space is reset between rounds: a second round with
	// nothing stopped launches onto the GPUs vacated in the first.
	order2 := []*workload.Job{job(3, 1, nil), job(5, 1, []int{3})}
	alloc2 := [][]int{{0}, {3}}
	e.Rewrite(4, order2, alloc2)
	if !slices.Equal(alloc2[0], []int{0}) || !slices.Equal(alloc2[1], []int{3}) || e.Moved[0] != nil || e.Moved[1] != nil {
		t.Errorf("second round: alloc %v, Moved %v; want [[0] [3]] and no moves", alloc2, e.Moved)
	}
	// A launch waits when any of its GPUs is vacated, not only its first:
	// job 8 stops on GPU 1, job 7 would launch on {0,1}.
	order3 := []*workload.Job{job(7, 2, nil), job(8, 1, []int{1})}
	alloc3 := [][]int{{0, 1}, nil}
	e.Rewrite(4, order3, alloc3)
	if alloc3[0] != nil {
		t.Errorf("third round: job 7 launches on %v beside a stopping job's GPU 1, want it to wait", alloc3[0])
	}
}

// The Applier rebuilds the owner table in one pass. On a 2x2 cluster
// (GPUs 0-3), worked by hand, order [c, a, b, e]:
//   - c is new and gets GPU 2, which b (later in the order) holds now:
//     Launch, and GPU 2 is c's after the round;
//   - a holds {0,1} and gets a fresh list {0,1}: Keep, read off the owner
//     table (no pointer in common);
//   - b holds {2} and gets {3}: Migrate;
//   - e holds nothing and gets nothing: Wait.
//
// No GPU is free afterwards.
func TestApplierRebuild(t *testing.T) {
	a, b := job(1, 2, []int{0, 1}), job(2, 1, []int{2})
	c, e := job(3, 1, nil), job(5, 1, nil)
	order := []*workload.Job{c, a, b, e}
	alloc := [][]int{{2}, {0, 1}, {3}, nil}
	cl := hold(t, order...)
	var ap Applier
	var kinds []Kind
	if err := ap.Apply(cl, order, alloc, func(i int, k Kind) { kinds = append(kinds, k) }); err != nil {
		t.Fatal(err)
	}
	if want := []Kind{Launch, Keep, Migrate, Wait}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for g, want := range []int{1, 1, 3, 2} {
		if cl.Owner(g) != want {
			t.Errorf("GPU %d owned by %d, want %d", g, cl.Owner(g), want)
		}
	}
	if cl.FreeCount() != 0 || cl.FreeOnNode(0) != 0 || cl.FreeOnNode(1) != 0 {
		t.Errorf("free %d (%d, %d), want none", cl.FreeCount(), cl.FreeOnNode(0), cl.FreeOnNode(1))
	}
	// Next round (the jobs updated as a driver does): a keeps {0,1} but
	// the answer lists them out of order, which Classify calls a move;
	// b is preempted, freeing GPU 3 (node 1).
	a.GPUsHeld, b.GPUsHeld, c.GPUsHeld = []int{0, 1}, []int{3}, []int{2}
	kinds = nil
	if err := ap.Apply(cl, []*workload.Job{a, b, c}, [][]int{{1, 0}, nil, c.GPUsHeld}, func(i int, k Kind) { kinds = append(kinds, k) }); err != nil {
		t.Fatal(err)
	}
	if want := []Kind{Migrate, Preempt, Keep}; !slices.Equal(kinds, want) {
		t.Fatalf("second round: kinds %v, want %v", kinds, want)
	}
	if cl.Owner(3) != cluster.Free || cl.FreeCount() != 1 || cl.FreeOnNode(1) != 1 || cl.FreeOnNode(0) != 0 {
		t.Errorf("second round: GPU 3 owner %d, free %d, node 1 free %d; want GPU 3 free", cl.Owner(3), cl.FreeCount(), cl.FreeOnNode(1))
	}
}

// A job that holds GPUs but is not in the order would lose them in the
// rebuilt table: that is an error, and the table is left as it was; so
// is a GPU given twice.
func TestApplierErrors(t *testing.T) {
	a, b := job(1, 1, []int{0}), job(2, 1, []int{1})
	for _, c := range []struct {
		name  string
		order []*workload.Job
		alloc [][]int
		want  string
	}{
		{"holder left out", []*workload.Job{a}, [][]int{{0}}, "the ordered jobs hold 1 GPUs but 2 are taken"},
		{"given twice", []*workload.Job{a, b}, [][]int{{2}, {2}}, "GPU 2 already held by job 1"},
		{"listed twice", []*workload.Job{job(3, 2, nil), a, b}, [][]int{{2, 2}, {0}, {1}}, "GPU 2 listed twice"},
		{"no such GPU", []*workload.Job{a, b}, [][]int{{4}, {1}}, "GPU 4 does not exist"},
		// Job 3's first GPU is free, its second given already: the error
		// names the second, not the first as if listed twice.
		{"second GPU taken", []*workload.Job{a, job(3, 2, nil), b}, [][]int{{2}, {3, 2}, {1}}, "job 3: GPU 2 already held by job 1"},
		{"wrong size", []*workload.Job{a, b}, [][]int{{2, 3}, {1}}, "job 1 got 2 GPUs, its demand is 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := hold(t, a, b)
			var ap Applier
			err := ap.Apply(cl, c.order, c.alloc, func(int, Kind) {})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if cl.Owner(0) != 1 || cl.Owner(1) != 2 || cl.Owner(2) != cluster.Free || cl.FreeCount() != 2 {
				t.Errorf("owner table changed on error: %d %d %d, %d free", cl.Owner(0), cl.Owner(1), cl.Owner(2), cl.FreeCount())
			}
		})
	}
}

// A round that fails part of the way through leaves claims in the table
// being built, and counts them: the same Applier's next round starts
// from an all-free table and a count of none all the same. Job a keeps GPU 0
// (a clean round), then a round gives a GPU 2 and b GPU 2 again (claimed
// for a, refused for b); the next round gives b GPU 2 and a GPU 0 and
// must find GPU 2 free.
func TestApplierAfterAnError(t *testing.T) {
	a, b := job(1, 1, []int{0}), job(2, 1, nil)
	cl := hold(t, a, b)
	var ap Applier
	order := []*workload.Job{a, b}
	if err := ap.Apply(cl, order, [][]int{{0}, nil}, func(int, Kind) {}); err != nil {
		t.Fatal(err)
	}
	if err := ap.Apply(cl, order, [][]int{{2}, {2}}, func(int, Kind) {}); err == nil {
		t.Fatal("GPU 2 given twice: no error")
	}
	if err := ap.Apply(cl, order, [][]int{{0}, {2}}, func(int, Kind) {}); err != nil {
		t.Fatalf("the round after the error: %v", err)
	}
	if cl.Owner(0) != 1 || cl.Owner(2) != 2 || cl.Owner(1) != cluster.Free || cl.FreeCount() != 2 {
		t.Errorf("owners %d %d %d, %d free; want 1 free 2, 2 free", cl.Owner(0), cl.Owner(1), cl.Owner(2), cl.FreeCount())
	}
}

// On random rounds (3x4 GPUs, seed fixed) the Applier, and a loop over
// its Begin, Line and End, give the kinds and the owner table of the
// per-job Apply, round after round.
func TestApplierMatchesApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	cl, _ := cluster.New(3, 4)
	ref, _ := cluster.New(3, 4)
	byLine, _ := cluster.New(3, 4)
	var lp Applier
	jobs := make([]*workload.Job, 8)
	for i := range jobs {
		jobs[i] = job(10+i, 1+rng.IntN(3), nil)
	}
	var ap Applier
	for r := range 300 {
		rng.Shuffle(len(jobs), func(a, b int) { jobs[a], jobs[b] = jobs[b], jobs[a] })
		perm := rng.Perm(cl.Size())
		alloc := make([][]int, len(jobs))
		for i, j := range jobs {
			switch {
			case rng.IntN(4) == 0:
				// nothing
			case j.GPUsHeld != nil && rng.IntN(2) == 0:
				alloc[i] = slices.Clone(j.GPUsHeld) // stays, in a list of its own
			case len(perm) >= j.GPUs:
				alloc[i] = slices.Sorted(slices.Values(perm[:j.GPUs]))
				perm = perm[j.GPUs:]
			}
		}
		// Drop lines that collide with a job that stays, ordered first.
		used := map[int]bool{}
		for i := range alloc {
			if slices.ContainsFunc(alloc[i], func(g int) bool { return used[g] }) {
				alloc[i] = nil
			}
			for _, g := range alloc[i] {
				used[g] = true
			}
		}
		var want, got, lines []Kind
		if err := Apply(ref, jobs, alloc, func(_ int, k Kind) { want = append(want, k) }); err != nil {
			t.Fatalf("round %d: Apply: %v", r, err)
		}
		if err := ap.Apply(cl, jobs, alloc, func(_ int, k Kind) { got = append(got, k) }); err != nil {
			t.Fatalf("round %d: Applier: %v", r, err)
		}
		// A driver's own loop over Begin, Line and End.
		if err := lp.Begin(byLine, len(jobs), len(alloc)); err != nil {
			t.Fatalf("round %d: Begin: %v", r, err)
		}
		for i, j := range jobs {
			k, err := lp.Line(byLine, j, alloc[i])
			if err != nil {
				t.Fatalf("round %d: Line %d: %v", r, i, err)
			}
			lines = append(lines, k)
		}
		if err := lp.End(byLine); err != nil {
			t.Fatalf("round %d: End: %v", r, err)
		}
		if !slices.Equal(got, want) || !slices.Equal(lines, want) {
			t.Fatalf("round %d: kinds %v and by line %v, Apply gives %v", r, got, lines, want)
		}
		for g := range cl.Size() {
			if cl.Owner(g) != ref.Owner(g) || byLine.Owner(g) != ref.Owner(g) {
				t.Fatalf("round %d: GPU %d owned by %d and by line %d, Apply gives %d", r, g, cl.Owner(g), byLine.Owner(g), ref.Owner(g))
			}
		}
		for n := range cl.NumNodes() {
			if cl.FreeOnNode(n) != ref.FreeOnNode(n) || byLine.FreeOnNode(n) != ref.FreeOnNode(n) {
				t.Fatalf("round %d: node %d has %d free and by line %d, Apply gives %d", r, n, cl.FreeOnNode(n), byLine.FreeOnNode(n), ref.FreeOnNode(n))
			}
		}
		// The Applier's count of the free GPUs is its own (End adopts
		// the table with it): the same as Apply's, and the table's.
		free := 0
		for g := range ref.Size() {
			if ref.IsFree(g) {
				free++
			}
		}
		if cl.FreeCount() != free || byLine.FreeCount() != free || ref.FreeCount() != free {
			t.Fatalf("round %d: %d free and by line %d, Apply %d; the table has %d", r, cl.FreeCount(), byLine.FreeCount(), ref.FreeCount(), free)
		}
		for i, j := range jobs {
			j.GPUsHeld = alloc[i]
		}
	}
}

// A driver's own loop over Begin, Line and End, by hand on 2x2: each
// line's kind, the table End installs, and End refusing a round that
// leaves out a job holding GPUs (the table then stays); Begin refuses an
// answer of the wrong length.
func TestApplierLines(t *testing.T) {
	a, b := job(1, 2, []int{0, 1}), job(2, 1, []int{2})
	c, e := job(3, 1, nil), job(5, 1, nil)
	cl := hold(t, a, b)
	var ap Applier
	if err := ap.Begin(cl, 4, 3); err == nil || err.Error() != "round: placer answered for 3 jobs, 4 were ordered" {
		t.Fatalf("Begin(4 jobs, 3 lines): %v", err)
	}
	type line struct {
		j    *workload.Job
		g    []int
		want Kind
	}
	rounds := []struct {
		lines  []line
		owners []int
		free   int
		err    string
	}{
		{[]line{{c, []int{2}, Launch}, {a, a.GPUsHeld, Keep}, {b, []int{3}, Migrate}, {e, nil, Wait}}, []int{1, 1, 3, 2}, 0, ""},
		// The jobs as the driver left them: b on 3, c on 2.
		{[]line{{b, nil, Preempt}, {a, []int{0, 1}, Keep}, {c, []int{2}, Keep}}, []int{1, 1, 3, cluster.Free}, 1, ""},
		{[]line{{e, nil, Wait}, {a, a.GPUsHeld, Keep}}, []int{1, 1, 3, cluster.Free}, 1,
			"round: the ordered jobs hold 2 GPUs but 3 are taken: every job holding GPUs must be in the order"},
	}
	for r, rd := range rounds {
		if err := ap.Begin(cl, len(rd.lines), len(rd.lines)); err != nil {
			t.Fatalf("round %d: Begin: %v", r, err)
		}
		for i, l := range rd.lines {
			k, err := ap.Line(cl, l.j, l.g)
			if err != nil || k != l.want {
				t.Fatalf("round %d, line %d: %v, %v; want %v", r, i, k, err, l.want)
			}
		}
		err := ap.End(cl)
		if got := fmt.Sprint(err); rd.err == "" && err != nil || rd.err != "" && got != rd.err {
			t.Fatalf("round %d: End: %v, want %q", r, err, rd.err)
		}
		for g, want := range rd.owners {
			if cl.Owner(g) != want {
				t.Errorf("round %d: GPU %d owned by %d, want %d", r, g, cl.Owner(g), want)
			}
		}
		if cl.FreeCount() != rd.free {
			t.Errorf("round %d: %d free, want %d", r, cl.FreeCount(), rd.free)
		}
		for _, l := range rd.lines { // as a driver does
			if l.want != Wait {
				l.j.GPUsHeld = l.g
			}
		}
	}
}

// ReadsAhead is Apply's threshold: orders from 1,024 jobs.
func TestReadsAhead(t *testing.T) {
	for _, c := range []struct {
		n    int
		want bool
	}{{0, false}, {69, false}, {1023, false}, {1024, true}, {13000, true}} {
		if got := ReadsAhead(c.n); got != c.want {
			t.Errorf("ReadsAhead(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}

// One Applier serving clusters of different sizes starts each round from
// an all-free table of the cluster's size (Begin clears one of that
// size): a job launched on the larger cluster's last GPUs is no
// conflict, and a smaller cluster's table has no stale entries.
func TestApplierAcrossClusterSizes(t *testing.T) {
	var ap Applier
	for _, nodes := range []int{1, 3, 2} {
		cl, err := cluster.New(nodes, 4)
		if err != nil {
			t.Fatal(err)
		}
		size := cl.Size()
		j := job(nodes, 4, nil)
		last := []int{size - 4, size - 3, size - 2, size - 1}
		if err := ap.Apply(cl, []*workload.Job{j}, [][]int{last}, func(int, Kind) {}); err != nil {
			t.Fatalf("%d GPUs: %v", size, err)
		}
		if cl.FreeCount() != size-4 || cl.Owner(size-1) != j.ID || size > 4 && cl.Owner(0) != cluster.Free {
			t.Fatalf("%d GPUs: free %d, last GPU owned by %d, GPU 0 by %d", size, cl.FreeCount(), cl.Owner(size-1), cl.Owner(0))
		}
	}
}
