package profilebench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func benchNode(name string, unschedulable bool, ann map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
}

// nodeState is "cordoned" or "schedulable", with the run mark if any.
func nodeState(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := "schedulable"
	if n.Spec.Unschedulable {
		s = "cordoned"
	}
	if m, ok := n.Annotations[AnnCordonedBy]; ok {
		s += " by " + m
	}
	return s
}

// With Cordon, a-node (schedulable) is cordoned by the run from before
// its first run until its last one has finished, and b-node, which an
// operator had cordoned, is left cordoned and unmarked. A training pod
// already on a-node is named before a-node's first run.
func TestApplyCordons(t *testing.T) {
	p, err := NewPlan(twoNodes(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	train := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml"},
		Spec: corev1.PodSpec{NodeName: "a-node", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := fakeClient(benchNode("a-node", false, nil), benchNode("b-node", true, nil), train)
	ctx := context.Background()
	var during []string
	kubelet := func(ctx context.Context, _ time.Duration) error {
		list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
		for i := range list.Items {
			pod := &list.Items[i]
			if isFinished(pod) {
				continue
			}
			during = append(during, pod.Spec.NodeName+" "+nodeState(t, cs, pod.Spec.NodeName))
			finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
			if _, err := cs.CoreV1().Pods("bench").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	var progress strings.Builder
	if err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet, Progress: &progress, Cordon: true}); err != nil {
		t.Fatal(err)
	}
	for _, d := range during {
		if d != "a-node cordoned by t1" && d != "b-node cordoned" {
			t.Errorf("a run ran on %s", d)
		}
	}
	if len(during) != len(p.Runs) {
		t.Errorf("%d runs seen live, want %d", len(during), len(p.Runs))
	}
	if a, b := nodeState(t, cs, "a-node"), nodeState(t, cs, "b-node"); a != "schedulable" || b != "cordoned" {
		t.Errorf("after the run: a-node %s, b-node %s; want schedulable and cordoned (as it was)", a, b)
	}
	for _, w := range []string{
		"node a-node: other pods hold its GPUs, and their load is measured too: ml/train (1 GPUs)",
		"cordoned node a-node until its last run has finished",
		"node b-node was cordoned already: left as it is",
		"uncordoned node a-node: its last run has finished",
	} {
		if !strings.Contains(progress.String(), w+"\n") {
			t.Errorf("progress lacks %q:\n%s", w, progress.String())
		}
	}
	if strings.Contains(progress.String(), "b-node: other pods") {
		t.Errorf("b-node has no other pods:\n%s", progress.String())
	}
}

// An Apply that stops early lifts its cordons on the way out; one that
// was killed leaves them, and Uncordon lifts those of its run only.
func TestApplyStoppedLiftsCordon(t *testing.T) {
	p, _ := NewPlan(twoNodes(), testOptions())
	cs := fakeClient(benchNode("a-node", false, nil), benchNode("b-node", false, nil))
	stop := errors.New("interrupted")
	var progress strings.Builder
	err := Apply(context.Background(), cs, p, ApplyOptions{Cordon: true, Progress: &progress,
		Sleep: func(context.Context, time.Duration) error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("Apply: %v, want the interruption", err)
	}
	for _, n := range []string{"a-node", "b-node"} {
		if s := nodeState(t, cs, n); s != "schedulable" {
			t.Errorf("%s %s after an interrupted Apply", n, s)
		}
		if w := "uncordoned node " + n + ": the benchmark stopped before its last run there finished\n"; !strings.Contains(progress.String(), w) {
			t.Errorf("progress lacks %q", w)
		}
	}

	ctx := context.Background()
	cs = fakeClient(benchNode("a-node", true, map[string]string{AnnCordonedBy: "t1"}), benchNode("b-node", true, map[string]string{AnnCordonedBy: "t0"}),
		benchNode("c-node", true, nil))
	got, err := Uncordon(ctx, cs, "t1")
	if err != nil || len(got) != 1 || got[0] != "a-node" {
		t.Fatalf("Uncordon: %v %v, want [a-node]", got, err)
	}
	for n, want := range map[string]string{"a-node": "schedulable", "b-node": "cordoned by t0", "c-node": "cordoned"} {
		if s := nodeState(t, cs, n); s != want {
			t.Errorf("%s %s, want %s", n, s, want)
		}
	}
}
