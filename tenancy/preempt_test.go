package tenancy

import (
	"fmt"
	"reflect"
	"testing"
)

// step runs one decision and checks the whole state after it.
func step(t *testing.T, s *Scheduler, r Request) Decision {
	t.Helper()
	d, err := s.Schedule(r)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	return d
}

// show renders a decision's outcome compactly: placed, preempting or
// waiting, with its GPUs, victims, cancellations and reprieves.
func show(d Decision) string {
	out := "wait"
	switch {
	case d.Placed:
		out = "placed"
	case d.Preempting:
		out = "preempting"
	}
	for _, p := range d.Pods {
		out += fmt.Sprintf(" %s%v", p.Node, p.GPUs)
	}
	if len(d.Victims) > 0 {
		out += fmt.Sprintf(" victims=%v", d.Victims)
	}
	if len(d.Cancelled) > 0 {
		out += fmt.Sprintf(" cancelled=%v", d.Cancelled)
	}
	if len(d.Reprieved) > 0 {
		out += fmt.Sprintf(" reprieved=%v", d.Reprieved)
	}
	return out
}

// Stateful preemption, derived by hand. Nodes n0 and n1 of 4 GPUs; VC V
// holds one node cell, VC W the other. Every step is followed by Check:
// no device is ever held by two groups, and every reservation and victim
// is consistent.
//
//  1. L (V, priority 0, 4 GPUs) binds V's cell to n0: [0 1 2 3].
//  2. M (V, priority 1, 2 GPUs): no free leaf, so the preemption pass; L's
//     leaves count as free at priority 1, and the first 2-GPU block is
//     [0 1]. L is the victim: M holds GPUs 0 and 1, waits, and L runs on.
//  3. Opportunistic O (W, 4 GPUs) packs away from guaranteed use: n1.
//     O2 (W, 2 GPUs) finds no room: n0 is L's and M's, n1 O's.
//  4. N (V, priority 1, 2 GPUs): M's leaves are at priority 1 (not
//     preemptible at 1), L's [2 3] are: N preempts L there too.
//  5. M asks again: L is still on its GPUs, so it still waits.
//  6. H (V, priority 2, 4 GPUs) needs the whole node: M's and N's leaves
//     are below 2, so it overrides both preemptions (cancelled), their
//     GPUs go back to L, and H preempts L in turn (L is not reprieved).
//  7. L terminates (Release). H asks again and runs on [0 1 2 3]; M and N
//     ask again and wait (no leaf of V is below their priority now).
func TestStatefulPreemption(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  V: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  W: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	s.SetStateful(true)
	steps := []struct {
		r    Request
		want string
	}{
		{Request{Group: "L", VC: "V", Priority: 0, Pods: []int{4}}, "placed n0[0 1 2 3]"},
		{Request{Group: "M", VC: "V", Priority: 1, Pods: []int{2}}, "preempting n0[0 1] victims=[L]"},
		{Request{Group: "O", VC: "W", Priority: Opportunistic, Pods: []int{4}}, "placed n1[0 1 2 3]"},
		{Request{Group: "O2", VC: "W", Priority: Opportunistic, Pods: []int{2}}, "wait"},
		{Request{Group: "N", VC: "V", Priority: 1, Pods: []int{2}}, "preempting n0[2 3] victims=[L]"},
		{Request{Group: "M", VC: "V", Priority: 1, Pods: []int{2}}, "preempting n0[0 1] victims=[L]"},
		{Request{Group: "H", VC: "V", Priority: 2, Pods: []int{4}}, "preempting n0[0 1 2 3] victims=[L] cancelled=[M N]"},
	}
	for i, st := range steps {
		if got := show(step(t, s, st.r)); got != st.want {
			t.Fatalf("step %d (%s): %s, want %s", i+1, st.r.Group, got, st.want)
		}
	}
	if got := s.Leaving(); !reflect.DeepEqual(got, []string{"L"}) {
		t.Fatalf("leaving %v, want [L]", got)
	}
	must(t, s.Release("L"))
	mustCheck(t, s)
	if got := show(step(t, s, Request{Group: "H", VC: "V", Priority: 2, Pods: []int{4}})); got != "placed n0[0 1 2 3]" {
		t.Fatalf("H after L left: %s", got)
	}
	for _, g := range []string{"M", "N"} {
		if got := show(step(t, s, Request{Group: g, VC: "V", Priority: 1, Pods: []int{2}})); got != "wait" {
			t.Fatalf("%s after H runs: %s, want wait", g, got)
		}
	}
}

// A preemptor that no longer needs its cells cancels: its devices go back
// to the victim still on them (reprieved, with its VC leaves and
// priority), and the ones no victim was on become free. One 4-GPU node,
// VC V: P (priority 0, 2 GPUs) on [0 1]; Q (priority 1, 4 GPUs) preempts
// P and holds the node, free GPUs first ([2 3 0 1]); Q is deleted (Release) before P left. P then
// holds [0 1] again at priority 0, so R (priority 0, 2 GPUs) gets [2 3]
// and nothing more (P's leaves are not below 0).
func TestPreemptorCancels(t *testing.T) {
	s := mustNew(t, twoLevel(1, 4, "  V: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	s.SetStateful(true)
	if got := show(step(t, s, Request{Group: "P", VC: "V", Priority: 0, Pods: []int{2}})); got != "placed n0[0 1]" {
		t.Fatal(got)
	}
	if got := show(step(t, s, Request{Group: "Q", VC: "V", Priority: 1, Pods: []int{4}})); got != "preempting n0[2 3 0 1] victims=[P]" {
		t.Fatal(got)
	}
	must(t, s.Release("Q"))
	mustCheck(t, s)
	if got := s.Leaving(); len(got) != 0 {
		t.Fatalf("still leaving: %v", got)
	}
	if prio, demoted, ok := s.GroupInfo("P"); !ok || demoted || prio != 0 {
		t.Fatalf("P: priority %d demoted %v held %v", prio, demoted, ok)
	}
	if got := show(step(t, s, Request{Group: "R", VC: "V", Priority: 0, Pods: []int{2}})); got != "placed n0[2 3]" {
		t.Fatalf("R: %s", got)
	}
	if got := show(step(t, s, Request{Group: "R2", VC: "V", Priority: 0, Pods: []int{1}})); got != "wait" {
		t.Fatalf("R2: %s", got)
	}
}

// A preempting group whose reservation leaves the nodes a later request
// allows is cancelled and placed anew (HiveD cancels a preemption whose
// placement is no longer within the suggested nodes). Two nodes, VC V of
// both: L (priority 0, two pods of 4) holds n0 and n1; M (priority 1, 4
// GPUs, allowed n1 only) preempts L on n1; asked again allowed n0 only,
// M's reservation on n1 is cancelled and it preempts L on n0 instead.
func TestPreemptionFollowsAllowedNodes(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  V: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"))
	s.SetStateful(true)
	step(t, s, Request{Group: "L", VC: "V", Priority: 0, Pods: []int{4, 4}})
	if got := show(step(t, s, Request{Group: "M", VC: "V", Priority: 1, Pods: []int{4}, Nodes: []string{"n1"}})); got != "preempting n1[0 1 2 3] victims=[L]" {
		t.Fatal(got)
	}
	if got := show(step(t, s, Request{Group: "M", VC: "V", Priority: 1, Pods: []int{4}, Nodes: []string{"n0"}})); got != "preempting n0[0 1 2 3] victims=[L] cancelled=[M]" {
		t.Fatal(got)
	}
}

// A preempting group whose reservation turns bad is cancelled and placed
// anew (HiveD cancels a preemption whose placement is no longer
// healthy). Two nodes, VC V of both: L (priority 0, two pods of 4) holds
// n0 and n1; M (priority 1, 4 GPUs) preempts L on n0, the first node;
// device n0/2 is then quarantined while L is still there, so asked
// again, M's reservation is cancelled and it preempts L on n1 instead.
func TestPreemptionLeavesBadHardware(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  V: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"))
	s.SetStateful(true)
	step(t, s, Request{Group: "L", VC: "V", Priority: 0, Pods: []int{4, 4}})
	if got := show(step(t, s, Request{Group: "M", VC: "V", Priority: 1, Pods: []int{4}})); got != "preempting n0[0 1 2 3] victims=[L]" {
		t.Fatal(got)
	}
	must(t, s.Quarantine("n0", 2, true))
	mustCheck(t, s)
	if got := show(step(t, s, Request{Group: "M", VC: "V", Priority: 1, Pods: []int{4}})); got != "preempting n1[0 1 2 3] victims=[L] cancelled=[M]" {
		t.Fatal(got)
	}
}
