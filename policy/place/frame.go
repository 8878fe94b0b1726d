// Package place holds the placement policies: given jobs in scheduler
// order, which GPUs each one holds this round.
//
// Every policy follows the PAL artifact's round frame: walk the order,
// place each job whole (gang: all of its GPUs or none) and stop at the
// first job that does not fit; no later job is backfilled that round.
// Sticky policies keep running jobs where they are and, when a job does
// not fit, suspend running jobs from the tail of the order until it does.
// Non-sticky policies release every job and re-plan from scratch, so a
// job may move each round (migration is free in the simulator).
package place

import (
	"fmt"
	"slices"
	"strings"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// pickFunc chooses n GPUs for job from the free set, or returns nil.
type pickFunc func(env *policy.Env, f *freeSet, j *workload.Job) []int

// stickyFrame is Tiresias-style placement: running jobs keep their GPUs.
// A waiting job that does not fit suspends running jobs from the tail of
// the order (lowest priority first), retrying after each; a victim stays
// suspended even if the job still does not fit. If the job still does not
// fit the round ends. A job no preemption may touch (see preemptible)
// is never a victim.
//
// A victim is a waiting job for the rest of the round, as in the PAL
// artifact (packing_sticky.py clears the victim's is_running flag in its
// copy of the jobs, so the scan reaches it like any waiting job): when the
// scan gets to it, it is placed again if it fits, and otherwise the round
// ends there, so no job behind a victim is backfilled. Skipping victims
// instead lets later jobs jump the queue; on workload 3 under SRTF that
// moved seven completions and the average JCT from the artifact's
// 36,376.16 s to 36,405.41 s (experiment.TestArtifactCalibrationSRTFPackedSticky).
func stickyFrame(env *policy.Env, order []*workload.Job, f *freeSet, pick pickFunc) [][]int {
	f.reset(env.Cluster)
	out := make([][]int, len(order))
	for i, j := range order {
		if j.Running() {
			out[i] = j.GPUsHeld
			f.take(j.GPUsHeld)
		}
	}
	stickyRest(env, order, out, f, pick, nil)
	return out
}

// stickyRest is stickyFrame once the running jobs hold their GPUs in out
// and f. When log is not nil it appends every change it makes to f to
// *log, in order.
func stickyRest(env *policy.Env, order []*workload.Job, out [][]int, f *freeSet, pick pickFunc, log *[]frameOp) {
	for i, j := range order {
		if out[i] != nil {
			continue
		}
		g := pick(env, f, j)
		for k := len(order) - 1; g == nil && k > i; k-- {
			if out[k] == nil || !preemptible(order[k]) {
				continue
			}
			f.give(out[k])
			if log != nil {
				*log = append(*log, frameOp{gpus: out[k]})
			}
			out[k] = nil
			g = pick(env, f, j)
		}
		if g == nil {
			break
		}
		f.take(g)
		if log != nil {
			*log = append(*log, frameOp{gpus: g, take: true})
		}
		out[i] = g
	}
}

// nonStickyFrame releases every job and places the order from scratch,
// stopping at the first job that does not fit, into out (len(order), all
// nil). m, if not nil, is a migration-aware rule: when it pins a running
// job the frame is its moveFrame, in the same order. ready, if not nil,
// is told as the answer becomes final (see policy.Streamer): every
// StreamChunk jobs. A pick reads only its own job, and the cluster only
// at the reset.
func nonStickyFrame(env *policy.Env, order []*workload.Job, out [][]int, ready func(int), f *freeSet, pick pickFunc, m *mover) {
	f.reset(env.Cluster)
	if m.any(order) {
		f.idx = identity(f.idx, len(order))
		m.room, m.ready = f.room, ready
		m.moveFrame(order, f.idx, out, f, &f.ms, func(i int) []int { return pick(env, f, order[i]) }, keepPick)
		if ready != nil {
			ready(len(order))
		}
		return
	}
	stream := ready != nil
	for i, j := range order {
		if stream && i%policy.StreamChunk == 0 && i > 0 {
			ready(i)
		}
		g := pick(env, f, j)
		if g == nil {
			break
		}
		f.take(g)
		out[i] = g
	}
	if ready != nil {
		ready(len(order))
	}
}

// keepPick is moveFrame's own for picks that are already fresh lists.
func keepPick(_ int, g []int) []int { return g }

// identity returns s resized to 0, 1, ..., n-1.
func identity(s []int, n int) []int {
	s = slices.Grow(s[:0], n)[:n]
	for i := range s {
		s[i] = i
	}
	return s
}

// sorted returns g in ascending order (placers build lists in pick order).
func sorted(g []int) []int {
	slices.Sort(g)
	return g
}

// New returns a placer by name. A non-sticky placement's name with
// MigrationAwareSuffix ("pal-ma") is its migration-aware variant.
func New(name string) (policy.Placer, error) {
	lower := strings.ToLower(name)
	if base, ok := strings.CutSuffix(lower, MigrationAwareSuffix); ok {
		p, err := New(base)
		if err != nil {
			return nil, unknownPlacement(name)
		}
		m, ok := p.(interface{ setMigrationAware() })
		if !ok || p.Sticky() {
			return nil, fmt.Errorf("placement %q: %s never migrates a running job, so it has no migration-aware variant; those are %s",
				name, p.Name(), strings.Join(MigrationAwareNames(), ", "))
		}
		m.setMigrationAware()
		return p, nil
	}
	switch lower {
	case "packed-sticky", "tiresias":
		return &Packed{sticky: true}, nil
	case "packed-nonsticky", "gandiva":
		return &Packed{}, nil
	case "random-sticky":
		return &Random{sticky: true}, nil
	case "random-nonsticky":
		return &Random{}, nil
	case "pm-first", "pmfirst":
		return NewPMFirst(PMFirstArtifact), nil
	case "pal":
		return NewPAL(), nil
	case "spread":
		return &Spread{}, nil
	}
	return nil, unknownPlacement(name)
}

func unknownPlacement(name string) error {
	return fmt.Errorf("unknown placement %q (known: %s, spread)", name, strings.Join(append(Names(), MigrationAwareNames()...), ", "))
}

// Names lists the placements New knows, in the artifact's config order.
func Names() []string {
	return []string{"pal", "packed-sticky", "packed-nonsticky", "random-sticky", "random-nonsticky", "pm-first"}
}

// Canonical checks a list of placement names and returns their canonical
// names (tiresias -> packed-sticky, ...). A placement named twice, under
// any of its names, is an error: it would run twice and print two rows
// that only look like a comparison.
func Canonical(names []string) ([]string, error) {
	var out []string
	given := map[string]string{}
	for _, n := range names {
		p, err := New(n)
		if err != nil {
			return nil, err
		}
		c := p.Name()
		if prev, dup := given[c]; dup {
			if prev == n {
				return nil, fmt.Errorf("placement %q is listed twice", n)
			}
			return nil, fmt.Errorf("placements %q and %q are the same (%s)", prev, n, c)
		}
		given[c] = n
		out = append(out, c)
	}
	return out, nil
}

// MigrationAwareNames lists the migration-aware variants New knows: one
// per non-sticky placement.
func MigrationAwareNames() []string {
	return []string{"pal-ma", "pm-first-ma", "packed-nonsticky-ma", "random-nonsticky-ma"}
}

// placeAll is Place for a streaming placer: the whole answer at once.
func placeAll(p policy.Streamer, env *policy.Env, order []*workload.Job) [][]int {
	alloc := make([][]int, len(order))
	p.PlaceTo(env, order, alloc, nil)
	return alloc
}

// wholeTo answers a PlaceTo call with a placer that only answers whole
// (a reference placer, a sticky frame): ready is told once, at the end.
func wholeTo(ref interface {
	Place(*policy.Env, []*workload.Job) [][]int
}, env *policy.Env, order []*workload.Job, alloc [][]int, ready func(int)) {
	copy(alloc, ref.Place(env, order))
	if ready != nil {
		ready(len(order))
	}
}
