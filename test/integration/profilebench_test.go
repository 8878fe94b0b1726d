//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/profilebench"
	"github.com/palsched/pal/variability"
)

// benchKubelet plays the benchmark on the dev cluster: kwok starts the
// bench pods (Running); this finishes each one as the kubelet reports a
// container that wrote a termination message. kwok's stages could set a
// message too, but one fixed per stage; the test wants results that
// depend on the GPU (to see each row land on its GPU) and one failure.
// It records, per node, the most bench pods ever seen live at once.
type benchKubelet struct {
	e       *env
	iter    func(node, gpu, model string) float64
	fail    func(node, gpu, model, rep string) bool
	mu      sync.Mutex
	maxLive map[string]int
	wrote   map[string]float64 // node/gpu/model -> iter_time_s written
	bad     []string
	hold    atomic.Bool // while set, running pods are left running
	// cordoned, when set, must hold for the node of every run it
	// finishes (pal-kube profile bench --cordon).
	cordoned func(node string) bool
}

func (k *benchKubelet) run(ctx context.Context, run string) {
	for ctx.Err() == nil {
		list, err := k.e.cs.CoreV1().Pods(k.e.ns).List(ctx, metav1.ListOptions{LabelSelector: "pal.io/profile-run=" + run})
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		live := map[string]int{}
		var running []corev1.Pod
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			live[p.Spec.NodeName]++
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		k.mu.Lock()
		for n, v := range live {
			k.maxLive[n] = max(k.maxLive[n], v)
		}
		k.mu.Unlock()
		if k.hold.Load() {
			running = nil
		}
		for _, p := range running {
			env := map[string]string{}
			for _, v := range p.Spec.Containers[0].Env {
				env[v.Name] = v.Value
			}
			gpu, model := p.Annotations[kube.AnnGPUIndices], env["PAL_BENCH_MODEL"]
			if env["NVIDIA_VISIBLE_DEVICES"] != gpu || env["PAL_BENCH_GPU_INDEX"] != gpu || env["PAL_BENCH_NODE"] != p.Spec.NodeName {
				k.mu.Lock()
				k.bad = append(k.bad, fmt.Sprintf("pod %s on %s device %s has env %v", p.Name, p.Spec.NodeName, gpu, env))
				k.mu.Unlock()
			}
			if k.cordoned != nil && !k.cordoned(p.Spec.NodeName) {
				k.mu.Lock()
				k.bad = append(k.bad, fmt.Sprintf("pod %s ran on %s while it was not cordoned by the run", p.Name, p.Spec.NodeName))
				k.mu.Unlock()
			}
			it := k.iter(p.Spec.NodeName, gpu, model)
			term := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
				Message: fmt.Sprintf("PAL_RESULT iter_time_s=%g sm_clock_mhz=1410 gpu_uuid=GPU-%s-%s\n", it, p.Spec.NodeName, gpu)}
			p.Status.Phase = corev1.PodSucceeded
			if k.fail != nil && k.fail(p.Spec.NodeName, gpu, model, env["PAL_BENCH_REPETITION"]) {
				p.Status.Phase = corev1.PodFailed
				term = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "RuntimeError: CUDA error: an illegal memory access"}
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "bench", Image: p.Spec.Containers[0].Image, State: corev1.ContainerState{Terminated: term}}}
			if _, err := k.e.cs.CoreV1().Pods(k.e.ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
				continue // a conflict with kwok: the next look retries
			}
			k.mu.Lock()
			k.wrote[p.Spec.NodeName+"/"+gpu+"/"+model] = it
			k.mu.Unlock()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestProfileBenchOnDevCluster runs pal-kube profile bench --apply --collect
// as a process against the dev cluster's two 2-GPU kwok nodes, two
// models, three repetitions: 24 runs, one per node at a time. The CSV
// must read back (variability.ReadMeasurements, as pal profile build
// reads it) with exactly three rows for each GPU and model, each with the
// value written for that GPU; pal profile build must turn it into a
// table with the slow GPU at 1.5; --cleanup must leave nothing. A second
// run in which one pod fails must exit non-zero and name that pod.
func TestProfileBenchOnDevCluster(t *testing.T) {
	e := newEnv(t, 2, 2)
	dir := t.TempDir()
	iter := func(node, gpu, model string) float64 {
		v := 0.1
		if node == "gpu-node-001" && gpu == "1" {
			v = 0.15
		}
		if model == "BERT" {
			v *= 2
		}
		return v
	}
	k := &benchKubelet{e: e, iter: iter, maxLive: map[string]int{}, wrote: map[string]float64{}}
	k.cordoned = func(node string) bool {
		n, err := e.cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return err == nil && n.Spec.Unschedulable && n.Annotations[profilebench.AnnCordonedBy] == "it1"
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); k.run(ctx, "it1") }()
	runs, scores := filepath.Join(dir, "runs.csv"), filepath.Join(dir, "scores.csv")
	cmd := exec.Command(kubeBin, "profile", "bench", "--kubeconfig", e.cl.Kubeconfig, "--namespace", e.ns,
		"--image", "fake/bench:1", "--models", "resnet50,BERT", "--repetitions", "3", "--run-id", "it1",
		"--apply", "--cordon", "--collect", "--poll", "100ms", "--timeout", "2m",
		"--measurements-out", runs, "--gpu-scores-out", scores, "--cleanup")
	out, err := cmd.CombinedOutput()
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("pal-kube profile bench: %v\n%s", err, out)
	}
	t.Logf("pal-kube profile bench:\n%s", out)
	for _, b := range k.bad {
		t.Error(b)
	}
	for _, n := range []string{"gpu-node-000", "gpu-node-001"} {
		if k.maxLive[n] != 1 {
			t.Errorf("node %s: at most %d bench pods live at once, want 1", n, k.maxLive[n])
		}
		// --cordon lifted what it set once the node's last run ended.
		if nd, err := e.cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{}); err != nil || nd.Spec.Unschedulable || nd.Annotations[profilebench.AnnCordonedBy] != "" {
			t.Errorf("node %s after the benchmark: %v", n, err)
		}
	}

	f, err := os.Open(runs)
	if err != nil {
		t.Fatal(err)
	}
	m, err := variability.ReadMeasurements(runs, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range m.Rows {
		key := fmt.Sprintf("%s/%d/%s", r.Node, r.GPUIndex, r.Model)
		count[key]++
		if r.IterTime != k.wrote[key] || r.IterTime != iter(r.Node, fmt.Sprint(r.GPUIndex), r.Model) || r.SMClock != 1410 ||
			r.UUID != fmt.Sprintf("GPU-%s-%d", r.Node, r.GPUIndex) {
			t.Errorf("row at line %d: %+v, the kubelet wrote %g for %s", r.Line, r, k.wrote[key], key)
		}
	}
	if len(m.Rows) != 2*2*2*3 || len(count) != 8 {
		t.Fatalf("%d rows over %d (node, GPU, model), want 24 over 8", len(m.Rows), len(count))
	}
	for key, n := range count {
		if n != 3 {
			t.Errorf("%s: %d rows, want 3 repetitions", key, n)
		}
	}
	f, err = os.Open(scores)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := variability.ReadGPUScores(scores, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// GPUs numbered node by node: gpu-node-001 device 1 is GPU 3.
	for g, want := range []float64{1, 1, 1, 1.5} {
		if got := gs.Table.Values[variability.ClassA][g]; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("class A GPU %d: %g, want %g", g, got, want)
		}
	}
	e.eventually(30*time.Second, "--cleanup removed the run's pods and ConfigMap", func() bool {
		pods, _ := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "pal.io/profile-run=it1"})
		_, cmErr := e.cs.CoreV1().ConfigMaps(e.ns).Get(context.Background(), "pal-bench-it1", metav1.GetOptions{})
		return len(pods.Items) == 0 && cmErr != nil
	})

	// A failed run is reported, not dropped.
	k2 := &benchKubelet{e: e, iter: iter, maxLive: map[string]int{}, wrote: map[string]float64{},
		fail: func(node, gpu, _, _ string) bool { return node == "gpu-node-000" && gpu == "1" }}
	ctx, cancel = context.WithCancel(context.Background())
	wg.Add(1)
	go func() { defer wg.Done(); k2.run(ctx, "it2") }()
	runs2 := filepath.Join(dir, "runs2.csv")
	out, err = exec.Command(kubeBin, "profile", "bench", "--kubeconfig", e.cl.Kubeconfig, "--namespace", e.ns,
		"--image", "fake/bench:1", "--models", "resnet50", "--repetitions", "1", "--run-id", "it2", "--parallel",
		"--apply", "--collect", "--poll", "100ms", "--timeout", "2m", "--measurements-out", runs2).CombinedOutput()
	cancel()
	wg.Wait()
	if err == nil || !strings.Contains(string(out), "1 of 4 runs of it2 gave no measurement") ||
		!strings.Contains(string(out), "failed: pod jobs/pal-bench-it2-n0-g1-m0-r0 (node gpu-node-000 GPU 1, resnet50 repetition 0): pod failed: exit code 1 (Error): RuntimeError: CUDA error: an illegal memory access") {
		t.Fatalf("a failed run: err %v\n%s", err, out)
	}
	raw, _ := os.ReadFile(runs2)
	if !strings.Contains(string(raw), "# failed: pod pal-bench-it2-n0-g1-m0-r0") || strings.Count(string(raw), ",resnet50,") != 3 {
		t.Errorf("runs2.csv:\n%s", raw)
	}
	// Without --cleanup the run's pods stay.
	if pods, _ := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "pal.io/profile-run=it2"}); len(pods.Items) != 4 {
		t.Errorf("%d pods of it2 left, want all 4", len(pods.Items))
	}
}

// TestProfileBenchHeldByPal: with pal-kube scheduler running, the bench pods
// (schedulerName pal, bound by nodeName with pal.io/gpu-indices) hold
// their devices in pal's view. With both GPUs of gpu-node-000 under a
// live benchmark (--parallel, 2 runs), a 2-GPU pal pod binds on
// gpu-node-001 and a second one waits; once the runs finish it binds on
// gpu-node-000, and no GPU is ever given twice.
func TestProfileBenchHeldByPal(t *testing.T) {
	e := newEnv(t, 2, 2)
	e.runScheduler(testConfig(), "pal")
	k := &benchKubelet{e: e, iter: func(string, string, string) float64 { return 0.1 }, maxLive: map[string]int{}, wrote: map[string]float64{}}
	k.hold.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go k.run(ctx, "held")
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = exec.Command(kubeBin, "profile", "bench", "--kubeconfig", e.cl.Kubeconfig, "--namespace", e.ns,
			"--image", "fake/bench:1", "--models", "resnet50", "--repetitions", "1", "--run-id", "held", "--parallel",
			"--nodes", "gpu-node-000", "--apply", "--collect", "--poll", "100ms", "--timeout", "2m",
			"--measurements-out", filepath.Join(t.TempDir(), "runs.csv")).CombinedOutput()
		done <- err
	}()
	e.eventually(30*time.Second, "both bench pods running on gpu-node-000", func() bool {
		pods, _ := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "pal.io/profile-run=held"})
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 2
	})
	e.createPod(podOpts{name: "first", gpus: 2})
	e.eventually(15*time.Second, "first bound", func() bool { return e.bound("first") })
	if n := e.pod("first").Spec.NodeName; n != "gpu-node-001" {
		t.Fatalf("first bound on %s, whose GPUs the benchmark holds", n)
	}
	e.createPod(podOpts{name: "second", gpus: 2})
	e.eventually(15*time.Second, "second waits", func() bool { return e.hasEvent("second", "FailedScheduling", "") })
	time.Sleep(time.Second) // several rounds
	if e.bound("second") {
		t.Fatalf("second bound on %s while the benchmark runs there", e.pod("second").Spec.NodeName)
	}
	e.checkNoDoubleGPU()
	k.hold.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("pal-kube profile bench: %v\n%s", err, out)
	}
	e.eventually(15*time.Second, "second bound once the runs ended", func() bool { return e.bound("second") })
	if n := e.pod("second").Spec.NodeName; n != "gpu-node-000" {
		t.Errorf("second bound on %s, want gpu-node-000", n)
	}
	e.checkNoDoubleGPU()
}
