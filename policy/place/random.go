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
	f      freeSet
	buf    []int
}

// Name implements policy.Placer.
func (r *Random) Name() string {
	if r.sticky {
		return "random-sticky"
	}
	return "random-nonsticky"
}

// Sticky implements policy.Placer.
func (r *Random) Sticky() bool { return r.sticky }

// Place implements policy.Placer.
func (r *Random) Place(env *policy.Env, order []*workload.Job) [][]int {
	if r.sticky {
		return stickyFrame(env, order, &r.f, r.pick)
	}
	return nonStickyFrame(env, order, &r.f, r.pick)
}

func (r *Random) pick(env *policy.Env, f *freeSet, j *workload.Job) []int {
	n := j.GPUs
	if f.total < n {
		return nil
	}
	r.buf = f.list(r.buf[:0])
	// Partial Fisher-Yates: the first n entries become a uniform sample.
	for i := 0; i < n; i++ {
		k := i + env.Rand.IntN(len(r.buf)-i)
		r.buf[i], r.buf[k] = r.buf[k], r.buf[i]
	}
	return sorted(append([]int(nil), r.buf[:n]...))
}
