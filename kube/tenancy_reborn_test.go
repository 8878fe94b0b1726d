package kube

import "testing"

// A guaranteed gang that preempts an evictable opportunistic pod binds
// once the victim is gone, even when the victim's controller makes a pod
// of the same name (a StatefulSet's) before the next round: the new pod
// is a new gang that waits, not the victim still leaving. One 4-GPU node,
// VC B one node cell (fifo, packed-sticky, hived): oj (B, opportunistic,
// 2 GPUs) binds GPUs 0-1; b1 (B, 4 GPUs) preempts it; oj's pod is evicted
// and made again, pending, in the same delivery; b1 must bind within two
// rounds, and oj's new pod waits. Each step checks that no GPU is given
// twice (world.step).
func TestTenancyVictimRebornUnderSameName(t *testing.T) {
	w, at := ojPreemptedByB1(t)
	w.recreateDeleted()
	got := w.step(at, "oj reborn")
	if got != "ns/b1@n0[0,1,2,3]" {
		got = w.step(at, "oj reborn, again")
	}
	if got != "ns/b1@n0[0,1,2,3]" {
		t.Fatalf("two rounds after oj is made again: bound %s, want ns/b1@n0[0,1,2,3]\n%s", got, w.log.String())
	}
	// oj's new pod waits for the cells b1 holds, and binds once b1 ends.
	w.expect(at, "oj waits", "ns/b1@n0[0,1,2,3]")
	w.finish("ns/b1")
	w.step(at, "b1 ends")
	w.expect(at, "oj binds", "ns/oj@n0[0,1]")
}
