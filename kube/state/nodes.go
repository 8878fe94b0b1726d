package state

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/podspec"
)

// UsableNode reports whether pal may place on n: a schedulable GPU node
// without a taint of the node lifecycle's (SystemTaint). A node whose
// other taints keep pods off is usable by the gangs whose pods tolerate
// them (Tainted).
func UsableNode(n *corev1.Node) bool {
	if n.Spec.Unschedulable || podspec.NodeGPUs(n) == 0 {
		return false
	}
	for _, t := range n.Spec.Taints {
		if KeepsOff(t) && SystemTaint(t.Key) {
			return false
		}
	}
	return true
}

// KeepsOff reports whether taint t keeps pods that do not tolerate it off
// its node when they are placed: its effect is NoSchedule or NoExecute
// (PreferNoSchedule is a wish), and it is not nvidia.com/gpu's, which
// every pod asking for GPUs tolerates (the ExtendedResourceToleration
// admission plugin adds the toleration, and GPU node pools carry the
// taint).
func KeepsOff(t corev1.Taint) bool {
	return (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && t.Key != "nvidia.com/gpu"
}

// SystemTaint reports whether a taint key is one the node lifecycle sets
// (not ready, unreachable, cordoned, under pressure, not initialised by
// its cloud provider). No pod of a gang tolerates those for its
// scheduling, so such a node is out of the layout, as a cordoned one is,
// and the wait reasons count it as cordoned or not ready.
func SystemTaint(key string) bool {
	return strings.HasPrefix(key, "node.kubernetes.io/") || strings.HasPrefix(key, "node.cloudprovider.kubernetes.io/")
}

// Tainted reports whether usable node n carries a taint that keeps the
// gangs whose pods do not tolerate it off (an operator's
// dedicated=team:NoSchedule): such a node is in the layout, and the
// gangs are kept off it where the round honours node selectors.
func Tainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if KeepsOff(t) {
			return true
		}
	}
	return false
}

// layout is the usable nodes, sorted by name, each node's GPUs numbered
// from its first global id (device index i of node n is global
// first[n]+i), and the owner table of those GPUs (the base the rounds
// copy).
type layout struct {
	names  []string
	index  map[string]int
	first  []int
	base   *cluster.Cluster // nil: no usable node
	maxPer int
}

// nodeUse is who holds what on one node: our bound pods by the indices
// they carry (claims), and pods that hold by count (others: other
// schedulers' pods, ours that no longer read), by sort key; at is the
// devices such a pod's annotation names, which it holds first (heldBy).
type nodeUse struct {
	claims   map[string]*podEntry
	others   map[string]int
	at       map[string][]int
	warnings []string
}

// applyNode records a node (nil: deleted) and reports whether the usable
// nodes or their sizes changed.
func (s *Store) applyNode(name string, n *corev1.Node) bool {
	was := s.nodes[name]
	if labelsChanged(was, n) {
		// Which gangs a node allows changed: a gang that waited for a
		// node its selector matches, or whose taint it tolerates, may
		// be placed now (the planner skips rounds of the same plan
		// generation).
		s.labelsGen++
		s.planChanged = true
	}
	tainted := func(n *corev1.Node) int {
		if n != nil && UsableNode(n) && Tainted(n) {
			return 1
		}
		return 0
	}
	s.tainted += tainted(n) - tainted(was)
	if n == nil {
		delete(s.nodes, name)
	} else {
		s.nodes[name] = n
		if was == nil || was.Status.NodeInfo.SystemUUID != n.Status.NodeInfo.SystemUUID || was.Status.NodeInfo.MachineID != n.Status.NodeInfo.MachineID {
			s.nodeInfoGen++
		}
	}
	gpus := func(n *corev1.Node) int {
		if n == nil || !UsableNode(n) {
			return 0
		}
		return podspec.NodeGPUs(n)
	}
	return gpus(was) != gpus(n)
}

// labelsChanged reports whether a node noted as n (nil: deleted) where
// the Store held was (nil: none) changes the nodes' names, labels or
// taints (what decides which gangs a node allows). The very object noted
// again may have been changed in place: it counts as changed.
func labelsChanged(was, n *corev1.Node) bool {
	if was == nil || n == nil {
		return was != n
	}
	return was == n || !maps.Equal(was.Labels, n.Labels) || !slices.EqualFunc(was.Spec.Taints, n.Spec.Taints, func(a, b corev1.Taint) bool {
		return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
	})
}

// rebuildLayout numbers the usable nodes again and holds every GPU
// again: the node set changed (rare), so every global id may have moved.
func (s *Store) rebuildLayout() {
	var use []*corev1.Node
	for _, n := range s.nodes {
		if UsableNode(n) {
			use = append(use, n)
		}
	}
	slices.SortFunc(use, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	l := layout{index: make(map[string]int, len(use))}
	sizes := make([]int, len(use))
	id := 0
	for i, n := range use {
		sizes[i] = podspec.NodeGPUs(n)
		l.names = append(l.names, n.Name)
		l.index[n.Name] = i
		l.first = append(l.first, id)
		id += sizes[i]
		l.maxPer = max(l.maxPer, sizes[i])
	}
	if len(use) > 0 {
		c, err := cluster.NewSized(sizes)
		if err != nil {
			panic("state: " + err.Error()) // sizes are 1..MaxNodeGPUs
		}
		for i := range c.Nodes {
			c.Nodes[i].Name = l.names[i]
		}
		l.base = c
	}
	s.lay = l
	s.layoutGen++
	s.planChanged = true
	for name := range s.use {
		s.dirtyNodes[name] = true
	}
	for _, g := range s.gangs {
		s.dirtyGangs[g] = true
	}
}

// resolveNode holds a node's GPUs again from its claims and others: our
// pods in gang-key and pod-name order each take the devices they record
// (all or none: a pod whose devices do not read, are taken or lie beyond
// the node takes none, and a warning says so), then the others, and the
// claims that took none, take their requests' worth of what is left from
// the highest device index down. It reports whether any device
// changed hands.
func (s *Store) resolveNode(name string) (changed bool) {
	u := s.use[name]
	if u == nil {
		return false
	}
	for _, c := range u.claims {
		if c.held != nil {
			c.held = nil
		}
		s.gpusDirty[c.gang] = true
	}
	if len(u.warnings) > 0 {
		u.warnings = nil
		s.warnDirty = true
	}
	n, ok := s.lay.index[name]
	if !ok {
		// Gone, or no longer a GPU node: nothing there is held.
		if len(u.claims) == 0 && len(u.others) == 0 {
			delete(s.use, name)
		}
		return false
	}
	cl := s.lay.base
	gpus := cl.Nodes[n].GPUs
	before := make([]int, len(gpus))
	for i, g := range gpus {
		before[i] = cl.Owner(g)
		if before[i] != cluster.Free {
			_ = cl.Release(before[i], []int{g})
		}
	}
	defer func() {
		for i, g := range gpus {
			if cl.Owner(g) != before[i] {
				changed = true
			}
		}
	}()
	claims := make([]*podEntry, 0, len(u.claims))
	for _, c := range u.claims {
		claims = append(claims, c)
	}
	slices.SortFunc(claims, func(a, b *podEntry) int {
		if c := strings.Compare(a.gang.Key, b.gang.Key); c != 0 {
			return c
		}
		return strings.Compare(a.eff.Name, b.eff.Name)
	})
	holder := make([]string, len(gpus)) // device index -> pod holding it
	warn := func(format string, args ...any) {
		u.warnings = append(u.warnings, fmt.Sprintf(format, args...))
		s.warnDirty = true
	}
	// A claim that cannot be held by its indices (they do not read, lie
	// beyond the node, or are another pod's) still runs on the node: it
	// holds its request by count, as another scheduler's pod does.
	counted := map[string]int{}
	for _, c := range claims {
		p := c.eff
		if c.ierr != nil {
			warn("pod %s/%s on %s: %v", p.Namespace, p.Name, name, c.ierr)
			counted[c.key] = c.spec.GPUs
			continue
		}
		glob := make([]int, len(c.idx))
		ok := true
		for i, x := range c.idx {
			if x >= len(gpus) {
				warn("pod %s/%s: device %d beyond node %s's %d GPUs", p.Namespace, p.Name, x, name, len(gpus))
				ok = false
				break
			}
			glob[i] = s.lay.first[n] + x
		}
		if !ok {
			counted[c.key] = c.spec.GPUs
			continue
		}
		if !cl.TryAssign(c.gang.owner(), glob) {
			counted[c.key] = c.spec.GPUs
			var by []string
			for _, x := range c.idx {
				if h := holder[x]; h != "" && !slices.Contains(by, h) {
					by = append(by, h)
				}
			}
			warn("pod %s/%s on %s holds devices %s already held by %s", p.Namespace, p.Name, name, podspec.FormatIndices(c.idx), strings.Join(by, ", "))
			continue
		}
		for _, x := range c.idx {
			holder[x] = "pod " + c.key
		}
		c.held = glob
	}
	keys := make([]string, 0, len(u.others)+len(counted))
	for k := range u.others {
		keys = append(keys, k)
	}
	for k := range counted {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Others that name their devices hold those first (heldBy), before
	// any other takes devices by count, which could be the same ones.
	named := map[string]int{}
	for _, k := range keys {
		idx := u.at[k]
		if len(idx) == 0 {
			continue
		}
		glob := make([]int, 0, len(idx))
		for _, x := range idx {
			if x < len(gpus) {
				glob = append(glob, s.lay.first[n]+x)
			}
		}
		if len(glob) < len(idx) || !cl.TryAssign(OwnerForeign, glob) {
			shown := podspec.FormatIndices(idx[:min(len(idx), 16)]) // a hostile list must not make every warning as long
			if len(idx) > 16 {
				shown += ",..."
			}
			warn("pod %s on %s names devices %s it cannot hold (beyond the node or already held): it holds its count", strings.TrimPrefix(k, "foreign:"), name, shown)
			continue
		}
		for _, x := range idx {
			holder[x] = "pod " + strings.TrimPrefix(k, "foreign:")
		}
		named[k] = len(idx)
	}
	for _, k := range keys {
		want, ok := u.others[k]
		if !ok {
			want = counted[k]
		}
		want -= named[k]
		for i := len(gpus) - 1; i >= 0 && want > 0; i-- {
			if cl.IsFree(gpus[i]) {
				_ = cl.Assign(OwnerForeign, gpus[i:i+1])
				want--
			}
		}
		if want > 0 {
			warn("node %s is overcommitted: pod %s wants %d more %s than are free", name, strings.TrimPrefix(k, "foreign:"), want, podspec.ResourceGPU)
		}
	}
	return false // the deferred comparison decides
}
