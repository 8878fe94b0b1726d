package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

	// ResourceGPU is the extended resource GPU nodes advertise and GPU
	// pods request.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
)

// BindInfo is the placement of a whole gang, stored on every member.
type BindInfo struct {
	Gang string `json:"gang"`
	// Round is when the round that placed the gang started (RFC 3339 with
	// nanoseconds); a replay times simulated run times from it.
	Round string             `json:"round"`
	Pods  map[string]PodBind `json:"pods"`
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
	s := make([]string, len(g))
	for i, x := range g {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// ParseIndices reads AnnGPUIndices: distinct non-negative integers.
func ParseIndices(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("annotation %s=%q: want device indices such as 0,3", AnnGPUIndices, s)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("annotation %s=%q: index %d twice", AnnGPUIndices, s, v)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// PodGPUs is the pod's nvidia.com/gpu request (limit where no request is
// set, as the kubelet defaults it), summed over its containers.
func PodGPUs(p *corev1.Pod) (int, error) {
	n := int64(0)
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Requests[ResourceGPU]
		if !ok {
			q, ok = c.Resources.Limits[ResourceGPU]
		}
		if ok {
			v, exact := q.AsInt64()
			if !exact || v < 0 {
				return 0, fmt.Errorf("container %s: %s %s is not a whole number of GPUs", c.Name, ResourceGPU, q.String())
			}
			n += v
		}
	}
	if n > 1<<20 {
		return 0, fmt.Errorf("%s request %d is beyond any node", ResourceGPU, n)
	}
	return int(n), nil
}

// NodeGPUs is a node's allocatable nvidia.com/gpu (0: not a GPU node).
func NodeGPUs(n *corev1.Node) int {
	q, ok := n.Status.Allocatable[ResourceGPU]
	if !ok {
		return 0
	}
	v, exact := q.AsInt64()
	if !exact || v <= 0 || v > 1024 {
		return 0
	}
	return int(v)
}

// GPUQuantity is n GPUs as a resource quantity.
func GPUQuantity(n int) resource.Quantity { return *resource.NewQuantity(int64(n), resource.DecimalSI) }

// podSpec is what the annotations and requests of one of our pods say.
type podSpec struct {
	gang     string // gang key: namespace/name
	size     int    // pods in the gang
	gpus     int    // this pod's GPUs
	class    variability.Class
	model    string
	iterTime float64
	iters    float64
	sizeFrom string  // what set size, for messages
	group    groupID // the group object whose status PAL writes
}

// jobGang says which batch/v1 Job a pod belongs to and that Job's
// parallelism (0: not a Job pod or the Job is unknown).
type jobGang func(p *corev1.Pod) (key string, parallelism int)

// readPod reads one pending or bound pod of ours. Errors say which
// annotation or request is wrong; the pod then stays pending with that
// message in a FailedScheduling event. groups are the PodGroup sources
// in precedence order (see LabelCoschedPodGroup): the first that claims
// the pod sets its gang, before pal.io/gang and the Job.
func readPod(p *corev1.Pod, models *workload.Models, job jobGang, groups ...groupSource) (podSpec, error) {
	s := podSpec{iters: 1}
	var err error
	if s.gpus, err = PodGPUs(p); err != nil {
		return s, err
	}
	if s.gpus == 0 {
		return s, fmt.Errorf("requests no %s; pal places GPU pods only", ResourceGPU)
	}
	a := p.Annotations
	claimed := false
	for _, src := range groups {
		ref, ok, err := src.gangOf(p)
		if err != nil {
			return s, err
		}
		if ok {
			s.gang, s.size, s.sizeFrom, s.group = ref.key, ref.size, ref.sizeFrom, ref.group
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
		s.gang = p.Namespace + "/" + g
		v, err := strconv.Atoi(a[AnnGangSize])
		if err != nil || v <= 0 || v > 1<<16 {
			return s, fmt.Errorf("annotation %s=%q: want a positive pod count with %s", AnnGangSize, a[AnnGangSize], AnnGang)
		}
		s.size, s.sizeFrom = v, AnnGangSize
	} else if _, ok := a[AnnGangSize]; ok {
		return s, fmt.Errorf("annotation %s without %s", AnnGangSize, AnnGang)
	} else if key, par := job(p); par > 1 {
		s.gang, s.size, s.sizeFrom = key, par, "the Job's parallelism"
	} else {
		s.gang, s.size = p.Namespace+"/pod:"+p.Name, 1
	}
	s.class = variability.ClassA
	if m, ok := a[AnnModel]; ok {
		it, c, known := models.Lookup(m)
		if !known {
			return s, fmt.Errorf("annotation %s=%q: unknown model (known: %s)", AnnModel, m, strings.Join(models.Names(), ", "))
		}
		s.model, s.iterTime, s.class = m, it, c
	}
	if c, ok := a[AnnClass]; ok {
		if s.class, err = variability.ParseClass(c); err != nil {
			return s, fmt.Errorf("annotation %s: %v", AnnClass, err)
		}
	}
	if v, ok := a[AnnIterations]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || f > 1e15 {
			return s, fmt.Errorf("annotation %s=%q: want a positive iteration count", AnnIterations, v)
		}
		s.iters = f
	}
	return s, nil
}
