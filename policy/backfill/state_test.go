package backfill

import (
	"math"
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
