//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
)

// A gang binds only when every member exists and the whole gang fits;
// until then no member is bound and the pods say why.
func TestGangAllOrNothing(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	// Another scheduler's pod holds 2 GPUs of node 000.
	other := e.createPod(podOpts{name: "other", sched: "default-scheduler", gpus: 2})
	if err := e.cs.CoreV1().Pods(e.ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: other.Name, Namespace: e.ns},
		Target: corev1.ObjectReference{Kind: "Node", Name: "gpu-node-000"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.runScheduler(testConfig(), "pal")

	// 3 of 4 members exist: nothing binds.
	var names []string
	for i := range 3 {
		n := fmt.Sprintf("g-%d", i)
		e.createPod(podOpts{name: n, gpus: 2, ann: map[string]string{kube.AnnGang: "g", kube.AnnGangSize: "4"}})
		names = append(names, n)
	}
	e.eventually(10*time.Second, "FailedScheduling 'gang of 4 waits: 3 of 4 pods exist'", func() bool {
		return e.hasEvent("g-0", "FailedScheduling", "gang of 4 waits: 3 of 4 pods exist")
	})
	if n := e.countBound(names...); n != 0 {
		t.Fatalf("%d members of an incomplete gang bound", n)
	}
	// The 4th exists, but 4x2 GPUs do not fit next to the other pod.
	e.createPod(podOpts{name: "g-3", gpus: 2, ann: map[string]string{kube.AnnGang: "g", kube.AnnGangSize: "4"}})
	names = append(names, "g-3")
	e.eventually(10*time.Second, "FailedScheduling with 6 GPUs free", func() bool {
		return e.hasEvent("g-0", "FailedScheduling", "6 GPUs free")
	})
	time.Sleep(time.Second) // several rounds
	if n := e.countBound(names...); n != 0 {
		t.Fatalf("%d members of a gang that does not fit were bound", n)
	}
	// The other pod leaves: the whole gang binds.
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, "other", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	e.eventually(10*time.Second, "whole gang bound", func() bool { return e.bound(names...) })
	e.checkNoDoubleGPU()
	p := e.pod("g-0")
	info, err := kube.ParseBindInfo(p.Annotations[kube.AnnBindInfo])
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Pods) != 4 || info.Gang != "jobs/g" {
		t.Fatalf("bind-info %+v", info)
	}
	for _, n := range names {
		q := e.pod(n)
		rec := info.Pods[n]
		if q.Spec.NodeName != rec.Node || q.Annotations[kube.AnnGPUIndices] != kube.FormatIndices(rec.GPUs) {
			t.Errorf("pod %s on %s %s, bind-info says %+v", n, q.Spec.NodeName, q.Annotations[kube.AnnGPUIndices], rec)
		}
		// Events are posted after the binds they report.
		e.eventually(20*time.Second, "pod "+n+": a Scheduled event naming its GPUs", func() bool {
			return e.hasEvent(n, "Scheduled", "with GPUs "+q.Annotations[kube.AnnGPUIndices])
		})
	}
}

// Pods come and go over many rounds, and the scheduler restarts in the
// middle: no device is ever held by two live pods.
func TestGPUIndicesNeverTwice(t *testing.T) {
	e := newEnv(t, 3, 4)
	_, stop := e.runScheduler(testConfig(), "pal-1")
	var all []string
	wave := func(w int) {
		for i := range 6 {
			n := fmt.Sprintf("w%d-p%d", w, i)
			e.createPod(podOpts{name: n, gpus: 1 + i%3, ann: map[string]string{devcluster.AnnFinishAfter: fmt.Sprintf("%dms", 300+200*i)}})
			all = append(all, n)
		}
		e.gang(fmt.Sprintf("w%d-g", w), 2, 2, map[string]string{devcluster.AnnFinishAfter: "700ms"})
		all = append(all, fmt.Sprintf("w%d-g-0", w), fmt.Sprintf("w%d-g-1", w))
	}
	check := func(d time.Duration) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			e.checkNoDoubleGPU()
			time.Sleep(150 * time.Millisecond)
		}
	}
	wave(0)
	wave(1)
	check(2 * time.Second)
	stop()
	// A new scheduler rebuilds from the pods' annotations.
	s2, _ := e.runScheduler(testConfig(), "pal-2")
	wave(2)
	wave(3)
	check(3 * time.Second)
	// The pods are bare, so none is ever evicted: every pod runs to the
	// end (a vanished one would count as ended too, and the check below
	// that no GPU is held twice still holds).
	e.eventually(60*time.Second, "every pod ran to the end", func() bool {
		for _, n := range all {
			if p := e.pod(n); p != nil && p.Status.Phase != corev1.PodSucceeded {
				return false
			}
		}
		return true
	})
	e.checkNoDoubleGPU()
	if s2.Binds() == 0 {
		t.Fatal("the restarted scheduler bound nothing")
	}
}

// A pod asking more GPUs than any node has, and one with a malformed
// annotation, stay pending with an event that says why, while others are
// scheduled.
func TestUnschedulableAndMalformedPods(t *testing.T) {
	e := newEnv(t, 2, 4)
	e.runScheduler(testConfig(), "pal")
	e.createPod(podOpts{name: "huge", gpus: 16})
	e.createPod(podOpts{name: "bad-size", gpus: 1, ann: map[string]string{kube.AnnGang: "x", kube.AnnGangSize: "eight"}})
	e.createPod(podOpts{name: "bad-model", gpus: 1, ann: map[string]string{kube.AnnModel: "NoSuchNet"}})
	e.createPod(podOpts{name: "fine", gpus: 2, ann: map[string]string{kube.AnnModel: "BERT"}})
	e.eventually(10*time.Second, "fine bound", func() bool { return e.bound("fine") })
	for pod, why := range map[string]string{
		"huge":      "each pod asks 16 GPUs but the largest node has 4",
		"bad-size":  `annotation pal.io/gang-size="eight"`,
		"bad-model": `annotation pal.io/model="NoSuchNet": unknown model`,
	} {
		e.eventually(10*time.Second, pod+": FailedScheduling "+why, func() bool { return e.hasEvent(pod, "FailedScheduling", why) })
		if e.bound(pod) {
			t.Errorf("%s was bound", pod)
		}
	}
	// And it keeps serving: a later pod still binds.
	e.createPod(podOpts{name: "later", gpus: 1})
	e.eventually(10*time.Second, "later bound", func() bool { return e.bound("later") })
}

// LAS with a non-sticky placement preempts a gang that has run for a
// while when a new gang arrives and the cluster is full: every member of
// the old gang is evicted through the Eviction API, then the new gang
// binds on the freed GPUs. The pods are bare, so this needs
// preemptBarePods (TestJobGangMigratesOnce shows that bare pods are kept
// by default).
func TestPreemptionEvictsWholeGang(t *testing.T) {
	e := newEnv(t, 1, 4)
	cfg := testConfig()
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky"
	cfg.PreemptBarePods = true // the test's pods are bare: nothing recreates them
	s, _ := e.runScheduler(cfg, "pal")
	old := e.gang("old", 2, 2, nil)
	e.eventually(10*time.Second, "old gang bound", func() bool { return e.bound(old...) })
	time.Sleep(time.Second) // it attains service
	nw := e.gang("new", 2, 2, nil)
	e.eventually(15*time.Second, "old gang evicted", func() bool { return e.pod(old[0]) == nil && e.pod(old[1]) == nil })
	e.eventually(15*time.Second, "new gang bound", func() bool { return e.bound(nw...) })
	e.checkNoDoubleGPU()
	for _, n := range old {
		e.eventually(20*time.Second, n+": its Preempted event", func() bool {
			return e.hasEvent(n, "Preempted", "preempted at queue position 2 under las: its gpu-node-000 GPUs 0,1,2,3 go to gang jobs/new, ordered ahead of it")
		})
	}
	// The metrics say so too.
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	for _, want := range []string{"pal_evictions_total 2", "pal_bound_pods_total 4", "pal_round_duration_seconds_count", "pal_gpus_in_use 4", "pal_pending_gangs 0", "pal_mean_placement_score"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if b := get(t, srv.URL+path); b != "ok\n" {
			t.Errorf("%s = %q", path, b)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := httptestClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Pods of a batch/v1 Job with parallelism 2 are one gang without
// annotations: the Job controller creates them, and the two 3-GPU pods
// bind together, one per 4-GPU node.
func TestJobParallelismIsAGang(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	e.runScheduler(testConfig(), "pal")
	if _, err := e.cs.BatchV1().Jobs(e.ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: e.ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: "pal", RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "train", Image: "train:latest",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(3)}}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	e.eventually(30*time.Second, "the Job's two pods bound", func() bool {
		names = e.jobPods("train")
		return len(names) == 2 && e.bound(names...)
	})
	if pa, pb := e.pod(names[0]), e.pod(names[1]); pa.Spec.NodeName == pb.Spec.NodeName {
		t.Fatalf("two 3-GPU pods on one 4-GPU node")
	}
	info, err := kube.ParseBindInfo(e.pod(names[0]).Annotations[kube.AnnBindInfo])
	if err != nil || info.Gang != "jobs/job:train" || len(info.Pods) != 2 {
		t.Fatalf("bind-info %+v (%v), want the gang jobs/job:train of 2 pods", info, err)
	}
}

// A GPU without a PM-score runs at the median, and the scheduler says so
// once per node in an event.
func TestVariabilityConfigMap(t *testing.T) {
	e := newEnv(t, 2, 2)
	ctx := context.Background()
	// Node 000's GPU 1 is fast for class A; node 001 has no scores.
	csv := "node,gpu_index,class,score\n"
	for i, v := range []float64{1.3, 0.7} {
		for _, c := range "ABCD" {
			csv += fmt.Sprintf("gpu-node-000,%d,%c,%g\n", i, c, v)
		}
	}
	if _, err := e.cs.CoreV1().ConfigMaps("pal-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system"}, Data: map[string]string{kube.ScoresKey: csv}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Placement = "pm-first"
	e.runScheduler(cfg, "pal")
	e.createPod(podOpts{name: "a", gpus: 1, ann: map[string]string{kube.AnnClass: "A"}})
	e.eventually(10*time.Second, "a bound", func() bool { return e.bound("a") })
	if p := e.pod("a"); p.Spec.NodeName != "gpu-node-000" || p.Annotations[kube.AnnGPUIndices] != "1" {
		t.Errorf("class-A pod on %s GPU %s, want the fastest GPU gpu-node-000/1", p.Spec.NodeName, p.Annotations[kube.AnnGPUIndices])
	}
	e.eventually(10*time.Second, "NoPMScore event on gpu-node-001", func() bool {
		list, _ := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		n := 0
		for _, ev := range list.Items {
			if ev.Reason == "NoPMScore" && ev.InvolvedObject.Name == "gpu-node-001" && strings.Contains(ev.Message, "GPUs 0,1 of node gpu-node-001 have no PM-score") {
				n++
			}
		}
		return n == 1
	})
}
