package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// taint gives node name the taints ts, as its informer would show it.
func taint(w *world, name string, ts ...corev1.Taint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[name].DeepCopy()
	n.Spec.Taints = ts
	w.nodes[name] = n
	w.queue = append(w.queue, worldEvent{key: "node/" + name, node: n})
}

// tolerate makes pod ns/name tolerate key=value (Equal) of any effect.
func tolerate(w *world, name, key, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods["ns/"+name]
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value})
}

// retolerate has pod ns/name, already shown to the scheduler, updated to
// tolerate key=value too: a new object, as an update is.
func retolerate(w *world, name, key, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pods["ns/"+name].DeepCopy()
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value})
	w.put(p)
}

var dedicated = corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}

// An operator's taint keeps off a node only the gangs whose pods do not
// tolerate it, as kube-scheduler's TaintToleration filter does: before,
// any taint but nvidia.com/gpu's took the node out of the round
// altogether, and a pod that tolerated it waited for ever. Three 4-GPU
// nodes n0, n1, n2, FIFO and packed-sticky (which fills n0, then n1).
func TestTaintsKeepOffOnlyWhoDoesNotTolerate(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(w *world, at *time.Time)
	}{{
		// n1 is tainted: a, which does not tolerate it, is given n1
		// by the packer (n0 is full), refused, and placed alone on
		// n2; b, which does, takes n1.
		name: "NoSchedule",
		run: func(w *world, at *time.Time) {
			taint(w, "n1", dedicated)
			w.create("h", 4, nil, *at)
			w.expect(at, "round 1", "ns/h@n0[0,1,2,3]")
			w.create("a", 4, nil, *at)
			w.expect(at, "round 2", "ns/a@n2[0,1,2,3] ns/h@n0[0,1,2,3]")
			w.create("b", 4, nil, *at)
			tolerate(w, "b", "dedicated", "ml")
			w.expect(at, "round 3", "ns/a@n2[0,1,2,3] ns/b@n1[0,1,2,3] ns/h@n0[0,1,2,3]")
		},
	}, {
		// n0 and n2 are full; c, not tolerating n1's NoExecute taint,
		// waits with n1 free, and says what it may use, until it is
		// updated to tolerate it.
		name: "NoExecute, the rest full",
		run: func(w *world, at *time.Time) {
			taint(w, "n1", corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoExecute})
			w.create("h", 4, nil, *at)
			w.create("i", 4, nil, *at)
			w.expect(at, "round 1", "ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
			w.create("c", 2, nil, *at)
			w.expect(at, "round 2", "ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
			want := "4 GPUs free; its node selector, affinity and tolerations allow none of the GPUs the placement chose, and the GPUs left free on the nodes it allows cannot hold it" +
				": it allows 2 nodes (n0, n2): 0 of their 8 GPUs free"
			if got := w.s.lastWhy["ns/pod:c"]; !strings.HasSuffix(got, want) {
				w.t.Errorf("c waits with\n%q\nwant it to end\n%q", got, want)
			}
			w.expect(at, "round 3", "ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
			// c is updated to tolerate the taint: it takes n1 (what
			// the scheduler remembered of its old object is not read).
			retolerate(w, "c", "dedicated", "ml")
			w.expect(at, "round 4, c tolerates", "ns/c@n1[0,1] ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
		},
	}, {
		// Taints that keep no one off: PreferNoSchedule, and
		// nvidia.com/gpu's (every GPU pod tolerates it): the packer's
		// n1 stands.
		name: "PreferNoSchedule and nvidia.com/gpu",
		run: func(w *world, at *time.Time) {
			taint(w, "n1", corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectPreferNoSchedule},
				corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule})
			w.create("h", 4, nil, *at)
			w.expect(at, "round 1", "ns/h@n0[0,1,2,3]")
			w.create("a", 4, nil, *at)
			w.expect(at, "round 2", "ns/a@n1[0,1,2,3] ns/h@n0[0,1,2,3]")
		},
	}, {
		// The node lifecycle's own taint (not ready) takes n1 out of
		// the round, as a cordon does, even for a pod that tolerates
		// it.
		name: "a node lifecycle taint",
		run: func(w *world, at *time.Time) {
			taint(w, "n1", corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule})
			w.create("h", 4, nil, *at)
			w.expect(at, "round 1", "ns/h@n0[0,1,2,3]")
			w.create("a", 4, nil, *at)
			w.mu.Lock()
			w.pods["ns/a"].Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
			w.mu.Unlock()
			w.expect(at, "round 2", "ns/a@n2[0,1,2,3] ns/h@n0[0,1,2,3]")
		},
	}, {
		// The taint comes after a runs on n1: a stays (NoSchedule
		// does not move what runs), and the taint's removal lets d,
		// which does not tolerate it, in.
		name: "tainted under a running gang, then untainted",
		run: func(w *world, at *time.Time) {
			w.create("h", 4, nil, *at)
			w.expect(at, "round 1", "ns/h@n0[0,1,2,3]")
			w.create("a", 2, nil, *at)
			w.expect(at, "round 1b", "ns/a@n1[0,1] ns/h@n0[0,1,2,3]")
			taint(w, "n1", dedicated)
			w.create("i", 4, nil, *at)
			w.expect(at, "round 2", "ns/a@n1[0,1] ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
			w.create("d", 2, nil, *at)
			w.expect(at, "round 3, d waits", "ns/a@n1[0,1] ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
			taint(w, "n1")
			w.expect(at, "round 4, untainted", "ns/a@n1[0,1] ns/d@n1[2,3] ns/h@n0[0,1,2,3] ns/i@n2[0,1,2,3]")
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testCfg()
			cfg.Placement = "packed-sticky"
			w := newWorld(t, cfg, 1, 3, 4)
			at := time.Unix(1_700_000_000, 0)
			c.run(w, &at)
			if err := w.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Under hived the cells bind a gang only to nodes it tolerates: with n0
// tainted, VC A's gang a (no toleration), whose cell would bind n0 first,
// has it bound to n1, and VC B's b, which tolerates the taint, takes n0.
// The other way round, b2 of VC B without the toleration takes n1 first,
// and a, which may use only n1, waits: its VC's cell would be n0.
func TestTaintsUnderHived(t *testing.T) {
	t.Run("each where it may run", func(t *testing.T) {
		w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
		taint(w, "n0", dedicated)
		w.create("a", 4, vcAnn("A", "1"), *at)
		w.create("b", 4, vcAnn("B", "1"), *at)
		tolerate(w, "b", "dedicated", "ml")
		w.expect(at, "round 1", "ns/a@n1[0,1,2,3] ns/b@n0[0,1,2,3]")
		if err := w.check(); err != nil {
			t.Error(err)
		}
	})
	t.Run("the untainted node taken", func(t *testing.T) {
		w, at := cellsWorld(t, "testdata/two-vcs.yaml", 2)
		taint(w, "n0", dedicated)
		w.create("b2", 4, vcAnn("B", "1"), *at)
		w.expect(at, "round 1", "ns/b2@n1[0,1,2,3]")
		w.create("a", 4, vcAnn("A", "1"), *at)
		w.expect(at, "round 2", "ns/b2@n1[0,1,2,3]")
		w.expect(at, "round 3", "ns/b2@n1[0,1,2,3]")
		if err := w.check(); err != nil {
			t.Error(err)
		}
	})
}

// A gang cut off by a crash whose missing member's recorded node is
// tainted is completed there when the member tolerates the taint (the
// cordoned and untolerated cases evict it: see
// TestRoundEvictsGangWhoseSlotIsOnCordonedNode).
func TestCrashCutGangCompletedOnATaintItTolerates(t *testing.T) {
	n2 := node("n2", 4)
	n2.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	tol := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
		return p
	}
	w0 := running(owned(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, bindInfo3), "n0")))
	objs := []runtime.Object{node("n0", 4), node("n1", 4), n2, w0,
		owned(pod("w-1", 2, gangAnn("w", 3), "")), tol(owned(pod("w-2", 2, gangAnn("w", 3), "")))}
	cs, fc := newFake(t, objs...)
	s, logs := startLogged(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	got := keys(fc.binds)
	slices.Sort(got)
	if !slices.Equal(got, []string{"w-1", "w-2"}) || len(fc.evicted) > 0 {
		t.Fatalf("bound %v, evicted %v; want w-1 and w-2 bound to their recorded slots, nothing evicted\n%s", got, fc.evicted, logs.String())
	}
	if b := fc.binds["w-2"]; b.Target.Name != "n2" {
		t.Errorf("w-2 bound to %s, want n2", b.Target.Name)
	}
}
