package profilebench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/kube"
)

// twoNodes is a hand-built cluster: node b-node with 2 GPUs, a-node with 1.
func twoNodes() []Node { return []Node{{Name: "b-node", GPUs: 2}, {Name: "a-node", GPUs: 1}} }

func testOptions() Options {
	return Options{RunID: "t1", Image: "bench:1", Namespace: "bench", SchedulerName: "pal",
		Models: []string{"ResNet-18", "BERT"}, Repetitions: 2, Iterations: 30, Deadline: 90 * time.Second}
}

func TestPlanRunsAndPins(t *testing.T) {
	p, err := NewPlan(twoNodes(), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	// 3 GPUs x 2 models x 2 repetitions, repetition outermost, nodes by name.
	var got []string
	for _, r := range p.Runs {
		got = append(got, fmt.Sprintf("%s %s/%d %s r%d q=%s", r.Pod, r.Node, r.GPU, r.Model, r.Repetition, r.Queue))
	}
	want := []string{
		"pal-bench-t1-n0-g0-m0-r0 a-node/0 ResNet-18 r0 q=a-node",
		"pal-bench-t1-n1-g0-m0-r0 b-node/0 ResNet-18 r0 q=b-node",
		"pal-bench-t1-n1-g1-m0-r0 b-node/1 ResNet-18 r0 q=b-node",
		"pal-bench-t1-n0-g0-m1-r0 a-node/0 BERT r0 q=a-node",
		"pal-bench-t1-n1-g0-m1-r0 b-node/0 BERT r0 q=b-node",
		"pal-bench-t1-n1-g1-m1-r0 b-node/1 BERT r0 q=b-node",
		"pal-bench-t1-n0-g0-m0-r1 a-node/0 ResNet-18 r1 q=a-node",
		"pal-bench-t1-n1-g0-m0-r1 b-node/0 ResNet-18 r1 q=b-node",
		"pal-bench-t1-n1-g1-m0-r1 b-node/1 ResNet-18 r1 q=b-node",
		"pal-bench-t1-n0-g0-m1-r1 a-node/0 BERT r1 q=a-node",
		"pal-bench-t1-n1-g0-m1-r1 b-node/0 BERT r1 q=b-node",
		"pal-bench-t1-n1-g1-m1-r1 b-node/1 BERT r1 q=b-node",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	o := testOptions()
	o.PerGPU = true
	pg, err := NewPlan(twoNodes(), o)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Concurrency != "gpu" || pg.Runs[2].Queue != "b-node/1" || pg.Runs[1].Queue != "b-node/0" {
		t.Errorf("per-GPU queues: %s, %q %q", pg.Concurrency, pg.Runs[1].Queue, pg.Runs[2].Queue)
	}

	pods := p.Pods()
	if len(pods) != 12 {
		t.Fatalf("%d pods, want 12", len(pods))
	}
	// Every pod exactly, field by field: run 5 is BERT repetition 0 on b-node device 1.
	pod := pods[5]
	if pod.Name != "pal-bench-t1-n1-g1-m1-r0" || pod.Namespace != "bench" || pod.Kind != "Pod" || pod.APIVersion != "v1" {
		t.Errorf("meta: %s/%s %s %s", pod.Namespace, pod.Name, pod.APIVersion, pod.Kind)
	}
	if fmt.Sprint(pod.Labels) != "map[app.kubernetes.io/managed-by:pal pal.io/profile-run:t1]" {
		t.Errorf("labels %v", pod.Labels)
	}
	if fmt.Sprint(pod.Annotations) != "map[pal.io/gpu-indices:1 pal.io/profile-model:BERT pal.io/profile-repetition:0]" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	s := pod.Spec
	if s.NodeName != "b-node" || s.SchedulerName != "pal" || s.RestartPolicy != corev1.RestartPolicyNever ||
		s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 90 || len(s.Containers) != 1 || len(s.InitContainers) != 0 {
		t.Fatalf("spec: %+v", s)
	}
	if len(s.Tolerations) != 1 || s.Tolerations[0].Key != "nvidia.com/gpu" || s.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v", s.Tolerations)
	}
	c := s.Containers[0]
	if c.Name != "bench" || c.Image != "bench:1" || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("container %s %s %s", c.Name, c.Image, c.TerminationMessagePolicy)
	}
	if q := c.Resources.Limits[kube.ResourceGPU]; q.String() != "1" || len(c.Resources.Limits) != 1 || len(c.Resources.Requests) != 0 {
		t.Errorf("resources %v", c.Resources)
	}
	var env []string
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("env %s from %v", e.Name, e.ValueFrom)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	if w := "NVIDIA_VISIBLE_DEVICES=1 PAL_BENCH_RUN=t1 PAL_BENCH_MODEL=BERT PAL_BENCH_REPETITION=0 PAL_BENCH_GPU_INDEX=1 PAL_BENCH_NODE=b-node PAL_BENCH_ITERATIONS=30"; strings.Join(env, " ") != w {
		t.Errorf("env %s\nwant %s", strings.Join(env, " "), w)
	}
	// Invariant over every pod: its pin (nodeName, annotation, env)
	// agrees with its run, and the (node, GPU, model, repetition) are all
	// distinct.
	seen := map[string]bool{}
	for i, pod := range pods {
		r := p.Runs[i]
		k := fmt.Sprintf("%s/%d/%s/%d", r.Node, r.GPU, r.Model, r.Repetition)
		if seen[k] || seen[pod.Name] {
			t.Errorf("run %s or pod %s twice", k, pod.Name)
		}
		seen[k], seen[pod.Name] = true, true
		e := map[string]string{}
		for _, v := range pod.Spec.Containers[0].Env {
			e[v.Name] = v.Value
		}
		g := fmt.Sprint(r.GPU)
		if pod.Spec.NodeName != r.Node || pod.Annotations[kube.AnnGPUIndices] != g || e[EnvVisible] != g || e[EnvGPUIndex] != g ||
			e[EnvNode] != r.Node || e[EnvModel] != r.Model || e[EnvRepetition] != fmt.Sprint(r.Repetition) {
			t.Errorf("pod %s is pinned to %s/%s env %v, planned %s", pod.Name, pod.Spec.NodeName, pod.Annotations[kube.AnnGPUIndices], e, k)
		}
	}

	cm, err := p.ConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != "pal-bench-t1" || cm.Labels[LabelRun] != "t1" || cm.Annotations[AnnCreatedBy] != "" {
		t.Errorf("configmap %s %v %v", cm.Name, cm.Labels, cm.Annotations)
	}
	back, err := ReadPlan(cm)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(p) {
		t.Errorf("plan read back differs:\n%+v\n%+v", back, p)
	}
}

func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Options, *[]Node)
		want string
	}{
		{func(o *Options, _ *[]Node) { o.RunID = "Bad_ID" }, `run id "Bad_ID"`},
		{func(o *Options, _ *[]Node) { o.RunID = "" }, `run id ""`},
		{func(o *Options, _ *[]Node) { o.Image = " " }, "no benchmark image"},
		{func(o *Options, _ *[]Node) { o.Namespace = "Bench" }, `namespace "Bench"`},
		{func(o *Options, _ *[]Node) { o.Models = nil }, "no models"},
		{func(o *Options, _ *[]Node) { o.Models = []string{"a b"} }, `model "a b"`},
		{func(o *Options, _ *[]Node) { o.Models = []string{"x", "x"} }, `model "x" given twice`},
		{func(o *Options, _ *[]Node) { o.Repetitions = 0 }, "repetitions 0"},
		{func(_ *Options, n *[]Node) { *n = nil }, "no GPU nodes"},
		{func(_ *Options, n *[]Node) { *n = append(*n, Node{Name: "a-node", GPUs: 2}) }, "node a-node given twice"},
		{func(_ *Options, n *[]Node) { (*n)[0].GPUs = 0 }, "node b-node has 0 GPUs"},
		{func(o *Options, _ *[]Node) { o.Repetitions = 20000 }, "120000 runs"},
		{func(_ *Options, n *[]Node) { (*n)[0].Capacity = 2 }, "node b-node has capacity 2 for 2 allocatable GPUs"},
		{func(_ *Options, n *[]Node) { (*n)[0].Capacity = 1025 }, "node b-node has capacity 1025"},
	} {
		o, n := testOptions(), twoNodes()
		tc.edit(&o, &n)
		if _, err := NewPlan(n, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestPlanShortNode: a node with more GPUs than allocatable has runs
// for its allocatable devices only, keeps its capacity through the
// ConfigMap, and its note names it and how many GPUs go unmeasured.
func TestPlanShortNode(t *testing.T) {
	n := twoNodes()
	n[0].Capacity = 3 // b-node: 2 of 3 allocatable
	p, err := NewPlan(n, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs {
		if r.GPU >= 2 {
			t.Errorf("run %s on device %d, which the device plugin does not hand out", r.Pod, r.GPU)
		}
	}
	notes := p.UnmeasuredNotes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "node b-node: 1 of its 3 GPUs unmeasured (nvidia.com/gpu capacity 3, allocatable 2)") ||
		!strings.Contains(notes[0], "only devices 0-1 are measured") {
		t.Errorf("notes %q", notes)
	}
	cm, _ := p.ConfigMap()
	back, err := ReadPlan(cm)
	if err != nil || fmt.Sprint(back.UnmeasuredNotes()) != fmt.Sprint(notes) {
		t.Errorf("read back: %v, notes %q", err, back.UnmeasuredNotes())
	}
	c := &Collection{Plan: back}
	var b strings.Builder
	c.WriteCSV(&b)
	if !strings.Contains(b.String(), "\n"+UnmeasuredComment+notes[0]+"\n") {
		t.Errorf("CSV:\n%s", b.String())
	}
}

// FuzzReadPlan: a run ConfigMap's plan.json, whatever it holds, reads
// back as a valid plan or an error naming the ConfigMap, never a panic;
// a plan that reads has the runs NewPlan makes of it.
func FuzzReadPlan(f *testing.F) {
	p, _ := NewPlan(twoNodes(), testOptions())
	cm, _ := p.ConfigMap()
	f.Add(cm.Data[PlanKey])
	f.Add(`{"run_id":"t1","concurrency":"gpu","nodes":[{"name":"x","gpus":1025}]}`)
	f.Add(`{"run_id":"t1","extra":1}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, raw string) {
		c := cm.DeepCopy()
		c.Data[PlanKey] = raw
		got, err := ReadPlan(c)
		if err != nil {
			if !strings.Contains(err.Error(), "bench/pal-bench-t1") || len(err.Error()) > 2048 {
				t.Fatalf("error does not name the ConfigMap, or is over 2 KiB: %.300v", err)
			}
			return
		}
		if got.RunID != "t1" || len(got.Runs) == 0 || len(got.Runs) > maxRuns {
			t.Fatalf("plan %q read as run %q with %d runs", raw, got.RunID, len(got.Runs))
		}
	})
}
