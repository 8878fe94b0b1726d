package place

import (
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
//
// Picks run on a scoreIndex built on the first round and reused while the
// cluster and score table stay the same; inputs it cannot index fall back
// to the reference implementation, which gives the same answers slower.
type PMFirst struct {
	TieBreak PMFirstTieBreak
	// MigrationAware keeps a running job where it is unless moving pays
	// (see hysteresis): the "pm-first-ma" placement.
	MigrationAware bool
	ix             scoreIndex
	ref            refPMFirst
}

// NewPMFirst makes a PM-First placer.
func NewPMFirst(tb PMFirstTieBreak) *PMFirst { return &PMFirst{TieBreak: tb} }

// Name implements policy.Placer.
func (p *PMFirst) Name() string { return maName("pm-first", p.MigrationAware) }

func (p *PMFirst) setMigrationAware() { p.MigrationAware = true }

// Sticky implements policy.Placer.
func (p *PMFirst) Sticky() bool { return false }

// Pure implements policy.Pure: the index only caches, it never changes
// an answer.
func (p *PMFirst) Pure() bool { return true }

// Place implements policy.Placer.
func (p *PMFirst) Place(env *policy.Env, order []*workload.Job) [][]int {
	return placeAll(p, env, order)
}

// PlaceTo implements policy.Streamer.
func (p *PMFirst) PlaceTo(env *policy.Env, order []*workload.Job, alloc [][]int, ready func(int)) {
	x := p.ix.prepare(env, false)
	m := hysteresis(p.MigrationAware, env, true)
	if x == nil || !x.gatherPinned(order, m, alloc) {
		p.ref.TieBreak, p.ref.MigrationAware = p.TieBreak, p.MigrationAware
		wholeTo(&p.ref, env, order, alloc, ready)
		return
	}
	x.tag(int(p.TieBreak)) // the frame's memo keeps answers under one tie-break
	if m != nil && p.TieBreak == PMFirstArtifact {
		m.spans = x.pmFirstSpansOf
	}
	x.frame(order, alloc, ready, func(n, c int) []int {
		return x.pmFirst(c, n, len(x.cls[c].vals)-1, p.TieBreak)
	}, m)
}

// MoveGain implements policy.MoveJudge (see Pays).
func (p *PMFirst) MoveGain(env *policy.Env, j *workload.Job, from, to []int) float64 {
	return MoveGain(env, j, from, to, true)
}
