package place

import (
	"math"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// PAL is the paper's locality- and variability-aware placement. Jobs that
// fit inside one node (1 < n <= GPUs per node) walk their class's L×V
// order: an entry (v, within) asks for n GPUs scoring <= v inside a single
// node; (v, across) for n such GPUs anywhere, chosen PM-First. Entries are
// sorted by v x L, so a job spreads across nodes only when that beats the
// best packed option even after the locality penalty, and never touches
// an outlier bin while a spread over good GPUs is possible. Other demands
// use PM-First. The round frame is PM-First's.
type PAL struct {
	// TieBreak is passed to PM-First picks (across entries and other sizes).
	TieBreak PMFirstTieBreak
	f        freeSet
	s        picker
}

// NewPAL makes a PAL placer with the artifact's PM-First tie-break.
func NewPAL() *PAL { return &PAL{TieBreak: PMFirstArtifact} }

// Name implements policy.Placer.
func (p *PAL) Name() string { return "pal" }

// Sticky implements policy.Placer.
func (p *PAL) Sticky() bool { return false }

// Place implements policy.Placer.
func (p *PAL) Place(env *policy.Env, order []*workload.Job) [][]int {
	return classFirstFrame(env, order, &p.f, p.pick)
}

func (p *PAL) pick(env *policy.Env, f *freeSet, j *workload.Job) []int {
	n := j.GPUs
	if f.total < n {
		return nil
	}
	if n == 1 || n > env.Cluster.MaxGPUsPerNode() {
		return p.s.pmFirst(env, f, j, math.Inf(1), p.TieBreak)
	}
	for _, e := range env.Scores.LV[j.Class] {
		var g []int
		if e.Across {
			g = p.s.pmFirst(env, f, j, e.V, p.TieBreak)
		} else {
			g = p.within(env, f, j, e.V)
		}
		if g != nil {
			return g
		}
	}
	return nil
}

// within finds the node holding n free GPUs scoring <= v whose n best
// GPUs have the smallest worst score; ties go to the node with more such
// GPUs, then the lower node id. On that node it takes the first n GPUs
// (by id) scoring no worse than that worst score.
func (p *PAL) within(env *policy.Env, f *freeSet, j *workload.Job, v float64) []int {
	n := j.GPUs
	sf := env.Scores.SF[j.Class]
	bestNode, bestCount := -1, 0
	bestScore := math.Inf(1)
	var vals []float64
	for node, nd := range env.Cluster.Nodes {
		if f.nodeFree[node] < n {
			continue
		}
		vals = vals[:0]
		for _, g := range nd.GPUs {
			if f.free[g] && sf[g] <= v {
				vals = append(vals, sf[g])
			}
		}
		if len(vals) < n {
			continue
		}
		score := nthSmallest(vals, n)
		if score < bestScore || (score == bestScore && len(vals) > bestCount) {
			bestNode, bestCount, bestScore = node, len(vals), score
		}
	}
	if bestNode < 0 {
		return nil
	}
	out := make([]int, 0, n)
	for _, g := range env.Cluster.Nodes[bestNode].GPUs {
		if len(out) < n && f.free[g] && sf[g] <= bestScore {
			out = append(out, g)
		}
	}
	return out
}

// nthSmallest returns the n-th smallest value (1-based); vals is reordered.
func nthSmallest(vals []float64, n int) float64 {
	for i := 0; i < n; i++ {
		m := i
		for k := i + 1; k < len(vals); k++ {
			if vals[k] < vals[m] {
				m = k
			}
		}
		vals[i], vals[m] = vals[m], vals[i]
	}
	return vals[n-1]
}
