package place

import (
	"math"
	"slices"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// PMFirstTieBreak selects how PM-First orders GPUs of equal score.
type PMFirstTieBreak int

const (
	// PMFirstArtifact breaks ties inside a score bin by how well the
	// node's count of free same-bin GPUs matches the demand
	// (|count - n|, smaller first), then GPU id: the artifact's approximation
	// of packing.
	PMFirstArtifact PMFirstTieBreak = iota
	// PMFirstPaper is Algorithm 1 of the paper: sort free GPUs by score and
	// take the first n (ties by GPU id).
	PMFirstPaper
)

// PMFirst is the paper's variability-first placement: every round it
// releases all jobs, takes the prefix of the order whose total demand fits
// the cluster, stable-sorts that prefix by class (A first: the most
// variability-sensitive jobs choose first) and gives each job the
// best-scored free GPUs.
type PMFirst struct {
	TieBreak PMFirstTieBreak
	f        freeSet
	s        picker
}

// NewPMFirst makes a PM-First placer.
func NewPMFirst(tb PMFirstTieBreak) *PMFirst { return &PMFirst{TieBreak: tb} }

// Name implements policy.Placer.
func (p *PMFirst) Name() string { return "pm-first" }

// Sticky implements policy.Placer.
func (p *PMFirst) Sticky() bool { return false }

// Place implements policy.Placer.
func (p *PMFirst) Place(env *policy.Env, order []*workload.Job) [][]int {
	return classFirstFrame(env, order, &p.f, func(env *policy.Env, f *freeSet, j *workload.Job) []int {
		return p.s.pmFirst(env, f, j, math.Inf(1), p.TieBreak)
	})
}

// classFirstFrame is the round frame PM-First and PAL share: release
// everything, find the must-schedule prefix (jobs in order while their
// cumulative demand fits the cluster; the job that crosses the size is
// left out), stable-sort it by class, append the rest in order, and place
// greedily until the first failure.
func classFirstFrame(env *policy.Env, order []*workload.Job, f *freeSet, pick pickFunc) [][]int {
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
	cand []int
	cnt  []int
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

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
