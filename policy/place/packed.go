package place

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Packed is the consolidated placement the PAL artifact calls
// Default-Packed: sticky is the Tiresias label, non-sticky the Gandiva one.
type Packed struct {
	sticky bool
	// ma: the migration-aware non-sticky variant (see hysteresis).
	ma bool
	f  freeSet
	// kept and ops: the free set kept between calls (Tracker) and the
	// undo log of the call under way.
	kept freeSet
	ops  []frameOp
}

// Name implements policy.Placer.
func (p *Packed) Name() string {
	if p.sticky {
		return "packed-sticky"
	}
	return maName("packed-nonsticky", p.ma)
}

func (p *Packed) setMigrationAware() { p.ma = true }

// Sticky implements policy.Placer.
func (p *Packed) Sticky() bool { return p.sticky }

// Pure implements policy.Pure: packing draws nothing at random.
func (p *Packed) Pure() bool { return true }

// Place implements policy.Placer.
func (p *Packed) Place(env *policy.Env, order []*workload.Job) [][]int {
	if p.sticky {
		return stickyFrame(env, order, &p.f, consolidated)
	}
	return placeAll(p, env, order)
}

// PlaceTo implements policy.Streamer.
func (p *Packed) PlaceTo(env *policy.Env, order []*workload.Job, alloc [][]int, ready func(int)) {
	if p.sticky {
		wholeTo(p, env, order, alloc, ready)
		return
	}
	nonStickyFrame(env, order, alloc, ready, &p.f, consolidated, hysteresis(p.ma, env, false))
}

// consolidated packs a job onto as few nodes as it can: the first node
// with exactly n free GPUs; else the node with the fewest free GPUs that
// still holds n (lowest id on ties); else, if the cluster has n free,
// drain nodes from the most free (lowest id on ties), lowest GPU ids first.
// Nodes are found through the free set's buckets by free count; the scan
// it replaces is refConsolidated, and the property tests compare the two.
func consolidated(_ *policy.Env, f *freeSet, j *workload.Job) []int {
	n := j.GPUs
	if f.total < n {
		return nil
	}
	for k := n; k <= f.maxPer; k++ {
		if node := f.byFree.next(k, 0); node >= 0 {
			return f.firstFree(make([]int, 0, n), node, n)
		}
	}
	// Spread: visit nodes by free count descending, ties by id.
	out := make([]int, 0, n)
	for k := f.maxPer; k >= 1 && len(out) < n; k-- {
		for node := f.byFree.next(k, 0); node >= 0 && len(out) < n; node = f.byFree.next(k, node+1) {
			out = f.firstFree(out, node, n-len(out))
		}
	}
	return sorted(out)
}

// MoveGain implements policy.MoveJudge (see Pays).
func (p *Packed) MoveGain(env *policy.Env, j *workload.Job, from, to []int) float64 {
	return MoveGain(env, j, from, to, false)
}
