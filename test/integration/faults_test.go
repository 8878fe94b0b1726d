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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// faults reads pal_round_errors_total, all stages, from the scheduler's
// /metrics.
func faults(t *testing.T, s *kube.Scheduler) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	n := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "pal_round_errors_total{") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				n += v
			}
		}
	}
	return n
}

// keepsRunning checks that the scheduler still runs rounds and binds: a
// new 1-GPU pod binds.
func (e *env) keepsRunning(s *kube.Scheduler, name string) {
	e.t.Helper()
	r := s.Rounds()
	e.createPod(podOpts{name: name, gpus: 1})
	e.eventually(15*time.Second, name+" bound by a scheduler still running", func() bool { return e.bound(name) && s.Rounds() > r })
}

// A pod of 1,025 containers asking 9e15 GPUs each (kube-apiserver admits
// it; the sum wraps an int64 negative) next to a healthy gang of two
// 1-GPU pods: the gang binds, the hostile pod gets a FailedScheduling
// event naming the container's request, and the scheduler keeps running,
// with no fault to recover from.
func TestHostilePodNextToGang(t *testing.T) {
	e := newEnv(t, 2, 4)
	s, _ := e.runScheduler(testConfig(), "pal")
	hostile := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hostile", Namespace: e.ns},
		Spec: corev1.PodSpec{SchedulerName: "pal"}}
	for i := range 1025 {
		hostile.Spec.Containers = append(hostile.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "x",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: resource.MustParse("9000000000000000")}}})
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(context.Background(), hostile, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the apiserver refused the hostile pod (the test needs it admitted): %v", err)
	}
	names := e.gang("healthy", 2, 1, nil)
	e.eventually(15*time.Second, "the healthy gang bound", func() bool { return e.bound(names...) })
	want := "spec.containers[0] (c0) resources.requests[nvidia.com/gpu]: 9000000000000000 is beyond any node"
	e.eventually(10*time.Second, "FailedScheduling naming the request", func() bool { return e.hasEvent("hostile", "FailedScheduling", want) })
	if e.bound("hostile") {
		t.Fatal("the hostile pod was bound")
	}
	e.keepsRunning(s, "later")
	if n := faults(t, s); n != 0 {
		t.Errorf("%v faults recovered; want none: the pod is refused when it is read", n)
	}
	e.checkNoDoubleGPU()
}

// Under scheduler: themis, two apps' pods without pal.io/iterations (and
// without pal.io/model: no iteration time either) are bound, on the
// documented estimate of their work, and the scheduler keeps running.
func TestThemisUnknownWorkOnDevCluster(t *testing.T) {
	e := newEnv(t, 2, 4)
	cfg := testConfig()
	cfg.Scheduler = "themis"
	s, _ := e.runScheduler(cfg, "pal")
	e.createPod(podOpts{name: "x-0", gpus: 2, ann: map[string]string{kube.AnnApp: "x"}})
	e.createPod(podOpts{name: "y-0", gpus: 2, ann: map[string]string{kube.AnnApp: "y"}})
	e.eventually(15*time.Second, "both apps' pods bound", func() bool { return e.bound("x-0", "y-0") })
	e.keepsRunning(s, "later")
	if n := faults(t, s); n != 0 {
		t.Errorf("%v faults recovered", n)
	}
	e.checkNoDoubleGPU()
}
