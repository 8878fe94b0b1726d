package tenancy

import "testing"

// Opportunistic groups, hand-derived on two 4-GPU nodes, VCs A and B one
// node each:
//  1. o1 (1 GPU) packs onto the first node, n0[0]. Guaranteed gA (A, 3)
//     binds A's node away from opportunistic use, to n1; gB (B, 3) gets
//     the node left, n0, beside o1: n0 is full, n1 has one free GPU.
//  2. o2 (1 GPU) prefers nodes with opportunistic use (n0) but counts
//     guaranteed use too: n0 has no room, so n1[3].
//  3. Everything but o1 leaves; o3, two pods of one GPU, lands both pods
//     on n0, on two different GPUs.
//  4. n1 goes down and o4 (4 GPUs) fits only there: it waits, rather than
//     run on a failed node.
func TestOpportunisticPlacement(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, oneNodeEach))
	place := placer(t, s)
	place(Request{Group: "o1", VC: "A", Priority: Opportunistic, Pods: []int{1}}, "n0[0]")
	place(Request{Group: "gA", VC: "A", Pods: []int{3}}, "n1[0 1 2]")
	place(Request{Group: "gB", VC: "B", Pods: []int{3}}, "n0[1 2 3]")
	place(Request{Group: "o2", VC: "B", Priority: Opportunistic, Pods: []int{1}}, "n1[3]")
	for _, g := range []string{"gA", "gB", "o2"} {
		must(t, s.Release(g))
		mustCheck(t, s)
	}
	place(Request{Group: "o3", VC: "B", Priority: Opportunistic, Pods: []int{1, 1}}, "n0[1] n0[2]")
	must(t, s.SetNodeHealth("n1", false))
	mustCheck(t, s)
	place(Request{Group: "o4", VC: "A", Priority: Opportunistic, Pods: []int{4}}, "wait: chain NODE: only bad nodes have room")
}
