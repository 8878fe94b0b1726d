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
	return nonStickyFrame(env, order, &p.f, consolidated, hysteresis(p.ma, env, false))
}

// consolidated packs a job onto as few nodes as it can: the first node
// with exactly n free GPUs; else the node with the fewest free GPUs that
// still holds n (lowest id on ties); else, if the cluster has n free,
// drain nodes from the most free (lowest id on ties), lowest GPU ids first.
func consolidated(_ *policy.Env, f *freeSet, j *workload.Job) []int {
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
