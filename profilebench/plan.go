// Package profilebench runs a user's benchmark image once per GPU, model
// and repetition on a Kubernetes cluster and turns what each run printed
// into the measurement file pal profile build reads.
//
// Each run is a bare pod bound at creation (spec.nodeName) to its node,
// carrying the device index in pal.io/gpu-indices, as pal-kube scheduler
// writes it for the pods it binds, and in NVIDIA_VISIBLE_DEVICES, so the
// NVIDIA runtime exposes that one GPU and no device plugin has to pick
// it. With pal's schedulerName, a running pal-kube scheduler counts that
// device as held and places nothing else on it.
//
// Bare pods, not Jobs: a Job retries a failed run (a second measurement
// of a GPU where one was asked for) and, having a controller, may be
// migrated or preempted by pal-kube scheduler in the middle of a timing; a
// bare pod runs once, is never evicted by pal (unless preemptBarePods),
// and its status keeps the result for collection.
package profilebench

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube"
)

// The labels and annotations of a benchmark run's objects.
const (
	// LabelRun carries the run id on the ConfigMap and every pod.
	LabelRun = "pal.io/profile-run"
	// AnnModel and AnnRepetition say what a pod measures; node and
	// device are its spec.nodeName and kube.AnnGPUIndices.
	AnnModel      = "pal.io/profile-model"
	AnnRepetition = "pal.io/profile-repetition"
	// AnnCreatedBy marks a run ConfigMap that pal-kube profile bench --apply
	// created (not one applied from a written file); only such a run's
	// objects are ever deleted by pal.
	AnnCreatedBy = "pal.io/profile-created-by"
	// PlanKey is the ConfigMap key holding the plan as JSON.
	PlanKey = "plan.json"
	// Container is the benchmark container's name.
	Container = "bench"
)

// The environment every benchmark container gets.
const (
	EnvRun        = "PAL_BENCH_RUN"
	EnvModel      = "PAL_BENCH_MODEL"
	EnvRepetition = "PAL_BENCH_REPETITION"
	EnvGPUIndex   = "PAL_BENCH_GPU_INDEX"
	EnvNode       = "PAL_BENCH_NODE"
	EnvIterations = "PAL_BENCH_ITERATIONS"
	EnvVisible    = "NVIDIA_VISIBLE_DEVICES"
)

// Node is a GPU node to benchmark: GPUs is its allocatable
// nvidia.com/gpu, the devices 0..GPUs-1 that pal-kube scheduler numbers
// and places on, and that the plan measures.
type Node struct {
	Name string `json:"name"`
	GPUs int    `json:"gpus"`
	// Capacity is the node's nvidia.com/gpu capacity where it is more
	// than GPUs (0 otherwise): the device plugin withholds a GPU it
	// finds unhealthy from allocatable without saying which device
	// index it is, so the GPUs past GPUs go unmeasured, and the plan
	// says so (Unmeasured) rather than guess an index.
	Capacity int `json:"capacity,omitempty"`
}

// Unmeasured is how many of the node's GPUs the plan has no run for.
func (n Node) Unmeasured() int { return max(0, n.Capacity-n.GPUs) }

// UnmeasuredNote says what of n goes unmeasured, or "" if nothing does.
func (n Node) UnmeasuredNote() string {
	u := n.Unmeasured()
	if u == 0 {
		return ""
	}
	devs := fmt.Sprintf("devices 0-%d are", n.GPUs-1)
	if n.GPUs == 1 {
		devs = "device 0 is"
	}
	return fmt.Sprintf("node %s: %d of its %d GPUs unmeasured (nvidia.com/gpu capacity %d, allocatable %d): the device plugin does not hand out a GPU it finds unhealthy, nor say which device it is, so only %s measured, as pal-kube scheduler numbers them; the score table has no row for the others",
		n.Name, u, n.Capacity, n.Capacity, n.GPUs, devs)
}

// UnmeasuredNotes are the notes (UnmeasuredNote) of the plan's nodes
// that have GPUs no run measures, by node name.
func (p *Plan) UnmeasuredNotes() []string {
	var out []string
	for _, n := range p.Nodes {
		if s := n.UnmeasuredNote(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Options are what a plan is made from.
type Options struct {
	RunID         string
	Image         string
	Namespace     string
	SchedulerName string
	Models        []string
	Repetitions   int
	Iterations    int
	// PerGPU lets every GPU of a node run at once (one run per GPU at a
	// time); false runs one GPU of a node at a time.
	PerGPU bool
	// Deadline is each run's activeDeadlineSeconds (0: none).
	Deadline time.Duration
}

// Run is one benchmark run: one pod.
type Run struct {
	Pod        string `json:"pod"`
	Node       string `json:"node"`
	GPU        int    `json:"gpu_index"`
	Model      string `json:"model"`
	Repetition int    `json:"repetition"`
	// Queue is the key of the runs that must not overlap: the node, or
	// node/gpu with PerGPU. Runs of a queue go in plan order.
	Queue string `json:"queue"`
}

// Plan is every run of one benchmark, in the order they start.
type Plan struct {
	RunID     string `json:"run_id"`
	Image     string `json:"image"`
	Namespace string `json:"namespace"`
	Scheduler string `json:"scheduler_name"`
	// Concurrency is "node" (one run per node at a time) or "gpu".
	Concurrency string        `json:"concurrency"`
	Iterations  int           `json:"iterations"`
	Deadline    time.Duration `json:"deadline_ns"`
	Nodes       []Node        `json:"nodes"`
	Models      []string      `json:"models"`
	Repetitions int           `json:"repetitions"`
	// Runs follow from the rest (NewPlan), so the ConfigMap stores only
	// the rest: a ConfigMap holds at most 1 MiB.
	Runs []Run `json:"-"`
}

var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// maxRuns bounds a plan: beyond this a typo (--repetitions 10000) is
// likelier than a cluster.
const maxRuns = 100000

// NewPlan lays out the runs: for each repetition, each model, each GPU
// of each node (nodes sorted by name). Repetitions come outermost so
// that a GPU's repetitions of a model are spread over the run, not taken
// back to back at one temperature.
func NewPlan(nodes []Node, o Options) (*Plan, error) {
	if errs := validation.IsDNS1123Label("pal-bench-" + o.RunID); o.RunID == "" || len(errs) > 0 || len(o.RunID) > 40 {
		return nil, fmt.Errorf("run id %s: want lower-case letters, digits and '-', at most 40 characters", quote.Value(o.RunID))
	}
	if strings.TrimSpace(o.Image) == "" {
		return nil, fmt.Errorf("no benchmark image")
	}
	if o.Namespace == "" || len(validation.IsDNS1123Label(o.Namespace)) > 0 {
		return nil, fmt.Errorf("namespace %s is not a valid namespace name", quote.Value(o.Namespace))
	}
	if o.SchedulerName == "" {
		return nil, fmt.Errorf("no scheduler name")
	}
	if len(o.Models) == 0 {
		return nil, fmt.Errorf("no models to benchmark")
	}
	seen := map[string]bool{}
	for _, m := range o.Models {
		if !modelName.MatchString(m) {
			return nil, fmt.Errorf("model %s: want letters, digits, '.', '_' or '-', at most 63 characters", quote.Value(m))
		}
		if seen[m] {
			return nil, fmt.Errorf("model %s given twice", quote.Value(m))
		}
		seen[m] = true
	}
	if o.Repetitions < 1 || o.Iterations < 1 {
		return nil, fmt.Errorf("repetitions %d and iterations %d: want at least 1 each", o.Repetitions, o.Iterations)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("no GPU nodes selected")
	}
	ns := append([]Node(nil), nodes...)
	sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	total := 0
	for i, n := range ns {
		if i > 0 && ns[i-1].Name == n.Name {
			return nil, fmt.Errorf("node %s given twice", n.Name)
		}
		if n.GPUs < 1 || n.GPUs > 1024 {
			return nil, fmt.Errorf("node %s has %d GPUs (want 1 to 1024)", n.Name, n.GPUs)
		}
		if n.Capacity != 0 && (n.Capacity <= n.GPUs || n.Capacity > 1024) {
			return nil, fmt.Errorf("node %s has capacity %d for %d allocatable GPUs (want 0, or more than %d and at most 1024)", n.Name, n.Capacity, n.GPUs, n.GPUs)
		}
		total += n.GPUs
	}
	if runs := total * len(o.Models) * o.Repetitions; runs > maxRuns {
		return nil, fmt.Errorf("%d runs (%d GPUs x %d models x %d repetitions) is more than %d", runs, total, len(o.Models), o.Repetitions, maxRuns)
	}
	p := &Plan{RunID: o.RunID, Image: o.Image, Namespace: o.Namespace, Scheduler: o.SchedulerName, Concurrency: "node",
		Iterations: o.Iterations, Deadline: o.Deadline, Nodes: ns, Models: append([]string(nil), o.Models...), Repetitions: o.Repetitions}
	if o.PerGPU {
		p.Concurrency = "gpu"
	}
	for r := range o.Repetitions {
		for mi, m := range o.Models {
			for ni, n := range ns {
				for g := range n.GPUs {
					q := n.Name
					if o.PerGPU {
						q += "/" + strconv.Itoa(g)
					}
					p.Runs = append(p.Runs, Run{Pod: fmt.Sprintf("pal-bench-%s-n%d-g%d-m%d-r%d", o.RunID, ni, g, mi, r),
						Node: n.Name, GPU: g, Model: m, Repetition: r, Queue: q})
				}
			}
		}
	}
	return p, nil
}

// ConfigMapName is the run's ConfigMap: the plan, for collection.
func (p *Plan) ConfigMapName() string { return "pal-bench-" + p.RunID }

// Selector is the label selector of the run's objects.
func (p *Plan) Selector() string { return LabelRun + "=" + p.RunID }

// ConfigMap is the run's record: the plan as JSON.
func (p *Plan) ConfigMap() (*corev1.ConfigMap, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if len(b) > 900<<10 {
		return nil, fmt.Errorf("the plan of run %s is %d bytes, more than a ConfigMap holds: select fewer nodes per run", p.RunID, len(b))
	}
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: p.ConfigMapName(), Namespace: p.Namespace, Labels: p.labels()},
		Data:       map[string]string{PlanKey: string(b)}}, nil
}

func (p *Plan) labels() map[string]string {
	return map[string]string{LabelRun: p.RunID, "app.kubernetes.io/managed-by": "pal"}
}

// Pod is run r's pod.
func (p *Plan) Pod(r Run) *corev1.Pod {
	gpu := strconv.Itoa(r.GPU)
	env := []corev1.EnvVar{
		{Name: EnvVisible, Value: gpu},
		{Name: EnvRun, Value: p.RunID},
		{Name: EnvModel, Value: r.Model},
		{Name: EnvRepetition, Value: strconv.Itoa(r.Repetition)},
		{Name: EnvGPUIndex, Value: gpu},
		{Name: EnvNode, Value: r.Node},
		{Name: EnvIterations, Value: strconv.Itoa(p.Iterations)},
	}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Pod, Namespace: p.Namespace, Labels: p.labels(),
			Annotations: map[string]string{kube.AnnGPUIndices: gpu, AnnModel: r.Model, AnnRepetition: strconv.Itoa(r.Repetition)}},
		Spec: corev1.PodSpec{
			NodeName:      r.Node,
			SchedulerName: p.Scheduler,
			RestartPolicy: corev1.RestartPolicyNever,
			// GPU nodes are often tainted nvidia.com/gpu; a benchmark
			// belongs there.
			Tolerations: []corev1.Toleration{{Key: string(kube.ResourceGPU), Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:  Container,
				Image: p.Image,
				Env:   env,
				// One GPU, so that the kubelet's and pal's accounting
				// both see the device as taken.
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}},
				// A run that fails without writing a message leaves its
				// log's tail as the message, for the failure report.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	if p.Deadline > 0 {
		s := int64((p.Deadline + time.Second - 1) / time.Second)
		pod.Spec.ActiveDeadlineSeconds = &s
	}
	return pod
}

// Pods are every run's pod, in plan order.
func (p *Plan) Pods() []*corev1.Pod {
	out := make([]*corev1.Pod, len(p.Runs))
	for i, r := range p.Runs {
		out[i] = p.Pod(r)
	}
	return out
}

// ReadPlan reads a run ConfigMap's plan back.
func ReadPlan(cm *corev1.ConfigMap) (*Plan, error) {
	raw, ok := cm.Data[PlanKey]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s has no %s: not a pal-kube profile bench run", cm.Namespace, cm.Name, PlanKey)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		// encoding/json quotes the field it does not know whole.
		return nil, fmt.Errorf("configmap %s/%s %s: %s", cm.Namespace, cm.Name, PlanKey, quote.Message(err.Error()))
	}
	if p.RunID != cm.Labels[LabelRun] {
		return nil, fmt.Errorf("configmap %s/%s %s: run id %s against label %s=%s", cm.Namespace, cm.Name, PlanKey, quote.Value(p.RunID), LabelRun, quote.Value(cm.Labels[LabelRun]))
	}
	if p.Concurrency != "node" && p.Concurrency != "gpu" {
		return nil, fmt.Errorf("configmap %s/%s %s: concurrency %s: want node or gpu", cm.Namespace, cm.Name, PlanKey, quote.Value(p.Concurrency))
	}
	q, err := NewPlan(p.Nodes, Options{RunID: p.RunID, Image: p.Image, Namespace: p.Namespace, SchedulerName: p.Scheduler,
		Models: p.Models, Repetitions: p.Repetitions, Iterations: p.Iterations, PerGPU: p.Concurrency == "gpu", Deadline: p.Deadline})
	if err != nil {
		// encoding/json quotes the field it does not know whole.
		return nil, fmt.Errorf("configmap %s/%s %s: %s", cm.Namespace, cm.Name, PlanKey, quote.Message(err.Error()))
	}
	return q, nil
}
