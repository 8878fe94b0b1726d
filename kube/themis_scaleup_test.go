package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// jobPod is a pod of batch/v1 Job ns/js (uid-js), app A, that runs long.
func jobPod(name string, created time.Time) *corev1.Pod {
	yes := true
	p := pod(name, 2, map[string]string{AnnModel: "BERT", AnnIterations: "1000000", AnnApp: "A"}, "")
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "js", UID: "uid-js", Controller: &yes}}
	p.CreationTimestamp = metav1.NewTime(created)
	return p
}

// settleBound makes the API show the pods fc bound as bound and running
// (the fake clientset records a Binding without setting the pod's node),
// and waits until the informer does.
func settleBound(t *testing.T, s *Scheduler, cs *fake.Clientset, fc *fakeCluster, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		b := fc.binds[n]
		if b == nil {
			t.Fatalf("%s not bound", n)
		}
		p, err := cs.CoreV1().Pods("ns").Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.NodeName, p.Status.Phase = b.Target.Name, corev1.PodRunning
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			p.Annotations[k] = v
		}
		if _, err := cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		waitNoted(t, s, n, n+" bound", func(p *corev1.Pod) bool { return p != nil && p.Spec.NodeName != "" })
	}
}

// Under Themis a Job's parallelism raised while its gang runs on a lease
// (found on kwok: js 2 -> 3 evicted both running pods ~50 s before their
// pal.io/lease-until, as a crash-cut partial gang with no bind-info for
// its new member, and pal_lease_revocations_total stayed 0). Job js (two
// 2-GPU pods) binds at 0 on an 8-GPU node, leased until 600; at 60 its
// parallelism goes to 3 and js-2 appears. From 120 to 540 nothing is
// evicted or bound, and js-2 is told it waits for the lease's end; at
// 600 the two running pods are evicted, and once the Job controller has
// made them again the gang of 3 binds whole (the policy's record of the
// app's demand follows the job's new size: at 4 GPUs it capped the app's
// bundles, and the gang of 6 GPUs got nothing with 8 free).
func TestThemisJobScaleUpKeepsLease(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := clockAt(t0)
	par := int32(2)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js", UID: "uid-js"},
		Spec: batchv1.JobSpec{Parallelism: &par, PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}}}
	cs, fc := newFake(t, node("n0", 8), job, jobPod("js-0", t0), jobPod("js-1", t0))
	s := startRounds(t, themisCfg(), cs)
	ctx := context.Background()
	const key = "ns/job:js"

	roundWait(s, ctx, at(0))
	settleBound(t, s, cs, fc, "js-0", "js-1")
	if got := s.th.leaseEnd[key]; got != 600 {
		t.Fatalf("t=0: gang %s's lease ends at %v, want 600", key, got)
	}
	want600 := at(600).UTC().Format(time.RFC3339Nano)
	if got := fc.binds["js-0"].Annotations[AnnLeaseUntil]; got != want600 {
		t.Fatalf("t=0: js-0's %s = %q, want %q", AnnLeaseUntil, got, want600)
	}
	roundWait(s, ctx, at(60))

	// The user scales the Job to 3; its controller makes js-2.
	par = 3
	if _, err := cs.BatchV1().Jobs("ns").Update(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if j, err := s.batchJobs.Jobs("ns").Get("js"); err == nil && parallelism(j) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the informer never showed parallelism 3")
		}
	}
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, jobPod("js-2", at(65)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "js-2", true)

	for sec := 120; sec <= 540; sec += 60 {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || fc.binds["js-2"] != nil {
			t.Fatalf("t=%d: evicted %v, js-2 bound %v: the gang's lease runs until 600", sec, fc.evicted, fc.binds["js-2"] != nil)
		}
	}
	why := s.lastWhy[key]
	for _, w := range []string{"partly bound without a usable " + AnnBindInfo, "Themis lease ends at " + at(600).UTC().Format(time.RFC3339)} {
		if !strings.Contains(why, w) {
			t.Errorf("t=540: js-2 is told %q, which does not say %q", why, w)
		}
	}

	roundWait(s, ctx, at(600))
	if !slices.Equal(fc.evicted, []string{"js-0", "js-1"}) || fc.binds["js-2"] != nil {
		t.Fatalf("t=600: evicted %v, js-2 bound %v; want js-0 and js-1 evicted at the lease's end, js-2 waiting", fc.evicted, fc.binds["js-2"] != nil)
	}
	// The Job controller replaces the evicted pods.
	for _, n := range []string{"js-0", "js-1"} {
		if err := cs.CoreV1().Pods("ns").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInformer(t, s, n, false)
	}
	for _, n := range []string{"js-3", "js-4"} {
		if _, err := cs.CoreV1().Pods("ns").Create(ctx, jobPod(n, at(610)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInformer(t, s, n, true)
	}
	roundWait(s, ctx, at(660))
	var gpus []string
	for _, n := range []string{"js-2", "js-3", "js-4"} {
		b := fc.binds[n]
		if b == nil || b.Target.Name != "n0" {
			t.Fatalf("t=660: %s bound %+v, want the gang of 3 bound whole on n0 (told %q)", n, b, s.lastWhy[key])
		}
		gpus = append(gpus, b.Annotations[AnnGPUIndices])
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
	slices.Sort(gpus)
	if got := strings.Join(gpus, " "); got != "0,1 2,3 4,5" {
		t.Errorf("t=660: the gang of 3 on n0 devices %s, want 0,1 2,3 4,5", got)
	}
}
