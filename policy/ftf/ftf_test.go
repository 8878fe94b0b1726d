package ftf

import (
	"slices"
	"testing"

	"github.com/palsched/pal/workload"
)

func ids(js []*workload.Job) []int {
	var out []int
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// Three 1-GPU jobs of 100 s on 1 GPU: each isolated share is 1/3, so
// Tiso = 300 s and the optimum gives each x = 1/3 (ρ = 1). After job 0
// ran the first 100 s it has received more than its third, so it goes
// last; the other two, equal, keep id order.
func TestGavelDeficitOrder(t *testing.T) {
	p := New(1)
	var jobs []*workload.Job
	for i := range 3 {
		jobs = append(jobs, workload.NewJob(workload.Spec{ID: i, GPUs: 1, Iterations: 100, IterTime: 1}))
	}
	if got := ids(p.Order(0, slices.Clone(jobs))); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("t=0: order %v", got)
	}
	jobs[0].GPUsHeld = []int{0}
	p.Order(0, slices.Clone(jobs)) // job 0 starts running
	jobs[0].Executed = 100 - 1     // ran (almost) 100 s
	if got := ids(p.Order(100, slices.Clone(jobs))); !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("t=100: order %v, want [1 2 0]", got)
	}
}

// A job whose gang is the whole cluster and one that needs half of it:
// with the cluster shared 1/2 each, the big job's isolated share is 1/2 of
// its gang and the small one's is 1. The min-max solution promises the
// small job all of its time and the big one half, so the small job, further
// behind its promise, runs first.
func TestGavelSolvesMinMax(t *testing.T) {
	p := New(4)
	big := workload.NewJob(workload.Spec{ID: 0, GPUs: 4, Iterations: 100, IterTime: 1})
	small := workload.NewJob(workload.Spec{ID: 1, GPUs: 2, Iterations: 100, IterTime: 1})
	got := ids(p.Order(0, []*workload.Job{small, big}))
	// Tiso: big 100/0.5 = 200, small 100/1 = 100. Need x_big = 100/(200ρ),
	// x_small = 100/(100ρ); 4·x_big + 2·x_small ≤ 4 → 2/ρ + 2/ρ ≤ 4 → ρ = 1,
	// x_big = 0.5, x_small = 1: the small job's deficit (1) beats the big
	// one's (0.5).
	if !slices.Equal(got, []int{1, 0}) {
		t.Errorf("order %v, want [1 0]", got)
	}
}
