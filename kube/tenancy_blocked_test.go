package kube

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A guaranteed gang whose cells hold both a bare opportunistic pod (opp,
// which the round may not evict: preemptBarePods off) and an evictable
// opportunistic gang (oj) cannot run while opp stays: its preemption
// must evict nobody, oj included, round after round, while the gang
// waits naming opp. It binds once cells free elsewhere; a later gang
// that needs opp's cells evicts nobody either. Each step checks that no
// GPU is given twice (world.step).
func TestTenancyPreemptionBlockedByUnevictableEvictsNobody(t *testing.T) {
	bare := []metav1.OwnerReference{}
	const waitsOnOpp = "it needs the cells of pod ns/opp, whose pods may not be evicted (preemptBarePods off)"
	// steady runs rounds, each leaving want bound, no pod evicted and
	// gang key waiting on opp.
	steady := func(t *testing.T, w *world, at *time.Time, what, want, key string) {
		t.Helper()
		for range 4 {
			w.expect(at, what, want)
			if ps := w.deleting(); len(ps) > 0 {
				t.Fatalf("%s: pod %s/%s evicted, though %s cannot run while opp stays\n%s", what, ps[0].Namespace, ps[0].Name, key, w.log.String())
			}
		}
		if why := w.s.lastWhy[key]; !strings.HasSuffix(why, "; "+waitsOnOpp) {
			t.Errorf("%s: %s waits with %q", what, key, why)
		}
	}
	cases := []struct {
		name  string
		cells string
		nodes int
		run   func(t *testing.T, w *world, at *time.Time)
	}{{
		// The operator trial's smallest case: one node, one VC; opp and
		// oj (2 GPUs each) fill it, b1 (4 GPUs) needs the node. Once opp
		// ends, b1's preemption goes on: oj is evicted, and b1 binds once it
		// is gone.
		name: "one node", cells: nodeCells(1, 1), nodes: 1,
		run: func(t *testing.T, w *world, at *time.Time) {
			w.createWith("opp", 2, vcAnn("A", "-1"), *at, bare)
			w.create("oj", 2, vcAnn("A", "-1"), at.Add(time.Second))
			const both = "ns/oj@n0[2,3] ns/opp@n0[0,1]"
			w.expect(at, "opp and oj", both)
			w.create("b1", 4, vcAnn("A", ""), *at)
			steady(t, w, at, "b1", both, "ns/pod:b1")
			w.finish("ns/opp")
			w.expect(at, "opp finished", "ns/oj@n0[2,3]")
			if ps := w.deleting(); len(ps) != 1 || ps[0].Name != "oj" {
				t.Fatalf("opp finished: evicting %d pods, want oj alone", len(ps))
			}
			// Its Job's controller makes a new pod.
			w.remove("ns/oj")
			w.create("oj-2", 2, vcAnn("A", "-1"), *at)
			w.expect(at, "oj gone", "ns/b1@n0[0,1,2,3]")
		},
	}, {
		// Two nodes, A and B one node cell each: a (A) runs on n0, opp
		// and oj (B, opportunistic) on n1; b1 (B) needs B's cell, which
		// can only bind n1. a ends: b1 binds n0. Then a2 (A) needs A's
		// cell, which can only bind n1 now: it waits, evicting nobody.
		name: "freed elsewhere", nodes: 2,
		run: func(t *testing.T, w *world, at *time.Time) {
			w.create("a", 4, vcAnn("A", ""), *at)
			w.createWith("opp", 2, vcAnn("B", "-1"), *at, bare)
			w.create("oj", 2, vcAnn("B", "-1"), at.Add(time.Second))
			const three = "ns/a@n0[0,1,2,3] ns/oj@n1[2,3] ns/opp@n1[0,1]"
			w.expect(at, "a, opp and oj", three)
			w.create("b1", 4, vcAnn("B", ""), *at)
			steady(t, w, at, "b1", three, "ns/pod:b1")
			w.finish("ns/a")
			const moved = "ns/b1@n0[0,1,2,3] ns/oj@n1[2,3] ns/opp@n1[0,1]"
			w.expect(at, "a finished", moved)
			w.create("a2", 4, vcAnn("A", ""), *at)
			steady(t, w, at, "a2", moved, "ns/pod:a2")
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
