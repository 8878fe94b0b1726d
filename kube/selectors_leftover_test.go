package kube

import (
	"strings"
	"testing"
)

// The placers read no labels: a gang whose selector allows no free GPU
// is still given some, which the selector gate takes back, and a gang
// behind it that the placer left without GPUs for want of those was not
// offered them: it waited, round after round, with GPUs free that it may
// use. An operator trial (six 4-GPU nodes, FIFO: a 20-GPU gang selecting
// a pool no node is in, then an 8-GPU gang without a selector) saw the
// second wait with "20 of their 20 GPUs free" for as long as the first
// stayed. Now, outside tenancy, Themis and backfill, the gangs the answer
// left without GPUs are placed alone, in order, on what the gate gave
// back. A placer that is not sticky (pal) showed two more: b, running
// where its selector allows, was moved by the placer off its node and
// preempted (evicted) because a, behind it, was given its GPUs; and once
// b left, a (placed on c's node, then taken off it) waited while c was
// migrated, for no gain, onto the node a selects. A running gang moved
// off its allowed nodes now keeps its GPUs from the gangs behind it, and
// a running gang behind a waiting one that the placer moved onto the
// nodes that one allows goes back to its own GPUs when they are free.
// n0 and n1, 4 GPUs each: b runs on n1; a (4 GPUs) selects n1; c (4
// GPUs, no selector) comes after a; b leaves.
func TestSelectorGateGivesBackWhatItTookOff(t *testing.T) {
	for _, placement := range []string{"packed-sticky", "pal", "pal-ma"} {
		t.Run(placement, func(t *testing.T) {
			w, at := selectorWorld(t, placement)
			createOn(w, *at, "b", 4, nil, "n1")
			w.expect(at, "round 1", "ns/b@n1[0,1,2,3]")
			createOn(w, *at, "a", 4, nil, "n1")
			w.create("c", 4, nil, *at)
			w.expect(at, "round 2", "ns/b@n1[0,1,2,3] ns/c@n0[0,1,2,3]")
			if log := w.log.String(); !strings.Contains(log, "allows 1 node (n1): 0 of their 4 GPUs free") {
				t.Errorf("a's wait does not name what its selector allows:\n%s", log)
			}
			if log := w.log.String(); strings.Contains(log, "evicting gang") {
				t.Errorf("round 2 evicts:\n%s", log)
			}
			w.remove("ns/b")
			w.expect(at, "round 3, b gone", "ns/a@n1[0,1,2,3] ns/c@n0[0,1,2,3]")
			if log := w.log.String(); strings.Contains(log, "evicting gang") {
				t.Errorf("round 3 evicts:\n%s", log)
			}
			if err := w.check(); err != nil {
				t.Error(err)
			}
		})
	}
}
