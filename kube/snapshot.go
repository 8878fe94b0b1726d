package kube

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/workload"
)

// gangState is where a gang stands at the start of a round.
type gangState int

const (
	gangQueued  gangState = iota // every member exists, none bound: ordered and placed
	gangRunning                  // every member bound: ordered (the placer may keep, move or preempt it)
	gangPartial                  // some members bound: a crash cut its binding off; completed from bind-info
	gangWaiting                  // not every member exists yet, or the gang can never fit: not placed, says why
	gangLeaving                  // a member finished, failed or is being deleted: holds its GPUs, not placed
)

// gang is the pods of one job as the round sees them.
type gang struct {
	key      string
	spec     podSpec
	pending  []*corev1.Pod // unbound, not deleting, sorted by name
	bound    []*corev1.Pod // bound and not finished, sorted by name
	finished []string      // names of members that succeeded or failed
	state    gangState
	why      string // for gangWaiting: the event message
	failed   int    // how many of finished failed (a PodGroup's status counts them)
	job      *workload.Job
	gpus     []int // global GPU ids the bound members hold
}

// snapshot is one round's view of the cluster: GPU nodes as a
// cluster.Cluster (nodes sorted by name, each node's GPUs numbered from
// its first global id so that device index i of node n is global
// first[n]+i), and our pods grouped into gangs.
type snapshot struct {
	cl        *cluster.Cluster
	nodeNames []string
	nodeIndex map[string]int
	first     []int // global id of each node's device 0
	gangs     []*gang
	byKey     map[string]*gang
	bad       []badPod // pods whose annotations or requests are wrong
	warnings  []string // overcommitted nodes and other inconsistencies
}

type badPod struct {
	pod *corev1.Pod
	why string
}

// Owner ids in the round's cluster beyond any job id: GPUs of other
// schedulers' pods and of our pods that hold GPUs outside a placeable
// gang.
const (
	ownerForeign = 1 << 50
	ownerLeaving = 1<<50 + 1
)

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// usableNode reports whether pal may place on n.
func usableNode(n *corev1.Node) bool {
	if n.Spec.Unschedulable || NodeGPUs(n) == 0 {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			if t.Key != "nvidia.com/gpu" { // the usual taint of dedicated GPU nodes
				return false
			}
		}
	}
	return true
}

// buildSnapshot reads nodes, our pods and other schedulers' bound pods.
// jobs keeps each gang's runtime state across rounds (service attained,
// starvation priority); new gangs get the next id.
//
// groups are the PodGroup sources, in precedence order (readPod).
func buildSnapshot(nodes []*corev1.Node, ours, foreign []*corev1.Pod, models *workload.Models,
	job jobGang, jobs *jobTable, groups ...groupSource) (*snapshot, error) {
	s := &snapshot{nodeIndex: map[string]int{}, byKey: map[string]*gang{}}
	var use []*corev1.Node
	for _, n := range nodes {
		if usableNode(n) {
			use = append(use, n)
		}
	}
	slices.SortFunc(use, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	sizes := make([]int, len(use))
	for i, n := range use {
		sizes[i] = NodeGPUs(n)
		s.nodeNames = append(s.nodeNames, n.Name)
		s.nodeIndex[n.Name] = i
		s.first = append(s.first, len(s.first))
	}
	s.first = s.first[:0]
	id := 0
	for _, z := range sizes {
		s.first = append(s.first, id)
		id += z
	}
	if len(use) > 0 {
		var err error
		if s.cl, err = cluster.NewSized(sizes); err != nil {
			return nil, err
		}
		for i := range s.cl.Nodes {
			s.cl.Nodes[i].Name = s.nodeNames[i]
		}
	}

	// Group our pods into gangs.
	for _, p := range ours {
		if p.Spec.NodeName == "" && (isTerminal(p) || p.DeletionTimestamp != nil) || !p.DeletionTimestamp.IsZero() && isTerminal(p) {
			continue
		}
		spec, err := readPod(p, models, job, groups...)
		if err != nil {
			if p.Spec.NodeName == "" {
				s.bad = append(s.bad, badPod{p, err.Error()})
			} else {
				// Bound by us earlier with annotations that read now
				// differently (a changed model table): it still holds GPUs.
				s.holdForeign(p)
			}
			continue
		}
		g := s.byKey[spec.gang]
		if g == nil {
			g = &gang{key: spec.gang, spec: spec}
			s.byKey[spec.gang] = g
			s.gangs = append(s.gangs, g)
		}
		if g.spec.gpus != spec.gpus || g.spec.size != spec.size || g.spec.class != spec.class {
			g.state, g.why = gangWaiting, fmt.Sprintf("gang %s: members disagree on GPUs per pod, %s or %s (pod %s)", g.key, sizeName(g.spec), AnnClass, p.Name)
		}
		switch {
		case p.Spec.NodeName == "":
			g.pending = append(g.pending, p)
		case isTerminal(p):
			// Finished members hold nothing; a Job's next wave of pods
			// forms the gang again.
			g.finished = append(g.finished, p.Name)
			if p.Status.Phase == corev1.PodFailed {
				g.failed++
			}
		case p.DeletionTimestamp != nil:
			g.bound = append(g.bound, p)
			if g.state != gangWaiting {
				g.state = gangLeaving
			}
		default:
			g.bound = append(g.bound, p)
		}
	}
	slices.SortFunc(s.gangs, func(a, b *gang) int { return strings.Compare(a.key, b.key) })

	// GPUs held by our bound pods, gang by gang.
	maxNode := 0
	if s.cl != nil {
		maxNode = s.cl.MaxGPUsPerNode()
	}
	for _, g := range s.gangs {
		name := func(ps []*corev1.Pod) { sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name }) }
		name(g.pending)
		name(g.bound)
		g.job = jobs.get(g)
		owner := g.job.ID
		if g.state == gangLeaving || g.state == gangWaiting {
			owner = ownerLeaving
		}
		for _, p := range g.bound {
			if isTerminal(p) {
				continue
			}
			idx, err := s.hold(p, owner)
			if err != nil {
				s.warnings = append(s.warnings, err.Error())
				continue
			}
			g.gpus = append(g.gpus, idx...)
		}
		slices.Sort(g.gpus)
		if g.state == gangLeaving || g.state == gangWaiting {
			continue
		}
		n := len(g.pending) + len(g.bound)
		switch {
		case n == 0:
			g.state = gangLeaving // every member finished: nothing to place, nothing to say
		case n > g.spec.size:
			g.state, g.why = gangWaiting, fmt.Sprintf("gang %s has %d pods but %s says %d", g.key, n, sizeName(g.spec), g.spec.size)
		case len(g.bound) == g.spec.size:
			g.state = gangRunning
		case len(g.bound) > 0 && len(g.finished) > 0:
			g.state = gangLeaving // some members finished, the others still hold their GPUs
		case len(g.bound) > 0:
			g.state = gangPartial
		case n < g.spec.size:
			g.state, g.why = gangWaiting, fmt.Sprintf("gang of %d waits: %d of %d pods exist", g.spec.size, n, g.spec.size)
		case s.cl == nil:
			g.state, g.why = gangWaiting, "no schedulable node has allocatable "+string(ResourceGPU)
		case g.spec.gpus > maxNode:
			g.state, g.why = gangWaiting, fmt.Sprintf("each pod asks %d GPUs but the largest node has %d", g.spec.gpus, maxNode)
		case g.spec.gpus*g.spec.size > s.cl.Size():
			g.state, g.why = gangWaiting, fmt.Sprintf("gang of %d asks %d GPUs but the cluster has %d", g.spec.size, g.spec.gpus*g.spec.size, s.cl.Size())
		default:
			g.state = gangQueued
		}
	}
	// Other schedulers' pods take what is left on their nodes, from the
	// highest device index down (they carry no indices of ours).
	for _, p := range foreign {
		s.holdForeign(p)
	}
	return s, nil
}

// sizeName is what set a gang's size, for messages.
func sizeName(s podSpec) string {
	if s.sizeFrom == "" {
		return AnnGangSize
	}
	return s.sizeFrom
}

// hold marks the devices a bound pod of ours records as held by owner and
// returns their global ids.
func (s *snapshot) hold(p *corev1.Pod, owner int) ([]int, error) {
	n, ok := s.nodeIndex[p.Spec.NodeName]
	if !ok {
		return nil, nil // bound to a node that is gone or no longer a GPU node
	}
	idx, err := ParseIndices(p.Annotations[AnnGPUIndices])
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s on %s: %v", p.Namespace, p.Name, p.Spec.NodeName, err)
	}
	size := len(s.cl.Nodes[n].GPUs)
	glob := make([]int, len(idx))
	for i, x := range idx {
		if x >= size {
			return nil, fmt.Errorf("pod %s/%s: device %d beyond node %s's %d GPUs", p.Namespace, p.Name, x, p.Spec.NodeName, size)
		}
		glob[i] = s.first[n] + x
	}
	if err := s.cl.Assign(owner, glob); err != nil {
		return nil, fmt.Errorf("pod %s/%s on %s holds devices %v already held: %v", p.Namespace, p.Name, p.Spec.NodeName, idx, err)
	}
	return glob, nil
}

// holdForeign counts a pod's GPU request as used on its node.
func (s *snapshot) holdForeign(p *corev1.Pod) {
	n, ok := s.nodeIndex[p.Spec.NodeName]
	if !ok || isTerminal(p) {
		return
	}
	want, err := PodGPUs(p)
	if err != nil || want == 0 {
		return
	}
	gpus := s.cl.Nodes[n].GPUs
	for i := len(gpus) - 1; i >= 0 && want > 0; i-- {
		if s.cl.IsFree(gpus[i]) {
			_ = s.cl.Assign(ownerForeign, gpus[i:i+1])
			want--
		}
	}
	if want > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("node %s is overcommitted: pod %s/%s wants %d more %s than are free", p.Spec.NodeName, p.Namespace, p.Name, want, ResourceGPU))
	}
}

// device turns a global GPU id into its node name and device index.
func (s *snapshot) device(g int) (string, int) {
	n := s.cl.NodeOf(g)
	return s.nodeNames[n], g - s.first[n]
}

// split deals a gang's GPUs to its pods: each pod needs spec.gpus devices
// on one node. Pods take the GPUs in ascending order; a node whose share
// is not a whole number of pods makes the set unusable (nil).
func (s *snapshot) split(g *gang, gpus []int) []PodBind {
	per := g.spec.gpus
	out := make([]PodBind, 0, len(gpus)/per)
	for i := 0; i < len(gpus); i += per {
		if i+per > len(gpus) {
			return nil
		}
		node, _ := s.device(gpus[i])
		b := PodBind{Node: node}
		for _, x := range gpus[i : i+per] {
			nn, idx := s.device(x)
			if nn != node {
				return nil
			}
			b.GPUs = append(b.GPUs, idx)
		}
		out = append(out, b)
	}
	return out
}

// packByNode is the fallback when a placer's set does not split into
// pods: whole pods on the nodes with the most free GPUs (ties by node
// order), from the GPUs free after the round.
func (s *snapshot) packByNode(g *gang) []int {
	per := g.spec.gpus
	type nf struct{ n, free int }
	var cand []nf
	for n := range s.cl.Nodes {
		if f := s.cl.FreeOnNode(n); f >= per {
			cand = append(cand, nf{n, f})
		}
	}
	slices.SortStableFunc(cand, func(a, b nf) int { return b.free - a.free })
	need := g.spec.size
	var out []int
	for _, c := range cand {
		k := min(need, c.free/per)
		taken := 0
		for _, x := range s.cl.Nodes[c.n].GPUs {
			if taken == k*per {
				break
			}
			if s.cl.IsFree(x) {
				out = append(out, x)
				taken++
			}
		}
		need -= k
		if need == 0 {
			slices.Sort(out)
			return out
		}
	}
	return nil
}
