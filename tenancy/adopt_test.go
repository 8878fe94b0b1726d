package tenancy

import (
	"strings"
	"testing"
)

// Adopt after a restart: the first gang of A found running takes A's one
// cell, a second runs on lazily preempted, and B's request binds B's cell
// to the second's node and preempts it; the invariants hold throughout.
// A device in use or outside the cells is an error that changes nothing.
func TestAdoptRunningGroups(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, oneNodeEach))
	s.SetStateful(true) // as on Kubernetes: a preemptor waits for its victims
	ok, err := s.Adopt(Request{Group: "a1", VC: "A"}, []Pod{{Node: "n1", GPUs: []int{0, 1, 2, 3}}})
	if err != nil || !ok {
		t.Fatalf("a1: guaranteed %v, %v", ok, err)
	}
	mustCheck(t, s)
	ok, err = s.Adopt(Request{Group: "a2", VC: "A"}, []Pod{{Node: "n0", GPUs: []int{0, 1}}})
	if err != nil || ok {
		t.Fatalf("a2: guaranteed %v, %v; want lazily preempted", ok, err)
	}
	if prio, demoted, _ := s.GroupInfo("a2"); prio != Opportunistic || !demoted {
		t.Errorf("a2: priority %d, demoted %v", prio, demoted)
	}
	mustCheck(t, s)
	for _, c := range []struct {
		pod  Pod
		want string
	}{
		{Pod{Node: "n0", GPUs: []int{1, 2}}, "device n0/1 is group a2's"},
		{Pod{Node: "n9", GPUs: []int{0}}, "no device n9/0 in the cells"},
	} {
		if _, err := s.Adopt(Request{Group: "x", VC: "B"}, []Pod{c.pod}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.pod, err, c.want)
		}
		mustCheck(t, s)
	}
	// A's cell is taken, so a new A gang has nowhere to go...
	if d, err := s.Schedule(Request{Group: "a3", VC: "A", Pods: []int{4}}); err != nil || d.Placed || d.Preempting {
		t.Fatalf("a3: %+v, %v; want it to wait", d, err)
	}
	// ...and B's cell binds n0, where a2 runs lazily preempted.
	d, err := s.Schedule(Request{Group: "b1", VC: "B", Pods: []int{4}})
	if err != nil || !d.Preempting || len(d.Victims) != 1 || d.Victims[0] != "a2" {
		t.Fatalf("b1: %+v, %v; want it to preempt a2", d, err)
	}
	mustCheck(t, s)
	if err := s.Release("a2"); err != nil {
		t.Fatal(err)
	}
	mustPlace(t, s, Request{Group: "b1", VC: "B", Pods: []int{4}})
	// The adopted a1 is released like any group.
	if err := s.Release("a1"); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
}
