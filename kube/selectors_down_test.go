package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A gang whose selector allows only nodes out of the round (cordoned or
// not ready) read "it allows no node with GPUs", as if its selector
// matched nothing: an operator trial (a gang pinned to a cordoned node)
// saw it. It now names them (those with GPUs: a node without is never
// in the round). n0 and n1, n1 cordoned, then with the lifecycle's taint
// too (which no pod's toleration is read against here); a selects n1;
// b selects n2, a node without GPUs.
func TestSelectorWhyNamesNodesOutOfTheRound(t *testing.T) {
	w, at := selectorWorld(t, "packed-sticky")
	cordon(w, "n1", true)
	createOn(w, *at, "a", 2, nil, "n1")
	waitsOnce(t, w, at, "", "ns/pod:a",
		"gang of 1 pods (2 GPUs) waits at queue position 1 under fifo/packed-sticky: 4 GPUs free; its node selector or affinity allows none of the GPUs the placement chose, and the GPUs left free on the nodes it allows cannot hold it: it allows no node with GPUs in the round (n1 cordoned or not ready)")
	w.mu.Lock()
	n1 := w.nodes["n1"].DeepCopy()
	n1.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}}
	w.nodes["n1"] = n1
	w.queue = append(w.queue, worldEvent{key: "node/n1", node: n1})
	w.mu.Unlock()
	w.expect(at, "n1 tainted unschedulable", "")
	if got, want := w.s.lastWhy["ns/pod:a"], "it allows no node with GPUs in the round (n1 cordoned or not ready)"; !strings.HasSuffix(got, want) {
		t.Errorf("with the lifecycle's taint a waits with\n%q, want it to end\n%q", got, want)
	}
	addNode(w, "n2", map[string]string{"zone": "n2"})
	w.mu.Lock()
	n2 := w.nodes["n2"]
	n2.Status.Allocatable = nil
	w.mu.Unlock()
	createOn(w, *at, "b", 1, nil, "n2")
	w.expect(at, "b", "")
	w.expect(at, "b", "")
	if got, want := w.s.lastWhy["ns/pod:b"], "it allows no node with GPUs"; !strings.HasSuffix(got, want) {
		t.Errorf("b waits with\n%q, want it to end\n%q", got, want)
	}
}
