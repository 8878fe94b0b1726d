package place

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Random places each job on n GPUs drawn uniformly from all free GPUs,
// blind to locality and variability (the artifact's Default-Random). It
// draws from the round's seeded stream, so runs are reproducible, but the
// draws cannot match Python's generator one for one.
type Random struct {
	sticky bool
	// ma: the migration-aware non-sticky variant (see hysteresis).
	ma bool
	f  freeSet
	// pool holds the free GPUs not yet handed out this round; it is
	// rebuilt only when GPUs are freed (f.gen), so a round costs
	// O(GPUs + GPUs placed) rather than O(jobs x GPUs).
	pool []int
	used int // pool[:used] are already handed out
	gen  int
}

// Name implements policy.Placer.
func (r *Random) Name() string {
	if r.sticky {
		return "random-sticky"
	}
	return maName("random-nonsticky", r.ma)
}

func (r *Random) setMigrationAware() { r.ma = true }

// Sticky implements policy.Placer.
func (r *Random) Sticky() bool { return r.sticky }

// Place implements policy.Placer.
func (r *Random) Place(env *policy.Env, order []*workload.Job) [][]int {
	if r.sticky {
		return stickyFrame(env, order, &r.f, r.pick)
	}
	return placeAll(r, env, order)
}

// PlaceTo implements policy.Streamer.
func (r *Random) PlaceTo(env *policy.Env, order []*workload.Job, alloc [][]int, ready func(int)) {
	if r.sticky {
		wholeTo(r, env, order, alloc, ready)
		return
	}
	nonStickyFrame(env, order, alloc, ready, &r.f, r.pick, hysteresis(r.ma, env, false))
}

func (r *Random) pick(env *policy.Env, f *freeSet, j *workload.Job) []int {
	n := j.GPUs
	if f.total < n {
		return nil
	}
	if r.gen != f.gen {
		r.pool, r.used, r.gen = f.list(r.pool[:0]), 0, f.gen
	}
	// Partial Fisher-Yates over the unused part: its first n entries become
	// a uniform sample; the frame takes every GPU a pick returns, so they
	// leave the pool.
	p := r.pool[r.used:]
	for i := 0; i < n; i++ {
		k := i + env.Rand.IntN(len(p)-i)
		p[i], p[k] = p[k], p[i]
	}
	r.used += n
	return sorted(append([]int(nil), p[:n]...))
}

// MoveGain implements policy.MoveJudge (see Pays).
func (r *Random) MoveGain(env *policy.Env, j *workload.Job, from, to []int) float64 {
	return MoveGain(env, j, from, to, false)
}
