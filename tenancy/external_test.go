package tenancy

import (
	"reflect"
	"testing"
)

// A device held outside the cells (SetExternal: another scheduler's pod)
// is a bad cell of one device that no group may use, opportunistic or
// guaranteed. Hand-derived on two 4-GPU nodes, VCs A and B one node each
// (non-stateful: victims go at once), n1/0 and n1/1 held outside:
//  1. o1 (opportunistic, only n1) takes n1[2], the first device of n1
//     not held; o2 (opportunistic, 2 GPUs, only n1) waits: n1 has one
//     device left, and n0 is not allowed it.
//  2. g1 (A, 4) binds A's node to n0, the one node without bad hardware.
//     B's unbound node cell can now be served by bad hardware only: the
//     doomed-bad rule binds it to n1, with n1/0 and n1/1 shown on B's
//     virtual leaves 0.0 and 0.1, counted by DoomedCells.
//  3. g2 (B, 3) waits (B sees 2 free GPUs); g3 (B, 2) runs on n1[3 2]
//     (binding takes the device without an opportunistic group first),
//     preempting o1.
//  4. n1/0 is no longer held: B sees it free again, g4 (B, 1) takes it.
//  5. A running group found on n1/1, still marked held (Adopt), takes it
//     over: the mark goes.
func TestExternalIsABadDeviceNoOneUses(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, oneNodeEach))
	place := placer(t, s)
	must(t, s.SetExternal("n1", 0, true))
	must(t, s.SetExternal("n1", 1, true))
	mustCheck(t, s)
	if got, want := s.External(), []Device{{"n1", 0}, {"n1", 1}}; !reflect.DeepEqual(got, want) || s.NumExternal() != 2 {
		t.Fatalf("External() = %v (NumExternal %d), want %v", got, s.NumExternal(), want)
	}
	if got := s.BadNodes(); len(got) != 0 {
		t.Fatalf("BadNodes() = %v: a device held outside the cells leaves its node up", got)
	}
	place(Request{Group: "o1", VC: "A", Priority: Opportunistic, Pods: []int{1}, Nodes: []string{"n1"}}, "n1[2]")
	place(Request{Group: "o2", VC: "A", Priority: Opportunistic, Pods: []int{2}, Nodes: []string{"n1"}}, "wait: chain NODE: only nodes outside the allowed ones have room")
	place(Request{Group: "g1", VC: "A", Pods: []int{4}}, "n0[0 1 2 3]")
	if got, want := s.DoomedCells(), map[string]int{"B": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DoomedCells() = %v, want %v", got, want)
	}
	if got, want := bindings(s, "NODE"), []string{"n0→0", "n0/0→0.0", "n0/1→0.1", "n0/2→0.2", "n0/3→0.3", "n1→0", "n1/0→0.0", "n1/1→0.1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("bindings %v, want %v", got, want)
	}
	place(Request{Group: "g2", VC: "B", Pods: []int{3}, NoPreemption: true}, "wait: chain NODE: insufficient capacity")
	place(Request{Group: "g3", VC: "B", Pods: []int{2}}, "n1[3 2] preempted=[o1]")
	must(t, s.SetExternal("n1", 0, false))
	mustCheck(t, s)
	place(Request{Group: "g4", VC: "B", Pods: []int{1}}, "n1[0]")
	if _, err := s.Adopt(Request{Group: "x", VC: "B", Priority: Opportunistic}, []Pod{{Node: "n1", GPUs: []int{1}}}); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	if n := s.NumExternal(); n != 0 {
		t.Fatalf("after adopting the group on n1/1: NumExternal() = %d, want 0", n)
	}
	for _, g := range []string{"g1", "g3", "g4", "x"} {
		must(t, s.Release(g))
		mustCheck(t, s)
	}
	if got := bindings(s, "NODE"); len(got) != 0 {
		t.Fatalf("at the end: bindings %v, want none", got)
	}
	if err := s.SetExternal("n0", 4, true); err == nil {
		t.Fatal("marking a device the node lacks: no error")
	}
	if err := s.SetExternal("n9", 0, true); err == nil {
		t.Fatal("marking on an unknown node: no error")
	}
}
