package place

import (
	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Tracker is a sticky placer that can keep its free set from one call to
// the next: the caller tells it which GPUs its running jobs take and give
// back as that happens, and PlaceHeld then skips recounting them. A VC
// under HiveD asks its placer for one new gang among all of the VC's
// running ones; rebuilding the free set from every running gang made
// that decision cost in proportion to the VC rather than to the gang.
type Tracker interface {
	policy.Placer
	// Track starts keeping a free set of c, all free, and reports
	// whether the placer does (false: use Place). A placer keeps one
	// set: once it tracks, Track answers false, so that a placer shared
	// by several callers is kept by the first only.
	Track(c *cluster.Cluster) bool
	// Hold and Free tell the kept set that gpus are now taken or free.
	Hold(gpus []int)
	Free(gpus []int)
	// PlaceHeld is Place on env.Cluster (the tracked one) when the
	// running jobs of order hold exactly the GPUs the kept set counts as
	// taken. The kept set is as it was when it returns.
	PlaceHeld(env *policy.Env, order []*workload.Job) [][]int
}

// frameOp is one change a frame made to a kept free set, to undo.
type frameOp struct {
	gpus []int
	take bool
}

// Track implements Tracker for the sticky variant.
func (p *Packed) Track(c *cluster.Cluster) bool {
	if !p.sticky || p.kept.c != nil {
		return false
	}
	p.kept.reset(c)
	return true
}

// Hold implements Tracker.
func (p *Packed) Hold(gpus []int) { p.kept.take(gpus) }

// Free implements Tracker.
func (p *Packed) Free(gpus []int) { p.kept.give(gpus) }

// PlaceHeld implements Tracker.
func (p *Packed) PlaceHeld(env *policy.Env, order []*workload.Job) [][]int {
	out := make([][]int, len(order))
	for i, j := range order {
		if j.Running() {
			out[i] = j.GPUsHeld
		}
	}
	p.ops = p.ops[:0]
	stickyRest(env, order, out, &p.kept, consolidated, &p.ops)
	for k := len(p.ops) - 1; k >= 0; k-- {
		if op := p.ops[k]; op.take {
			p.kept.give(op.gpus)
		} else {
			p.kept.take(op.gpus)
		}
		p.ops[k] = frameOp{}
	}
	return out
}

// Track implements Tracker when the guarded placer does.
func (p PodGuard) Track(c *cluster.Cluster) bool {
	t, ok := p.Placer.(Tracker)
	return ok && t.Track(c)
}

// Hold implements Tracker.
func (p PodGuard) Hold(gpus []int) { p.Placer.(Tracker).Hold(gpus) }

// Free implements Tracker.
func (p PodGuard) Free(gpus []int) { p.Placer.(Tracker).Free(gpus) }

// PlaceHeld implements Tracker.
func (p PodGuard) PlaceHeld(env *policy.Env, order []*workload.Job) [][]int {
	return guard(env, order, p.Placer.(Tracker).PlaceHeld(env, order), false)
}

// PlaceHeldFitting is PlaceHeld for a caller that knows every running
// job's GPUs fit its pods (each node holds a multiple of its PodGPUs, as
// the guard left them when it started): a running job that keeps them
// is not checked again, only the jobs the placer starts or moves. The
// answer is PlaceHeld's whenever the caller is right.
func (p PodGuard) PlaceHeldFitting(env *policy.Env, order []*workload.Job) [][]int {
	return guard(env, order, p.Placer.(Tracker).PlaceHeld(env, order), true)
}
