package tenant

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
)

// fits on nodes 0-3 and 4-7, by hand.
func TestFits(t *testing.T) {
	c, err := cluster.NewSized([]int{4, 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g    []int
		pod  int
		want bool
	}{
		{[]int{0, 1, 4, 5}, 2, true},  // two pods of 2, one a node
		{[]int{0, 1, 2, 4}, 2, false}, // 3 on node 0
		{[]int{0, 1, 2, 4}, 0, true},  // no pods
		{[]int{0, 4}, 1, true},
		{[]int{3, 4}, 2, false}, // a pod across the nodes
		{[]int{4, 5, 6, 7}, 4, true},
	} {
		if got := fits(c, tc.g, tc.pod); got != tc.want {
			t.Errorf("fits(%v, pod %d) = %v, want %v", tc.g, tc.pod, got, tc.want)
		}
	}
}

// twoNodesPacked is a HiveD stage on twoNodes with packed-sticky (pod
// guard) in each VC, and the environment its rounds run in.
func twoNodesPacked(t *testing.T) (*HiveD, *policy.Env) {
	t.Helper()
	h, err := NewHiveD(layoutOf(t, twoNodes))
	if err != nil {
		t.Fatal(err)
	}
	h.SetIntraVC(&IntraVC{NewPlacer: func() (policy.Placer, error) {
		p, err := place.New("packed-sticky")
		return place.PodGuard{Placer: p}, err
	}})
	env := &policy.Env{Rand: policy.PlacementRand(1)}
	return h, env
}

// layerIndexStage is twoNodes under hived with packed-sticky (pod guard)
// in each VC, after two rounds of VC A: job 1 (2 GPUs in pods of 2)
// alone, then with job 2 (1 GPU) behind it. Packed-sticky takes the
// lowest free GPUs of A's one node: job 1 holds virtual [0 1], job 2
// [2]; A's node cell binds to the first free node, n0, so physically the
// same ids.
func layerIndexStage(t *testing.T) (*HiveD, *vcLayer, []*workload.Job) {
	t.Helper()
	h, env := twoNodesPacked(t)
	j1 := workload.NewJob(job(1, "A", 0, 2, 2, 0, 1))
	j2 := workload.NewJob(job(2, "A", 0, 1, 1, 0, 1))
	var order []*workload.Job
	for _, j := range []*workload.Job{j1, j2} {
		order = append(order, j)
		out := h.Place(env, order, nil)
		for i, x := range order {
			x.GPUsHeld = out[i]
		}
		if err := h.Check(); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(j1.GPUsHeld, j2.GPUsHeld) != "[0 1] [2]" {
		t.Fatalf("jobs on %v %v, want [0 1] [2]", j1.GPUsHeld, j2.GPUsHeld)
	}
	return h, h.byVC["A"], order
}

// index lists a layer's in map: id:held/pod/fit, by id.
func index(L *vcLayer) string {
	var ids []int
	for id := range L.in {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		m := L.in[id]
		fmt.Fprintf(&b, "%d:%v/%d/%v ", id, m.held, m.pod, m.fit)
	}
	return b.String()
}

func ids(jobs []*workload.Job) []int {
	var out []int
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

// The layer's index points at the member of each job holding GPUs, as
// they start, end and are suspended, and Check finds every way it can
// be wrong.
func TestLayerIndex(t *testing.T) {
	h, L, order := layerIndexStage(t)
	if got := index(L); got != "1:[0 1]/2/true 2:[2]/1/true " {
		t.Fatalf("index %q after both started", got)
	}
	h.Finish(order[0])
	order[0].GPUsHeld = nil
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if got := index(L); got != "2:[2]/1/true " {
		t.Fatalf("index %q after job 1 ended", got)
	}
	// Job 3 (4 GPUs, 1 a pod), ahead of job 2 in A's order, does not fit
	// beside it (job 2 holds one of A's four GPUs): packed-sticky suspends
	// job 2 (the tail) and job 3 takes all four, virtual [0 1 2 3]. Job 2
	// is released first, but inside a round the cells keep A's node cell
	// bound (tenancy.Scheduler.Hold), so job 3 lands on n0: physical
	// [0 1 2 3].
	j3 := workload.NewJob(job(3, "A", 0, 4, 1, 0, 1))
	order = []*workload.Job{j3, order[1]}
	out := h.Place(&policy.Env{Rand: policy.PlacementRand(1)}, order, nil)
	if fmt.Sprint(out) != "[[0 1 2 3] []]" {
		t.Fatalf("jobs 3 and 2 got %v", out)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if got := index(L); got != "3:[0 1 2 3]/1/true " {
		t.Fatalf("index %q with job 3 alone", got)
	}
	// The layer's last round was jobs 3 and 2; job 3 holds, job 2 was
	// suspended. member finds a job where it was (or one further on) and
	// answers L.in's member either way: nil for jobs 2 and 1 (ended), job
	// 3's for job 3, whatever the order asked in.
	j2 := order[1]
	for _, tc := range []struct {
		ask  []*workload.Job
		want string
	}{
		{[]*workload.Job{j3, j2}, "true false"},
		{[]*workload.Job{j2, j3}, "false true"},
		{[]*workload.Job{j2}, "false"},
		{[]*workload.Job{j3}, "true"},
	} {
		L.cur = 0
		var got []string
		for _, j := range tc.ask {
			m := L.member(j)
			if m != L.in[j.ID] {
				t.Errorf("asked %v: job %d's member %p, L.in's %p", ids(tc.ask), j.ID, m, L.in[j.ID])
			}
			got = append(got, fmt.Sprint(m != nil))
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("asked %v: members found %s, want %s", ids(tc.ask), g, tc.want)
		}
	}
	h.Finish(j3)
	L.cur = 0
	if m := L.member(j3); m != nil {
		t.Errorf("job 3 ended, but its member is still found")
	}

	for _, tc := range []struct {
		name  string
		spoil func(L *vcLayer, P *poolLayer)
		want  string
	}{
		{"stale entry", func(L *vcLayer, P *poolLayer) { L.in[9] = &member{pool: P, held: []int{3}, fit: true} },
			"3 jobs in the layer's index, 2 hold GPUs"},
		{"missing entry", func(L *vcLayer, P *poolLayer) { delete(L.in, 2) },
			"job 2 holds GPUs, but the layer does not point at its member"},
		{"points at a copy", func(L *vcLayer, P *poolLayer) { m := *L.in[1]; L.in[1] = &m },
			"job 1 holds GPUs, but the layer does not point at its member"},
		{"fit wrong", func(L *vcLayer, P *poolLayer) { L.in[1].fit = false },
			"job 1's GPUs [0 1] marked fit false for pods of 2"},
		{"pod wrong", func(L *vcLayer, P *poolLayer) { L.in[2].pod = 2 },
			"job 2's GPUs [2] marked fit true for pods of 2"},
		{"count wrong", func(L *vcLayer, P *poolLayer) { P.nheld++ },
			"2 members hold GPUs, 3 counted"},
		{"another pool's member", func(L *vcLayer, P *poolLayer) { P.mem[1].pool = nil },
			"job 1's member is not the pool's"},
	} {
		h, L, _ := layerIndexStage(t)
		tc.spoil(L, L.pools[0])
		err := h.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check says %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A layer names its only unpinned GPU pool, by hand from the cells: in
// twoNodes each VC has one node cell (one pool); in the pinned case A has
// its node cell and A-PIN (the unpinned pool only counts), B one node
// cell; in the SKU case A has a K80 and a V100 pool, so none is the only.
func TestOnlyPool(t *testing.T) {
	for _, tc := range []struct {
		l    *Layout
		vc   string
		want string // the pool's leaf type, or "" for none
	}{
		{layoutOf(t, twoNodes), "A", "GPU"},
		{layoutFile(t, pinnedCells), "A", "GPU"},
		{layoutFile(t, pinnedCells), "B", "GPU"},
		{layoutFile(t, skuCells), "A", ""},
	} {
		h, err := NewHiveD(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		h.setup(&policy.Env{}, nil)
		L := h.byVC[tc.vc]
		got := ""
		if L.only != nil {
			got = L.only.LeafType
			if L.only.Pinned != "" {
				t.Errorf("VC %s: only pool pinned to %s", tc.vc, L.only.Pinned)
			}
		}
		if got != tc.want {
			t.Errorf("VC %s: only pool %q, want %q", tc.vc, got, tc.want)
		}
	}
}
