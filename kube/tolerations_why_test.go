package kube

import "testing"

// Under hived a guaranteed gang whose tolerations (or node selector)
// allow only nodes bound to other VCs' cells waits, and its message said
// nothing of why: an operator trial (VC C's gang without the toleration,
// the untainted nodes all bound to A and B) read "8 GPUs free" alone, the
// selector path the same. Its message now says what it allows is bound
// to other VCs. testdata/two-vcs.yaml (A and B one node cell each), n0
// tainted: b (B, no toleration) has B's cell bound to n1; a (A, no
// toleration) may use only n1, and A's cell can bind only n0. The same
// with a node selector for the one node B's cell is bound to. With every
// node tainted the reason that no node of the cells is allowed names
// tolerations too.
func TestTenancyWhyAllowsOnlyOtherVCsNodes(t *testing.T) {
	t.Run("tolerations", func(t *testing.T) {
		w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
		taint(w, "n0", dedicated)
		w.create("b", 4, vcAnn("B", "1"), *at)
		w.expect(at, "round 1", "ns/b@n1[0,1,2,3]")
		w.create("a", 1, vcAnn("A", "1"), *at)
		waitsOnce(t, w, at, "ns/b@n1[0,1,2,3]", "ns/pod:a",
			"gang of 1 pods (1 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; its node selector, affinity and tolerations allow no node VC A's cells may bind: 1 node it allows (n1) is bound to other VCs' cells")
	})
	t.Run("every node tainted", func(t *testing.T) {
		// No node of the cells is allowed: the reason names tolerations,
		// where it read "its node selector or affinity allows no node of
		// VC A's cells" for a gang that names neither.
		w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
		taint(w, "n0", dedicated)
		taint(w, "n1", dedicated)
		w.create("a", 1, vcAnn("A", "1"), *at)
		waitsOnce(t, w, at, "", "ns/pod:a",
			"gang of 1 pods (1 GPUs) waits at queue position 1 under fifo/pal-ma: 8 GPUs free; its node selector, affinity and tolerations allow no node of VC A's cells")
	})
	t.Run("selector", func(t *testing.T) {
		w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
		w.create("b", 4, vcAnn("B", "1"), *at)
		w.expect(at, "round 1", "ns/b@n0[0,1,2,3]")
		createOn(w, *at, "a", 1, vcAnn("A", "1"), "n0")
		waitsOnce(t, w, at, "ns/b@n0[0,1,2,3]", "ns/pod:a",
			"gang of 1 pods (1 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; its node selector or affinity allows no node VC A's cells may bind: 1 node it allows (n0) is bound to other VCs' cells")
	})
}

// A guaranteed gang that may run only on n1, where another scheduler's
// pods hold three of the four GPUs, waits (its VC's cells have room on
// n0), and said nothing of why: an operator trial (VC A's 2-GPU gang
// pinned to a node where other pods held 3 GPUs) read "20 GPUs free"
// alone. Now it says what the nodes it allows leave it.
func TestTenancyWhyAllowedNodesFull(t *testing.T) {
	w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
	foreignOn(w, "f0", "n1", 0)
	foreignOn(w, "f1", "n1", 1)
	foreignOn(w, "f2", "n1", 2)
	createOn(w, *at, "a", 2, vcAnn("A", ""), "n1")
	waitsOnce(t, w, at, "", "ns/pod:a",
		"gang of 1 pods (2 GPUs) waits at queue position 1 under fifo/pal-ma: 5 GPUs free; its node selector or affinity allows 1 node VC A's cells may bind (n1): 1 of their 4 GPUs free, 3 held by pods outside the cells")
}
