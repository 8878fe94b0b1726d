// Package podspec is what pal-kube scheduler reads and writes on pods: the
// pal.io annotations, the nvidia.com/gpu requests, the bind-info a bound
// gang carries, and the reading of one pod into the gang it belongs to
// (Reader.Read). It keeps no state: the scheduler's state (package
// kube/state) reads each pod through it once per change.
package podspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The annotations and resource PAL reads and writes on pods.
const (
	// AnnGang names a gang: pods with the same value in one namespace are
	// placed all together or not at all.
	AnnGang = "pal.io/gang"
	// AnnGangSize is how many pods the gang has; the gang waits until all
	// of them exist.
	AnnGangSize = "pal.io/gang-size"
	// AnnApp names the pod's Themis app (kube reads it); at most
	// MaxAppBytes of UTF-8, checked here with the other annotations a
	// pod is read by.
	AnnApp = "pal.io/app"
	// MaxAppBytes bounds AnnApp: an app name becomes a metric label
	// (pal_app_rho) and part of event messages.
	MaxAppBytes = 253
	// AnnClass is the pod's variability class (A..D).
	AnnClass = "pal.io/class"
	// AnnModel is the pod's model name, looked up in the model table for
	// its class and iteration time when pal.io/class is absent.
	AnnModel = "pal.io/model"
	// AnnIterations is the job's iteration count (optional): with the
	// model's iteration time it gives SRTF its remaining-time estimate.
	AnnIterations = "pal.io/iterations"
	// AnnGPUIndices is written at binding: the device indices on the node,
	// "0,3", for NVIDIA_VISIBLE_DEVICES through the downward API.
	AnnGPUIndices = "pal.io/gpu-indices"
	// AnnBindInfo is written at binding: the whole gang's placement
	// (BindInfo as JSON), from which a restarted scheduler completes a
	// gang whose binding a crash cut off.
	AnnBindInfo = "pal.io/bind-info"
	// AnnSlowdown is written at binding: the expected slowdown against a
	// median GPU inside one node (slowest GPU's value x locality).
	AnnSlowdown = "pal.io/slowdown"
	// AnnBackfillHead is written at binding on a gang that backfill
	// (backfill: easy) started past a waiting gang, the head: the head's
	// gang key (namespace/name, namespace/job:NAME or namespace/pod:NAME,
	// as the scheduler names gangs). With AnnBackfillPromise it is how
	// the promise made to the head outlives the scheduler process: a
	// restarted scheduler, or a new leader, reads it from the running
	// gangs and still preempts the gang for the head once the head's
	// promised time has come, and not for it before.
	AnnBackfillHead = "pal.io/backfill-head"
	// AnnBackfillPromise is written with AnnBackfillHead when the head's
	// reservation made a promise: when the head was promised to start,
	// RFC 3339 in UTC with nanoseconds (unix seconds are read too).
	AnnBackfillPromise = "pal.io/backfill-promise"

	// ResourceGPU is the extended resource GPU nodes advertise and GPU
	// pods request.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

	// MaxNodeGPUs is the most GPUs a node may advertise and so the most
	// one pod may ask for (a pod runs on one node): the cluster model's
	// own limit per node. A larger request can never be placed, and a
	// larger allocatable is not read as a GPU node.
	MaxNodeGPUs = 1024
)

// BindInfo is the placement of a whole gang, stored on every member.
type BindInfo struct {
	Gang string `json:"gang"`
	// Round is when the round that placed the gang started (RFC 3339 with
	// nanoseconds); a replay times simulated run times from it.
	Round string             `json:"round"`
	Pods  map[string]PodBind `json:"pods"`
	// Done is the iterations the gang had done before this bind, as the
	// scheduler that bound it credited them (0 or absent: none, or not
	// known): a gang moved from GPUs it ran on resumes from its
	// checkpoint, and a scheduler that did not see its earlier runs (a
	// restart, another leader) reads its work from here, not as starting
	// over at this bind.
	Done float64 `json:"done,omitempty"`
	// Attained and Service are the gang's attained service (seconds it
	// has run, in job time: LAS's key) and GPU service (GPU-seconds,
	// Tiresias') before this bind, as the scheduler that bound it
	// credited them (absent: none): a scheduler that did not see its
	// earlier runs orders it by them and the time since this bind, not
	// as never served.
	Attained float64 `json:"attained,omitempty"`
	Service  float64 `json:"service,omitempty"`
	// Arrived is when the gang first arrived (RFC 3339 with
	// nanoseconds), written when that is before its oldest pod was made:
	// a gang evicted and made again by its controller keeps its place in
	// line from it, where a scheduler that did not see it arrive would
	// read the new pods' creation times.
	Arrived string `json:"arrived,omitempty"`
	// Debt is the restart cost the gang owed at this bind (seconds of
	// job time without progress: its moves' checkpoint-restarts, as the
	// placement weighed them), paid before Done grows again.
	Debt float64 `json:"debt,omitempty"`
}

// PodBind is one member's node and device indices.
type PodBind struct {
	Node string `json:"node"`
	GPUs []int  `json:"gpus"`
}

// ParseBindInfo reads AnnBindInfo.
func ParseBindInfo(s string) (*BindInfo, error) {
	var b BindInfo
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		return nil, fmt.Errorf("annotation %s: %v", AnnBindInfo, err)
	}
	if b.Gang == "" || len(b.Pods) == 0 {
		return nil, fmt.Errorf("annotation %s: no gang or no pods", AnnBindInfo)
	}
	return &b, nil
}

// FormatIndices writes device indices as "0,3".
func FormatIndices(g []int) string {
	b := make([]byte, 0, 3*len(g))
	for i, x := range g {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(b)
}

// ParseIndices reads AnnGPUIndices: distinct non-negative integers,
// returned ascending. It sorts once and compares neighbours, so a long
// value costs n log n, not n².
func ParseIndices(s string) ([]int, error) {
	out := make([]int, 0, strings.Count(s, ",")+1)
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("annotation %s=%s: want device indices such as 0,3", AnnGPUIndices, quote.Value(s))
		}
		out = append(out, v)
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("annotation %s=%s: index %d twice", AnnGPUIndices, quote.Value(s), out[i])
		}
	}
	return out, nil
}

// PodGPUs is the pod's nvidia.com/gpu request as the kubelet reckons it:
// each container's request (its limit where no request is set), summed
// over the containers and restartable init containers (sidecars), or a
// plain init container's own request plus the sidecars started before it
// when that is larger. Every container's value is checked before it is
// added, so no pod can make the sum wrap: a value that is not a whole
// number, is negative, or is beyond any node (MaxNodeGPUs) is an error
// naming the container's field, and so is a total beyond any node.
func PodGPUs(p *corev1.Pod) (int, error) {
	one := func(kind string, i int, c *corev1.Container) (int, error) {
		field := "requests"
		q, ok := c.Resources.Requests[ResourceGPU]
		if !ok {
			field = "limits"
			if q, ok = c.Resources.Limits[ResourceGPU]; !ok {
				return 0, nil
			}
		}
		where := fmt.Sprintf("spec.%s[%d] (%s) resources.%s[%s]", kind, i, quote.Text(c.Name), field, ResourceGPU)
		v, exact := q.AsInt64()
		switch {
		case !exact:
			return 0, fmt.Errorf("%s: %s is not a whole number of GPUs", where, quote.Text(q.String()))
		case v < 0:
			return 0, fmt.Errorf("%s: %d is negative", where, v)
		case v > MaxNodeGPUs:
			return 0, fmt.Errorf("%s: %d is beyond any node (at most %d GPUs per node)", where, v, MaxNodeGPUs)
		}
		return int(v), nil
	}
	total, sidecars, initMax := 0, 0, 0
	add := func(v int, what string) error {
		total += v
		if total > MaxNodeGPUs {
			return fmt.Errorf("%s: the pod's containers ask more than %d GPUs in all, beyond any node", what, MaxNodeGPUs)
		}
		return nil
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		v, err := one("initContainers", i, c)
		if err != nil {
			return 0, err
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += v
			if err := add(v, fmt.Sprintf("spec.initContainers[%d]", i)); err != nil {
				return 0, err
			}
			continue
		}
		initMax = max(initMax, sidecars+v)
	}
	for i := range p.Spec.Containers {
		v, err := one("containers", i, &p.Spec.Containers[i])
		if err != nil {
			return 0, err
		}
		if err := add(v, fmt.Sprintf("spec.containers[%d]", i)); err != nil {
			return 0, err
		}
	}
	if initMax > MaxNodeGPUs {
		return 0, fmt.Errorf("spec.initContainers: an init container and the sidecars before it ask %d GPUs, beyond any node", initMax)
	}
	return max(total, initMax), nil
}

// NodeGPUs is a node's allocatable nvidia.com/gpu (0: not a GPU node, or
// a value no node has).
func NodeGPUs(n *corev1.Node) int {
	q, ok := n.Status.Allocatable[ResourceGPU]
	if !ok {
		return 0
	}
	v, exact := q.AsInt64()
	if !exact || v <= 0 || v > MaxNodeGPUs {
		return 0
	}
	return int(v)
}

// GPUQuantity is n GPUs as a resource quantity.
func GPUQuantity(n int) resource.Quantity { return *resource.NewQuantity(int64(n), resource.DecimalSI) }

// IsTerminal reports whether a pod has finished (it holds nothing).
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsBare reports whether no controller will recreate p once it is
// evicted.
func IsBare(p *corev1.Pod) bool { return metav1.GetControllerOf(p) == nil }

// Spec is what the annotations and requests of one of our pods say.
type Spec struct {
	Gang     string // gang key: namespace/name
	Size     int    // pods in the gang
	GPUs     int    // this pod's GPUs
	Class    variability.Class
	Model    string
	IterTime float64
	Iters    float64
	SizeFrom string  // what set size, for messages
	Group    GroupID // the group object whose status PAL writes
}

// SizeName is what set a gang's size, for messages.
func (s Spec) SizeName() string {
	if s.SizeFrom == "" {
		return AnnGangSize
	}
	return s.SizeFrom
}

// JobLookup says which batch/v1 Job a pod belongs to and that Job's
// parallelism (0: not a Job pod or the Job is unknown).
type JobLookup func(p *corev1.Pod) (key string, parallelism int)

// Reader reads pods: the model table, the Job lookup and the PodGroup
// sources in precedence order (see LabelCoschedPodGroup).
type Reader struct {
	Models *workload.Models
	Job    JobLookup
	Groups []GroupSource
}

// Read reads one pending or bound pod of ours. Errors say which
// annotation or request is wrong; the pod then stays pending with that
// message in a FailedScheduling event. The first PodGroup source that
// claims the pod sets its gang, before pal.io/gang and the Job.
func (r *Reader) Read(p *corev1.Pod) (Spec, error) {
	s := Spec{Iters: 1}
	var err error
	if s.GPUs, err = PodGPUs(p); err != nil {
		return s, err
	}
	if s.GPUs == 0 {
		return s, fmt.Errorf("requests no %s; pal places GPU pods only", ResourceGPU)
	}
	a := p.Annotations
	claimed := false
	for _, src := range r.Groups {
		ref, ok, err := src.GangOf(p)
		if err != nil {
			return s, err
		}
		if ok {
			s.Gang, s.Size, s.SizeFrom, s.Group = ref.Key, ref.Size, ref.SizeFrom, ref.Group
			claimed = true
			break
		}
	}
	if claimed {
		// A PodGroup decided; pal.io/gang and the Job are not read.
	} else if g, ok := a[AnnGang]; ok {
		if g == "" {
			return s, fmt.Errorf("annotation %s is empty", AnnGang)
		}
		s.Gang = p.Namespace + "/" + g
		v, err := strconv.Atoi(a[AnnGangSize])
		if err != nil || v <= 0 || v > 1<<16 {
			return s, fmt.Errorf("annotation %s=%s: want a positive pod count with %s", AnnGangSize, quote.Value(a[AnnGangSize]), AnnGang)
		}
		s.Size, s.SizeFrom = v, AnnGangSize
	} else if _, ok := a[AnnGangSize]; ok {
		return s, fmt.Errorf("annotation %s without %s", AnnGangSize, AnnGang)
	} else if key, par := r.job(p); par > 1 {
		s.Gang, s.Size, s.SizeFrom = key, par, "the Job's parallelism"
	} else {
		s.Gang, s.Size = p.Namespace+"/pod:"+p.Name, 1
	}
	if p.Spec.NodeName == "" {
		// After the gang is known: its other pods' wait names this one.
		if err := unplaceable(p); err != nil {
			return s, err
		}
	}
	s.Class = variability.ClassA
	if m, ok := a[AnnModel]; ok {
		it, c, known := r.Models.Lookup(m)
		if !known {
			return s, fmt.Errorf("annotation %s=%s: unknown model (known: %s)", AnnModel, quote.Value(m), strings.Join(r.Models.Names(), ", "))
		}
		s.Model, s.IterTime, s.Class = m, it, c
	}
	if c, ok := a[AnnClass]; ok {
		if s.Class, err = variability.ParseClass(c); err != nil {
			return s, fmt.Errorf("annotation %s: %v", AnnClass, err)
		}
	}
	if v := a[AnnApp]; len(v) > MaxAppBytes || !utf8.ValidString(v) {
		return s, fmt.Errorf("annotation %s=%s: want an app name of at most %d bytes of UTF-8, got %d bytes", AnnApp, quote.Value(v), MaxAppBytes, len(v))
	}
	if v, ok := a[AnnIterations]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || f > 1e15 {
			return s, fmt.Errorf("annotation %s=%s: want a positive iteration count", AnnIterations, quote.Value(v))
		}
		s.Iters = f
	}
	return s, nil
}

// unplaceable says which required constraint of pending pod p the
// placement does not read: inter-pod affinity and anti-affinity, and
// topology spread that may not be broken. PAL places gangs by GPU speed
// and locality alone; binding such a pod would break what its owner
// required, silently, so it waits, told why. (A preferred term, or a
// spread constraint that may be broken, asks nothing PAL must keep; it
// is not read either.) A bound pod is not asked: where it runs is done.
func unplaceable(p *corev1.Pod) error {
	const why = "pal-kube scheduler does not place by %s, and would bind the pod without it: remove it, or schedule the pod with a scheduler that reads it"
	if a := p.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil && len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return fmt.Errorf("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution: "+why, "inter-pod affinity")
		}
		if pa := a.PodAntiAffinity; pa != nil && len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return fmt.Errorf("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution: "+why, "inter-pod anti-affinity")
		}
	}
	for i, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return fmt.Errorf("spec.topologySpreadConstraints[%d] (whenUnsatisfiable: DoNotSchedule): "+why, i, "topology spread")
		}
	}
	return nil
}

func (r *Reader) job(p *corev1.Pod) (string, int) {
	if r.Job == nil {
		return "", 0
	}
	return r.Job(p)
}

// Refs names the objects besides the pod itself that its reading depends
// on: its batch/v1 Job controller ("job:ns/name"), its native PodGroup
// ("podgroup:ns/name") and its scheduler-plugins PodGroup
// ("coscheduling:ns/name"). When one of them changes, the pod is read
// again.
func Refs(p *corev1.Pod) []string {
	var out []string
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
		out = append(out, JobRef(p.Namespace, ref.Name))
	}
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		out = append(out, NativeGroupRef(p.Namespace, *sg.PodGroupName))
	}
	if v := p.Labels[LabelCoschedPodGroup]; v != "" {
		out = append(out, CoschedGroupRef(p.Namespace, v))
	}
	return out
}

// JobRef, NativeGroupRef and CoschedGroupRef are the names Refs gives the
// objects a pod's reading depends on.
func JobRef(ns, name string) string          { return "job:" + ns + "/" + name }
func NativeGroupRef(ns, name string) string  { return "podgroup:" + ns + "/" + name }
func CoschedGroupRef(ns, name string) string { return "coscheduling:" + ns + "/" + name }
