//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
)

// nodeNames lists the dev cluster's nodes, sorted.
func (e *env) nodeNames(want int) []string {
	e.t.Helper()
	list, err := e.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if len(names) != want {
		e.t.Fatalf("nodes %v, want %d", names, want)
	}
	return names
}

// writeCells writes a cells file into the test's directory.
func (e *env) writeCells(text string) string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "cells.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// where is a bound pod's node and GPU indices.
func (e *env) where(name string) string {
	p := e.pod(name)
	if p == nil || p.Spec.NodeName == "" {
		return "unbound"
	}
	return p.Spec.NodeName + " " + p.Annotations[kube.AnnGPUIndices]
}

func hivedAnn(kv ...string) map[string]string {
	a := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return a
}

// The pinned and two-SKU cases of pal sim (tenancy/testdata/pools-*),
// through pal-kube scheduler against a real apiserver, in one cells file of
// five 4-GPU nodes: nodes 0-2 of a GPU type, node 1 pinned as A-PIN, VC A
// = one node cell + A-PIN, VC B one node cell; node 3 (K80) and node 4
// (V100) in VC C. The bindings are pal sim's: the 2-GPU pods naming A-PIN
// share node 1 (GPUs 0,1 and 2,3), A's unpinned 4-GPU pod gets A's node
// cell (node 0), B's pod node 2; A's second unpinned pod waits (A-PIN is
// idle, but not for it). C's V100 pod runs on node 4, its pod naming
// nothing on the first type with room (K80, node 3 GPUs 0,1), its K80
// pod on node 3 GPUs 2,3. Pods are created one at a time, in the order of
// pal sim's trace. Then pods finish (are deleted) in pal sim's order, and
// the waiting pods bind as its jobs start: the pinned pods go (A-PIN is
// idle, a-more still waits), then a-node, and a-more gets A's node cell
// again (node 0); C's 4-GPU pod naming nothing and its second V100 pod
// wait for node 4, the first in line binds there when c-v100 goes, the
// second when that one goes. Bare pods may be evicted (preemptBarePods),
// so a pod displaced for a later one of equal priority would show; pods
// created within one second keep their arrival order.
func TestHivedPoolsDevCluster(t *testing.T) {
	e := newEnv(t, 5, 4)
	n := e.nodeNames(5)
	cells := e.writeCells(fmt.Sprintf(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
    K80-NODE: {childCellType: K80, childCellNumber: 4, isNodeLevel: true}
    V100-NODE: {childCellType: V100, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: %s}
  - {cellType: NODE, cellAddress: %s, pinnedCellId: A-PIN}
  - {cellType: NODE, cellAddress: %s}
  - {cellType: K80-NODE, cellAddress: %s}
  - {cellType: V100-NODE, cellAddress: %s}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}], pinnedCells: [{pinnedCellId: A-PIN}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  C: {virtualCells: [{cellType: K80-NODE, cellNumber: 1}, {cellType: V100-NODE, cellNumber: 1}]}
`, n[0], n[1], n[2], n[3], n[4]))
	cfg := testConfig()
	cfg.Tenancy, cfg.Cells, cfg.PreemptBarePods = "hived", cells, true
	e.runScheduler(cfg, "pal")
	steps := []struct {
		pod  string
		gpus int
		ann  map[string]string
		want string // "" waits
	}{
		{"a-pin-0", 2, hivedAnn(kube.AnnVC, "A", kube.AnnPinnedCell, "A-PIN"), n[1] + " 0,1"},
		{"a-pin-1", 2, hivedAnn(kube.AnnVC, "A", kube.AnnPinnedCell, "A-PIN"), n[1] + " 2,3"},
		{"a-node", 4, hivedAnn(kube.AnnVC, "A"), n[0] + " 0,1,2,3"},
		{"b-node", 4, hivedAnn(kube.AnnVC, "B"), n[2] + " 0,1,2,3"},
		{"a-more", 4, hivedAnn(kube.AnnVC, "A"), ""},
		{"c-v100", 4, hivedAnn(kube.AnnVC, "C", kube.AnnLeafCellType, "V100"), n[4] + " 0,1,2,3"},
		{"c-any", 2, hivedAnn(kube.AnnVC, "C"), n[3] + " 0,1"},
		{"c-k80", 2, hivedAnn(kube.AnnVC, "C", kube.AnnLeafCellType, "K80"), n[3] + " 2,3"},
	}
	for _, s := range steps {
		e.createPod(podOpts{name: s.pod, gpus: s.gpus, ann: s.ann})
		if s.want == "" {
			e.eventually(10*time.Second, s.pod+" waits", func() bool { return e.hasEvent(s.pod, "FailedScheduling", "waits at queue position") })
			continue
		}
		e.eventually(10*time.Second, s.pod+" bound", func() bool { return e.bound(s.pod) })
		if got := e.where(s.pod); got != s.want {
			t.Errorf("%s on %s, want %s", s.pod, got, s.want)
		}
	}
	for _, p := range []string{"c-any4", "c-v100b"} {
		ann := hivedAnn(kube.AnnVC, "C")
		if p == "c-v100b" {
			ann[kube.AnnLeafCellType] = "V100"
		}
		e.createPod(podOpts{name: p, gpus: 4, ann: ann})
		e.eventually(10*time.Second, p+" waits", func() bool { return e.hasEvent(p, "FailedScheduling", "waits at queue position") })
	}
	time.Sleep(time.Second) // a few rounds: every bound pod stays where it is
	for _, s := range steps {
		if p := e.pod(s.pod); s.want != "" && (p == nil || p.DeletionTimestamp != nil || e.where(s.pod) != s.want) {
			t.Errorf("%s evicted or moved (%s), want it kept on %s", s.pod, e.where(s.pod), s.want)
		}
	}
	e.finish("a-pin-0")
	e.finish("a-pin-1")
	time.Sleep(time.Second) // a few rounds: a-more still waits
	if e.bound("a-more") {
		t.Errorf("a-more bound on %s: only pods naming A-PIN may use it", e.where("a-more"))
	}
	e.checkNoDoubleGPU()
	for _, s := range []struct{ finish, next, want string }{
		{"a-node", "a-more", n[0] + " 0,1,2,3"},
		{"c-v100", "c-any4", n[4] + " 0,1,2,3"},
		{"c-any4", "c-v100b", n[4] + " 0,1,2,3"},
	} {
		if s.next == "c-any4" && e.bound("c-v100b") {
			t.Errorf("c-v100b bound on %s before c-any4", e.where("c-v100b"))
		}
		e.finish(s.finish)
		e.eventually(15*time.Second, s.next+" bound after "+s.finish+" left", func() bool { return e.bound(s.next) })
		if got := e.where(s.next); got != s.want {
			t.Errorf("%s on %s, want %s", s.next, got, s.want)
		}
		e.checkNoDoubleGPU()
	}
}

// finish deletes a pod at once and waits until it is gone: its job ended.
func (e *env) finish(name string) {
	e.t.Helper()
	if err := e.cs.CoreV1().Pods(e.ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptrInt64(0)}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually(10*time.Second, name+" gone", func() bool { return e.pod(name) == nil })
}

// evictablePod creates a bare pod that terminates quickly when deleted
// (the scheduler may evict bare pods under preemptBarePods).
func (e *env) evictablePod(name string, gpus int, ann map[string]string) {
	e.t.Helper()
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: ann},
		Spec: corev1.PodSpec{SchedulerName: "pal", TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{Name: "train", Image: "train:latest",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(gpus)}}}}},
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
}

// A guaranteed gang waits while its victim's pod terminates: two 4-GPU
// nodes, VC A and VC B one node cell each. b (B) binds one node and the
// opportunistic o (A) the other; g (A, 4 GPUs) needs A's cell, on o's
// node: o is evicted, and g binds there only once o's pod is gone. At no
// time do two pods hold one device.
func TestHivedPreemptorWaitsDevCluster(t *testing.T) {
	e := newEnv(t, 2, 4)
	n := e.nodeNames(2)
	cells := e.writeCells(fmt.Sprintf(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: %s}
  - {cellType: NODE, cellAddress: %s}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`, n[0], n[1]))
	cfg := testConfig()
	cfg.Tenancy, cfg.Cells, cfg.PreemptBarePods = "hived", cells, true
	e.runScheduler(cfg, "pal")
	e.evictablePod("b", 4, hivedAnn(kube.AnnVC, "B"))
	e.eventually(10*time.Second, "b bound", func() bool { return e.bound("b") })
	e.evictablePod("o", 4, hivedAnn(kube.AnnVC, "A", kube.AnnPriority, "-1"))
	e.eventually(10*time.Second, "o bound", func() bool { return e.bound("o") })
	oNode := e.pod("o").Spec.NodeName
	e.evictablePod("g", 4, hivedAnn(kube.AnnVC, "A"))
	sawDeleting := false
	e.eventually(60*time.Second, "g bound", func() bool {
		e.checkNoDoubleGPU()
		o := e.pod("o")
		if o != nil && o.DeletionTimestamp != nil {
			sawDeleting = true
		}
		if e.bound("g") && o != nil && o.Spec.NodeName == e.pod("g").Spec.NodeName {
			t.Fatalf("g bound on %s while o is still there", o.Spec.NodeName)
		}
		return e.bound("g")
	})
	if got := e.pod("g").Spec.NodeName; got != oNode {
		t.Errorf("g on %s, want o's node %s", got, oNode)
	}
	if !sawDeleting && e.pod("o") != nil {
		t.Errorf("o was never evicted")
	}
	e.checkNoDoubleGPU()
}

// setCellsConfigMap creates or updates the watched cells ConfigMap.
func (e *env) setCellsConfigMap(name, text string) {
	e.t.Helper()
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps(devcluster.SystemNamespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: devcluster.SystemNamespace},
			Data: map[string]string{kube.CellsKey: text}}, metav1.CreateOptions{})
	case err == nil:
		cm.Data = map[string]string{kube.CellsKey: text}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// configMapEvent reports whether the ConfigMap has an event of the reason
// whose message holds substr.
func (e *env) configMapEvent(name, reason, substr string) bool {
	list, err := e.cs.CoreV1().Events(devcluster.SystemNamespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": name, "reason": reason}.AsSelector().String()})
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.ContainsFunc(list.Items, func(ev corev1.Event) bool { return strings.Contains(ev.Message, substr) })
}

// A VC shrinks under running gangs through the watched cells ConfigMap,
// against a real apiserver. Three 4-GPU nodes; at first VC A holds two
// node cells and B one, after the change A one and B two.
//
//   - a1 and a2 (A) and b1 (B) bind one node each.
//   - The change: a1 keeps A's only cell (it started first); a2 no longer
//     fits A and is lazily preempted: both keep running, no pod evicted.
//   - An infeasible change (A three nodes) and a broken one (A's cells of
//     a type the cluster lacks) are refused with events naming their line
//     and field, and the change before stays in force: under it B holds
//     two node cells, under the first config one, so b2 below binds only
//     if the change is still in force.
//   - b2 (B, 4 GPUs) binds B's new cell to a2's node, the only one left:
//     a2 is evicted, and b2 binds once a2's pod is gone.
func TestHivedCellsConfigMapDevCluster(t *testing.T) {
	e := newEnv(t, 3, 4)
	n := e.nodeNames(3)
	cellsOf := func(a, b int) string {
		return fmt.Sprintf(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: %s}
  - {cellType: NODE, cellAddress: %s}
  - {cellType: NODE, cellAddress: %s}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: %d}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: %d}]}
`, n[0], n[1], n[2], a, b)
	}
	const cmName = "pal-cells"
	e.setCellsConfigMap(cmName, cellsOf(2, 1))
	cfg := testConfig()
	cfg.Tenancy, cfg.Cells, cfg.CellsConfigMap, cfg.PreemptBarePods = "hived", e.writeCells(cellsOf(2, 1)), cmName, true
	_, stop := e.runScheduler(cfg, "pal")
	for _, p := range []struct{ name, vc string }{{"a1", "A"}, {"a2", "A"}, {"b1", "B"}} {
		e.evictablePod(p.name, 4, hivedAnn(kube.AnnVC, p.vc))
		e.eventually(10*time.Second, p.name+" bound", func() bool { return e.bound(p.name) })
	}
	a2Node := e.pod("a2").Spec.NodeName
	e.setCellsConfigMap(cmName, cellsOf(1, 2))
	e.eventually(15*time.Second, "CellsApplied", func() bool {
		return e.configMapEvent(cmName, kube.ReasonCellsApplied, "kept pod jobs/a1, pod jobs/b1; lazily preempted pod jobs/a2")
	})
	time.Sleep(time.Second) // a few rounds: nobody is evicted for the change
	for _, p := range []string{"a1", "a2", "b1"} {
		if q := e.pod(p); q == nil || q.DeletionTimestamp != nil || q.Spec.NodeName == "" {
			t.Fatalf("%s was evicted or unbound by the change: %v", p, q)
		}
	}
	e.setCellsConfigMap(cmName, cellsOf(3, 2))
	e.eventually(15*time.Second, "CellsRefused", func() bool {
		return e.configMapEvent(cmName, kube.ReasonCellsRefused, `key cells.yaml:9: field "virtualClusters.A.virtualCells[0]": illegal initial VC assignment`)
	})
	e.setCellsConfigMap(cmName, strings.Replace(cellsOf(1, 2), "A: {virtualCells: [{cellType: NODE,", "A: {virtualCells: [{cellType: RACK,", 1))
	e.eventually(15*time.Second, "CellsRefused", func() bool {
		return e.configMapEvent(cmName, kube.ReasonCellsRefused, `key cells.yaml:9: field "virtualClusters.A.virtualCells[0].cellType": VC A: "RACK" is not the type of any physical cell`)
	})
	e.evictablePod("b2", 4, hivedAnn(kube.AnnVC, "B"))
	e.eventually(60*time.Second, "b2 bound", func() bool {
		e.checkNoDoubleGPU()
		return e.bound("b2")
	})
	if got := e.pod("b2").Spec.NodeName; got != a2Node {
		t.Errorf("b2 on %s, want a2's node %s", got, a2Node)
	}
	if p := e.pod("a2"); p != nil && p.DeletionTimestamp == nil && p.Spec.NodeName == a2Node {
		t.Errorf("a2 still runs beside b2")
	}
	e.checkNoDoubleGPU()

	// The cells in force (A one cell, B two) are kept for a restart. One
	// that finds the ConfigMap refused (it still holds the RACK text)
	// takes them, not the file's (A two cells, B one): b1 and b2 stay
	// B's, a1 A's, and nothing is evicted.
	e.eventually(15*time.Second, "the cells in force kept", func() bool {
		cm, err := e.cs.CoreV1().ConfigMaps(devcluster.SystemNamespace).Get(context.Background(), kube.AppliedCellsConfigMap(cmName), metav1.GetOptions{})
		return err == nil && cm.Data[kube.CellsKey] == cellsOf(1, 2)
	})
	stop()
	e.runScheduler(cfg, "pal-restarted")
	e.eventually(15*time.Second, "CellsApplied at the restart", func() bool {
		return e.configMapEvent(cmName, kube.ReasonCellsApplied, "refused: the cells last in force from it")
	})
	time.Sleep(time.Second) // a few rounds
	for _, p := range []string{"a1", "b1", "b2"} {
		if q := e.pod(p); q == nil || q.DeletionTimestamp != nil || q.Spec.NodeName == "" {
			t.Fatalf("%s was evicted or unbound by the restart: %v", p, q)
		}
	}
	if l := e.logged("pal-restarted", "tenancy: running gang taken into the cells", "vc=B", "as=guaranteed"); len(l) != 2 {
		t.Errorf("the restart took %d gangs into VC B as guaranteed, want b1 and b2:\n%s", len(l), strings.Join(e.logged("pal-restarted", "tenancy"), ""))
	}
	e.checkNoDoubleGPU()
}
