//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A PodDisruptionBudget over a running gang, on a real apiserver whose
// disruption controller computes it and whose Eviction API enforces it.
// LAS with a non-sticky placement would preempt gang old (two 2-GPU pods
// filling the node) for gang new, as in TestPreemptionEvictsWholeGang. The
// budget (minAvailable 1 over the namespace's pods) allows one disruption:
// the Eviction API would evict one of old's pods and refuse the other, so
// the scheduler evicts neither and says why on old's pods (a Kept event).
// When the budget allows both (minAvailable 0), old is preempted whole and
// new binds.
func TestBudgetKeepsGangWhole(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	one := intstr.FromInt32(1)
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "keep-one", Namespace: e.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{}}}
	if _, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Create(ctx, budget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky"
	cfg.PreemptBarePods = true // the test's pods are bare: only the budget may keep them
	e.runScheduler(cfg, "pal")
	old := e.gang("old", 2, 2, nil)
	e.eventually(10*time.Second, "old gang bound", func() bool { return e.bound(old...) })
	allows := func(n int32) func() bool {
		return func() bool {
			b, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Get(ctx, "keep-one", metav1.GetOptions{})
			return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.DisruptionsAllowed == n && b.Status.CurrentHealthy >= 2
		}
	}
	e.eventually(20*time.Second, "the budget allowing one disruption of old's two ready pods", allows(1))
	nw := e.gang("new", 2, 2, nil)
	e.eventually(20*time.Second, "old's Kept event", func() bool {
		return e.hasEvent(old[0], "Kept", "are covered by PodDisruptionBudget "+e.ns+"/keep-one, which allows 1 disruption now, and the Eviction API would refuse 1 of them")
	})
	time.Sleep(3 * time.Second) // a few more rounds
	for _, n := range old {
		if p := e.pod(n); p == nil || p.DeletionTimestamp != nil {
			t.Fatalf("%s evicted while the budget allows one of old's two pods", n)
		}
	}
	if e.bound(nw[0]) || e.bound(nw[1]) {
		t.Fatal("new bound on a full node")
	}
	b, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Get(ctx, "keep-one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zero := intstr.FromInt32(0)
	b.Spec.MinAvailable = &zero
	if _, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "old gang evicted whole", func() bool { return e.pod(old[0]) == nil && e.pod(old[1]) == nil })
	e.eventually(30*time.Second, "new gang bound", func() bool { return e.bound(nw...) })
	e.checkNoDoubleGPU()
}
