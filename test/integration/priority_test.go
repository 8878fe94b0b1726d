//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// Pod priority on a real apiserver, whose priority admission writes
// each pod's spec.priority and preemptionPolicy from its PriorityClass.
// FIFO on one 4-GPU node: gang low (two 2-GPU pods, no class: priority
// 0) runs. Gang urgent (one 4-GPU pod, priority 1000 under
// preemptionPolicy: Never) waits and evicts nothing. Gang high (priority
// 1000, may preempt) evicts low whole and binds; urgent, which came
// before it, does not take the GPUs vacated for high, nor evict high.
func TestPodPriorityPreempts(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	never := corev1.PreemptNever
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-high"}, Value: 1000},
		{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-never"}, Value: 1000, PreemptionPolicy: &never},
	} {
		if _, err := e.cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.cs.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
		})
	}
	cfg := testConfig()
	cfg.Scheduler, cfg.Placement = "fifo", "packed-nonsticky"
	cfg.PreemptBarePods = true // the test's pods are bare: only priority decides
	e.runScheduler(cfg, "pal")
	gang := func(name string, n, gpus int, class string) []string {
		var names []string
		for i := range n {
			pn := fmt.Sprintf("%s-%d", name, i)
			e.createPod(podOpts{name: pn, gpus: gpus, class: class, ann: map[string]string{kube.AnnGang: name, kube.AnnGangSize: fmt.Sprint(n)}})
			names = append(names, pn)
		}
		return names
	}
	low := gang("low", 2, 2, "")
	e.eventually(10*time.Second, "low bound", func() bool { return e.bound(low...) })
	urgent := gang("urgent", 1, 4, e.ns+"-never")
	if p := e.pod(urgent[0]); p.Spec.Priority == nil || *p.Spec.Priority != 1000 || p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != never {
		t.Fatalf("priority admission did not write urgent's priority: %v %v", p.Spec.Priority, p.Spec.PreemptionPolicy)
	}
	e.eventually(20*time.Second, "urgent's wait naming its preemptionPolicy", func() bool {
		return e.hasEvent(urgent[0], "FailedScheduling", "pod priority 1000; its preemptionPolicy Never keeps it behind 1 running gang(s) of its priority or lower")
	})
	time.Sleep(3 * time.Second) // a few more rounds
	for _, n := range low {
		if p := e.pod(n); p == nil || p.DeletionTimestamp != nil {
			t.Fatalf("%s evicted for urgent, whose preemptionPolicy is Never", n)
		}
	}
	high := gang("high", 2, 2, e.ns+"-high")
	e.eventually(30*time.Second, "low evicted whole", func() bool { return e.pod(low[0]) == nil && e.pod(low[1]) == nil })
	e.eventually(30*time.Second, "high bound", func() bool { return e.bound(high...) })
	time.Sleep(3 * time.Second)
	if !e.bound(high...) || e.bound(urgent...) {
		t.Fatalf("after high bound: high bound %v, urgent bound %v; want high kept, urgent waiting", e.bound(high...), e.bound(urgent...))
	}
	if !e.hasEvent(low[0], "Preempted", "ordered ahead of it (by pod priority first, its own 0, then by fifo)") {
		t.Errorf("low-0's Preempted event does not name pod priority: %q", e.events(low[0], "Preempted"))
	}
	e.checkNoDoubleGPU()
}
