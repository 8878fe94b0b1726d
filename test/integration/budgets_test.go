//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/palsched/pal/kube"
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

// An eviction the apiserver refuses, here by a ValidatingAdmissionPolicy
// that denies evictions in the test's namespace (as a webhook, or a
// budget a replica cannot read, would): the scheduler does not plan it
// again every round but backs off (10 s, then 20 s), and old's Kept
// event names the refusal. Once the policy is gone, old is evicted whole
// at the next try and new binds.
func TestRefusedEvictionBacksOff(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-no-evictions"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "evictions are frozen in this namespace"}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-no-evictions"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns}}}}}
	vap := e.cs.AdmissionregistrationV1()
	if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		_ = vap.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = vap.ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	}
	t.Cleanup(remove)
	// The apiserver loads a new policy within seconds: wait until it
	// refuses a dry-run eviction of a pod no scheduler places.
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: e.ns},
		Spec: corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "none"}}}}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "the policy refusing evictions", func() bool {
		err := e.cs.PolicyV1().Evictions(e.ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: e.ns},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}})
		return err != nil && strings.Contains(err.Error(), "evictions are frozen")
	})
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky"
	cfg.PreemptBarePods = true // the test's pods are bare: only the refusal may keep them
	s, _ := e.runScheduler(cfg, "pal")
	old := e.gang("old", 2, 2, nil)
	e.eventually(10*time.Second, "old gang bound", func() bool { return e.bound(old...) })
	nw := e.gang("new", 2, 2, nil)
	e.eventually(20*time.Second, "old's Kept event naming the refusal", func() bool {
		return e.hasEvent(old[0], "Kept", "evictions are frozen in this namespace") && e.hasEvent(old[0], "Kept", "not tried again before")
	})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	refused := func() float64 {
		for _, l := range strings.Split(get(t, srv.URL+"/metrics"), "\n") {
			if v, ok := strings.CutPrefix(l, "pal_evictions_refused_total "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return -1
	}
	time.Sleep(8 * time.Second) // rounds every second: within the first two backoffs, old is tried at most twice more
	if n := refused(); n < 2 || n > 6 {
		t.Errorf("pal_evictions_refused_total %v after about 10 s, want 2 to 6 (old's two pods, tried again after 10 s at most once): without a backoff each round tries again", n)
	}
	for _, n := range old {
		if p := e.pod(n); p == nil || p.DeletionTimestamp != nil {
			t.Fatalf("%s evicted while the policy denies evictions", n)
		}
	}
	remove()
	e.eventually(60*time.Second, "old gang evicted whole once the policy is gone", func() bool { return e.pod(old[0]) == nil && e.pod(old[1]) == nil })
	e.eventually(30*time.Second, "new gang bound", func() bool { return e.bound(nw...) })
	e.checkNoDoubleGPU()
}

// preemptPastBudgets on a real apiserver: Job low (two 2-GPU pods,
// priority 0, backoffLimit 0, a podFailurePolicy that ignores
// DisruptionTarget) fills the one 4-GPU node under a budget
// (minAvailable 2, an integer, which the disruption controller computes
// for a Job's pods) that allows no disruption, so the Eviction API would
// refuse both pods. Gang high (two 2-GPU pods of priority 1000) arrives:
// low's pods are marked DisruptionTarget and deleted, not evicted; their
// Preempted events say the budget was overridden for high; high binds;
// and the Job, which would fail at its first counted failure, is not
// failed (the condition made its podFailurePolicy ignore the deletions)
// and makes its two pods again, which wait.
func TestBudgetOverriddenForHigherPriority(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-high"}, Value: 1000}
	if _, err := e.cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	two := intstr.FromInt32(2)
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "keep-low", Namespace: e.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/job-name": "low"}}}}
	if _, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Create(ctx, budget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Scheduler, cfg.Placement, cfg.PreemptPastBudgets = "fifo", "packed-nonsticky", true
	e.runScheduler(cfg, "pal")
	ignore := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
	if _, err := e.cs.BatchV1().Jobs(e.ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "low", Namespace: e.ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](0), PodFailurePolicy: ignore,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: "pal", RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "train", Image: "train:latest",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(2)}}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var low []string
	e.eventually(30*time.Second, "low's two pods bound", func() bool { low = e.jobPods("low"); return len(low) == 2 && e.bound(low...) })
	uids := map[string]string{}
	for _, n := range low {
		uids[n] = string(e.pod(n).UID)
	}
	e.eventually(30*time.Second, "the budget allowing no disruption of low's two ready pods", func() bool {
		b, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Get(ctx, "keep-low", metav1.GetOptions{})
		return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.DisruptionsAllowed == 0 && b.Status.CurrentHealthy == 2
	})
	var high []string
	for i := range 2 {
		n := fmt.Sprintf("high-%d", i)
		e.createPod(podOpts{name: n, gpus: 2, class: pc.Name, ann: map[string]string{kube.AnnGang: "high", kube.AnnGangSize: "2"}})
		high = append(high, n)
	}
	marked := map[string]bool{}
	e.eventually(30*time.Second, "low's pods deleted", func() bool {
		gone := 0
		for _, n := range low {
			p := e.pod(n)
			if p != nil && string(p.UID) == uids[n] && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler
			}) {
				marked[n] = true
			}
			if p == nil || string(p.UID) != uids[n] || p.DeletionTimestamp != nil {
				gone++
			}
		}
		return gone == 2
	})
	t.Logf("low's pods seen marked DisruptionTarget before they went: %v", marked)
	for _, n := range low {
		if !e.hasEvent(n, "Preempted", "overridden under preemptPastBudgets for gang "+e.ns+"/high (pod priority 1000), above its own pod priority 0") {
			t.Errorf("%s's Preempted events do not say the budget was overridden: %q", n, e.events(n, "Preempted"))
		}
	}
	e.eventually(30*time.Second, "high bound", func() bool { return e.bound(high...) })
	e.eventually(60*time.Second, "low's Job makes its two pods again", func() bool {
		now := e.jobPods("low")
		return len(now) == 2 && !slices.Contains(now, low[0]) && !slices.Contains(now, low[1])
	})
	j, err := e.cs.BatchV1().Jobs(e.ns).Get(ctx, "low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			t.Fatalf("Job low failed (%s: %s): the deletions were counted, as without a DisruptionTarget condition", c.Reason, c.Message)
		}
	}
	e.checkNoDoubleGPU()
}
