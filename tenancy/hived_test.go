package tenancy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// mustNew builds a scheduler from YAML text or fails the test.
func mustNew(t testing.TB, yml string) *Scheduler {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	return s
}

func mustCheck(t testing.TB, s *Scheduler) {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func mustPlace(t testing.TB, s *Scheduler, r Request) Decision {
	t.Helper()
	d, err := s.Schedule(r)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Placed {
		t.Fatalf("%s: not placed: %s", r.Group, d.Reason)
	}
	mustCheck(t, s)
	return d
}

// freeList renders a chain's free list at a level as addresses.
func freeList(s *Scheduler, chain string, l int) []string {
	out := []string{}
	for _, p := range s.byChain[chain].free[l] {
		out = append(out, p.Addr)
	}
	return out
}

// twoLevel is a cluster of n nodes of g GPUs, GPU(1) → NODE(2).
func twoLevel(n, g int, vcs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "physicalCluster:\n  cellTypes:\n    NODE: {childCellType: GPU, childCellNumber: %d, isNodeLevel: true}\n  physicalCells:\n", g)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {cellType: NODE, cellAddress: n%d}\n", i)
	}
	b.WriteString("virtualClusters:\n" + vcs)
	return b.String()
}

// oneNodeEach is twoLevel's VCs A and B, one node cell each.
const oneNodeEach = "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"

// placer returns a step of a hand-derived sequence: schedule r, compare
// the decision with want (Decision.String), and check the whole state.
func placer(t *testing.T, s *Scheduler) func(r Request, want string) {
	return func(r Request, want string) {
		t.Helper()
		d, err := s.Schedule(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.String(); got != want {
			t.Fatalf("%s = %q, want %q", r.Group, got, want)
		}
		mustCheck(t, s)
	}
}

// H1: buddy split and merge over four levels.
func TestH1BuddySplitMerge(t *testing.T) {
	s := mustNew(t, `
physicalCluster:
  cellTypes:
    PAIR: {childCellType: GPU, childCellNumber: 2}
    SOCKET: {childCellType: PAIR, childCellNumber: 2}
    NODE: {childCellType: SOCKET, childCellNumber: 2, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: N}
virtualClusters:
  A: {virtualCells: [{cellType: NODE.SOCKET.PAIR.GPU, cellNumber: 2}]}
  B: {virtualCells: [{cellType: NODE.SOCKET.PAIR, cellNumber: 1}]}
`)
	if got := freeList(s, "NODE", 4); !reflect.DeepEqual(got, []string{"N"}) {
		t.Fatalf("L4 = %v, want [N]", got)
	}
	d := mustPlace(t, s, Request{Group: "g0", VC: "A", Pods: []int{1}})
	if d.Pods[0].Node != "N" || !reflect.DeepEqual(d.Pods[0].GPUs, []int{0}) {
		t.Fatalf("first GPU = %v, want N[0] (G0)", d)
	}
	want := map[int][]string{1: {"N/0/0/1"}, 2: {"N/0/1"}, 3: {"N/1"}, 4: {}}
	for l, w := range want {
		if got := freeList(s, "NODE", l); !reflect.DeepEqual(got, w) {
			t.Errorf("after the cascade L%d = %v, want %v", l, got, w)
		}
	}
	d = mustPlace(t, s, Request{Group: "g1", VC: "A", Pods: []int{1}})
	if !reflect.DeepEqual(d.Pods[0].GPUs, []int{1}) {
		t.Fatalf("second GPU = %v, want the buddy G1", d)
	}
	d = mustPlace(t, s, Request{Group: "p1", VC: "B", Pods: []int{2}})
	if !reflect.DeepEqual(d.Pods[0].GPUs, []int{2, 3}) {
		t.Fatalf("pair = %v, want P1 (GPUs 2,3)", d)
	}
	for _, g := range []string{"g0", "g1", "p1"} {
		if err := s.Release(g); err != nil {
			t.Fatal(err)
		}
		mustCheck(t, s)
	}
	for l, w := range map[int][]string{1: {}, 2: {}, 3: {}, 4: {"N"}} {
		if got := freeList(s, "NODE", l); !reflect.DeepEqual(got, w) {
			t.Errorf("after the merges L%d = %v, want %v", l, got, w)
		}
	}
}

// H2: initial validation on 2 nodes x 4 GPUs.
func TestH2InitialValidation(t *testing.T) {
	cases := []struct {
		name, vcs string
		err       string // substring; "" = valid
	}{
		{"node+node", "  VC1: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  VC2: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n", ""},
		{"node+gpu,node", "  VC1: {virtualCells: [{cellType: NODE, cellNumber: 1}, {cellType: NODE.GPU, cellNumber: 1}]}\n  VC2: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n",
			"chain NODE, level 1 (GPU): splittable -1 < 0; VCs reserving this level: VC1 (1, line 8)"},
		{"4gpu,node", "  VC1: {virtualCells: [{cellType: NODE.GPU, cellNumber: 4}]}\n  VC2: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n", ""},
	}
	for _, c := range cases {
		cfg, err := Parse("h2.yaml", []byte(twoLevel(2, 4, c.vcs)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(cfg)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: rejected: %v", c.name, err)
		case c.err != "" && err == nil:
			t.Errorf("%s: accepted, want rejection", c.name)
		case c.err != "" && !strings.Contains(err.Error(), c.err):
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.err)
		}
		if c.err != "" && err != nil && !strings.HasPrefix(err.Error(), "h2.yaml:8: ") {
			t.Errorf("%s: error %q does not name file and line", c.name, err)
		}
	}
}

// H3: four 1-GPU groups of A pack into one node, so B's whole-node job
// starts at once. (The quota baseline's 99-minute anomaly is the
// simulator's test, testdata/h3.)
func TestH3HiveDPacksSmallJobs(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 4}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	gpus := map[int]bool{}
	for i := 0; i < 4; i++ {
		d := mustPlace(t, s, Request{Group: fmt.Sprintf("a%d", i), VC: "A", Pods: []int{1}})
		if d.Pods[0].Node != "n0" {
			t.Fatalf("A's job %d on %s, want n0", i, d.Pods[0].Node)
		}
		gpus[d.Pods[0].GPUs[0]] = true
	}
	if len(gpus) != 4 {
		t.Fatalf("A's GPUs %v, want four distinct", gpus)
	}
	d := mustPlace(t, s, Request{Group: "b", VC: "B", Pods: []int{4}})
	if d.Pods[0].Node != "n1" || len(d.Preempted) != 0 {
		t.Fatalf("B = %v, want all of n1 without preemption", d)
	}
}

// H4 and H5: safety under growth, and merge on release.
func TestH4H5SafetyUnderGrowthAndMerge(t *testing.T) {
	vcs := "  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 6}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"
	s := mustNew(t, twoLevel(3, 4, vcs))
	ch := s.byChain["NODE"]
	wantNode := []string{"n0", "n0", "n0", "n0", "n1", "n1"}
	wantLeft := []int{2, 2, 2, 2, 1, 1}
	for i := 0; i < 6; i++ {
		d := mustPlace(t, s, Request{Group: fmt.Sprintf("a%d", i), VC: "A", Pods: []int{1}})
		if d.Pods[0].Node != wantNode[i] {
			t.Fatalf("A's GPU %d on %s, want %s", i+1, d.Pods[0].Node, wantNode[i])
		}
		if got := ch.obtainable(2); got != wantLeft[i] {
			t.Fatalf("after GPU %d totalLeft[node] = %d, want %d", i+1, got, wantLeft[i])
		}
	}
	if got := freeList(s, "NODE", 2); !reflect.DeepEqual(got, []string{"n2"}) {
		t.Fatalf("free nodes %v, want [n2]", got)
	}
	d := mustPlace(t, s, Request{Group: "b", VC: "B", Pods: []int{4}})
	if d.Pods[0].Node != "n2" {
		t.Fatalf("B on %s, want n2", d.Pods[0].Node)
	}
	if err := s.Release("b"); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	// H5: A releases its two GPUs in n1; n1 merges back.
	for _, g := range []string{"a4", "a5"} {
		if err := s.Release(g); err != nil {
			t.Fatal(err)
		}
		mustCheck(t, s)
	}
	if got := freeList(s, "NODE", 2); !reflect.DeepEqual(got, []string{"n2", "n1"}) {
		t.Fatalf("free nodes after the release %v, want [n2 n1]", got)
	}
	if got := ch.obtainable(2); got != 2 {
		t.Fatalf("totalLeft[node] = %d, want 2", got)
	}

	// Negative control: binding A's six GPUs 2/2/2 leaves no node for B,
	// and the checker must say so.
	bad := mustNew(t, twoLevel(3, 4, vcs))
	vcc := bad.byVC["A"].chains[0]
	nodes := bad.byChain["NODE"].tops
	for i, v := range vcc.pre {
		if !bad.bindExact(v, nodes[i/2].children[i%2]) {
			t.Fatalf("static binding %d failed", i)
		}
	}
	err := bad.Check()
	if err == nil || !strings.Contains(err.Error(), "safety broken: chain NODE level 2") {
		t.Fatalf("checker on a 2/2/2 binding: %v, want safety broken at the node level", err)
	}
}

// Static binding: every VC cell is bound up front and stays bound when
// its jobs leave; a guaranteed job then lands on its own cell even where
// an opportunistic job runs (a preemption dynamic binding avoids).
func TestStaticBinding(t *testing.T) {
	vcs := "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"
	for _, static := range []bool{false, true} {
		s := mustNew(t, twoLevel(3, 4, vcs))
		if static {
			must(t, s.BindStatic())
			mustCheck(t, s)
		}
		// An opportunistic job takes n0, the node buddy allocation hands out first.
		d := mustPlace(t, s, Request{Group: "o", VC: "B", Priority: Opportunistic, Pods: []int{4}})
		if d.Pods[0].Node != "n0" {
			t.Fatalf("opportunistic on %s", d.Pods[0].Node)
		}
		d = mustPlace(t, s, Request{Group: "a", VC: "A", Pods: []int{4}})
		preempted := len(d.Preempted) > 0
		if preempted != static {
			t.Fatalf("static=%v: A's job %v", static, d)
		}
		must(t, s.Release("a"))
		mustCheck(t, s)
		if got := len(freeList(s, "NODE", 2)); static && got != 1 || !static && got != 3 {
			t.Fatalf("static=%v: %d free nodes after A's job left", static, got)
		}
	}
}

// Variability inside tenancy: among cells equal for safety, health and
// opportunistic load, a Fastest request binds the fastest for its class,
// and inside a bound node takes the fastest devices.
func TestFastestBinding(t *testing.T) {
	vcs := "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  B: {virtualCells: [{cellType: NODE.GPU, cellNumber: 2}]}\n"
	speed := func(class int, node string, gpu int) float64 {
		v := map[string]float64{"n0": 2, "n1": 1.5, "n2": 1}[node] + float64(3-gpu)/10 // higher GPU index is faster
		if class == 1 {
			return 1 / v // class 1 ranks the other way round
		}
		return v
	}
	for _, c := range []struct {
		fastest bool
		class   int
		aNode   string
		bGPUs   []int
	}{{false, 0, "n0", []int{0}}, {true, 0, "n2", []int{3}}, {true, 1, "n0", []int{0}}} {
		s := mustNew(t, twoLevel(3, 4, vcs))
		s.SetSpeeds(2, speed)
		d := mustPlace(t, s, Request{Group: "a", VC: "A", Pods: []int{4}, Fastest: c.fastest, Class: c.class})
		if d.Pods[0].Node != c.aNode {
			t.Errorf("%+v: A on %s", c, d.Pods[0].Node)
		}
		d = mustPlace(t, s, Request{Group: "b", VC: "B", Pods: []int{1}, Fastest: c.fastest, Class: c.class})
		if !reflect.DeepEqual(d.Pods[0].GPUs, c.bGPUs) {
			t.Errorf("%+v: B on %v", c, d.Pods[0])
		}
	}
	s := mustNew(t, twoLevel(3, 4, vcs))
	if _, err := s.Schedule(Request{Group: "x", VC: "A", Pods: []int{1}, Fastest: true, Class: 3}); err == nil {
		t.Error("class 3 accepted without speeds")
	}
}

// FitsEmpty answers as the intra-VC scheduler would on an idle VC. Pods
// go smallest first onto the view in packing order (HiveD's
// findNodesForPods), so {4,1,1,1,1} never fits a node plus four GPU cells:
// the 1s fill the node first.
func TestFitsEmpty(t *testing.T) {
	s := mustNew(t, twoLevel(3, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}, {cellType: NODE.GPU, cellNumber: 4}]}\n"))
	for _, c := range []struct {
		pods []int
		want bool
	}{{[]int{4}, true}, {[]int{4, 1, 1, 1, 1}, false}, {[]int{4, 4}, false}, {[]int{2, 2}, true}, {[]int{2, 2, 2}, false}, {[]int{1, 1, 1, 1, 1, 1, 1, 1}, true}} {
		if got := s.FitsEmpty("A", c.pods); got != c.want {
			t.Errorf("pods %v: %v, want %v", c.pods, got, c.want)
		}
	}
}

// hived-pm places inside the VC's bound cells by PAL's L×V order. Two
// 4-GPU nodes, both bound to VC A (static binding), class-0 values
// n0 = [1 1 2 2], n1 = [1 2 2 2]. With the locality penalty L, LxV of
// those values (first appearance 1, 2) is W1(1) A1(L) W2(2) A2(2L),
// stably sorted by product.
//   - L = 1.2: W1, A1, W2, A2. A 3-GPU job that may spread: W1 fails (n0
//     has two 1s, n1 one), A1 takes the three 1s: n0 {0,1} and n1 {0}.
//   - L = 2.5: W1, W2, A1, A2. W1 fails; W2: both nodes have 4 devices
//     <= 2 with 3rd smallest 2, tie on count, so n0 (config order), its
//     first three devices <= 2: {0,1,2}.
//   - L = 1.2 without Spread (fixed pod of 3): A1 is skipped, W2 as above.
//   - a 1-GPU job first (W1: n0 and n1 tie on the best value 1, n0 has
//     more devices <= 1, so n0 {0}), then a 2-GPU job, L = 1.2: W1: n0
//     has one free 1, n1 one: fail; A1 takes n0 {1} and n1 {0}.
//
// Plain HiveD (no LV) packs a 3-GPU pod onto one node and never splits it.
func TestLxVInsideVC(t *testing.T) {
	vcs := "  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"
	val := map[string][]float64{"n0": {1, 1, 2, 2}, "n1": {1, 2, 2, 2}}
	speed := func(_ int, node string, gpu int) float64 { return val[node][gpu] }
	lv := func(L float64) []LVStep {
		steps := []LVStep{{V: 1}, {V: 1, Across: true}, {V: 2}, {V: 2, Across: true}}
		if L > 2 {
			steps = []LVStep{{V: 1}, {V: 2}, {V: 1, Across: true}, {V: 2, Across: true}}
		}
		return steps
	}
	type pod struct {
		node string
		gpus []int
	}
	for _, c := range []struct {
		name   string
		first  []int // a 1-GPU job pinned first by LxV (nil: none)
		pods   []int
		spread bool
		L      float64
		want   []pod
	}{
		{"across beats slow within", nil, []int{3}, true, 1.2, []pod{{"n0", []int{0, 1}}, {"n1", []int{0}}}},
		{"within beats across at high L", nil, []int{3}, true, 2.5, []pod{{"n0", []int{0, 1, 2}}}},
		{"fixed pod never splits", nil, []int{3}, false, 1.2, []pod{{"n0", []int{0, 1, 2}}}},
		{"around a busy fast GPU", []int{1}, []int{2}, true, 1.2, []pod{{"n0", []int{1}}, {"n1", []int{0}}}},
	} {
		s := mustNew(t, twoLevel(2, 4, vcs))
		s.SetSpeeds(1, speed)
		must(t, s.BindStatic())
		if c.first != nil {
			d := mustPlace(t, s, Request{Group: "f", VC: "A", Pods: c.first, Fastest: true, LV: lv(c.L)})
			if d.Pods[0].Node != "n0" || !reflect.DeepEqual(d.Pods[0].GPUs, []int{0}) {
				t.Fatalf("%s: first job on %v", c.name, d.Pods)
			}
		}
		d := mustPlace(t, s, Request{Group: "j", VC: "A", Pods: c.pods, Fastest: true, LV: lv(c.L), Spread: c.spread})
		var got []pod
		for _, p := range d.Pods {
			got = append(got, pod{p.Node, p.GPUs})
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: placed %v, want %v", c.name, got, c.want)
		}
		mustCheck(t, s)
	}
	// Plain HiveD packs the 3-GPU pod onto one node.
	s := mustNew(t, twoLevel(2, 4, vcs))
	s.SetSpeeds(1, speed)
	must(t, s.BindStatic())
	d := mustPlace(t, s, Request{Group: "j", VC: "A", Pods: []int{3}, Fastest: true})
	if len(d.Pods) != 1 || len(d.Pods[0].GPUs) != 3 {
		t.Errorf("plain hived-pm split the pod: %v", d.Pods)
	}
}
