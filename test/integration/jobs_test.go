//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/palsched/pal/kube"
)

// jobPods names the live pods (not deleting) of Job name, sorted.
func (e *env) jobPods(name string) []string {
	e.t.Helper()
	list, err := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// A batch/v1 Job of parallelism 4 under the default placement (pal-ma,
// migrationCost 2m) on three 4-GPU nodes, gpu-node-000 twice as fast as
// the others (PM-score 0.5 against 1.0 for every class):
//
//  1. bare pod blocker (4 GPUs) takes gpu-node-000, the fastest node;
//     bare pod filler (4 GPUs) a whole slow node, and bare pod keep
//     (1 GPU, 10^6 BERT iterations) one GPU of the third: 3 GPUs free.
//  2. The Job's 4 one-GPU pods (created by the Job controller) form the
//     gang jobs/job:train; 3 GPUs do not hold it, so none binds.
//  3. filler is deleted: the whole gang binds on its node, devices 0-3,
//     every pod with the same bind-info of 4 pods.
//  4. blocker is deleted: moving the Job to gpu-node-000 gains about
//     10^6 x 0.179 s x 0.5 (its remaining work at half the slowdown),
//     far above 120 s, so the round migrates it: its 4 pods are evicted,
//     the Job controller recreates 4 (the podFailurePolicy ignores the
//     eviction's DisruptionTarget, so backoffLimit 0 is not spent; its
//     failure backoff still delays them, 80 s for 4 pods), and they bind
//     on gpu-node-000 devices 0-3.
//
// keep would gain from gpu-node-000 too, but it is bare: it is never
// evicted, and stays on its GPU throughout. Exactly 4 pods are evicted
// in all (one migration).
func TestJobGangMigratesOnce(t *testing.T) {
	e := newEnv(t, 3, 4)
	ctx := context.Background()
	s, bert := e.blockFastNode(0.5, 1, 1)
	e.createPod(podOpts{name: "filler", gpus: 4, ann: bert})
	e.eventually(10*time.Second, "filler bound", func() bool { return e.bound("filler") })
	e.createPod(podOpts{name: "keep", gpus: 1, ann: bert})
	e.eventually(10*time.Second, "keep bound", func() bool { return e.bound("keep") })
	keep := e.pod("keep")
	filler := e.pod("filler").Spec.NodeName
	if keep.Spec.NodeName == filler || keep.Spec.NodeName == "gpu-node-000" {
		t.Fatalf("keep on %s (filler on %s): want the third node", keep.Spec.NodeName, filler)
	}

	e.createTrainJob(0, &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}, bert)
	var first []string
	e.eventually(30*time.Second, "the Job's 4 pods exist", func() bool { first = e.jobPods("train"); return len(first) == 4 })
	e.eventually(10*time.Second, "the Job gang waits with 3 GPUs free", func() bool {
		return e.hasEvent(first[0], "FailedScheduling", "gang of 4 pods (4 GPUs) waits at queue position") && e.hasEvent(first[0], "FailedScheduling", "3 GPUs free")
	})
	time.Sleep(time.Second) // several rounds
	if n := e.countBound(first...); n != 0 {
		t.Fatalf("%d of the Job's 4 pods bound on 3 free GPUs", n)
	}

	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(15*time.Second, "the whole Job gang bound", func() bool { return e.bound(first...) })
	checkGang := func(names []string, node string) {
		t.Helper()
		var idx []string
		var raw string
		for _, n := range names {
			p := e.pod(n)
			if p.Spec.NodeName != node {
				t.Errorf("pod %s on %s, want %s", n, p.Spec.NodeName, node)
			}
			idx = append(idx, p.Annotations[kube.AnnGPUIndices])
			if raw == "" {
				raw = p.Annotations[kube.AnnBindInfo]
			} else if raw != p.Annotations[kube.AnnBindInfo] {
				t.Errorf("pod %s carries another bind-info than %s", n, names[0])
			}
		}
		slices.Sort(idx)
		if !slices.Equal(idx, []string{"0", "1", "2", "3"}) {
			t.Errorf("the gang holds devices %v of %s, want 0,1,2,3", idx, node)
		}
		info, err := kube.ParseBindInfo(raw)
		if err != nil || info.Gang != "jobs/job:train" || len(info.Pods) != 4 {
			t.Errorf("bind-info %+v (%v), want gang jobs/job:train of 4 pods", info, err)
		}
	}
	checkGang(first, filler)
	e.checkNoDoubleGPU()

	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "blocker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var second []string
	// The Job controller recreates failed pods after its backoff, which
	// counts the evicted ones too: 10 s doubled for each failed pod of the
	// Job, 80 s for 4.
	e.eventually(150*time.Second, "4 new Job pods bound on gpu-node-000", func() bool {
		second = e.jobPods("train")
		if len(second) != 4 || slices.ContainsFunc(second, func(n string) bool { return slices.Contains(first, n) }) {
			return false
		}
		for _, n := range second {
			if p := e.pod(n); p == nil || p.Spec.NodeName != "gpu-node-000" {
				return false
			}
		}
		return true
	})
	checkGang(second, "gpu-node-000")
	want := fmt.Sprintf("migrated by the pal-ma placement from %s GPUs 0,1,2,3 to gpu-node-000 GPUs 0,1,2,3", filler)
	for _, n := range first {
		e.eventually(20*time.Second, "pod "+n+": a Preempted event with "+want, func() bool { return e.hasEvent(n, "Preempted", want) })
	}
	time.Sleep(2 * time.Second) // more rounds: nothing moves again
	e.checkNoDoubleGPU()
	if now := e.jobPods("train"); !slices.Equal(now, second) {
		t.Errorf("the Job's pods changed again: %v, then %v", second, now)
	}
	k := e.pod("keep")
	if k == nil || k.UID != keep.UID || k.Spec.NodeName != keep.Spec.NodeName || k.Annotations[kube.AnnGPUIndices] != keep.Annotations[kube.AnnGPUIndices] {
		t.Fatalf("bare pod keep moved or vanished: was %s %s, now %+v", keep.Spec.NodeName, keep.Annotations[kube.AnnGPUIndices], k)
	}
	if ev := e.events("keep", "Preempted"); len(ev) > 0 {
		t.Errorf("bare pod keep got Preempted events %q", ev)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	if body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "pal_evictions_total 4\n") {
		t.Errorf("/metrics: want pal_evictions_total 4 (one migration of 4 pods); got %q", metricLine(body, "pal_evictions_total"))
	}
}

func metricLine(body, name string) string {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return "(absent)"
}

// A Job without a podFailurePolicy counts every evicted pod against its
// backoffLimit, so a migration could fail it for good. Two 4-GPU nodes,
// gpu-node-000 twice as fast: bare pod blocker takes it, then a Job of 4
// one-GPU pods (backoffLimit 2, no policy) binds on gpu-node-001. Once
// blocker is deleted, moving the Job would gain far more than its cost
// (as in TestJobGangMigratesOnce), but its 4 evicted pods would exceed
// backoffLimit 2: the scheduler leaves it where it runs and tells one
// of its pods why (a Kept event), the Job keeps its pods, and nothing is
// evicted.
func TestJobGangNotMovedPastBackoffLimit(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	s, bert := e.blockFastNode(0.5, 1)
	e.createTrainJob(2, nil, bert)
	var pods []string
	e.eventually(30*time.Second, "the Job's 4 pods exist", func() bool { pods = e.jobPods("train"); return len(pods) == 4 })
	e.eventually(15*time.Second, "the Job gang bound", func() bool { return e.bound(pods...) })
	for _, n := range pods {
		if node := e.pod(n).Spec.NodeName; node != "gpu-node-001" {
			t.Fatalf("pod %s on %s, want gpu-node-001", n, node)
		}
	}
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "blocker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "never moved or preempted: Job " + e.ns + "/train would fail: it has 0 failed pods of backoffLimit 2, and the eviction fails 4 more"
	told := func() (n int) {
		for _, p := range pods {
			if e.hasEvent(p, kube.ReasonKept, want) {
				n++
			}
		}
		return n
	}
	e.eventually(15*time.Second, "a Kept event saying "+want, func() bool { return told() > 0 })
	time.Sleep(2 * time.Second) // more rounds: nothing moves
	if n := told(); n != 1 {
		t.Errorf("%d of the Job's pods told why it stays, want 1 (the gang's first)", n)
	}
	if now := e.jobPods("train"); !slices.Equal(now, pods) {
		t.Errorf("the Job's pods changed: %v, then %v", pods, now)
	}
	for _, n := range pods {
		if ev := e.events(n, "Preempted"); len(ev) > 0 {
			t.Errorf("pod %s got Preempted events %q", n, ev)
		}
	}
	j, err := e.cs.BatchV1().Jobs(e.ns).Get(ctx, "train", metav1.GetOptions{})
	if err != nil || j.Status.Failed != 0 {
		t.Errorf("Job train: %v failed pods (%v), want 0", j.Status.Failed, err)
	}
	e.checkNoDoubleGPU()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	if body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "pal_evictions_total 0\n") {
		t.Errorf("/metrics: want pal_evictions_total 0; got %q", metricLine(body, "pal_evictions_total"))
	}
}

// blockFastNode writes the variability ConfigMap with node i's GPUs all
// scoring speeds[i] for every class (gpu-node-000 is meant to be the
// fastest), starts the scheduler under the pal placement, and binds bare
// pod blocker (4 GPUs, 10^6 BERT iterations) on gpu-node-000. It returns
// the scheduler and the annotations blocker carries.
func (e *env) blockFastNode(speeds ...float64) (*kube.Scheduler, map[string]string) {
	e.t.Helper()
	csv := "node,gpu_index,class,score\n"
	for n, v := range speeds {
		for g := range 4 {
			for _, c := range "ABCD" {
				csv += fmt.Sprintf("gpu-node-%03d,%d,%c,%g\n", n, g, c, v)
			}
		}
	}
	if _, err := e.cs.CoreV1().ConfigMaps("pal-system").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system"}, Data: map[string]string{kube.ScoresKey: csv}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	s, _ := e.runScheduler(testConfig(), "pal")
	bert := map[string]string{kube.AnnModel: "BERT", kube.AnnIterations: "1000000"}
	e.createPod(podOpts{name: "blocker", gpus: 4, ann: bert})
	e.eventually(10*time.Second, "blocker bound", func() bool { return e.bound("blocker") })
	if n := e.pod("blocker").Spec.NodeName; n != "gpu-node-000" {
		e.t.Fatalf("blocker on %s, want the fast gpu-node-000", n)
	}
	return s, bert
}

// createTrainJob creates Job train: 4 one-GPU pods with annotations ann,
// the given backoffLimit and podFailurePolicy.
func (e *env) createTrainJob(backoffLimit int32, policy *batchv1.PodFailurePolicy, ann map[string]string) {
	e.t.Helper()
	if _, err := e.cs.BatchV1().Jobs(e.ns).Create(context.Background(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: e.ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](4), Completions: ptr.To[int32](4), BackoffLimit: ptr.To(backoffLimit), PodFailurePolicy: policy,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann},
				Spec: corev1.PodSpec{SchedulerName: "pal", RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "train", Image: "train:latest",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}
