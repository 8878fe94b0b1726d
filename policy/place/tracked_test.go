package place

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// TestPlaceHeldMatchesPlace runs packed-sticky, bare and under PodGuard,
// through rounds in which the answer is applied (jobs start, stop, end,
// new ones arrive anywhere in the order, some may not be preempted) and
// compares PlaceHeld on the kept free set, told only of what changed,
// with Place recounting every round; afterwards the kept set must be the
// recounted one, bucket for bucket.
func TestPlaceHeldMatchesPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	for trial := range 300 {
		c := randomCluster(t, rng)
		if trial%5 == 0 {
			c = wideCluster(t, rng, 200)
		}
		guarded := trial%2 == 1
		mk := func() Tracker {
			p, _ := New("packed-sticky")
			if guarded {
				return PodGuard{Placer: p}
			}
			return p.(Tracker)
		}
		ref, tr := mk(), mk()
		if !tr.Track(c) {
			t.Fatal("packed-sticky does not track")
		}
		if tr.Track(c) {
			t.Fatal("packed-sticky tracks a second time: a placer shared by two pools would keep one set for both")
		}
		e := &policy.Env{Cluster: c}
		var order []*workload.Job
		id := 0
		for round := range 25 {
			for range 1 + rng.IntN(3) {
				id++
				n := 1 + rng.IntN(c.MaxGPUsPerNode())
				if rng.IntN(4) == 0 {
					n = 1 + rng.IntN(c.Size())
				}
				j := workload.NewJob(workload.Spec{ID: id, GPUs: n})
				if guarded && rng.IntN(2) == 0 {
					j.PodGPUs = n
					if n%2 == 0 && rng.IntN(2) == 0 {
						j.PodGPUs = n / 2
					}
				}
				if rng.IntN(5) == 0 {
					j.MoveCost.Preemption = math.Inf(1)
				}
				at := rng.IntN(len(order) + 1)
				order = append(order[:at:at], append([]*workload.Job{j}, order[at:]...)...)
			}
			want := ref.Place(e, order)
			got := tr.PlaceHeld(e, order)
			what := fmt.Sprintf("trial %d (%v, guarded %v) round %d", trial, c, guarded, round)
			sameAlloc(t, what, got, want)
			if guarded {
				// Every running job holds the guard's answer of an
				// earlier round, so its pods fit: skipping them changes
				// nothing.
				sameAlloc(t, what+" fitting", tr.(PodGuard).PlaceHeldFitting(e, order), want)
			}
			var f freeSet
			f.reset(c)
			for _, j := range order {
				f.take(j.GPUsHeld)
			}
			sameFree(t, what, kept(tr), &f)
			// Apply the answer as a driver would, telling the kept set.
			for i, j := range order {
				if j.Running() && !same(j.GPUsHeld, want[i]) {
					tr.Free(j.GPUsHeld)
					j.GPUsHeld = nil
				}
			}
			for i, j := range order {
				if !j.Running() && want[i] != nil {
					j.GPUsHeld = want[i]
					tr.Hold(j.GPUsHeld)
				}
			}
			for range rng.IntN(3) {
				if len(order) == 0 {
					break
				}
				k := rng.IntN(len(order))
				if order[k].Running() {
					tr.Free(order[k].GPUsHeld)
				}
				order = append(order[:k:k], order[k+1:]...)
			}
		}
	}
}

// PlaceHeldFitting checks only the jobs the placer starts: a running job
// whose GPUs cut a pod (which a caller of it promises never happens) is
// left as it is, while PlaceHeld repairs it. On nodes 0-3 and 4-7, job
// a holds [0 4] in pods of 2, and job b (2 GPUs in pods of 2, waiting)
// is packed onto node 0's lowest free GPUs, [1 2], whole. PlaceHeld then
// re-cuts a onto node 0 (one GPU of it on each node, the lower node
// first): its own GPU 0, then the one neither job takes, 3: [0 3].
// PlaceHeldFitting keeps [0 4].
func TestPlaceHeldFitting(t *testing.T) {
	for _, tc := range []struct {
		fitting bool
		want    string
	}{
		{false, "[[0 3] [1 2]]"},
		{true, "[[0 4] [1 2]]"},
	} {
		c, err := cluster.NewSized([]int{4, 4})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := New("packed-sticky")
		g := PodGuard{Placer: p}
		if !g.Track(c) {
			t.Fatal("no tracking")
		}
		a := workload.NewJob(workload.Spec{ID: 1, GPUs: 2, PodGPUs: 2})
		a.GPUsHeld = []int{0, 4}
		g.Hold(a.GPUsHeld)
		b := workload.NewJob(workload.Spec{ID: 2, GPUs: 2, PodGPUs: 2})
		e := &policy.Env{Cluster: c}
		var got [][]int
		if tc.fitting {
			got = g.PlaceHeldFitting(e, []*workload.Job{a, b})
		} else {
			got = g.PlaceHeld(e, []*workload.Job{a, b})
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("fitting %v: %v, want %s", tc.fitting, got, tc.want)
		}
	}
}

func same(a, b []int) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func kept(t Tracker) *freeSet {
	if g, ok := t.(PodGuard); ok {
		return &g.Placer.(*Packed).kept
	}
	return &t.(*Packed).kept
}

func sameFree(t *testing.T, what string, got, want *freeSet) {
	t.Helper()
	if fmt.Sprint(got.free, got.nodeFree, got.total, got.byFree.bits, got.byFree.sum) != fmt.Sprint(want.free, want.nodeFree, want.total, want.byFree.bits, want.byFree.sum) {
		t.Fatalf("%s: kept free set %v %v, recounted %v %v", what, got.nodeFree, got.free, want.nodeFree, want.free)
	}
}

// TestPodsFitAnyOrder: a node's GPUs count together wherever they come in
// the list (two 4-GPU nodes, pods of 2).
func TestPodsFitAnyOrder(t *testing.T) {
	c, err := cluster.New(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gpus []int
		want bool
	}{
		{[]int{0, 1, 4, 5}, true},
		{[]int{0, 4, 5, 1}, true}, // node 0's pair split by node 1's
		{[]int{4, 0, 1, 5}, true},
		{[]int{0, 4, 1}, false},
		{[]int{0, 1, 4}, false},
		{[]int{4, 0, 1}, false},
		{[]int{}, true},
	} {
		if got := PodsFit(c, tc.gpus, 2); got != tc.want {
			t.Errorf("PodsFit(%v, 2) = %v, want %v", tc.gpus, got, tc.want)
		}
	}
}
