package place

import (
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
//
// Like PMFirst it picks on a scoreIndex (plus per-node within keys) and
// falls back to the reference implementation for inputs it cannot index.
type PAL struct {
	// TieBreak is passed to PM-First picks (across entries and other sizes).
	TieBreak PMFirstTieBreak
	// MigrationAware keeps a running job where it is unless moving pays
	// (see hysteresis): the "pal-ma" placement.
	MigrationAware bool
	ix             scoreIndex
	ref            refPAL
}

// NewPAL makes a PAL placer with the artifact's PM-First tie-break.
func NewPAL() *PAL { return &PAL{TieBreak: PMFirstArtifact} }

// Name implements policy.Placer.
func (p *PAL) Name() string { return maName("pal", p.MigrationAware) }

func (p *PAL) setMigrationAware() { p.MigrationAware = true }

// Sticky implements policy.Placer.
func (p *PAL) Sticky() bool { return false }

// Pure implements policy.Pure: the index only caches, it never changes
// an answer.
func (p *PAL) Pure() bool { return true }

// Place implements policy.Placer.
func (p *PAL) Place(env *policy.Env, order []*workload.Job) [][]int {
	return placeAll(p, env, order)
}

// PlaceTo implements policy.Streamer.
func (p *PAL) PlaceTo(env *policy.Env, order []*workload.Job, alloc [][]int, ready func(int)) {
	x := p.ix.prepare(env, true)
	m := hysteresis(p.MigrationAware, env, true)
	if x == nil || !x.gatherPinned(order, m, alloc) {
		p.ref.TieBreak, p.ref.MigrationAware = p.TieBreak, p.MigrationAware
		wholeTo(&p.ref, env, order, alloc, ready)
		return
	}
	x.tag(int(p.TieBreak)) // the frame's memo keeps answers under one tie-break
	lv := &env.Scores.LV
	x.frame(order, alloc, ready, func(n, c int) []int {
		return p.pick(x, lv[c], n, c)
	}, m)
}

// pick is refPAL.pick on the index.
func (p *PAL) pick(x *scoreIndex, lv []policy.LVStep, n, c int) []int {
	ci := &x.cls[c]
	if x.total < n {
		return nil
	}
	if n == 1 || n > x.maxPer {
		return x.pmFirst(c, n, len(ci.vals)-1, p.TieBreak)
	}
	// Whether an entry succeeds is a threshold on its bin: an across entry
	// needs n free GPUs in bins <= v, a within entry a node whose n-th
	// best free GPU is in a bin <= v. Both thresholds are found once and
	// the first entry reaching its own is read off the class's tables, so
	// a long L×V order (class A has two entries per outlier bin) is never
	// walked. The within threshold is at least the lowest bin with a free
	// GPU; when no within entry ahead of the winning across entry reaches
	// that, the within structures are not asked at all.
	iA := ci.acrossFrom[ci.across(n, x.total)]
	if ci.withinBefore[iA] >= ci.first(x.total) {
		bW, top, ok := x.withinTop(c, n)
		if !ok {
			bW, top = x.wmin(c, n)
		}
		if iW := ci.withinFrom[bW]; iW < iA {
			if bv := ci.lvBin[iW]; bv != bW {
				return x.within(c, n, bv)
			}
			return x.fromNode(c, top, n, bW)
		}
	}
	if iA < len(lv) {
		return x.pmFirst(c, n, ci.lvBin[iA], p.TieBreak)
	}
	return nil
}

// MoveGain implements policy.MoveJudge (see Pays).
func (p *PAL) MoveGain(env *policy.Env, j *workload.Job, from, to []int) float64 {
	return MoveGain(env, j, from, to, true)
}
