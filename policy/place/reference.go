package place

import (
	"math"
	"slices"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// This file keeps the first, literal implementations of PM-First and PAL:
// a scan of every free GPU and a sort per job. They mirror the artifact's
// pandas code line by line, which makes them easy to check against it, but
// they cost O(GPUs log GPUs) per job. The indexed versions (index.go) must
// return exactly what these return; the property tests in
// reference_test.go compare the two, and PMFirst/PAL fall back to these
// when the index cannot represent the inputs (NaN scores, GPU ids that are
// not contiguous per node).

// refPMFirst is the reference PM-First placer.
type refPMFirst struct {
	TieBreak       PMFirstTieBreak
	MigrationAware bool
	f              freeSet
	s              picker
}

func (p *refPMFirst) Place(env *policy.Env, order []*workload.Job) [][]int {
	return refClassFirstFrame(env, order, &p.f, func(env *policy.Env, f *freeSet, j *workload.Job) []int {
		return p.s.pmFirst(env, f, j, math.Inf(1), p.TieBreak)
	}, hysteresis(p.MigrationAware, env, true))
}

// refPAL is the reference PAL placer.
type refPAL struct {
	TieBreak       PMFirstTieBreak
	MigrationAware bool
	f              freeSet
	s              picker
}

func (p *refPAL) Place(env *policy.Env, order []*workload.Job) [][]int {
	return refClassFirstFrame(env, order, &p.f, p.pick, hysteresis(p.MigrationAware, env, true))
}

func (p *refPAL) pick(env *policy.Env, f *freeSet, j *workload.Job) []int {
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
			g = refWithin(env, f, j, e.V)
		}
		if g != nil {
			return g
		}
	}
	return nil
}

// refClassFirstFrame is the round frame PM-First and PAL share: release
// everything, find the must-schedule prefix (jobs in order while their
// cumulative demand fits the cluster; the job that crosses the size is
// left out), stable-sort it by class, append the rest in order, and place
// greedily until the first failure; m, if not nil, is a migration-aware
// rule, and when it pins a running job the frame is its moveFrame in the
// same visiting order.
func refClassFirstFrame(env *policy.Env, order []*workload.Job, f *freeSet, pick pickFunc, m *mover) [][]int {
	size := env.Cluster.Size()
	k, sum := 0, 0
	for k < len(order) && sum+order[k].GPUs <= size {
		sum += order[k].GPUs
		k++
	}
	idx := make([]int, len(order))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx[:k], func(a, b int) int { return int(order[a].Class) - int(order[b].Class) })
	f.reset(env.Cluster)
	out := make([][]int, len(order))
	if m.any(order) {
		m.room = f.room
		m.moveFrame(order, idx, out, f, &f.ms, func(i int) []int { return pick(env, f, order[i]) }, keepPick)
		return out
	}
	for _, i := range idx {
		g := pick(env, f, order[i])
		if g == nil {
			break
		}
		f.take(g)
		out[i] = g
	}
	return out
}

// picker holds scratch space for score-ordered picks.
type picker struct {
	keys []pmKey
}

type pmKey struct {
	sf  float64
	loc int
	gpu int
}

// pmFirst returns the n free GPUs with the lowest score for the job's
// class among those scoring <= maxV, or nil if fewer than n qualify.
func (p *picker) pmFirst(env *policy.Env, f *freeSet, j *workload.Job, maxV float64, tb PMFirstTieBreak) []int {
	n := j.GPUs
	if f.total < n {
		return nil
	}
	sf := env.Scores.SF[j.Class]
	p.keys = p.keys[:0]
	for _, nd := range env.Cluster.Nodes {
		start := len(p.keys)
		for _, g := range nd.GPUs {
			if f.free[g] && sf[g] <= maxV {
				p.keys = append(p.keys, pmKey{sf: sf[g], gpu: g})
			}
		}
		if tb == PMFirstArtifact {
			// loc = |free GPUs on this node with the same score - n|.
			run := p.keys[start:]
			for a := range run {
				c := 0
				for b := range run {
					if run[b].sf == run[a].sf {
						c++
					}
				}
				run[a].loc = abs(c - n)
			}
		}
	}
	if len(p.keys) < n {
		return nil
	}
	slices.SortFunc(p.keys, func(a, b pmKey) int {
		if a.sf != b.sf {
			if a.sf < b.sf {
				return -1
			}
			return 1
		}
		if a.loc != b.loc {
			return a.loc - b.loc
		}
		return a.gpu - b.gpu
	})
	out := make([]int, n)
	for i := range out {
		out[i] = p.keys[i].gpu
	}
	return sorted(out)
}

// refWithin finds the node holding n free GPUs scoring <= v whose n best
// GPUs have the smallest worst score; ties go to the node with more such
// GPUs, then the lower node id. On that node it takes the first n GPUs
// (by id) scoring no worse than that worst score.
func refWithin(env *policy.Env, f *freeSet, j *workload.Job, v float64) []int {
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
		score := variability.NthSmallest(vals, n)
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

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// refConsolidated is the packed placement's rule as a scan of every node
// (see consolidated, which answers the same from buckets).
func refConsolidated(_ *policy.Env, f *freeSet, j *workload.Job) []int {
	n := j.GPUs
	if f.total < n {
		return nil
	}
	best := -1
	for node, k := range f.nodeFree {
		if k == n {
			return f.firstFree(make([]int, 0, n), node, n)
		}
		if k > n && (best < 0 || k < f.nodeFree[best]) {
			best = node
		}
	}
	if best >= 0 {
		return f.firstFree(make([]int, 0, n), best, n)
	}
	// Spread: visit nodes by free count descending, ties by id.
	out := make([]int, 0, n)
	used := make([]bool, len(f.nodeFree))
	for len(out) < n {
		top := -1
		for node, k := range f.nodeFree {
			if !used[node] && k > 0 && (top < 0 || k > f.nodeFree[top]) {
				top = node
			}
		}
		used[top] = true
		out = f.firstFree(out, top, n-len(out))
	}
	return sorted(out)
}
