package tenancy

import (
	"reflect"
	"testing"
)

// An equal-priority group is never preempted. A VC on one 4-GPU node: E
// (priority 1) holds GPU 0, L (priority 0) GPU 1; R (priority 1) asks for 3
// GPUs. Only GPUs 2 and 3 are free, so the preemption pass runs: L's GPU
// is preemptible (0 < 1), E's is not (1 = 1). The node block holds 2 free
// + 1 preemptible = 3, so R gets the free leaves first, then L's: GPUs
// 2, 3, 1, and only L is preempted.
func TestEqualPriorityNeverPreempted(t *testing.T) {
	s := mustNew(t, twoLevel(1, 4, "  V: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	if d := mustPlace(t, s, Request{Group: "E", VC: "V", Priority: 1, Pods: []int{1}}); !reflect.DeepEqual(d.Pods[0].GPUs, []int{0}) {
		t.Fatalf("E = %v, want GPU 0", d)
	}
	if d := mustPlace(t, s, Request{Group: "L", VC: "V", Priority: 0, Pods: []int{1}}); !reflect.DeepEqual(d.Pods[0].GPUs, []int{1}) {
		t.Fatalf("L = %v, want GPU 1", d)
	}
	d := mustPlace(t, s, Request{Group: "R", VC: "V", Priority: 1, Pods: []int{3}})
	if !reflect.DeepEqual(d.Pods[0].GPUs, []int{2, 3, 1}) || !reflect.DeepEqual(d.Preempted, []string{"L"}) {
		t.Fatalf("R = %v, want GPUs [2 3 1] and only L preempted", d)
	}
	if _, ok := s.Placement("E"); !ok {
		t.Fatal("E was preempted")
	}
}

// mixedCells mixes levels: racks of two nodes of two pairs of two GPUs;
// VC A two pairs and a rack, B three single GPUs and pinned node n5.
const mixedCells = `
physicalCluster:
  cellTypes:
    PAIR: {childCellType: GPU, childCellNumber: 2}
    NODE: {childCellType: PAIR, childCellNumber: 2, isNodeLevel: true}
    RACK: {childCellType: NODE, childCellNumber: 2}
  physicalCells:
  - {cellType: RACK, cellChildren: [{cellAddress: n0}, {cellAddress: n1}]}
  - {cellType: RACK, cellChildren: [{cellAddress: n2}, {cellAddress: n3}]}
  - {cellType: RACK, cellChildren: [{cellAddress: n4}, {cellAddress: n5, pinnedCellId: P}]}
virtualClusters:
  A: {virtualCells: [{cellType: RACK.NODE.PAIR, cellNumber: 2}, {cellType: RACK, cellNumber: 1}]}
  B: {virtualCells: [{cellType: RACK.NODE.PAIR.GPU, cellNumber: 3}], pinnedCells: [{pinnedCellId: P}]}
`

// A VC's view is its private cluster node by node: the same number of
// nodes, of the same sizes, in the same order (the VC layer runs the VC's
// placer on the view, the private run on PrivateConfig's cluster). The
// VCs below mix levels: a rack (two nodes), pairs below a node (each its
// own view node of 2), single GPUs (view nodes of 1), and a pinned node.
func TestViewIsThePrivateCluster(t *testing.T) {
	s := mustNew(t, mixedCells)
	// Hand count: A = rack (nodes of 4, 4) first (bigger cells first),
	// then two pairs (2, 2); B = three GPUs (1, 1, 1), then pinned node (4).
	want := map[string][]int{"A": {4, 4, 2, 2}, "B": {1, 1, 1, 4}}
	for vc, sizes := range want {
		view, err := s.View(vc)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, n := range view {
			got = append(got, len(n.Leaves))
		}
		if !reflect.DeepEqual(got, sizes) {
			t.Errorf("VC %s: view nodes %v, want %v", vc, got, sizes)
		}
		pcfg, err := s.PrivateConfig(vc)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(pcfg)
		if err != nil {
			t.Fatal(err)
		}
		var priv []int
		for _, n := range p.Nodes() {
			priv = append(priv, len(n.Devices))
		}
		if !reflect.DeepEqual(priv, sizes) {
			t.Errorf("VC %s: private cluster nodes %v, want %v", vc, priv, sizes)
		}
	}
}

// Commit binds the leaves a VC chose and Hold keeps a freed cell bound
// until EndRound. Two 4-GPU nodes, VC A of two node cells. A's group x on
// view node 0 binds n0 (buddy order). Under Hold, x is released and y
// commits on view node 0 again: the node cell stayed bound, so y lands on
// n0's same GPUs. After EndRound with nothing on view node 1, one node is
// still bound and one free.
func TestCommitAndHold(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"))
	view, err := s.View("A")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Commit(Request{Group: "x", VC: "A"}, [][]*VCell{view[0].Leaves[:2]})
	if err != nil || !d.Placed || d.Pods[0].Node != "n0" || !reflect.DeepEqual(d.Pods[0].GPUs, []int{0, 1}) {
		t.Fatalf("x = %v, %v; want n0 [0 1]", d, err)
	}
	mustCheck(t, s)
	s.Hold()
	if err := s.Release("x"); err != nil {
		t.Fatal(err)
	}
	if got := freeList(s, s.chains[0].Name, 2); !reflect.DeepEqual(got, []string{"n1"}) {
		t.Fatalf("free nodes under Hold %v, want [n1] (n0 stays bound)", got)
	}
	d, err = s.Commit(Request{Group: "y", VC: "A"}, [][]*VCell{view[0].Leaves[2:]})
	if err != nil || !d.Placed || d.Pods[0].Node != "n0" || !reflect.DeepEqual(d.Pods[0].GPUs, []int{2, 3}) {
		t.Fatalf("y = %v, %v; want n0 [2 3]", d, err)
	}
	s.EndRound()
	mustCheck(t, s)
	if _, err := s.Commit(Request{Group: "z", VC: "A"}, [][]*VCell{view[0].Leaves[2:3]}); err == nil {
		t.Fatal("a leaf y holds was committed again")
	}
	if got := freeList(s, s.chains[0].Name, 2); len(got) != 1 {
		t.Fatalf("free nodes %v, want one", got)
	}
}

// Within a round (Hold) x leaves view node 0, whose leaves stay bound to
// n0, and the VC's placer puts y, which may only run on n1 (its node
// selector), on those same leaves: the commit fails rather than put y
// inside n0. On view node 1, unbound, y binds n1. A leaf of x's that is
// unbound under a bound node was refused before as well.
func TestCommitKeepsToAllowedNodesOnBoundLeaves(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"))
	view, err := s.View("A")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.Commit(Request{Group: "x", VC: "A"}, [][]*VCell{view[0].Leaves[:2]}); err != nil || !d.Placed || d.Pods[0].Node != "n0" {
		t.Fatalf("x = %v, %v; want n0", d, err)
	}
	s.Hold()
	if err := s.Release("x"); err != nil {
		t.Fatal(err)
	}
	for _, leaves := range [][]*VCell{view[0].Leaves[:2], view[0].Leaves[2:]} {
		d, err := s.Commit(Request{Group: "y", VC: "A", Nodes: []string{"n1"}}, [][]*VCell{leaves})
		if err != nil || d.Placed || d.Preempting {
			t.Fatalf("y on view node 0 = %v, %v; want it refused (n0 is not allowed)", d, err)
		}
	}
	d, err := s.Commit(Request{Group: "y", VC: "A", Nodes: []string{"n1"}}, [][]*VCell{view[1].Leaves[:2]})
	if err != nil || !d.Placed || d.Pods[0].Node != "n1" {
		t.Fatalf("y on view node 1 = %v, %v; want n1", d, err)
	}
	s.EndRound()
	mustCheck(t, s)
}

// NodeDevices names the VC of the lowest bound cell holding each device.
// A (a rack and two pairs) places a 4-GPU pod: its rack binds the first
// rack and its node n0, so n1, unbound itself, is A's as well (only A's
// rack's other node may bind it). B (three single GPUs and pinned node
// n5) places a 1-GPU pod: buddy allocation binds one GPU of n4, whose
// other GPUs stay unbound, as do n2 and n3; n5, B's pinned cell, is B's
// for good. A node outside the cells has no devices.
func TestNodeDevices(t *testing.T) {
	s := mustNew(t, mixedCells)
	mustPlace(t, s, Request{Group: "a", VC: "A", Pods: []int{4}})
	mustPlace(t, s, Request{Group: "b", VC: "B", Pods: []int{1}})
	want := map[string]string{"n0": "AAAA", "n1": "AAAA", "n2": "----", "n3": "----", "n4": "B---", "n5": "BBBB", "nx": ""}
	for n, w := range want {
		got := ""
		for i, d := range s.NodeDevices(n) {
			if d.GPU != i || d.Kind != (NodeKind{LeafType: "GPU", Pinned: map[bool]string{true: "P"}[n == "n5"]}) {
				t.Errorf("%s: device %d is %+v", n, i, d)
			}
			got += map[bool]string{true: "-", false: d.VC}[d.VC == ""]
		}
		if got != w {
			t.Errorf("%s: devices bound to %q, want %q (-: unbound)", n, got, w)
		}
	}
}
