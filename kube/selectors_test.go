package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// selectorWorld is two 4-GPU nodes, n0 and n1, labelled zone=<name>,
// without tenancy, under placement.
func selectorWorld(t *testing.T, placement string) (*world, *time.Time) {
	t.Helper()
	cfg := testCfg()
	cfg.Placement = placement
	w := newWorld(t, cfg, 1, 2, 4)
	for name, nd := range w.nodes {
		nd.Labels = map[string]string{"zone": name}
	}
	at := time.Unix(1_700_000_000, 0)
	return w, &at
}

// Without tenancy a gang is bound only on nodes its node selector or
// required node affinity allows: the placers, which know nothing of
// labels, pick n0 first on an idle cluster, and a gang that selects n1
// must be placed there instead, or wait while n1 cannot hold it.
func TestSelectorsWithoutTenancy(t *testing.T) {
	for _, c := range []struct {
		name, placement string
		run             func(w *world, at *time.Time)
	}{{
		// a (4 GPUs) selects n1 on an idle cluster: the packer's n0
		// is refused, and a is placed alone on n1.
		name: "placed on the node it selects", placement: "packed-sticky",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 4, nil, "n1")
			w.expect(at, "round 1", "ns/a@n1[0,1,2,3]")
		},
	}, {
		name: "placed on the node it selects, pal", placement: "pal",
		run: func(w *world, at *time.Time) {
			createIn(w, *at, "a", 2, nil, "n1")
			w.expect(at, "round 1", "ns/a@n1[0,1]")
		},
	}, {
		// b takes n1; a, selecting n1 too, waits with n0 idle and says
		// why, and binds n1 once b is gone.
		name: "waits while its node is full", placement: "packed-sticky",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "b", 4, nil, "n1")
			w.expect(at, "round 1", "ns/b@n1[0,1,2,3]")
			createOn(w, *at, "a", 4, nil, "n1")
			w.expect(at, "round 2", "ns/b@n1[0,1,2,3]")
			if log := w.log.String(); !strings.Contains(log, "its node selector or affinity allows none of the GPUs the placement chose") {
				t.Errorf("a's wait does not name its selector:\n%s", log)
			}
			w.remove("ns/b")
			w.expect(at, "round 3, b gone", "ns/a@n1[0,1,2,3]")
		},
	}, {
		// a selects zone x, which no node is in, and waits; n1
		// relabelled into it takes a the next round (a label change
		// is a change the planner may not skip).
		name: "a node relabelled to match", placement: "packed-sticky",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 4, nil, "x")
			w.expect(at, "round 1", "")
			w.expect(at, "round 2", "")
			relabel(w, "n1", map[string]string{"zone": "x"})
			w.expect(at, "round 3, n1 relabelled", "ns/a@n1[0,1,2,3]")
		},
	}, {
		// a runs on n1, which is then relabelled: it stays, as under
		// kube-scheduler (IgnoredDuringExecution).
		name: "a running gang stays on a relabelled node", placement: "packed-sticky",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 4, nil, "n1")
			w.expect(at, "round 1", "ns/a@n1[0,1,2,3]")
			relabel(w, "n1", map[string]string{"zone": "x"})
			w.expect(at, "round 2, n1 relabelled", "ns/a@n1[0,1,2,3]")
			w.expect(at, "round 3", "ns/a@n1[0,1,2,3]")
			if log := w.log.String(); strings.Contains(log, "evicting gang") {
				t.Errorf("a evicted after n1's relabelling:\n%s", log)
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			w, at := selectorWorld(t, c.placement)
			c.run(w, at)
			if err := w.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// A gang's pods that name different node selectors allow the nodes all
// of them allow; a pod naming none allows every node.
func TestSelectorsOfAGangsPods(t *testing.T) {
	w, at := selectorWorld(t, "packed-sticky")
	w.expect(at, "round 1", "") // the store has read the nodes
	on := func(name, zone string) *corev1.Pod {
		p := pod(name, 2, nil, "")
		if zone != "" {
			p.Spec.NodeSelector = map[string]string{"zone": zone}
		}
		return p
	}
	for _, c := range []struct {
		name string
		pods []*corev1.Pod
		want string // the nodes allowed, or "all"
	}{
		{"none selects", []*corev1.Pod{on("a", ""), on("b", "")}, "all"},
		{"one selects n1", []*corev1.Pod{on("a", ""), on("b", "n1")}, "n1"},
		{"both select n1", []*corev1.Pod{on("a", "n1"), on("b", "n1")}, "n1"},
		{"n0 and n1", []*corev1.Pod{on("a", "n0"), on("b", "n1")}, ""},
	} {
		ok := w.s.allows(&gang{Pending: c.pods})
		got := "all"
		if ok != nil {
			var in []string
			for _, n := range []string{"n0", "n1"} {
				if ok(n) {
					in = append(in, n)
				}
			}
			got = strings.Join(in, ",")
		}
		if got != c.want {
			t.Errorf("%s: allows %q, want %q", c.name, got, c.want)
		}
	}
}

// A waiting gang that names a node selector or required affinity says,
// outside hived, how much of what it allows is free: the round's "N GPUs
// free" counts GPUs it may not use. Three 4-GPU nodes n0, n1, n2
// labelled zone=<name>, FIFO and packed-sticky.
func TestSelectorWaitCountsWhatItAllows(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(w *world, at *time.Time)
		key  string // whose wait reason
		want string // its end
	}{{
		// b holds 2 of n1's GPUs; a, 4 GPUs on n1, is given n0 by the
		// packer, refused by the gate, and waits; c then takes one more
		// of n1's GPUs.
		name: "its node is partly held",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "b", 2, nil, "n1")
			w.expect(at, "round 1", "ns/b@n1[0,1]")
			createOn(w, *at, "a", 4, nil, "n1")
			w.expect(at, "round 2", "ns/b@n1[0,1]")
			if why := w.s.lastWhy["ns/pod:a"]; !strings.HasSuffix(why, "it allows 1 node (n1): 2 of their 4 GPUs free") {
				w.t.Errorf("round 2: a waits with %q", why)
			}
			// c takes one more of n1's GPUs: a's next reason counts 1.
			createOn(w, *at, "c", 1, nil, "n1")
			w.expect(at, "round 3", "ns/b@n1[0,1] ns/c@n1[2]")
		},
		key: "ns/pod:a",
		want: "9 GPUs free; its node selector or affinity allows none of the GPUs the placement chose, and the GPUs left free on the nodes it allows cannot hold it" +
			": it allows 1 node (n1): 1 of their 4 GPUs free",
	}, {
		// Only 3 GPUs are free, 2 of them on n0, which a (4 GPUs)
		// selects: the placement gives it nothing, and the gate has
		// nothing to say.
		name: "more than is free",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "h0", 2, nil, "n0")
			createOn(w, *at, "h1", 3, nil, "n1")
			createOn(w, *at, "h2", 4, nil, "n2")
			w.expect(at, "round 1", "ns/h0@n0[0,1] ns/h1@n1[0,1,2] ns/h2@n2[0,1,2,3]")
			createOn(w, *at, "a", 4, nil, "n0")
			w.expect(at, "round 2", "ns/h0@n0[0,1] ns/h1@n1[0,1,2] ns/h2@n2[0,1,2,3]")
		},
		key:  "ns/pod:a",
		want: "3 GPUs free; its node selector or affinity allows 1 node (n0): 2 of their 4 GPUs free",
	}, {
		// a selects a zone no node is in: given n0 by the packer,
		// refused by the gate.
		name: "no node",
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 1, nil, "elsewhere")
			w.expect(at, "round 1", "")
		},
		key: "ns/pod:a",
		want: "12 GPUs free; its node selector or affinity allows none of the GPUs the placement chose, and the GPUs left free on the nodes it allows cannot hold it" +
			": it allows no node with GPUs",
	}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testCfg()
			cfg.Placement = "packed-sticky"
			w := newWorld(t, cfg, 1, 3, 4)
			for name, nd := range w.nodes {
				nd.Labels = map[string]string{"zone": name}
			}
			at := time.Unix(1_700_000_000, 0)
			c.run(w, &at)
			if got := w.s.lastWhy[c.key]; !strings.HasSuffix(got, c.want) {
				t.Errorf("%s waits with\n%q\nwant it to end\n%q\n(all: %q)", c.key, got, c.want, w.s.lastWhy)
			}
			if err := w.check(); err != nil {
				t.Error(err)
			}
		})
	}
}
