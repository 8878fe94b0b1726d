package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/profilebench"
	"github.com/palsched/pal/variability"
)

// TestProfileBenchWritesObjects: without a cluster (--gpus-per-node),
// the written YAML is the run's ConfigMap and one pod per GPU, model and
// repetition, each pinned to its node and device.
func TestProfileBenchWritesObjects(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.yaml")
	if _, err := run(t, "profile", "bench", "--image", "b:1", "--models", "resnet50,BERT", "--nodes", "n2,n1",
		"--gpus-per-node", "2", "--repetitions", "3", "--run-id", "w1", "--namespace", "bench", "--out", out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	// A comment, the ConfigMap, 2 nodes x 2 GPUs x 2 models x 3 repetitions.
	if len(docs) != 2+2*2*2*3 || !strings.HasPrefix(docs[0], "# pal-kube profile bench run w1") {
		t.Fatalf("%d documents, want a comment, the ConfigMap and 24 pods", len(docs))
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != "pal-bench-w1" {
		t.Fatalf("first document: %v %s %s", err, cm.Kind, cm.Name)
	}
	seen := map[string]int{}
	for _, d := range docs[2:] {
		var p corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(d), &p); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		key := fmt.Sprintf("%s/%s/%s", p.Spec.NodeName, env["NVIDIA_VISIBLE_DEVICES"], env["PAL_BENCH_MODEL"])
		seen[key]++
		if p.Annotations["pal.io/gpu-indices"] != env["NVIDIA_VISIBLE_DEVICES"] || p.Namespace != "bench" || p.Labels["pal.io/profile-run"] != "w1" {
			t.Errorf("pod %s: %v %v", p.Name, p.Annotations, env)
		}
	}
	for _, n := range []string{"n1", "n2"} {
		for g := range 2 {
			for _, m := range []string{"resnet50", "BERT"} {
				if k := fmt.Sprintf("%s/%d/%s", n, g, m); seen[k] != 3 {
					t.Errorf("%s: %d pods, want 3 repetitions", k, seen[k])
				}
			}
		}
	}
	for _, bad := range [][]string{
		{"--image", "b", "--models", "m", "--nodes", "n", "--gpus-per-node", "1", "-o", "table"},
		{"--image", "b", "--models", "m", "--collect"},
		{"--models", "m"},
	} {
		if _, err := run(t, append([]string{"profile", "bench"}, bad...)...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// benchKubelet plays the kubelet for the fake clientset: it finishes
// every started pod of namespace default, with the result line that
// finish gives its node and device, or failed when finish says fail.
func benchKubelet(t *testing.T, cs *fake.Clientset, finish func(node, gpu string) (iter float64, fail bool)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			list, _ := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			for i := range list.Items {
				p := &list.Items[i]
				if p.Status.Phase != "" {
					continue
				}
				it, fail := finish(p.Spec.NodeName, p.Annotations["pal.io/gpu-indices"])
				p.Status.Phase = corev1.PodSucceeded
				term := &corev1.ContainerStateTerminated{Message: fmt.Sprintf("PAL_RESULT iter_time_s=%g", it)}
				if fail {
					p.Status.Phase = corev1.PodFailed
					term = &corev1.ContainerStateTerminated{ExitCode: 1, Message: "CUDA error: an illegal memory access was encountered"}
				}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "bench", State: corev1.ContainerState{Terminated: term}}}
				cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// benchCluster is a fake cluster of GPU nodes (name: allocatable,
// capacity) and a CPU node, that pal-kube profile bench is pointed at.
func benchCluster(t *testing.T, gpus map[string][2]int) *fake.Clientset {
	objs := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}}
	for name, ac := range gpus {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(ac[0]), resource.DecimalSI)},
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(ac[1]), resource.DecimalSI)}}})
	}
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(metav1.Object).SetUID(types.UID("cm-uid"))
		return false, nil, nil
	})
	old := benchClientFor
	benchClientFor = func(string) (kubernetes.Interface, error) { return cs, nil }
	t.Cleanup(func() { benchClientFor = old })
	return cs
}

// TestProfileBenchApplyCollect runs --apply --collect --gpu-scores-out
// against the fake clientset, the test finishing each started pod with
// a result that depends on its GPU: the CSV has one row per GPU, model
// and repetition with those values, and pal profile build's table ranks
// the slow GPU slowest.
func TestProfileBenchApplyCollect(t *testing.T) {
	cs := benchCluster(t, map[string][2]int{"n1": {2, 2}, "n2": {2, 2}})
	stop := benchKubelet(t, cs, func(node, gpu string) (float64, bool) {
		if node == "n2" && gpu == "1" {
			return 0.15, false // the slow GPU
		}
		return 0.1, false
	})
	dir := t.TempDir()
	csvPath, scores := filepath.Join(dir, "runs.csv"), filepath.Join(dir, "scores.csv")
	out, err := run(t, "profile", "bench", "--image", "b:1", "--models", "resnet50,BERT", "--repetitions", "3", "--run-id", "a1",
		"--apply", "--cordon", "--collect", "--poll", "5ms", "--measurements-out", csvPath, "--gpu-scores-out", scores, "--cleanup")
	stop()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "unmeasured") {
		t.Errorf("every GPU measured, yet the output speaks of unmeasured ones:\n%s", out)
	}
	// --cordon held each node while its runs ran, and lifted it.
	for _, n := range []string{"n1", "n2"} {
		for _, w := range []string{"cordoned node " + n + " until its last run has finished", "uncordoned node " + n + ": its last run has finished"} {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("output lacks %q", w)
			}
		}
		if nd, _ := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{}); nd.Spec.Unschedulable || nd.Annotations[profilebench.AnnCordonedBy] != "" {
			t.Errorf("node %s left cordoned (%v, %v)", n, nd.Spec.Unschedulable, nd.Annotations)
		}
	}
	raw, _ := os.ReadFile(csvPath)
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(l, "#") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 1+4*2*3 || rows[0] != "node,gpu_index,gpu_uuid,model,iter_time_s,sm_clock_mhz,power_w,temp_c" {
		t.Fatalf("%d rows:\n%s", len(rows), raw)
	}
	if rows[1] != "n1,0,,resnet50,0.1,,," || rows[24] != "n2,1,,BERT,0.15,,," {
		t.Errorf("rows %q ... %q", rows[1], rows[24])
	}
	tbl, _ := os.ReadFile(scores)
	// The slow GPU (GPU_ID 3, node 1) is 1.5x the median GPU in classes
	// A (resnet50) and B (BERT); C and D were not measured (1.0).
	if !strings.Contains(string(tbl), "\n0,0,1,1,1,1,n1,0\n") || !strings.Contains(string(tbl), "\n3,1,1.4999999999999996,1.4999999999999996,1,1,n2,1\n") {
		t.Errorf("score table lacks the slow GPU at 1.5:\n%s", tbl)
	}
	// --cleanup removed what --apply created.
	if l, _ := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("%d pods left after --cleanup", len(l.Items))
	}
}

// TestProfileBenchShortNode: a node whose device plugin hands out fewer
// GPUs than it has (capacity 3, allocatable 2: one unhealthy) gets runs
// on the 2 devices pal-kube scheduler numbers, none invented for the
// third, and the plan's output, the measurement CSV, pal profile build's
// warnings and the score table each say that one of its GPUs went
// unmeasured, where the table would otherwise just lack it.
func TestProfileBenchShortNode(t *testing.T) {
	cs := benchCluster(t, map[string][2]int{"n1": {2, 2}, "n2": {2, 3}})
	stop := benchKubelet(t, cs, func(string, string) (float64, bool) { return 0.1, false })
	dir := t.TempDir()
	csvPath, scores := filepath.Join(dir, "runs.csv"), filepath.Join(dir, "scores.csv")
	out, err := run(t, "profile", "bench", "--image", "b:1", "--models", "resnet50", "--repetitions", "1", "--run-id", "s1",
		"--apply", "--collect", "--poll", "5ms", "--measurements-out", csvPath, "--gpu-scores-out", scores)
	stop()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	note := "node n2: 1 of its 3 GPUs unmeasured (nvidia.com/gpu capacity 3, allocatable 2)"
	if !strings.Contains(out, "run s1: 4 runs (4 GPUs on 2 nodes x 1 models x 1 repetitions)") || !strings.Contains(out, "run s1: "+note) {
		t.Errorf("the plan's output does not name the short node:\n%s", out)
	}
	if !strings.Contains(out, "warning: unmeasured: "+note) {
		t.Errorf("pal profile build does not warn of the short node:\n%s", out)
	}
	raw, _ := os.ReadFile(csvPath)
	if !strings.Contains(string(raw), "\n# unmeasured: "+note) || strings.Contains(string(raw), "n2,2,") {
		t.Errorf("measurement CSV:\n%s", raw)
	}
	tbl, _ := os.ReadFile(scores)
	if !strings.Contains(string(tbl), "\n# unmeasured: "+note) || strings.Count(string(tbl), ",n2,") != 2 {
		t.Errorf("score table does not say n2 lacks a GPU, or has other than its 2 measured rows:\n%s", tbl)
	}
	if _, err := variability.ReadGPUScoresFile(scores); err != nil {
		t.Errorf("the table with its notes does not read back: %v", err)
	}
}

// TestProfileBenchPartial: when runs failed, --gpu-scores-out is not
// written (a table of the other GPUs would be placed on as if it were
// whole), the command saying so; with --allow-partial it is, naming in
// its comments each GPU and model that has no measurement, as the
// measurement CSV does. Either way the command fails.
func TestProfileBenchPartial(t *testing.T) {
	cs := benchCluster(t, map[string][2]int{"n1": {2, 2}, "n2": {2, 2}})
	stop := benchKubelet(t, cs, func(node, gpu string) (float64, bool) {
		return 0.1, node == "n2" && gpu == "1" // n2's device 1 fails every run
	})
	// n1's device 1 fails its BERT runs only.
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Spec.NodeName == "n1" && p.Annotations["pal.io/gpu-indices"] == "1" && p.Annotations[profilebench.AnnModel] == "BERT" {
			p.Status.Phase = corev1.PodFailed
		}
		return false, nil, nil
	})
	defer stop()
	notes := []string{
		"node n1 GPU 1: BERT unmeasured (its 2 runs failed)",
		"node n2 GPU 1: no run measured (its 4 runs failed); the score table has no row for it",
	}
	dir := t.TempDir()
	for _, allow := range []bool{false, true} {
		id := fmt.Sprintf("p%v", allow)
		csvPath, scores := filepath.Join(dir, id+".csv"), filepath.Join(dir, id+"-scores.csv")
		args := []string{"profile", "bench", "--image", "b:1", "--models", "resnet50,BERT", "--repetitions", "2", "--run-id", id,
			"--apply", "--collect", "--poll", "5ms", "--measurements-out", csvPath, "--gpu-scores-out", scores}
		if allow {
			args = append(args, "--allow-partial")
		}
		out, err := run(t, args...)
		if err == nil || !strings.HasPrefix(err.Error(), "6 of 16 runs of "+id+" gave no measurement") {
			t.Fatalf("allow %v: error %v\n%s", allow, err, out)
		}
		raw, _ := os.ReadFile(csvPath)
		for _, n := range notes {
			if !strings.Contains(string(raw), "\n# unmeasured: "+n+"\n") {
				t.Errorf("allow %v: measurement CSV lacks %q:\n%s", allow, n, raw)
			}
		}
		tbl, terr := os.ReadFile(scores)
		if !allow {
			if terr == nil {
				t.Errorf("partial score table written without --allow-partial:\n%s", tbl)
			}
			if w := "--gpu-scores-out " + scores + " not written: 6 of 16 runs failed"; !strings.Contains(out, w) || !strings.Contains(err.Error(), "--allow-partial") {
				t.Errorf("output lacks %q, or error %v does not name --allow-partial:\n%s", w, err, out)
			}
			for _, n := range notes { // no build to warn of them: the command does
				if !strings.Contains(out, "\nunmeasured: "+n+"\n") {
					t.Errorf("output lacks %q:\n%s", n, out)
				}
			}
			continue
		}
		for _, n := range notes {
			if !strings.Contains(string(tbl), "\n# unmeasured: "+n+"\n") || !strings.Contains(out, "warning: unmeasured: "+n+"\n") {
				t.Errorf("score table or build's warnings lack %q:\n%s\n%s", n, tbl, out)
			}
		}
		if strings.Count(string(tbl), ",n2,1\n") != 0 || strings.Count(string(tbl), ",n1,1\n") != 1 {
			t.Errorf("table rows:\n%s", tbl)
		}
	}
}

// TestProfileBenchJSON: -o json is one v1 List of the ConfigMap and the
// pods.
func TestProfileBenchJSON(t *testing.T) {
	out, err := run(t, "profile", "bench", "--image", "b:1", "--models", "resnet50", "--nodes", "n1", "--gpus-per-node", "3",
		"--repetitions", "2", "--run-id", "j1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 1+3*2 || list.Items[0].Kind != "ConfigMap" || list.Items[6].Kind != "Pod" ||
		list.Items[6].Metadata.Name != "pal-bench-j1-n0-g2-m0-r1" {
		t.Errorf("list: %+v", list)
	}
}

// TestProfileCollectReportsFailures: pal-kube profile collect on a run whose
// objects were applied by hand (no owner references) writes the
// measured rows, names the failed pod, exits non-zero, and with
// --cleanup deletes nothing (pal did not create them).
func TestProfileCollectReportsFailures(t *testing.T) {
	plan, err := profilebench.NewPlan([]profilebench.Node{{Name: "n1", GPUs: 2}}, profilebench.Options{RunID: "k1", Image: "b",
		Namespace: "default", SchedulerName: "pal", Models: []string{"resnet50"}, Repetitions: 1, Iterations: 1})
	if err != nil {
		t.Fatal(err)
	}
	cm, _ := plan.ConfigMap()
	pods := plan.Pods()
	pods[0].Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "bench",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "PAL_RESULT iter_time_s=0.25 power_w=300"}}}}}
	pods[1].Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfnvidia.com/gpu", Message: "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu"}
	cs := fake.NewClientset(cm, pods[0], pods[1])
	old := benchClientFor
	benchClientFor = func(string) (kubernetes.Interface, error) { return cs, nil }
	defer func() { benchClientFor = old }()
	var stderr bytes.Buffer
	root := newRootCmd()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"profile", "collect", "--run-id", "k1", "--wait", "--poll", "1ms", "--cleanup"})
	err = root.Execute()
	if err == nil || err.Error() != "1 of 2 runs of k1 gave no measurement (listed above and in the CSV's comments)" {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(stdout.String(), "\nn1,0,,resnet50,0.25,,300,\n") ||
		!strings.Contains(stdout.String(), "# failed: pod pal-bench-k1-n0-g1-m0-r0 (node n1 GPU 1, resnet50 repetition 0): pod failed: OutOfnvidia.com/gpu: Pod was rejected") {
		t.Errorf("CSV:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "not created by pal-kube profile bench --apply: nothing deleted") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if l, _ := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 2 {
		t.Errorf("%d pods left, want both", len(l.Items))
	}
}

// Flags that only a running benchmark can honour are refused without
// --apply, before anything reaches a cluster.
func TestProfileBenchNeedsApply(t *testing.T) {
	for flag, want := range map[string]string{
		"--cordon":  "--cordon needs --apply",
		"--collect": "--collect needs --apply",
	} {
		_, err := run(t, "profile", "bench", "--image", "b:1", "--models", "resnet50", "--nodes", "n1", "--gpus-per-node", "2", flag)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s without --apply: %v, want %q", flag, err, want)
		}
	}
}

// TestProfileBenchPartlyMeasured: n2's GPU 1 is the slow one (0.15 s an
// iteration against 0.1), and its last resnet50 run failed (as a run
// killed at its --run-timeout would: the slowest kind of run). Its
// resnet50 score then comes from 2 of the 3 runs asked, and is not a
// measurement like the others': the measurement CSV names it in a
// '# partial:' comment. Without --allow-partial the table is not
// written and stderr names it; with it, the table is written with that
// comment and build warns of it, the GPU still having its row. Either
// way the command fails, as for any failed run.
func TestProfileBenchPartlyMeasured(t *testing.T) {
	note := "node n2 GPU 1: resnet50 measured by 2 of 3 runs (1 failed)"
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		allow bool
	}{
		{"not allowed", false},
		{"allowed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := benchCluster(t, map[string][2]int{"n1": {2, 2}, "n2": {2, 2}})
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
				if p.Spec.NodeName == "n2" && p.Annotations["pal.io/gpu-indices"] == "1" && p.Annotations[profilebench.AnnModel] == "resnet50" && p.Annotations[profilebench.AnnRepetition] == "2" {
					p.Status.Phase, p.Status.Reason = corev1.PodFailed, "DeadlineExceeded"
				}
				return false, nil, nil
			})
			stop := benchKubelet(t, cs, func(node, gpu string) (float64, bool) {
				if node == "n2" && gpu == "1" {
					return 0.15, false
				}
				return 0.1, false
			})
			id := fmt.Sprintf("pm%v", tc.allow)
			csvPath, scores := filepath.Join(dir, id+".csv"), filepath.Join(dir, id+"-scores.csv")
			args := []string{"profile", "bench", "--image", "b:1", "--models", "resnet50,BERT", "--repetitions", "3", "--run-id", id,
				"--apply", "--collect", "--poll", "5ms", "--measurements-out", csvPath, "--gpu-scores-out", scores}
			if tc.allow {
				args = append(args, "--allow-partial")
			}
			out, err := run(t, args...)
			stop()
			if err == nil || !strings.HasPrefix(err.Error(), "1 of 24 runs of "+id+" gave no measurement") {
				t.Fatalf("error %v\n%s", err, out)
			}
			raw, _ := os.ReadFile(csvPath)
			if !strings.Contains(string(raw), "\n# partial: "+note+"\n") || strings.Contains(string(raw), "# unmeasured") {
				t.Errorf("measurement CSV does not name %q partial (alone):\n%s", note, raw)
			}
			tbl, terr := os.ReadFile(scores)
			if !tc.allow {
				if terr == nil {
					t.Errorf("table written without --allow-partial:\n%s", tbl)
				}
				if !strings.Contains(out, "\npartial: "+note+"\n") {
					t.Errorf("output does not name %q partial:\n%s", note, out)
				}
				return
			}
			if !strings.Contains(string(tbl), "\n# partial: "+note+"\n") || !strings.Contains(out, "warning: partial: "+note+"\n") {
				t.Errorf("score table or build's warnings lack %q:\n%s\n%s", note, tbl, out)
			}
			if strings.Count(string(tbl), ",n2,1\n") != 1 {
				t.Errorf("n2 GPU 1 has no row:\n%s", tbl)
			}
		})
	}
}
