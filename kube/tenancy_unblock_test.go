package kube

import (
	corev1 "k8s.io/api/core/v1"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// threeVCCells: four 4-GPU nodes n0-n3, VC A two node cells, B one, C one.
var threeVCCells = nodeCells(4, 2, 1, 1)

// A guaranteed gang whose VC's cell HiveD bound onto an opportunistic
// bare pod's node (no cell was free when it came) waits for a preemption
// the round may never carry out (preemptBarePods off). Once another node
// frees, it must bind there: HiveD binds its VC's cell to the free node,
// and a gang that comes later does not take it. Each step checks that no
// GPU is given twice (world.step).
func TestTenancyPreemptorOfUnevictableMovesToFreedCells(t *testing.T) {
	bare := []metav1.OwnerReference{}
	cases := []struct {
		name  string
		cells string // "" : testdata/two-vcs.yaml (A and B one node cell each)
		nodes int
		run   func(t *testing.T, w *world, at *time.Time)
	}{{
		// The operator trial: c1 (C), a1 and a2 (A) fill three nodes, the
		// bare opportunistic pod opp (VC B) the fourth; b1 (B) needs B's
		// cell, which can only bind opp's node. Job a1 is deleted.
		name: "trial", cells: threeVCCells, nodes: 4,
		run: func(t *testing.T, w *world, at *time.Time) {
			w.create("c1", 4, vcAnn("C", ""), *at)
			w.create("a1", 4, vcAnn("A", ""), at.Add(time.Second))
			w.create("a2", 4, vcAnn("A", ""), at.Add(2*time.Second))
			w.expect(at, "c1, a1, a2", "ns/a1@n0[0,1,2,3] ns/a2@n1[0,1,2,3] ns/c1@n2[0,1,2,3]")
			w.createWith("opp", 4, vcAnn("B", "-1"), *at, bare)
			const four = "ns/a1@n0[0,1,2,3] ns/a2@n1[0,1,2,3] ns/c1@n2[0,1,2,3] ns/opp@n3[0,1,2,3]"
			w.expect(at, "opp", four)
			w.create("b1", 4, vcAnn("B", ""), *at)
			waitsOnce(t, w, at, four, "ns/pod:b1",
				"gang of 1 pods (4 GPUs) waits at queue position 5 under fifo/pal-ma: 0 GPUs free; it needs the cells of pod ns/opp, whose pods may not be evicted (preemptBarePods off)")
			w.remove("ns/a1")
			const after = "ns/a2@n1[0,1,2,3] ns/b1@n0[0,1,2,3] ns/c1@n2[0,1,2,3] ns/opp@n3[0,1,2,3]"
			w.expect(at, "a1 deleted", after)
			// A's second cell can only bind opp's node now: a3 waits there.
			w.create("a3", 4, vcAnn("A", ""), *at)
			for range 3 {
				w.expect(at, "a3", after)
			}
			if why := w.s.lastWhy["ns/pod:a3"]; !strings.HasSuffix(why, "; it needs the cells of pod ns/opp, whose pods may not be evicted (preemptBarePods off)") {
				t.Errorf("a3 waits with %q", why)
			}
		},
	}, {
		// The same on two nodes: a (A) ends and frees n0.
		name: "finished", nodes: 2,
		run: func(t *testing.T, w *world, at *time.Time) {
			bAfterBareO(w, at)
			w.expect(at, "b", "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
			w.finish("ns/a")
			w.expect(at, "a finished", "ns/b@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
		},
	}, {
		// n0 is cordoned as a ends: b still waits on o; once n0 is
		// uncordoned, b binds it.
		name: "uncordoned", nodes: 2,
		run: func(t *testing.T, w *world, at *time.Time) {
			bAfterBareO(w, at)
			w.expect(at, "b", "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
			cordon(w, "n0", true)
			w.finish("ns/a")
			w.expect(at, "n0 cordoned, a finished", "ns/o@n1[0,1,2,3]")
			w.expect(at, "n0 cordoned", "ns/o@n1[0,1,2,3]")
			if why := w.s.lastWhy["ns/pod:b"]; !strings.Contains(why, "it needs the cells of pod ns/o") {
				t.Errorf("b waits with %q", why)
			}
			cordon(w, "n0", false)
			w.expect(at, "n0 uncordoned", "ns/b@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := "testdata/two-vcs.yaml"
			if c.cells != "" {
				file = cellsFile(t, c.cells)
			}
			w, at := hivedWorld(t, file, c.nodes)
			c.run(t, w, at)
		})
	}
}

// bAfterBareO binds a (A) on n0 and the bare opportunistic o (A) on n1
// under testdata/two-vcs.yaml, then creates b (B), which needs B's cell:
// it can only bind o's node.
func bAfterBareO(w *world, at *time.Time) {
	w.t.Helper()
	w.create("a", 4, vcAnn("A", ""), *at)
	w.createWith("o", 4, vcAnn("A", "-1"), *at, []metav1.OwnerReference{}) // bare
	w.expect(at, "a and o", "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
	w.create("b", 4, vcAnn("B", ""), *at)
}

// The same with o a controller's gang under a PodDisruptionBudget that
// allows no disruption: the round may not evict it whatever the config,
// b's reason names the budget rather than preemptBarePods, o's first pod
// is told why it stays, and nothing is evicted.
func TestTenancyBudgetKeepsVictim(t *testing.T) {
	w, at := whyWorld(t, 2)
	w.create("a", 4, vcAnn("A", ""), *at)
	w.create("o", 4, vcAnn("A", "-1"), *at)
	w.expect(at, "a and o", "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
	w.mu.Lock()
	o := w.pods["ns/o"].DeepCopy()
	o.Labels = map[string]string{"app": "o"}
	o.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	w.put(o)
	w.mu.Unlock()
	w.s.budgets.put(pdb("o-budget", "o", 0), false)
	w.create("b", 4, vcAnn("B", ""), *at)
	waitsOnce(t, w, at, "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]", "ns/pod:b",
		"gang of 1 pods (4 GPUs) waits at queue position 3 under fifo/pal-ma: 0 GPUs free; it needs the cells of pod ns/o, whose pods a disruption budget keeps")
	want := "left on n1 GPUs 0,1,2,3, never moved or preempted while its disruption budgets refuse its eviction: its pod ns/o is covered by PodDisruptionBudget ns/o-budget, which allows 0 disruptions now, and the Eviction API would refuse 1 of them"
	if !strings.Contains(w.log.String(), want) {
		t.Errorf("o is not told why it stays (%q):\n%s", want, w.log.String())
	}
}
