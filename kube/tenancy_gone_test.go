package kube

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// oneNodeB: one 4-GPU node n0, VC B one node cell.
const oneNodeB = `physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
virtualClusters:
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`

// A guaranteed gang that waits on a victim the round may not evict, and
// is deleted while it waits, lets its victim go: the victim no longer
// leaves, and the GPUs beside it are free for the next gang. The operator
// trial (fifo, packed-sticky, hived; one 4-GPU node, VC B one node cell):
// the bare opportunistic pod opp (B, 2 GPUs) binds GPUs 0-1; b1 (B, 4
// GPUs) needs B's cell and waits on opp (preemptBarePods off); Job b1 is
// deleted; oj2 (B, opportunistic, 1 GPU) must bind the next round. Each
// step checks that no GPU is given twice (world.step).
func TestTenancyGonePreemptorFreesItsVictims(t *testing.T) {
	w, at := oneNodeBWorld(t)
	w.createWith("opp", 2, vcAnn("B", "-1"), *at, []metav1.OwnerReference{}) // bare
	const opp = "ns/opp@n0[0,1]"
	w.expect(at, "opp", opp)
	w.create("b1", 4, vcAnn("B", ""), *at)
	waitsOnce(t, w, at, opp, "ns/pod:b1",
		"gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/packed-sticky: 2 GPUs free; it needs the cells of pod ns/opp, whose pods may not be evicted (preemptBarePods off)")
	w.remove("ns/b1")
	w.expect(at, "b1 deleted", opp)
	w.create("oj2", 1, vcAnn("B", "-1"), *at)
	w.expect(at, "oj2", "ns/oj2@n0[2] ns/opp@n0[0,1]")
}

// oneNodeBWorld is a world on oneNodeB under fifo and packed-sticky.
func oneNodeBWorld(t *testing.T) (*world, *time.Time) {
	t.Helper()
	return hivedWorld(t, cellsFile(t, oneNodeB), 1, func(c *Config) { c.Placement = "packed-sticky" })
}

// ojPreemptedByB1 is oneNodeBWorld after its first steps: the
// opportunistic oj (B, 2 GPUs, a controller's pod) binds GPUs 0-1, b1
// (B, 4 GPUs) preempts it, and oj's pod is being deleted.
func ojPreemptedByB1(t *testing.T) (*world, *time.Time) {
	t.Helper()
	w, at := oneNodeBWorld(t)
	w.create("oj", 2, vcAnn("B", "-1"), *at)
	w.expect(at, "oj", "ns/oj@n0[0,1]")
	w.create("b1", 4, vcAnn("B", ""), *at)
	w.step(at, "b1 preempts oj")
	if d := w.deleting(); len(d) != 1 || d[0].Name != "oj" {
		t.Fatalf("being deleted: %v, want oj", d)
	}
	return w, at
}

// The same with an evictable victim: the opportunistic oj (B, 2 GPUs, a
// StatefulSet's pod) binds GPUs 0-1; b1 (B, 4 GPUs) preempts it and oj is
// evicted; Job b1 is deleted while oj's pod terminates. oj's pod comes
// back and must bind again: no reservation outlives b1.
func TestTenancyGonePreemptorOfEvictable(t *testing.T) {
	w, at := ojPreemptedByB1(t)
	w.remove("ns/b1")
	w.step(at, "b1 deleted")
	w.recreateDeleted()
	w.step(at, "oj back")
	w.expect(at, "oj again", "ns/oj@n0[0,1]")
}
