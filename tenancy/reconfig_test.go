package tenancy

import (
	"reflect"
	"strings"
	"testing"
)

// A reconfiguration under running groups, by hand. Nodes n0-n2 of 4 GPUs;
// first A holds two node cells and B one. a1 and a2 (A, 4 GPUs each) bind
// A's cells to n0 and n1, b1 (B, 2 GPUs) B's to n2. The new config gives
// A one node cell and B two. Carried in creation order: a1 keeps A's only
// cell (n0), a2 finds none and is lazily preempted (it runs on n1 as
// opportunistic), b1 keeps B's cell on n2. Then b2 (B, 4 GPUs) binds B's
// second cell to the only free node, n1, where a2 runs: a2 is its victim
// (stateful: b2 waits until a2 leaves). Had the config gone back first, a2
// would have been guaranteed again (reverted).
func TestReconfigureKeepsOrLazilyPreempts(t *testing.T) {
	vcs := func(a, b int) string {
		return "  A: {virtualCells: [{cellType: NODE, cellNumber: " + string(rune('0'+a)) + "}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: " + string(rune('0'+b)) + "}]}\n"
	}
	s := mustNew(t, twoLevel(3, 4, vcs(2, 1)))
	s.SetStateful(true)
	for _, r := range []Request{
		{Group: "a1", VC: "A", Pods: []int{4}}, {Group: "a2", VC: "A", Pods: []int{4}}, {Group: "b1", VC: "B", Pods: []int{2}},
	} {
		mustPlace(t, s, r)
	}
	cfg, err := Parse("new.yaml", []byte(twoLevel(3, 4, vcs(1, 2))))
	if err != nil {
		t.Fatal(err)
	}
	n, rep, err := s.Reconfigure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, n)
	if !reflect.DeepEqual(rep.Kept, []string{"a1", "b1"}) || !reflect.DeepEqual(rep.Demoted, []string{"a2"}) {
		t.Fatalf("kept %v, demoted %v; want [a1 b1] and [a2]", rep.Kept, rep.Demoted)
	}
	for g, node := range map[string]string{"a1": "n0", "a2": "n1", "b1": "n2"} {
		if p, ok := n.Placement(g); !ok || p[0].Node != node {
			t.Errorf("%s runs on %v, want %s", g, p, node)
		}
	}
	if prio, demoted, _ := n.GroupInfo("a2"); prio != Opportunistic || !demoted {
		t.Errorf("a2: priority %d demoted %v", prio, demoted)
	}
	// Back to the first config: a2 is guaranteed again.
	back, err := Parse("old.yaml", []byte(twoLevel(3, 4, vcs(2, 1))))
	if err != nil {
		t.Fatal(err)
	}
	r, rep2, err := n.Reconfigure(back)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, r)
	if !reflect.DeepEqual(rep2.Reverted, []string{"a2"}) || len(rep2.Demoted) != 0 {
		t.Fatalf("back: reverted %v, demoted %v; want [a2] and none", rep2.Reverted, rep2.Demoted)
	}
	// Under the new config, b2 needs a2's node.
	d, err := n.Schedule(Request{Group: "b2", VC: "B", Pods: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, n)
	if !d.Preempting || !reflect.DeepEqual(d.Victims, []string{"a2"}) || d.Pods[0].Node != "n1" {
		t.Fatalf("b2: %+v, want preempting a2 on n1", d)
	}
}

// An infeasible config is refused with the usual error, and the state in
// force does not change.
func TestReconfigureRefusesInfeasible(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	mustPlace(t, s, Request{Group: "a", VC: "A", Pods: []int{4}})
	before := s.dump()
	cfg, err := Parse("big.yaml", []byte(twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 3}]}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Reconfigure(cfg); err == nil || !strings.HasPrefix(err.Error(), "big.yaml:8: field \"virtualClusters.A.virtualCells[0]\"") {
		t.Fatalf("got %v", err)
	}
	if s.dump() != before {
		t.Fatal("a refused config changed the state")
	}
	mustCheck(t, s)
}

// A lazily preempted group is guaranteed again when its cells come back.
// Two 4-GPU nodes, VC A of one node cell, VC B of the other: L (A,
// priority 0, lazily preemptible) binds A's cell to n0; H (A, priority 1)
// lazily preempts it, and A's cell is bound again where no opportunistic
// group runs, n1 (L runs on n0 as opportunistic). When H finishes, A's
// cell is free and n0 can be bound to it again: L is guaranteed again on
// n0 at priority 0.
func TestLazyPreemptionReverts(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	s.SetStateful(true)
	mustPlace(t, s, Request{Group: "L", VC: "A", Pods: []int{4}, LazyPreemptable: true})
	d := mustPlace(t, s, Request{Group: "H", VC: "A", Priority: 1, Pods: []int{4}})
	if d.Pods[0].Node != "n1" || !reflect.DeepEqual(d.Demoted, []string{"L"}) {
		t.Fatalf("H: %+v", d)
	}
	must(t, s.Release("H"))
	mustCheck(t, s)
	if prio, demoted, ok := s.GroupInfo("L"); !ok || demoted || prio != 0 {
		t.Fatalf("L: priority %d demoted %v held %v; want guaranteed again", prio, demoted, ok)
	}
	if p, _ := s.Placement("L"); p[0].Node != "n0" {
		t.Fatalf("L moved to %v", p)
	}
}

// A group lazily preempted by a reconfiguration is guaranteed again by
// the release that frees its VC's cell, without another reconfiguration:
// the new scheduler lists the groups it demoted for the releases to come.
// As above, a2 is demoted when A keeps one node cell, held by a1 on n0;
// once a1 leaves, A's cell is free and binds to n1, where a2 runs.
func TestReconfiguredDemotionRevertsOnRelease(t *testing.T) {
	vcs := func(a, b int) string {
		return "  A: {virtualCells: [{cellType: NODE, cellNumber: " + string(rune('0'+a)) + "}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: " + string(rune('0'+b)) + "}]}\n"
	}
	s := mustNew(t, twoLevel(3, 4, vcs(2, 1)))
	for _, r := range []Request{
		{Group: "a1", VC: "A", Pods: []int{4}}, {Group: "a2", VC: "A", Pods: []int{4}}, {Group: "b1", VC: "B", Pods: []int{2}},
	} {
		mustPlace(t, s, r)
	}
	cfg, err := Parse("new.yaml", []byte(twoLevel(3, 4, vcs(1, 2))))
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := s.Reconfigure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, demoted, _ := n.GroupInfo("a2"); !demoted {
		t.Fatal("a2 is not demoted by the new config")
	}
	if err := n.Release("a1"); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, n)
	if prio, demoted, _ := n.GroupInfo("a2"); prio == Opportunistic || demoted {
		t.Fatalf("a2 after a1 left: priority %d demoted %v, want guaranteed again", prio, demoted)
	}
	if p, ok := n.Placement("a2"); !ok || p[0].Node != "n1" {
		t.Fatalf("a2 runs on %v, want n1", p)
	}
}
