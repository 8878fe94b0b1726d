package state

import (
	"fmt"
	"slices"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/workload"
)

// Snapshot is one round's view of the state: the usable nodes as a
// cluster.Cluster (nodes sorted by name, device index i of node n is
// global GPU First[n]+i), the gangs in key order, and the pods that
// wait with an error. Cluster is the round's own copy of the owner
// table: the round plans on it. Everything else is the Store's and is
// read only; it stays valid until the next Sync.
type Snapshot struct {
	Cluster   *cluster.Cluster // nil: no usable node
	NodeNames []string
	NodeIndex map[string]int
	First     []int
	Gangs     []*Gang
	// Grouped are the gangs of a group object (a PodGroup), in key order.
	Grouped  []*Gang
	ByKey    map[string]*Gang
	ByJob    map[*workload.Job]*Gang
	Bad      []BadPod
	Warnings []string
	// Removed are the gangs that left at the last Sync.
	Removed []*Gang
	// Generation, PlanGeneration and LayoutGeneration are the Store's
	// when it was taken.
	Generation, PlanGeneration, LayoutGeneration uint64
}

// Snapshot is the round's view after the last Sync.
func (s *Store) Snapshot() *Snapshot {
	snap := &Snapshot{NodeNames: s.lay.names, NodeIndex: s.lay.index, First: s.lay.first,
		Gangs: s.sorted, Grouped: s.grouped, ByKey: s.gangs, ByJob: s.byJob, Bad: s.badList, Warnings: s.warnings,
		Removed: s.removed, Generation: s.generation, PlanGeneration: s.planGen, LayoutGeneration: s.layoutGen}
	if s.lay.base != nil {
		snap.Cluster = s.lay.base.Clone()
	}
	return snap
}

// Device turns a global GPU id into its node name and device index.
func (s *Snapshot) Device(g int) (string, int) {
	n := s.Cluster.NodeOf(g)
	return s.NodeNames[n], g - s.First[n]
}

// Devices writes global GPU ids as node names and device indices:
// "gpu-node-000 GPUs 0,1,2,3 and gpu-node-001 GPU 0".
func (s *Snapshot) Devices(gpus []int) string {
	var parts []string
	var node string
	var idx []int
	flush := func() {
		if len(idx) == 0 {
			return
		}
		w := "GPUs"
		if len(idx) == 1 {
			w = "GPU"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", node, w, podspec.FormatIndices(idx)))
	}
	sorted := slices.Clone(gpus)
	slices.Sort(sorted)
	for _, g := range sorted {
		if s.Cluster == nil || g < 0 || g >= s.Cluster.Size() {
			continue
		}
		n, i := s.Device(g)
		if n != node {
			flush()
			node, idx = n, nil
		}
		idx = append(idx, i)
	}
	flush()
	return strings.Join(parts, " and ")
}

// Split deals a gang's GPUs to its pods: each pod needs Spec.GPUs devices
// on one node. Pods take the GPUs in ascending order; a node whose share
// is not a whole number of pods makes the set unusable (nil).
func (s *Snapshot) Split(g *Gang, gpus []int) []podspec.PodBind {
	per := g.Spec.GPUs
	out := make([]podspec.PodBind, 0, len(gpus)/per)
	for i := 0; i < len(gpus); i += per {
		if i+per > len(gpus) {
			return nil
		}
		node, _ := s.Device(gpus[i])
		b := podspec.PodBind{Node: node}
		for _, x := range gpus[i : i+per] {
			nn, idx := s.Device(x)
			if nn != node {
				return nil
			}
			b.GPUs = append(b.GPUs, idx)
		}
		out = append(out, b)
	}
	return out
}

// PackByNode is the fallback when a placer's set does not split into
// pods: whole pods on the nodes with the most free GPUs (ties by node
// order), from the GPUs free after the round and not busy (a GPU the
// plan frees may still be held by pods being evicted).
func (s *Snapshot) PackByNode(g *Gang, busy func(gpu int) bool) []int {
	per := g.Spec.GPUs
	usable := func(x int) bool { return s.Cluster.IsFree(x) && (busy == nil || !busy(x)) }
	type nf struct{ n, free int }
	var cand []nf
	for n, nd := range s.Cluster.Nodes {
		f := 0
		for _, x := range nd.GPUs {
			if usable(x) {
				f++
			}
		}
		if f >= per {
			cand = append(cand, nf{n, f})
		}
	}
	slices.SortStableFunc(cand, func(a, b nf) int { return b.free - a.free })
	need := g.Spec.Size
	var out []int
	for _, c := range cand {
		k := min(need, c.free/per)
		taken := 0
		for _, x := range s.Cluster.Nodes[c.n].GPUs {
			if taken == k*per {
				break
			}
			if usable(x) {
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
