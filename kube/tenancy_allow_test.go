package kube

import (
	"maps"
	"testing"
	"time"
)

// relabel gives a node new labels, as its informer would show them.
func relabel(w *world, name string, labels map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[name].DeepCopy()
	n.Labels = maps.Clone(labels)
	w.nodes[name] = n
	w.queue = append(w.queue, worldEvent{key: "node/" + name, node: n})
}

// addNode adds a 4-GPU node with labels, as its informer would show it.
func addNode(w *world, name string, labels map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := node(name, 4)
	n.Labels = maps.Clone(labels)
	w.nodes[name] = n
	w.queue = append(w.queue, worldEvent{key: "node/" + name, node: n})
}

// The nodes a gang's node selector or affinity allows are remembered by
// their content across rounds (tenancyStage.allowMemo) and never served
// stale: each case's gangs bind where the nodes of their round allow,
// on testdata/two-vcs.yaml (VC A and B one 4-GPU node cell each) or on
// three cells nodes (n0-n2, A and B one node cell each), every node
// labelled zone=<its name>.
func TestTenancyAllowFollowsNodes(t *testing.T) {
	three := cellsFile(t, nodeCells(3, 1, 1))
	for _, c := range []struct {
		name  string
		cells string
		nodes int
		run   func(w *world, at *time.Time)
	}{{
		// a selects zone=x, which no node has, and waits two rounds; n1
		// is labelled zone=x: a binds n1 the next round.
		name: "a node's labels change", cells: "testdata/two-vcs.yaml", nodes: 2,
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 4, vcAnn("A", ""), "x")
			w.expect(at, "round 1", "")
			w.expect(at, "round 2", "")
			relabel(w, "n1", map[string]string{"zone": "x"})
			w.expect(at, "round 3, n1 relabelled", "ns/a@n1[0,1,2,3]")
		},
	}, {
		// a (A) selects n1 and b (B) n0, in one round; then c (A,
		// opportunistic) by affinity n0 and n1, and d (B,
		// opportunistic) by a selector of n1, the rounds after a and b
		// leave.
		name: "gangs of different selectors", cells: "testdata/two-vcs.yaml", nodes: 2,
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 4, vcAnn("A", ""), "n1")
			createOn(w, *at, "b", 4, vcAnn("B", ""), "n0")
			w.expect(at, "round 1", "ns/a@n1[0,1,2,3] ns/b@n0[0,1,2,3]")
			w.remove("ns/a")
			createIn(w, *at, "c", 2, vcAnn("A", "-1"), "n0", "n1")
			createOn(w, *at, "d", 4, vcAnn("B", "-1"), "n1")
			w.expect(at, "round 2, a gone", "ns/b@n0[0,1,2,3] ns/c@n1[0,1]")
			w.remove("ns/c")
			w.expect(at, "round 3, c gone", "ns/b@n0[0,1,2,3] ns/d@n1[0,1,2,3]")
		},
	}, {
		// a selects zone=n2, a cells node the cluster lacks, and waits
		// two rounds; n2 joins: a binds n2 the next round.
		name: "a node added", cells: three, nodes: 2,
		run: func(w *world, at *time.Time) {
			createOn(w, *at, "a", 4, vcAnn("A", ""), "n2")
			w.expect(at, "round 1", "")
			w.expect(at, "round 2", "")
			addNode(w, "n2", map[string]string{"zone": "n2"})
			w.expect(at, "round 3, n2 added", "ns/a@n2[0,1,2,3]")
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			w, at := cellsWorld(t, c.cells, c.nodes)
			c.run(w, at)
		})
	}
}
