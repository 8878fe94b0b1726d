package tenancy

import (
	"reflect"
	"testing"
)

// A quarantined device is a bad cell of one device. Hand-derived on two
// 4-GPU nodes, VCs A and B one node each (non-stateful: victims go at
// once):
//  1. g1 (A, 2 GPUs) binds A's node to n0 and runs on n0[0 1].
//  2. n0/3 is quarantined: A's bound node shows it on an unused virtual
//     leaf (0.2, the first unbound one), so A's view has 4-2-1 = 1 free
//     GPU: g2 (A, 2) waits, g3 (A, 1) runs on n0[2] (leaf 0.3 binds the
//     one healthy unbound device).
//  3. g4 (B, 4) binds B's node to n1. The opportunistic o1 (1 GPU) then
//     finds room only on n0, on the quarantined device: n0[3].
//  4. The quarantine is lifted: the binding that showed it goes, A's view
//     has one free GPU again, and g5 (A, 1) takes n0[3], preempting o1.
//  5. g4 leaves and n1/0 is quarantined: B has an unbound node cell and
//     no healthy free node is left, so doomed-cell accounting binds B's
//     cell to n1 (shown: n1/0 on leaf 0.0), counted by DoomedCells until
//     g7 uses it. B sees 3 free GPUs: g6 (B, 4) waits, g7 (B, 3) runs on
//     n1[1 2 3].
//  6. Both quarantines off and everything released: nothing is bound.
func TestQuarantineIsABadDevice(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, oneNodeEach))
	place := placer(t, s)
	place(Request{Group: "g1", VC: "A", Pods: []int{2}}, "n0[0 1]")
	must(t, s.Quarantine("n0", 3, true))
	mustCheck(t, s)
	if got, want := bindings(s, "NODE"), []string{"n0→0", "n0/0→0.0", "n0/1→0.1", "n0/3→0.2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after quarantine: bindings %v, want %v", got, want)
	}
	if got, want := s.Quarantined(), []QuarantinedDevice{{"n0", 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Quarantined() = %v, want %v", got, want)
	}
	if got := s.BadNodes(); len(got) != 0 {
		t.Fatalf("BadNodes() = %v: a quarantined device leaves its node up", got)
	}
	place(Request{Group: "g2", VC: "A", Pods: []int{2}, NoPreemption: true}, "wait: chain NODE: insufficient capacity")
	place(Request{Group: "g3", VC: "A", Pods: []int{1}}, "n0[2]")
	place(Request{Group: "g4", VC: "B", Pods: []int{4}}, "n1[0 1 2 3]")
	place(Request{Group: "o1", VC: "B", Priority: Opportunistic, Pods: []int{1}}, "n0[3]")
	must(t, s.Quarantine("n0", 3, false))
	mustCheck(t, s)
	place(Request{Group: "g5", VC: "A", Pods: []int{1}}, "n0[3] preempted=[o1]")
	must(t, s.Release("g4"))
	must(t, s.Quarantine("n1", 0, true))
	mustCheck(t, s)
	if got, want := s.DoomedCells(), map[string]int{"B": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DoomedCells() = %v, want %v", got, want)
	}
	place(Request{Group: "g6", VC: "B", Pods: []int{4}, NoPreemption: true}, "wait: chain NODE: insufficient capacity")
	place(Request{Group: "g7", VC: "B", Pods: []int{3}}, "n1[1 2 3]")
	// g7 runs inside the doomed cell: a cell a group uses is not counted
	// as doomed, however bad its hardware.
	if got := s.DoomedCells(); len(got) != 0 {
		t.Fatalf("DoomedCells() with g7 inside B's cell = %v, want none", got)
	}
	must(t, s.Quarantine("n1", 0, false))
	mustCheck(t, s)
	for _, g := range []string{"g1", "g3", "g5", "g7"} {
		must(t, s.Release(g))
		mustCheck(t, s)
	}
	if got := bindings(s, "NODE"); len(got) != 0 {
		t.Fatalf("at the end: bindings %v, want none", got)
	}
	if err := s.Quarantine("n0", 4, true); err == nil {
		t.Fatal("quarantining a device the node lacks: no error")
	}
	if err := s.Quarantine("n9", 0, true); err == nil {
		t.Fatal("quarantining on an unknown node: no error")
	}
}
