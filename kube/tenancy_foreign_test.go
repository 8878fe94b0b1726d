package kube

import (
	"testing"
)

// Under hived the cells placed gangs on GPUs that pods they did not place
// hold (another scheduler's pods bound to our nodes): the round gave the
// placement back each round (tenancyStage.place), and the gang waited for
// ever with a GPU free beside it and no wait reason. The cells are told
// which GPUs such pods hold (syncExternal), and bad to them those are,
// as a quarantined device is, and closed to opportunistic gangs too.

// foreignCount shows the scheduler another scheduler's running pod of
// gpus GPUs on node n that names no devices: it holds them by count.
func foreignCount(w *world, name, n string, gpus int) {
	p := running(pod(name, gpus, nil, n))
	p.Spec.SchedulerName = "default-scheduler"
	w.s.state.OnBoundPod(p)
}

// Another scheduler's pods hold n1's GPUs 0 and 1 (named in
// pal.io/gpu-indices); an opportunistic gang of 1 GPU that may run only
// on n1 should be bound on GPU 2 or 3, not wait for ever on a cell the
// round gives back each round (the cells do not see the other pods).
func TestTenancyForeignHeldGPUsStarveGang(t *testing.T) {
	w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
	foreignOn(w, "f0", "n1", 0)
	foreignOn(w, "f1", "n1", 1)
	createOn(w, *at, "o", 1, vcAnn("A", "-1"), "n1")
	for range 4 {
		w.expect(at, "o", "ns/o@n1[2]")
	}
}

// A guaranteed gang: another scheduler's pods hold n1's GPUs 0 and 1. A's
// gang of 4 takes n0 (binding prefers a cell without the other pods'
// GPUs); B's one cell can then only be n1, and B sees the two GPUs held
// there as taken (HiveD's doomed-bad cells): its gang of 2 runs on GPUs
// 2 and 3, and one of 3 waits, told that its cells hold 2 free GPUs and 2
// held outside them, on n1. When the other pods end, it runs there.
func TestTenancyForeignGuaranteed(t *testing.T) {
	w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
	foreignOn(w, "f0", "n1", 0)
	foreignOn(w, "f1", "n1", 1)
	w.create("a", 4, vcAnn("A", ""), *at)
	w.create("b", 2, vcAnn("B", ""), *at)
	w.step(at, "a and b")
	for range 3 {
		w.expect(at, "a and b", "ns/a@n0[0,1,2,3] ns/b@n1[2,3]")
	}
	w.create("b3", 3, vcAnn("B", ""), *at)
	waitsOnce(t, w, at, "ns/a@n0[0,1,2,3] ns/b@n1[2,3]", "ns/pod:b3",
		"gang of 1 pods (3 GPUs) waits at queue position 3 under fifo/pal-ma: 0 GPUs free; VC B's cells cannot hold it: 0 of their 4 GPUs free, 2 held by pods outside the cells (n1)")
	w.finish("ns/b")
	w.s.state.OnBoundPodDeleted("ns/f0")
	w.s.state.OnBoundPodDeleted("ns/f1")
	w.step(at, "b3")
	w.expect(at, "b3", "ns/a@n0[0,1,2,3] ns/b3@n1[0,1,2]")
}

// Another scheduler's pods that name no devices hold them by count: the
// Store gives them the highest devices nothing else holds, and the cells
// are told the same ones. On n1, f0 names GPU 0 and fc holds 1 by count
// (GPU 3): an opportunistic gang of 2 on n1 runs on GPUs 1 and 2, and
// another of 1 waits, told that 2 of n1's GPUs are held outside the
// cells.
func TestTenancyForeignCounted(t *testing.T) {
	w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
	foreignOn(w, "f0", "n1", 0)
	foreignCount(w, "fc", "n1", 1)
	createOn(w, *at, "o", 2, vcAnn("A", "-1"), "n1")
	for range 3 {
		w.expect(at, "o", "ns/o@n1[1,2]")
	}
	createOn(w, *at, "o1", 1, vcAnn("A", "-1"), "n1")
	waitsOnce(t, w, at, "ns/o@n1[1,2]", "ns/pod:o1",
		"gang of 1 pods (1 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; the cells on the nodes its node selector or affinity allows cannot hold it: 0 of their 4 GPUs free, 2 held by pods outside the cells (n1)")
}

// A guaranteed gang of A that may run only on n1, where another
// scheduler's pods hold GPUs 0 and 1: A's one cell binds to a node with
// such pods only when no node without them can serve it (n0 can), so the
// gang waits, and is told so, not left without a reason beside n1's two
// free GPUs. When the other pods end, it runs on n1.
func TestTenancyForeignGuaranteedOnlyOnHeldNode(t *testing.T) {
	w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
	foreignOn(w, "f0", "n1", 0)
	foreignOn(w, "f1", "n1", 1)
	createOn(w, *at, "a", 2, vcAnn("A", ""), "n1")
	waitsOnce(t, w, at, "", "ns/pod:a",
		"gang of 1 pods (2 GPUs) waits at queue position 1 under fifo/pal-ma: 6 GPUs free; its candidate nodes with room (n1) hold pods outside the cells, and a cell of VC A binds to such a node only when no node without them can serve it")
	w.s.state.OnBoundPodDeleted("ns/f0")
	w.s.state.OnBoundPodDeleted("ns/f1")
	w.step(at, "a")
	w.expect(at, "a", "ns/a@n1[0,1]")
}

// Six nodes, A and B two node cells each; another scheduler's pods hold
// n5's GPUs 0 and 1. A's gang h2 may run only on n5, and A's cells bind
// there only when no node without such pods can serve them, so it waits.
// A's placer gave h2 two GPUs of A's view each round all the same, the
// commit refused them, and A's second gang of 4, fa2, waited behind that
// unused room with n3 and n4 free and no reason given. Now what cannot
// be committed is left out and the rest placed again: fa2 runs, and h2
// is told A's cells are full.
func TestTenancyUncommittedGangLeavesRoom(t *testing.T) {
	w, at := cellsWorld(t, cellsFile(t, nodeCells(6, 2, 2)), 6)
	foreignOn(w, "f0", "n5", 0)
	foreignOn(w, "f1", "n5", 1)
	createOn(w, *at, "h2", 2, vcAnn("A", "100"), "n5")
	w.step(at, "h2")
	for _, n := range []string{"fa1", "fa2"} {
		w.create(n, 4, vcAnn("A", "100"), *at)
	}
	for _, n := range []string{"fb1", "fb2"} {
		w.create(n, 4, vcAnn("B", "100"), *at)
	}
	waitsOnce(t, w, at, "ns/fa1@n0[0,1,2,3] ns/fa2@n1[0,1,2,3] ns/fb1@n2[0,1,2,3] ns/fb2@n3[0,1,2,3]", "ns/pod:h2",
		"gang of 1 pods (2 GPUs) waits at queue position 1 under fifo/pal-ma: 6 GPUs free; VC A's cells cannot hold it: 0 of their 8 GPUs free")
}
