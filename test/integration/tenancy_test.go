//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// Two VCs of one 4-GPU node each under hived, against a real apiserver:
// A's 4-GPU pod and B's two 2-GPU pods bind, each VC on its own node;
// A's next pod waits (A is full) though nothing else would stop it; pods
// naming an unknown VC or a malformed priority stay pending with an event
// saying why. When A's pod is deleted, A's next pod binds.
func TestTenancyTwoVCs(t *testing.T) {
	e := newEnv(t, 2, 4)
	list, err := e.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if len(names) != 2 {
		t.Fatalf("nodes %v", names)
	}
	cells := fmt.Sprintf(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: %s}
  - {cellType: NODE, cellAddress: %s}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`, names[0], names[1])
	path := filepath.Join(t.TempDir(), "cells.yaml")
	if err := os.WriteFile(path, []byte(cells), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Tenancy, cfg.Cells = "hived", path
	e.runScheduler(cfg, "pal")
	vc := func(v, prio string) map[string]string {
		a := map[string]string{kube.AnnVC: v}
		if prio != "" {
			a[kube.AnnPriority] = prio
		}
		return a
	}
	e.createPod(podOpts{name: "a-big", gpus: 4, ann: vc("A", "10")})
	e.eventually(10*time.Second, "a-big bound", func() bool { return e.bound("a-big") })
	e.createPod(podOpts{name: "a-more", gpus: 1, ann: vc("A", "")})
	e.createPod(podOpts{name: "b-0", gpus: 2, ann: vc("B", "0")})
	e.createPod(podOpts{name: "b-1", gpus: 2, ann: vc("B", "")})
	e.createPod(podOpts{name: "c-0", gpus: 1, ann: vc("C", "")})
	e.createPod(podOpts{name: "d-0", gpus: 1, ann: vc("B", "high")})
	e.eventually(10*time.Second, "b-0 and b-1 bound", func() bool { return e.bound("b-0", "b-1") })
	if a, b := e.pod("a-big").Spec.NodeName, e.pod("b-0").Spec.NodeName; a == b || e.pod("b-1").Spec.NodeName != b {
		t.Errorf("a-big on %s, b-0 on %s, b-1 on %s: want A and B on different nodes", a, b, e.pod("b-1").Spec.NodeName)
	}
	for pod, why := range map[string]string{
		"c-0":    `annotation pal.io/vc="C": unknown VC (the cells define A, B)`,
		"d-0":    `annotation pal.io/priority="high": want -1 (opportunistic) or 0..1000`,
		"a-more": "waits at queue position",
	} {
		e.eventually(10*time.Second, pod+": FailedScheduling "+why, func() bool { return e.hasEvent(pod, "FailedScheduling", why) })
		if e.bound(pod) {
			t.Errorf("%s was bound", pod)
		}
	}
	e.checkNoDoubleGPU()
	if err := e.cs.CoreV1().Pods(e.ns).Delete(context.Background(), "a-big", metav1.DeleteOptions{GracePeriodSeconds: ptrInt64(0)}); err != nil {
		t.Fatal(err)
	}
	e.eventually(15*time.Second, "a-more bound after a-big left", func() bool { return e.bound("a-more") })
	if got, want := e.pod("a-more").Spec.NodeName, e.pod("b-0").Spec.NodeName; got == want {
		t.Errorf("a-more on B's node %s", got)
	}
	e.checkNoDoubleGPU()
}
