package tenancy

import (
	"slices"
	"strings"
	"testing"
)

// pickLeaves on one 4-leaf node (blocks of 1, 2, 4 leaves), by hand:
//   - leaves 0-1 preemptible, 2-3 free, 2 wanted: the pair 2-3 fits
//     exactly and needs no preemption, so it wins over the first pair;
//   - leaves 0 preemptible, 1 busy, 2-3 free: the free pair 2-3;
//   - leaves 0-1 free, 2-3 preemptible: the first pair, free;
//   - leaves 0 free, 1 preemptible, 2 busy, 3 free, 2 wanted: no pair is
//     free, the first with two available is 0-1, free leaf first;
//   - a busy leaf in every pair and 2 wanted: the whole node, free then
//     preemptible leaves in order;
//   - nothing fits: nil.
func TestPickLeaves(t *testing.T) {
	const B, F, P = leafBusy, leafFree, leafPreemptible
	for _, tc := range []struct {
		state []uint8
		n     int
		want  []int
	}{
		{[]uint8{P, P, F, F}, 2, []int{2, 3}},
		{[]uint8{P, B, F, F}, 2, []int{2, 3}},
		{[]uint8{F, F, P, P}, 2, []int{0, 1}},
		{[]uint8{F, P, B, F}, 2, []int{0, 1}},
		{[]uint8{B, F, P, B}, 2, []int{1, 2}},
		{[]uint8{P, F, F, P}, 1, []int{1}},
		{[]uint8{P, F, F, P}, 3, []int{1, 2, 0}},
		{[]uint8{B, B, B, F}, 2, nil},
	} {
		got := pickLeaves(tc.state, []int{1, 2, 4}, tc.n, nil)
		if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("pickLeaves(%v, %d) = %v, want %v", tc.state, tc.n, got, tc.want)
		}
	}
}

// The preemption pass orders nodes with fewest devices held at a
// priority above the request's first; a group at the request's own
// priority is not above it. Two 4-GPU nodes in one VC, filled by
// packing: n0 holds H (priority 9, 1 GPU) and L0 (priority 1, 3 GPUs),
// n1 holds E (priority 5, 1 GPU) and L1 (priority 1, 3 GPUs). A request at
// priority 5 for 2 GPUs finds nothing free; preempting, both nodes have 4
// GPUs used and 3 preemptible, n0 has 1 above priority 5 and n1 none, so
// it goes to n1 and preempts L1 alone. Counting E as above would tie the
// nodes and take n0 (view order), preempting L0.
func TestPreemptionSkipsNodesWithHigherPriority(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"))
	for _, r := range []Request{
		{Group: "H", VC: "A", Priority: 9, Pods: []int{1}},
		{Group: "L0", VC: "A", Priority: 1, Pods: []int{3}},
		{Group: "E", VC: "A", Priority: 5, Pods: []int{1}},
		{Group: "L1", VC: "A", Priority: 1, Pods: []int{3}},
	} {
		mustPlace(t, s, r)
	}
	node := map[string]string{}
	for _, g := range []string{"H", "L0", "E", "L1"} {
		node[g] = s.groups[g].pods[0][0].Node()
	}
	if node["H"] != node["L0"] || node["E"] != node["L1"] || node["H"] == node["E"] {
		t.Fatalf("setup: nodes %v, want H with L0 and E with L1 on the other node", node)
	}
	d := mustPlace(t, s, Request{Group: "R", VC: "A", Priority: 5, Pods: []int{2}})
	if !slices.Equal(d.Preempted, []string{"L1"}) || d.Pods[0].Node != node["E"] {
		t.Errorf("preempted %v on %s, want [L1] on %s (E's node)", d.Preempted, d.Pods[0].Node, node["E"])
	}
}

// Priorities run from Opportunistic (-1) to MaxPriority (1000), both
// ends included: a request at either end is placed, one beyond either is
// refused naming the range.
func TestPriorityRange(t *testing.T) {
	for _, c := range []struct {
		prio int
		ok   bool
	}{{Opportunistic, true}, {0, true}, {MaxPriority, true}, {MaxPriority + 1, false}, {Opportunistic - 1, false}} {
		s := mustNew(t, twoLevel(1, 4, "  V: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
		_, err := s.Schedule(Request{Group: "G", VC: "V", Priority: c.prio, Pods: []int{1}})
		if (err == nil) != c.ok {
			t.Errorf("priority %d: err %v, want placed %v", c.prio, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "outside -1..1000") {
			t.Errorf("priority %d: %v does not name the range", c.prio, err)
		}
	}
}
