package backfill

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
)

func job(id, gpus int, held []int) *workload.Job {
	j := workload.NewJob(workload.Spec{ID: id, GPUs: gpus, Iterations: 100, IterTime: 1, Model: "m", Seconds: true})
	j.GPUsHeld = held
	return j
}

// An estimate that is not a number (a running job's, or a candidate's)
// reads as unknown: the reservation's walk over the ends still ends,
// and the head gets no reservation from that job.
func TestReserveNaNEstimate(t *testing.T) {
	for _, c := range []struct {
		name string
		nan  int // the job whose estimate is NaN
	}{
		{"running job", 0},
		{"candidate", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, _ := cluster.New(1, 4)
			base, _ := place.New("packed-sticky")
			est := func(_ *policy.Env, j *workload.Job, _ []int) float64 {
				if j.ID == c.nan {
					return math.NaN()
				}
				return 100
			}
			p := Unwrap(Wrap(base, EASY, est))
			order := []*workload.Job{job(0, 2, []int{0, 1}), job(1, 4, nil), job(2, 1, nil)}
			done := make(chan [][]int, 1)
			go func() { done <- p.Place(&policy.Env{Cluster: cl}, order) }()
			select {
			case alloc := <-done:
				if alloc[1] != nil {
					t.Errorf("head started: %v", alloc)
				}
				if c.nan == 0 && (!math.IsInf(p.Last.In, 1) || p.Last.GPUs != nil) {
					t.Errorf("reservation %+v, want none (the running job's end is unknown)", p.Last)
				}
				if c.nan == 2 && alloc[2] != nil {
					t.Errorf("candidate with a NaN estimate started on reserved GPUs: %v", alloc)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Place did not return: the reservation's walk loops on a NaN end")
			}
		})
	}
}

// The record of jobs started by backfill forgets a job that has left
// the order (it ended in time, its head still waiting), so that a
// long-lived scheduler's record does not grow with every job it ever
// backfilled.
func TestJumpedForgetsGoneJobs(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	base, _ := place.New("packed-sticky")
	est := func(_ *policy.Env, j *workload.Job, _ []int) float64 {
		if j.ID == 2 {
			return 50
		}
		return 100
	}
	p := Unwrap(Wrap(base, EASY, est))
	env := &policy.Env{Cluster: cl}
	a, head, s := job(0, 2, []int{0, 1}), job(1, 4, nil), job(2, 1, nil)
	alloc := p.Place(env, []*workload.Job{a, head, s})
	if alloc[2] == nil {
		t.Fatalf("job 2 not backfilled: %v", alloc)
	}
	if _, ok := p.jumped[2]; !ok {
		t.Fatal("job 2 not recorded as backfilled")
	}
	// Job 2 ends; the head still waits for job 0.
	p.Place(env, []*workload.Job{a, head})
	if _, ok := p.jumped[2]; ok {
		t.Errorf("job 2 left the order, still recorded as backfilled: %v", p.jumped)
	}
}

// A job Keep keeps is neither suspended for a gang ahead of it (packed-
// sticky frees GPUs from the tail for the head) nor preempted as a
// backfilled job, and the reservation reads its end.
func TestKeepHoldsItsGPUs(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	base, _ := place.New("packed-sticky")
	est := func(_ *policy.Env, j *workload.Job, _ []int) float64 { return 100 }
	p := Unwrap(Wrap(base, EASY, est))
	head, k := job(1, 4, nil), job(2, 2, []int{0, 1})
	p.Keep = func(j *workload.Job) bool { return j == k }
	p.jumped = map[int]int{2: 1} // as if it had been backfilled for the head
	p.promise = map[int]float64{1: -50}
	alloc := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{head, k})
	if alloc[0] != nil || len(alloc[1]) != 2 || alloc[1][0] != 0 || alloc[1][1] != 1 {
		t.Errorf("answer %v: want the head waiting and job 2 on GPUs 0 and 1", alloc)
	}
	if p.Last.JobID != 1 || p.Last.In != 100 || len(p.Last.GPUs) != 4 || len(p.Last.Preempted) != 0 {
		t.Errorf("reservation %+v, want the head in 100 s on 4 GPUs, nothing preempted", p.Last)
	}
}

// Restore gives a fresh placer (a restarted driver) an earlier one's
// record of a job it backfilled: 4 GPUs; job 2 was backfilled on GPUs 0
// and 1 past the 4-GPU head (job 1), promised 50 for when job 0 would
// end; job 0 ended early, and job 2 now says 500 s more (it overran its
// estimate). At 0, job 2 keeps its GPUs (the head waits for its
// promised time, which the reservation then says); at 50 job 2 is
// preempted and the head starts on all 4 GPUs. A fresh placer without
// the record sees job 2 as any job behind the head: the base stops it
// at 0, before the promised time.
func TestRestorePromise(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	env := &policy.Env{Cluster: cl}
	left := 500.0
	est := func(_ *policy.Env, j *workload.Job, _ []int) float64 {
		if j.Running() {
			return left
		}
		return 100
	}
	for _, restore := range []bool{true, false} {
		left = 500
		base, _ := place.New("packed-sticky")
		p := Unwrap(Wrap(base, EASY, est))
		head, s := job(1, 4, nil), job(2, 2, []int{0, 1})
		if restore && !p.Restore(2, 1, 50) {
			t.Fatal("Restore(2, 1, 50) refused")
		}
		p.SetNow(0)
		alloc := p.Place(env, []*workload.Job{head, s})
		if !restore {
			if len(alloc[0]) != 4 || alloc[1] != nil {
				t.Errorf("without the record, at 0: answer %v: want the head started on job 2's GPUs", alloc)
			}
			continue
		}
		if alloc[0] != nil || len(alloc[1]) != 2 || len(p.Last.Preempted) != 0 || p.Last.In != 50 {
			t.Fatalf("at 0: answer %v, reservation %+v: want the head waiting 50 s, job 2 running, nothing preempted", alloc, p.Last)
		}
		p.SetNow(50)
		left = 450
		alloc = p.Place(env, []*workload.Job{head, s})
		if len(alloc[0]) != 4 || alloc[1] != nil || len(p.Last.Preempted) != 1 || p.Last.Preempted[0] != 2 {
			t.Errorf("at 50: answer %v, reservation %+v: want job 2 preempted and the head on all 4 GPUs", alloc, p.Last)
		}
		if head, _, ok := p.Jumped(2); ok {
			t.Errorf("at 50: job 2, preempted for its head, still recorded as backfilled past job %d", head)
		}
	}
}

// Restore keeps the record's invariants: a head's promise is the
// earliest given, a record that cannot be one changes nothing, +Inf
// records the jump without a promise, and the next Place forgets the
// jumps whose head runs or is gone and those of jobs that no longer
// run, with their promises.
func TestRestoreInvariants(t *testing.T) {
	base, _ := place.New("packed-sticky")
	p := Unwrap(Wrap(base, EASY, func(*policy.Env, *workload.Job, []int) float64 { return 100 }))
	for _, r := range []struct {
		job, head int
		at        float64
		ok        bool
	}{
		{3, 1, 80, true}, {2, 1, 50, true}, {4, 1, 70, true},
		{5, 5, 10, false}, {5, 1, math.NaN(), false}, {5, 1, math.Inf(-1), false}, {-1, 1, 10, false}, {5, -1, 10, false},
		{6, 7, math.Inf(1), true},
		{8, 9, 40, true},
		{10, 11, 30, true},
	} {
		if got := p.Restore(r.job, r.head, r.at); got != r.ok {
			t.Errorf("Restore(%d, %d, %v) = %v, want %v", r.job, r.head, r.at, got, r.ok)
		}
	}
	for _, c := range []struct {
		job, head int
		at        float64
	}{{2, 1, 50}, {3, 1, 50}, {4, 1, 50}, {6, 7, math.Inf(1)}, {8, 9, 40}, {10, 11, 30}} {
		if h, P, ok := p.Jumped(c.job); !ok || h != c.head || P != c.at {
			t.Errorf("Jumped(%d) = %d, %v, %v; want %d, %v", c.job, h, P, ok, c.head, c.at)
		}
	}
	if _, _, ok := p.Jumped(5); ok {
		t.Error("a refused record was kept")
	}
	if P := p.promise[5]; P != 0 || len(p.promise) != 3 {
		t.Errorf("promises %v, want those of heads 1, 9 and 11", p.promise)
	}
	// Head 1 and head 11 wait; head 9 runs; head 7 is gone; job 10 no
	// longer runs (it was preempted, and does not fit the 3 free GPUs);
	// jobs 2 and 3 run, job 4 is gone.
	cl, _ := cluster.New(2, 4)
	order := []*workload.Job{job(1, 8, nil), job(9, 1, []int{7}), job(11, 8, nil),
		job(2, 1, []int{0}), job(3, 1, []int{1}), job(6, 1, []int{2}), job(8, 1, []int{3}), job(10, 4, nil)}
	p.Place(&policy.Env{Cluster: cl}, order)
	for _, c := range []struct {
		job  int
		kept bool
	}{{2, true}, {3, true}, {4, false}, {6, false}, {8, false}, {10, false}} {
		if _, _, ok := p.Jumped(c.job); ok != c.kept {
			t.Errorf("after Place, job %d recorded %v, want %v", c.job, ok, c.kept)
		}
	}
	if _, ok := p.promise[9]; ok {
		t.Errorf("promise of head 9, which runs, kept: %v", p.promise)
	}
	if P, ok := p.promise[1]; !ok || P != 50 {
		t.Errorf("head 1's promise %v, %v; want 50", P, ok)
	}
}

// script is a base placer that answers what it is told, whatever the
// cluster: a non-sticky placer's re-plan, written by hand.
type script [][]int

func (s script) Name() string { return "script" }
func (s script) Sticky() bool { return false }
func (s script) Place(_ *policy.Env, order []*workload.Job) [][]int {
	out := make([][]int, len(order))
	copy(out, s)
	return out
}

// A running job behind the waiting head that the base moves (a placer
// that re-plans running jobs, as PAL does) keeps the base's move under
// greedy backfill: only the waiting jobs behind the head wait for
// backfill's say, and a running job goes back to its own GPUs only when
// the base stopped it.
func TestBaseMoveBehindHeadStands(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	est := func(*policy.Env, *workload.Job, []int) float64 { return 100 }
	for _, c := range []struct {
		name string
		base script
		want []int
	}{
		{"moved", script{nil, {3}}, []int{3}},
		{"stopped", script{nil, nil}, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Unwrap(Wrap(c.base, Greedy, est))
			head, r := job(1, 4, nil), job(2, 1, []int{0})
			alloc := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{head, r})
			if alloc[0] != nil || !slices.Equal(alloc[1], c.want) {
				t.Errorf("answer %v: want the head waiting and job 2 on %v", alloc, c.want)
			}
		})
	}
}

// A candidate whose estimate ends exactly when the head's reservation
// starts delays nothing, so it starts on the reserved GPUs (EASY's rule:
// a backfilled job must end by the head's start, not before it).
func TestBackfillEndingAtTheReservation(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	base, _ := place.New("packed-sticky")
	for _, c := range []struct {
		end   float64
		start bool
	}{{99, true}, {100, true}, {101, false}} {
		est := func(_ *policy.Env, j *workload.Job, _ []int) float64 {
			if j.ID == 2 {
				return c.end
			}
			return 100
		}
		p := Unwrap(Wrap(base, EASY, est))
		a, head, s := job(0, 2, []int{0, 1}), job(1, 4, nil), job(2, 2, nil)
		alloc := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{a, head, s})
		if p.Last.JobID != 1 || p.Last.In != 100 {
			t.Fatalf("reservation %+v: want the head in 100 s", p.Last)
		}
		if got := alloc[2] != nil; got != c.start {
			t.Errorf("a job ending in %g s, the head reserved in 100 s: started %v, want %v (answer %v)", c.end, got, c.start, alloc)
		}
	}
}

// The pin keeps a running job the base stopped only when no job ahead
// of it starts this round: here the 4-GPU job first in the order starts
// on the running job's GPUs, the next one waits, and the running job,
// last, is preempted for the first (the order's preemption), not kept
// because the job just before it waits.
func TestPinReadsEveryJobAhead(t *testing.T) {
	cl, _ := cluster.New(1, 4)
	base, _ := place.New("packed-sticky")
	est := func(*policy.Env, *workload.Job, []int) float64 { return 100 }
	p := Unwrap(Wrap(base, EASY, est))
	w1, w2, r := job(1, 4, nil), job(2, 2, nil), job(3, 2, []int{0, 1})
	alloc := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{w1, w2, r})
	if len(alloc[0]) != 4 || alloc[1] != nil || alloc[2] != nil {
		t.Errorf("answer %v: want job 1 on all 4 GPUs, jobs 2 and 3 waiting", alloc)
	}
}
