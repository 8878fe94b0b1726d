//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// applyExample creates the Pods and Jobs of deploy/examples/FILE in the
// test's namespace, as kubectl apply -f would, and names the pods.
func (e *env) applyExample(file string) []string {
	e.t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", file))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := context.Background()
	var pods []string
	name := "deploy/examples/" + file
	for _, m := range decodeManifests(e.t, name, raw) {
		obj := m.obj
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			o.Namespace = e.ns
			_, err = e.cs.CoreV1().Pods(e.ns).Create(ctx, o, metav1.CreateOptions{})
			pods = append(pods, o.Name)
		case *batchv1.Job:
			o.Namespace = e.ns
			_, err = e.cs.BatchV1().Jobs(e.ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			e.t.Fatalf("deploy/examples/%s: unexpected %T", file, obj)
		}
		if err != nil {
			e.t.Fatalf("deploy/examples/%s: %v", file, err)
		}
	}
	return pods
}

// The README's walk-through on its 16 x 4 dev cluster under the default
// config (pal-ma, migrationCost 2m): the bare gang bert (two 2-GPU pods)
// binds; a later gang of eight 1-GPU resnet50 pods (another class)
// binds on free GPUs and bert stays exactly where it was (same pods,
// nodes and devices, no eviction); then the batch/v1 Job train forms one
// gang of 4 pods, created by the Job controller, and binds whole.
func TestExamplesBareGangSurvivesLaterGang(t *testing.T) {
	e := newEnv(t, 16, 4)
	s, _ := e.runScheduler(testConfig(), "pal")
	bert := e.applyExample("bert.yaml")
	e.eventually(15*time.Second, "bert bound", func() bool { return e.bound(bert...) })
	before := map[string]*corev1.Pod{}
	for _, n := range bert {
		before[n] = e.pod(n)
	}
	resnet := e.applyExample("resnet-gang.yaml")
	if len(resnet) != 8 {
		t.Fatalf("resnet-gang.yaml has %d pods, want 8", len(resnet))
	}
	e.eventually(15*time.Second, "the resnet gang bound", func() bool { return e.bound(resnet...) })
	time.Sleep(2 * time.Second) // more rounds
	for _, n := range bert {
		p, b := e.pod(n), before[n]
		if p == nil || p.UID != b.UID || p.Spec.NodeName != b.Spec.NodeName || p.Annotations[kube.AnnGPUIndices] != b.Annotations[kube.AnnGPUIndices] {
			t.Fatalf("bert pod %s was on %s devices %s; now %+v", n, b.Spec.NodeName, b.Annotations[kube.AnnGPUIndices], p)
		}
		if ev := e.events(n, "Preempted"); len(ev) > 0 {
			t.Errorf("bert pod %s: Preempted events %q", n, ev)
		}
	}
	e.applyExample("train-job.yaml")
	var train []string
	e.eventually(30*time.Second, "the Job's 4 pods bound", func() bool {
		train = e.jobPods("train")
		return len(train) == 4 && e.bound(train...)
	})
	info, err := kube.ParseBindInfo(e.pod(train[0]).Annotations[kube.AnnBindInfo])
	if err != nil || info.Gang != "jobs/job:train" || len(info.Pods) != 4 {
		t.Fatalf("bind-info %+v (%v), want the gang jobs/job:train of 4 pods", info, err)
	}
	e.checkNoDoubleGPU()
	if s.Binds() != 2+8+4 {
		t.Errorf("%d binds, want 14 (2 bert, 8 resnet, 4 train)", s.Binds())
	}
}
