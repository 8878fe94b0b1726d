package profilebench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
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

// A node changes under the run (the kubelet's status, a label, another
// controller's annotation) between the read and the patch of a cordon or
// uncordon: the API server refuses the patch with 409 Conflict, since it
// names the resourceVersion read. Each is read again and retried, so the
// benchmark neither fails at its start nor leaves a node cordoned at its
// end, on its way out after an interruption included.
func TestCordonRetriesConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// conflict says which node patches (1-based, in order) are refused.
		conflict  map[int]bool
		interrupt bool
		err       error // the refusal (nil: 409 Conflict)
	}{
		{name: "cordon", conflict: map[int]bool{1: true, 2: true}},
		{name: "uncordon", conflict: map[int]bool{2: true, 3: true}},
		{name: "uncordon on the way out", conflict: map[int]bool{2: true}, interrupt: true},
		{name: "cordon, 503", conflict: map[int]bool{1: true}, err: apierrors.NewServiceUnavailable("apiserver restarting")},
		{name: "uncordon, 503", conflict: map[int]bool{2: true}, err: apierrors.NewServiceUnavailable("apiserver restarting")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := NewPlan([]Node{{Name: "a-node", GPUs: 1}}, testOptions())
			cs := fakeClient(benchNode("a-node", false, nil))
			patches := 0
			cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				if tc.conflict[patches] && tc.err != nil {
					return true, nil, tc.err
				}
				if tc.conflict[patches] {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "a-node", errors.New("the object has been modified"))
				}
				return false, nil, nil
			})
			stop := errors.New("interrupted")
			kubelet := func(ctx context.Context, _ time.Duration) error {
				if s := nodeState(t, cs, "a-node"); s != "cordoned by t1" {
					t.Errorf("a run ran on a node %s", s)
				}
				if tc.interrupt {
					return stop
				}
				list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
				for i := range list.Items {
					finish(&list.Items[i], corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
					cs.CoreV1().Pods("bench").UpdateStatus(ctx, &list.Items[i], metav1.UpdateOptions{})
				}
				return nil
			}
			err := Apply(context.Background(), cs, p, ApplyOptions{Cordon: true, Sleep: kubelet})
			if tc.interrupt && !errors.Is(err, stop) || !tc.interrupt && err != nil {
				t.Errorf("Apply: %v", err)
			}
			if s := nodeState(t, cs, "a-node"); s != "schedulable" {
				t.Errorf("a-node %s after the run (%d node patches)", s, patches)
			}
		})
	}
}

// The API server applies a cordon but its answer is lost (a timeout, a
// dropped connection): Apply fails at that node, and must still lift the
// cordon it may have made there on its way out. The mark says whether
// it did.
func TestApplyLiftsCordonWhoseAnswerWasLost(t *testing.T) {
	p, _ := NewPlan([]Node{{Name: "a-node", GPUs: 1}}, testOptions())
	cs := fakeClient(benchNode("a-node", false, nil))
	lost := false
	cs.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if lost {
			return false, nil, nil
		}
		lost = true
		if _, _, err := k8stesting.ObjectReaction(cs.Tracker())(a); err != nil {
			t.Fatal(err)
		}
		// An answer lost in a way not tried again (a passing one is,
		// and the try then finds the run's mark).
		return true, nil, errors.New("stream error: stream ID 7; INTERNAL_ERROR; received from peer")
	})
	err := Apply(context.Background(), cs, p, ApplyOptions{Cordon: true, Sleep: func(context.Context, time.Duration) error { return errors.New("polled") }})
	if err == nil || !strings.Contains(err.Error(), "cordoning node a-node") {
		t.Errorf("Apply: %v, want the lost cordon's error", err)
	}
	if s := nodeState(t, cs, "a-node"); s != "schedulable" {
		t.Errorf("a-node %s after Apply failed", s)
	}
}

// slowClient answers every node call after delay, or fails it when its
// context ends first, as a rate-limited client does (client-go's, 5
// calls a second by default, refuses a wait past the context's deadline).
type slowClient struct {
	kubernetes.Interface
	delay time.Duration
}

type slowCore struct {
	typedcorev1.CoreV1Interface
	delay time.Duration
}

type slowNodes struct {
	typedcorev1.NodeInterface
	delay time.Duration
}

func (c slowClient) CoreV1() typedcorev1.CoreV1Interface {
	return slowCore{c.Interface.CoreV1(), c.delay}
}

func (c slowCore) Nodes() typedcorev1.NodeInterface {
	return slowNodes{c.CoreV1Interface.Nodes(), c.delay}
}

func (n slowNodes) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(n.delay):
		return nil
	}
}

func (n slowNodes) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.Node, error) {
	if err := n.wait(ctx); err != nil {
		return nil, err
	}
	return n.NodeInterface.Get(ctx, name, o)
}

func (n slowNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*corev1.Node, error) {
	if err := n.wait(ctx); err != nil {
		return nil, err
	}
	return n.NodeInterface.Patch(ctx, name, pt, data, o, sub...)
}

// An interrupted Apply lifts the cordons of all its nodes, however many:
// the time it allows is per node, not one bound for them all, which a
// benchmark of hundreds of cordoned nodes (at the client's 5 calls a
// second, 30 nodes in 10 s) ran out of and left the rest cordoned.
func TestApplyStoppedLiftsEveryCordon(t *testing.T) {
	defer func(d time.Duration) { liftTimeout = d }(liftTimeout)
	liftTimeout = 200 * time.Millisecond
	var nodes []Node
	var objs []runtime.Object
	for i := range 20 {
		name := fmt.Sprintf("node-%02d", i)
		nodes = append(nodes, Node{Name: name, GPUs: 1})
		objs = append(objs, benchNode(name, false, nil))
	}
	p, _ := NewPlan(nodes, testOptions())
	fc := fakeClient(objs...)
	cs := slowClient{fc, 20 * time.Millisecond} // 40 ms a node, 800 ms for all
	stop := errors.New("interrupted")
	err := Apply(context.Background(), cs, p, ApplyOptions{Cordon: true,
		Sleep: func(context.Context, time.Duration) error { return stop }})
	if !errors.Is(err, stop) {
		t.Errorf("Apply: %v, want the interruption", err)
	}
	for _, n := range nodes {
		if s := nodeState(t, fc, n.Name); s != "schedulable" {
			t.Errorf("%s %s after an interrupted Apply", n.Name, s)
		}
	}
}

// Lifts that fail on the way out are named in Apply's error, with what
// lifts them, beside the interruption.
func TestApplyStoppedNamesCordonsLeft(t *testing.T) {
	p, _ := NewPlan(twoNodes(), testOptions())
	cs := fakeClient(benchNode("a-node", false, nil), benchNode("b-node", false, nil))
	stopped := false
	cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if stopped {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "a-node", errors.New("no"))
		}
		return false, nil, nil
	})
	stop := errors.New("interrupted")
	err := Apply(context.Background(), cs, p, ApplyOptions{Cordon: true,
		Sleep: func(context.Context, time.Duration) error { stopped = true; return stop }})
	want := "interrupted; and 2 node(s) still cordoned by run t1 (pal-kube profile collect --run-id t1 --namespace bench --cleanup lifts them): a-node, b-node; the first: uncordoning node a-node:"
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), want) {
		t.Errorf("Apply: %v\nwant the interruption and: %s", err, want)
	}
}

// A node that leaves the cluster mid-benchmark (scaled down, replaced)
// takes its cordon with it: the lift after its last run finds nothing
// to uncordon, and the benchmark goes on with the other nodes. The
// missing node used to end the whole benchmark, and with it every
// measurement under way.
func TestApplyNodeGoneMidRun(t *testing.T) {
	p, _ := NewPlan(twoNodes(), testOptions())
	cs := fakeClient(benchNode("a-node", false, nil), benchNode("b-node", false, nil))
	ctx := context.Background()
	polls := 0
	kubelet := func(ctx context.Context, _ time.Duration) error {
		if polls++; polls == 1 {
			if err := cs.CoreV1().Nodes().Delete(ctx, "a-node", metav1.DeleteOptions{}); err != nil {
				return err
			}
		}
		list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
		for i := range list.Items {
			pod := &list.Items[i]
			switch {
			case isFinished(pod):
			case pod.Spec.NodeName == "a-node": // the pod garbage collector's work
				if err := cs.CoreV1().Pods("bench").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
					return err
				}
			default:
				finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
				if _, err := cs.CoreV1().Pods("bench").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
		}
		if polls > 100 {
			return errors.New("too many polls")
		}
		return nil
	}
	var progress strings.Builder
	if err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet, Progress: &progress, Cordon: true}); err != nil {
		t.Fatalf("Apply: %v\n%s", err, progress.String())
	}
	if s := nodeState(t, cs, "b-node"); s != "schedulable" {
		t.Errorf("b-node %s after the run", s)
	}
	if c, _ := Collect(ctx, cs, p, nil); len(c.Measured) != 8 || len(c.Failed) != 4 {
		t.Errorf("%d measured, %d failed; want b-node's 8 and a-node's 4", len(c.Measured), len(c.Failed))
	}
}
