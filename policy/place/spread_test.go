package place

import (
	"reflect"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Spread puts each pod on the node with the most free GPUs (ties to the
// lowest id) and never splits a pod: H3's quota baseline.
func TestSpread(t *testing.T) {
	c, err := cluster.New(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	env := &policy.Env{Cluster: c}
	job := func(id, gpus, pod int) *workload.Job {
		return workload.NewJob(workload.Spec{ID: id, GPUs: gpus, PodGPUs: pod, IterTime: 1, Iterations: 1})
	}
	order := []*workload.Job{job(0, 1, 1), job(1, 1, 1), job(2, 1, 1), job(3, 1, 1), job(4, 4, 4)}
	got := (&Spread{}).Place(env, order)
	want := [][]int{{0}, {4}, {1}, {5}, nil}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v (A 2+2, B waits)", got, want)
	}
	// Without pods a job spreads GPU by GPU; with pods of 2 it takes two
	// nodes' pairs.
	got = (&Spread{}).Place(env, []*workload.Job{job(0, 3, 0), job(1, 4, 2)})
	want = [][]int{{0, 1, 4}, {2, 3, 5, 6}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// PodGuard refuses an answer that splits a pod across nodes.
func TestPodGuard(t *testing.T) {
	c, err := cluster.New(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	env := &policy.Env{Cluster: c}
	mk := func(id, gpus, pod int) *workload.Job {
		return workload.NewJob(workload.Spec{ID: id, GPUs: gpus, PodGPUs: pod, IterTime: 1, Iterations: 1})
	}
	// Packed gives jobs 0 and 1 three GPUs of each node; job 2's two GPUs
	// would then be one per node: as one pod of 2 it is refused, as two
	// pods of 1 it runs.
	p, _ := New("packed-sticky")
	for _, c2 := range []struct {
		pod  int
		runs bool
	}{{2, false}, {1, true}, {0, true}} {
		got := PodGuard{p}.Place(env, []*workload.Job{mk(0, 3, 0), mk(1, 3, 0), mk(2, 2, c2.pod)})
		if got[0] == nil || got[1] == nil || (got[2] != nil) != c2.runs {
			t.Fatalf("pods of %d: got %v", c2.pod, got)
		}
	}
	if !PodsFit(c, []int{0, 1, 4, 5}, 2) || PodsFit(c, []int{3, 4}, 2) || !PodsFit(c, []int{3, 4}, 1) {
		t.Fatal("PodsFit")
	}
}

type fixedPlacer [][]int

func (fixedPlacer) Name() string                                 { return "fixed" }
func (fixedPlacer) Sticky() bool                                 { return false }
func (f fixedPlacer) Place(*policy.Env, []*workload.Job) [][]int { return slices.Clone([][]int(f)) }

// PodGuard repairs a split pod from the round's free GPUs, on the node
// the placer chose most of, keeping the placer's own choices.
func TestPodGuardRepairs(t *testing.T) {
	c, _ := cluster.New(2, 4)
	env := &policy.Env{Cluster: c}
	job := func(id, gpus, pod int) *workload.Job {
		return workload.NewJob(workload.Spec{ID: id, GPUs: gpus, PodGPUs: pod, IterTime: 1, Iterations: 1})
	}
	order := []*workload.Job{job(0, 2, 0), job(1, 4, 2)}
	got := PodGuard{fixedPlacer{{1, 2}, {3, 4, 5, 6}}}.Place(env, order)
	// Job 1 chose GPU 3 on node 0 and 4, 5, 6 on node 1 (a pod of 2 split
	// 3+4). Node 1 holds most of its choices and has 7 free: both pods
	// fit there.
	if !reflect.DeepEqual(got, [][]int{{1, 2}, {4, 5, 6, 7}}) {
		t.Fatalf("got %v", got)
	}
	got = PodGuard{fixedPlacer{{1, 2}, {0, 3, 4, 5}}}.Place(env, order)
	if !reflect.DeepEqual(got, [][]int{{1, 2}, {0, 3, 4, 5}}) {
		t.Fatalf("a fitting answer was changed: %v", got)
	}
	got = PodGuard{fixedPlacer{{1, 2, 5, 6}, {0, 3, 4, 7}}}.Place(env, []*workload.Job{job(0, 4, 0), job(1, 4, 4)})
	if got[1] != nil {
		t.Fatalf("no node has 4 free, yet %v", got)
	}
}
