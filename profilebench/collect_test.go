package profilebench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeClient is a fake clientset that gives created objects a UID, as
// the API server does.
func fakeClient(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	n := 0
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		if m, ok := obj.(metav1.Object); ok && m.GetUID() == "" {
			n++
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
		}
		return false, nil, nil
	})
	return cs
}

// finish sets a pod's status as a kubelet does when its container ends.
func finish(p *corev1.Pod, phase corev1.PodPhase, exit int32, msg string) {
	p.Status.Phase = phase
	reason := "Completed"
	if exit != 0 {
		reason = "Error"
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: Container,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, Message: msg}}}}
}

func TestCollect(t *testing.T) {
	p, err := NewPlan(twoNodes(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	pods := p.Pods()
	logs := map[string]string{}
	var objs []runtime.Object
	for i, pod := range pods {
		r := p.Runs[i]
		// GPU speeds by position; BERT twice ResNet-18's time.
		it := 0.1 * float64(1+r.GPU) * float64(1+r.Repetition%2) / 10
		if r.Model == "BERT" {
			it *= 2
		}
		if r.Node == "a-node" {
			it *= 1.5
		}
		line := fmt.Sprintf("PAL_RESULT iter_time_s=%g sm_clock_mhz=1410 power_w=250 temp_c=6%d", it, r.GPU)
		switch i {
		case 0: // the result only in the log (an image that writes no termination message)
			finish(pod, corev1.PodSucceeded, 0, "")
			logs[pod.Name] = "loading model\nstep 30/30\n" + line + " gpu_uuid=GPU-aaaa\n"
		case 4: // failed: the kubelet's fallback message is the log's tail
			finish(pod, corev1.PodFailed, 1, "Traceback ...\nRuntimeError: CUDA out of memory")
		case 7: // killed at its deadline
			pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		case 8: // a malformed line
			finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.1 temp=60")
		case 9: // still running
			pod.Status.Phase = corev1.PodRunning
		case 10: // missing: not created
			continue
		case 11: // moved off its device by hand
			pod.Annotations["pal.io/gpu-indices"] = "0"
			finish(pod, corev1.PodSucceeded, 0, line)
		default:
			finish(pod, corev1.PodSucceeded, 0, "done\n"+line)
		}
		objs = append(objs, pod)
	}
	cs := fakeClient(objs...)
	logf := func(_ context.Context, ns, pod, container string) (string, error) {
		if ns != "bench" || container != Container {
			t.Errorf("logs of %s/%s container %s", ns, pod, container)
		}
		l, ok := logs[pod]
		if !ok {
			return "", fmt.Errorf("no logs")
		}
		return l, nil
	}
	c, err := Collect(context.Background(), cs, p, logf)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := c.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := `# pal-kube profile bench run t1: image bench:1, namespace bench, 30 iterations per run, one run per node at a time
# 6 of 12 runs measured
# failed: pod pal-bench-t1-n1-g0-m1-r0 (node b-node GPU 0, BERT repetition 0): pod failed: exit code 1 (Error): RuntimeError: CUDA out of memory
# failed: pod pal-bench-t1-n1-g0-m0-r1 (node b-node GPU 0, ResNet-18 repetition 1): pod failed: DeadlineExceeded: Pod was active on the node longer than the specified deadline
# failed: pod pal-bench-t1-n1-g1-m0-r1 (node b-node GPU 1, ResNet-18 repetition 1): termination message line 1: field temp: unknown key (want iter_time_s, sm_clock_mhz, power_w, temp_c or gpu_uuid)
# failed: pod pal-bench-t1-n0-g0-m1-r1 (node a-node GPU 0, BERT repetition 1): pod is Running, not finished
# failed: pod pal-bench-t1-n1-g0-m1-r1 (node b-node GPU 0, BERT repetition 1): pod not found
# failed: pod pal-bench-t1-n1-g1-m1-r1 (node b-node GPU 1, BERT repetition 1): pod runs on b-node device "0", planned for b-node device 1
# unmeasured: node b-node GPU 0: BERT unmeasured (its 2 runs failed)
# partial: node a-node GPU 0: BERT measured by 1 of 2 runs (1 failed)
# partial: node b-node GPU 0: ResNet-18 measured by 1 of 2 runs (1 failed)
# partial: node b-node GPU 1: ResNet-18 measured by 1 of 2 runs (1 failed)
# partial: node b-node GPU 1: BERT measured by 1 of 2 runs (1 failed)
node,gpu_index,gpu_uuid,model,iter_time_s,sm_clock_mhz,power_w,temp_c
a-node,0,GPU-aaaa,ResNet-18,0.015,1410,250,60
a-node,0,,ResNet-18,0.03,1410,250,60
a-node,0,,BERT,0.03,1410,250,60
b-node,0,,ResNet-18,0.01,1410,250,60
b-node,1,,ResNet-18,0.02,1410,250,61
b-node,1,,BERT,0.04,1410,250,61
`
	// Rows by node, GPU, model in plan order (ResNet-18 first), then
	// repetition; odd repetitions take twice as long, a-node 1.5x. So
	// b-node GPU 0's ResNet-18, whose slow repetition was killed at its
	// deadline, reads 0.01 where its two runs would average 0.015: a
	// GPU and model measured by only some of its runs is '# partial:'.
	if got := b.String(); got != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
	}
	if len(c.Measured)+len(c.Failed) != len(p.Runs) {
		t.Errorf("%d measured + %d failed != %d runs", len(c.Measured), len(c.Failed), len(p.Runs))
	}
	if c.Measured[0].Source != "log" || c.Measured[1].Source != "termination message" {
		t.Errorf("sources %q %q", c.Measured[0].Source, c.Measured[1].Source)
	}
}

// TestApplySequences runs Apply against the fake clientset with the test
// as the kubelet: between two polls it finishes every running pod. No
// two runs of one queue may ever be live at once, every run starts once,
// and every pod is owned by the run's ConfigMap.
func TestApplySequences(t *testing.T) {
	for _, perGPU := range []bool{false, true} {
		o := testOptions()
		o.PerGPU = perGPU
		p, err := NewPlan(twoNodes(), o)
		if err != nil {
			t.Fatal(err)
		}
		cs := fakeClient()
		ctx := context.Background()
		polls, maxLive := 0, 0
		kubelet := func(ctx context.Context, _ time.Duration) error {
			polls++
			list, err := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			live := map[string]int{}
			for i := range list.Items {
				pod := &list.Items[i]
				if isFinished(pod) {
					continue
				}
				q := pod.Spec.NodeName
				if perGPU {
					q += "/" + pod.Annotations["pal.io/gpu-indices"]
				}
				live[q]++
				if live[q] > 1 {
					t.Errorf("perGPU=%v: two runs of queue %s live at once (poll %d)", perGPU, q, polls)
				}
				finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
				if _, err := cs.CoreV1().Pods("bench").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			n := 0
			for _, v := range live {
				n += v
			}
			maxLive = max(maxLive, n)
			return nil
		}
		var progress strings.Builder
		if err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet, Progress: &progress}); err != nil {
			t.Fatal(err)
		}
		list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
		cm, err := cs.CoreV1().ConfigMaps("bench").Get(ctx, "pal-bench-t1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 12 {
			t.Fatalf("perGPU=%v: %d pods, want 12", perGPU, len(list.Items))
		}
		for _, pod := range list.Items {
			if !ownedBy(&pod, cm) {
				t.Errorf("pod %s not owned by %s (%v)", pod.Name, cm.UID, pod.OwnerReferences)
			}
		}
		// Per node: a-node has 4 runs, b-node 8, so 8 waves with one run
		// per node; per GPU: 4 runs on each of 3 GPUs, 4 waves of 3.
		wantPolls, wantLive := 8, 2
		if perGPU {
			wantPolls, wantLive = 4, 3
		}
		if polls != wantPolls || maxLive != wantLive {
			t.Errorf("perGPU=%v: %d polls with at most %d live runs, want %d and %d", perGPU, polls, maxLive, wantPolls, wantLive)
		}
		if n := strings.Count(progress.String(), "started "); n != 12 {
			t.Errorf("%d started lines", n)
		}
		c, err := Collect(ctx, cs, p, nil)
		if err != nil || len(c.Measured) != 12 {
			t.Fatalf("collect: %v, %d measured", err, len(c.Measured))
		}

		// Resume: the same plan again starts nothing new.
		if err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet}); err != nil {
			t.Fatalf("resume: %v", err)
		}
		if l, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{}); len(l.Items) != 12 {
			t.Errorf("resume made %d pods", len(l.Items))
		}
		// Another plan under the same run id is refused.
		o.Repetitions = 3
		p3, _ := NewPlan(twoNodes(), o)
		if err := Apply(ctx, cs, p3, ApplyOptions{Sleep: kubelet}); err == nil || !strings.Contains(err.Error(), "another plan") {
			t.Errorf("other plan, same id: %v", err)
		}
	}
}

func TestApplyRefusesForeignPod(t *testing.T) {
	p, _ := NewPlan(twoNodes(), testOptions())
	squat := p.Pod(p.Runs[0]) // applied by hand: no owner reference
	cs := fakeClient(squat)
	err := Apply(context.Background(), cs, p, ApplyOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "pod bench/pal-bench-t1-n0-g0-m0-r0 exists and was not created by run t1") {
		t.Fatalf("got %v", err)
	}
}

// TestCleanupOnlyOwn: Cleanup deletes the run's succeeded pods it owns,
// keeps a failed one and a labelled pod it did not create, keeps the
// ConfigMap while pods remain, and never touches other pods.
func TestCleanupOnlyOwn(t *testing.T) {
	ctx := context.Background()
	p, _ := NewPlan([]Node{{Name: "a-node", GPUs: 2}}, Options{RunID: "c1", Image: "i", Namespace: "bench", SchedulerName: "pal",
		Models: []string{"m"}, Repetitions: 1, Iterations: 1})
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "bench", Labels: map[string]string{"app": "x"}}}
	squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "labelled", Namespace: "bench", Labels: map[string]string{LabelRun: "c1"}}}
	finish(squatter, corev1.PodSucceeded, 0, "")
	cs := fakeClient(stranger, squatter)
	fails := 0
	kubelet := func(ctx context.Context, _ time.Duration) error {
		list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{LabelSelector: p.Selector()})
		for i := range list.Items {
			pod := &list.Items[i]
			if pod.Status.Phase != "" {
				continue
			}
			if pod.Annotations["pal.io/gpu-indices"] == "1" {
				finish(pod, corev1.PodFailed, 2, "bad")
				fails++
			} else {
				finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=1")
			}
			cs.CoreV1().Pods("bench").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		}
		return nil
	}
	if err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet}); err != nil {
		t.Fatal(err)
	}
	deleted, kept, err := Cleanup(ctx, cs, "bench", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(deleted) != "[pal-bench-c1-n0-g0-m0-r0]" || fmt.Sprint(kept) != "[labelled (not created by this run) pal-bench-c1-n0-g1-m0-r0 (Failed)]" || fails != 1 {
		t.Errorf("deleted %v kept %v", deleted, kept)
	}
	for _, n := range []string{"other", "labelled", "pal-bench-c1-n0-g1-m0-r0"} {
		if _, err := cs.CoreV1().Pods("bench").Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: %v", n, err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("bench").Get(ctx, "pal-bench-c1", metav1.GetOptions{}); err != nil {
		t.Errorf("configmap deleted while pods remain: %v", err)
	}
	// A run applied from a written file (no AnnCreatedBy) is not ours.
	cm, _ := p.ConfigMap()
	cm.Name, cm.Labels[LabelRun] = "pal-bench-k1", "k1"
	if _, err := cs.CoreV1().ConfigMaps("bench").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Cleanup(ctx, cs, "bench", "k1"); err == nil || !strings.Contains(err.Error(), "not created by pal-kube profile bench --apply") {
		t.Errorf("cleanup of a kubectl-applied run: %v", err)
	}
}

// The log is read up to logLimit bytes from the start of its last
// logTailLines lines, so a chatty benchmark's log comes back cut in the
// middle of a line. A result line cut there is not a measurement: cut
// from iter_time_s=12.5 it reads 1.
func TestCollectCutLog(t *testing.T) {
	p, _ := NewPlan([]Node{{Name: "a-node", GPUs: 1}}, Options{RunID: "l1", Image: "i", Namespace: "bench", SchedulerName: "pal",
		Models: []string{"m"}, Repetitions: 1, Iterations: 1})
	// fill makes a log of logLimit bytes that ends in tail.
	fill := func(tail string) string { return strings.Repeat("x", logLimit-len(tail)-1) + "\n" + tail }
	for _, tc := range []struct {
		name, log, want string
	}{
		{name: "result cut", log: fill("PAL_RESULT iter_time_s=1"),
			want: "no PAL_RESULT line in the termination message or the last 200 log lines (the log's last line was cut at 65536 bytes)"},
		{name: "whole at the limit", log: fill("PAL_RESULT iter_time_s=12.5\n")},
		{name: "short, no newline", log: "PAL_RESULT iter_time_s=12.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := p.Pod(p.Runs[0])
			finish(pod, corev1.PodSucceeded, 0, "")
			logf := func(context.Context, string, string, string) (string, error) { return tc.log, nil }
			c, err := Collect(context.Background(), fakeClient(pod), p, logf)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want != "" && (len(c.Failed) != 1 || c.Failed[0].Why != tc.want):
				t.Errorf("measured %+v, failed %+v; want failed: %s", c.Measured, c.Failed, tc.want)
			case tc.want == "" && (len(c.Measured) != 1 || c.Measured[0].IterTime != 12.5):
				t.Errorf("measured %+v, failed %+v; want 12.5 s", c.Measured, c.Failed)
			}
		})
	}
}

// An Apply that stops early (Ctrl-C, --timeout, an error) deletes the
// runs it started that are still going: left, they held their GPUs until
// their deadline, measured on nodes whose cordon was lifted, and were
// then collected as if they had run under it. Finished runs, and pods it
// did not create, stay; run again, Apply starts the deleted runs anew.
func TestApplyStoppedDeletesRunsGoing(t *testing.T) {
	for _, cordon := range []bool{false, true} {
		t.Run(fmt.Sprintf("cordon=%v", cordon), func(t *testing.T) {
			ctx := context.Background()
			p, _ := NewPlan(twoNodes(), testOptions())
			stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "labelled", Namespace: "bench", Labels: map[string]string{LabelRun: "t1"}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			cs := fakeClient(stranger, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a-node"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b-node"}})
			var order []string
			cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				switch a.GetVerb() + " " + a.GetResource().Resource {
				case "delete pods":
					order = append(order, "delete "+a.(k8stesting.DeleteAction).GetName())
				case "patch nodes":
					order = append(order, "patch "+a.(k8stesting.PatchAction).GetName())
				}
				return false, nil, nil
			})
			// The first poll finishes b-node's first run; the second is
			// interrupted with a run going on each node.
			polls := 0
			stop := errors.New("interrupted")
			kubelet := func(ctx context.Context, _ time.Duration) error {
				if polls++; polls == 2 {
					return stop
				}
				pod, err := cs.CoreV1().Pods("bench").Get(ctx, "pal-bench-t1-n1-g0-m0-r0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
				_, err = cs.CoreV1().Pods("bench").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
				return err
			}
			var progress strings.Builder
			err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet, Progress: &progress, Cordon: cordon})
			if !errors.Is(err, stop) {
				t.Fatalf("Apply: %v, want the interruption", err)
			}
			list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
			var left []string
			for _, pod := range list.Items {
				left = append(left, pod.Name)
			}
			if fmt.Sprint(left) != "[labelled pal-bench-t1-n1-g0-m0-r0]" {
				t.Errorf("pods after the interruption: %v, want the stranger and the finished run", left)
			}
			for _, w := range []string{"deleted pal-bench-t1-n0-g0-m0-r0 (on a-node): the benchmark stopped before it finished",
				"deleted pal-bench-t1-n1-g1-m0-r0 (on b-node): the benchmark stopped before it finished"} {
				if !strings.Contains(progress.String(), w+"\n") {
					t.Errorf("progress lacks %q:\n%s", w, progress.String())
				}
			}
			if cordon && fmt.Sprint(order[len(order)-4:]) != "[delete pal-bench-t1-n0-g0-m0-r0 delete pal-bench-t1-n1-g1-m0-r0 patch a-node patch b-node]" {
				t.Errorf("calls %v: want the runs deleted before their nodes are uncordoned", order)
			}
			// Resumed, every run finishes, the deleted ones made anew.
			resumed := func(ctx context.Context, _ time.Duration) error {
				list, _ := cs.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{LabelSelector: p.Selector()})
				for i := range list.Items {
					pod := &list.Items[i]
					if pod.Name != "labelled" && !isFinished(pod) {
						finish(pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
						cs.CoreV1().Pods("bench").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
					}
				}
				return nil
			}
			if err := Apply(ctx, cs, p, ApplyOptions{Sleep: resumed, Cordon: cordon}); err != nil {
				t.Fatal(err)
			}
			if c, err := Collect(ctx, cs, p, nil); err != nil || len(c.Measured) != len(p.Runs) {
				t.Errorf("collected after the resumption: %v, %d of %d measured", err, len(c.Measured), len(p.Runs))
			}
		})
	}
}

// An API server that refuses a call for a moment (a restart behind the
// load balancer, 429 from its flow control, a 503) does not end a
// benchmark that runs for hours: a poll whose list, or a run whose
// create, is refused so is tried again at the next poll, up to
// maxPollFailures polls in a row. A refusal that will not pass
// (Forbidden) still ends it at once, and so does one that lasts.
func TestApplyRidesOutPassingErrors(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("apiserver restarting")
	busy := apierrors.NewTooManyRequests("flow control", 1)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	for _, tc := range []struct {
		name      string
		verb      string
		err       error
		refuse    int // calls refused, from the second
		want      string
		wantPolls int
	}{
		{name: "list 503", verb: "list", err: unavailable, refuse: 3},
		{name: "create 429", verb: "create", err: busy, refuse: 2},
		{name: "list forbidden", verb: "list", err: forbidden, refuse: 1, want: `pods is forbidden: no`, wantPolls: 1},
		{name: "list 503 for good", verb: "list", err: unavailable, refuse: 1000, want: "apiserver restarting", wantPolls: maxPollFailures + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p, _ := NewPlan(twoNodes(), testOptions())
			cs := fakeClient()
			calls, refused := 0, 0
			cs.PrependReactor(tc.verb, "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() != "bench" {
					return false, nil, nil
				}
				if calls++; calls > 1 && refused < tc.refuse {
					refused++
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			polls := 0
			kubelet := func(ctx context.Context, _ time.Duration) error {
				polls++
				list, err := cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "bench")
				if err != nil {
					return err
				}
				for _, pod := range list.(*corev1.PodList).Items {
					if !isFinished(&pod) {
						finish(&pod, corev1.PodSucceeded, 0, "PAL_RESULT iter_time_s=0.5")
						if err := cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), &pod, "bench"); err != nil {
							return err
						}
					}
				}
				return nil
			}
			var progress strings.Builder
			err := Apply(ctx, cs, p, ApplyOptions{Sleep: kubelet, Progress: &progress})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Apply: %v\n%s", err, progress.String())
				}
				list, _ := cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "bench")
				if n := len(list.(*corev1.PodList).Items); n != len(p.Runs) || refused != tc.refuse {
					t.Errorf("%d pods for %d runs, %d calls refused", n, len(p.Runs), refused)
				}
				if !strings.Contains(progress.String(), "tried again at the next poll") {
					t.Errorf("progress does not say a call was refused:\n%s", progress.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || polls != tc.wantPolls {
				t.Errorf("Apply: %v after %d polls; want %q after %d", err, polls, tc.want, tc.wantPolls)
			}
		})
	}
}

// A log read that hangs (the kubelet of a node gone dark, behind the API
// server's proxy) fails that run after logTimeout, not the collection:
// it waited as long as the command's whole --timeout (24 h by default),
// one such run after another.
func TestCollectLogTimeout(t *testing.T) {
	defer func(d time.Duration) { logTimeout = d }(logTimeout)
	logTimeout = 50 * time.Millisecond
	p, _ := NewPlan([]Node{{Name: "a-node", GPUs: 2}}, Options{RunID: "l1", Image: "i", Namespace: "bench", SchedulerName: "pal",
		Models: []string{"m"}, Repetitions: 1, Iterations: 1})
	var objs []runtime.Object
	for _, pod := range p.Pods() {
		finish(pod, corev1.PodSucceeded, 0, "")
		objs = append(objs, pod)
	}
	hang := func(ctx context.Context, _, pod, _ string) (string, error) {
		if strings.Contains(pod, "-g1-") {
			return "PAL_RESULT iter_time_s=2\n", nil
		}
		<-ctx.Done()
		return "", ctx.Err()
	}
	done := make(chan *Collection, 1)
	go func() {
		c, err := Collect(context.Background(), fakeClient(objs...), p, hang)
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	select {
	case c := <-done:
		if len(c.Measured) != 1 || len(c.Failed) != 1 || !strings.Contains(c.Failed[0].Why, "the log cannot be read: context deadline exceeded") {
			t.Errorf("measured %+v, failed %+v; want GPU 1 measured and GPU 0 failed for its log", c.Measured, c.Failed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Collect still waiting for a hung log after 5 s")
	}
}

// TestCollectionPartlyMeasured: a GPU and model some of whose runs
// failed is scored from fewer runs than asked, and the runs lost are not
// a fair sample of them (a run killed at its deadline is the slowest
// one): the measurement CSV names it in a '# partial:' comment, which
// pal profile build carries into the score table, beside the
// '# unmeasured:' ones. A GPU and model whose every run failed is
// unmeasured, not partial.
func TestCollectionPartlyMeasured(t *testing.T) {
	o := testOptions()
	o.Repetitions = 3
	p, err := NewPlan(twoNodes(), o)
	if err != nil {
		t.Fatal(err)
	}
	type sel struct {
		node  string
		gpu   int
		model string // "": every model
		reps  []int  // nil: every repetition
	}
	for _, tc := range []struct {
		name       string
		fail       []sel
		partial    []string
		unmeasured []string
	}{
		{name: "none failed"},
		{name: "one run of three", fail: []sel{{"b-node", 0, "BERT", []int{1}}},
			partial: []string{"node b-node GPU 0: BERT measured by 2 of 3 runs (1 failed)"}},
		{name: "two runs of three", fail: []sel{{"a-node", 0, "ResNet-18", []int{0, 2}}},
			partial: []string{"node a-node GPU 0: ResNet-18 measured by 1 of 3 runs (2 failed)"}},
		{name: "every run of a model", fail: []sel{{"b-node", 1, "BERT", nil}},
			unmeasured: []string{"node b-node GPU 1: BERT unmeasured (its 3 runs failed)"}},
		{name: "every run of a GPU", fail: []sel{{"b-node", 1, "", nil}},
			unmeasured: []string{"node b-node GPU 1: no run measured (its 6 runs failed); the score table has no row for it"}},
		{name: "both on one GPU, and another", fail: []sel{{"b-node", 0, "BERT", nil}, {"b-node", 0, "ResNet-18", []int{2}}, {"a-node", 0, "BERT", []int{0}}},
			partial:    []string{"node a-node GPU 0: BERT measured by 2 of 3 runs (1 failed)", "node b-node GPU 0: ResNet-18 measured by 2 of 3 runs (1 failed)"},
			unmeasured: []string{"node b-node GPU 0: BERT unmeasured (its 3 runs failed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Collection{Plan: p}
			for _, r := range p.Runs {
				failed := false
				for _, s := range tc.fail {
					failed = failed || r.Node == s.node && r.GPU == s.gpu && (s.model == "" || s.model == r.Model) && (s.reps == nil || slices.Contains(s.reps, r.Repetition))
				}
				if failed {
					c.Failed = append(c.Failed, Failed{Run: r, Why: "pod failed: DeadlineExceeded"})
				} else {
					c.Measured = append(c.Measured, Measured{Run: r, Result: Result{IterTime: 0.1, SMClock: math.NaN(), Power: math.NaN(), Temp: math.NaN()}, Source: "termination message"})
				}
			}
			var b strings.Builder
			if err := c.WriteCSV(&b); err != nil {
				t.Fatal(err)
			}
			var partial, unmeasured []string
			for _, l := range strings.Split(b.String(), "\n") {
				if n, ok := strings.CutPrefix(l, "# partial: "); ok {
					partial = append(partial, n)
				}
				if n, ok := strings.CutPrefix(l, UnmeasuredComment); ok {
					unmeasured = append(unmeasured, n)
				}
			}
			if !slices.Equal(partial, tc.partial) || !slices.Equal(unmeasured, tc.unmeasured) {
				t.Errorf("# partial: %q\nwant %q\n# unmeasured: %q\nwant %q\nCSV:\n%s", partial, tc.partial, unmeasured, tc.unmeasured, b.String())
			}
		})
	}
}
