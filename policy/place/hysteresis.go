package place

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Migration-aware placement. The non-sticky placers re-plan every job
// every round, so a running job moves whenever its fresh pick differs
// from what it holds, however small the gain; on a real cluster each move
// is a checkpoint and a restart (workload.MoveCost). Their migration-aware
// variants (the "-ma" names) run the same frame in the same order, and
// differ in one decision: when a running job's turn comes and every GPU
// it holds is still free, it keeps them unless the move's expected gain
// over its remaining work exceeds its migration cost,
//
//	Remaining x IterTime x (slowdown(held) - slowdown(pick)) > MoveCost.Migration,
//
// which is hysteresis: a job moves for a clearly better placement, not
// for a tie or a marginal one. Jobs ahead of it in the frame's order
// choose first, exactly as in the base placer, so the priority order is
// kept: a job staying put never takes a GPU an earlier job wanted (that
// GPU would not be free), and a job whose GPUs an earlier job took moves
// (or waits) as before. With a migration cost of 0 the variant returns
// exactly the base placer's answer: it never keeps a job the base would
// move.
//
// The variants stay policy.Pure although their answer also reads each
// running job's remaining work: the work only shrinks between rounds, and
// with it the gain, so a job kept because its move did not pay is kept
// again while nothing else changes, and a round in which nothing moved
// repeats (the simulator's dead-round skipping relies on that; its
// property test checks it).
//
// The slowdown is the placer's own estimate: for the variability-aware
// placers (PAL, PM-First) the worst PM-score of the GPUs times the
// locality penalty when they span nodes; for the variability-blind
// baselines only the locality penalty, since they know nothing else.

// stayFunc reports whether running job j keeps the GPUs it holds (all
// free at its turn) rather than take pick (nil: nothing fits).
type stayFunc func(j *workload.Job, pick []int) bool

// hysteresis makes the stay rule for env; scores says whether the placer
// weighs PM-scores. It returns nil, the base placer, when off.
func hysteresis(on bool, env *policy.Env, scores bool) stayFunc {
	if !on {
		return nil
	}
	return func(j *workload.Job, pick []int) bool {
		c := j.MoveCost.Migration
		if !(c > 0) {
			return false // free moves: the base placer's answer
		}
		if pick == nil {
			return true // nothing else fits; its own GPUs do
		}
		gain := j.Remaining() * j.IterTime * (slowdown(env, j, j.GPUsHeld, scores) - slowdown(env, j, pick, scores))
		return !(gain > c)
	}
}

// stays applies stay at a job's turn in a frame: a running job whose GPUs
// are all still free (free[g]) may keep them instead of taking pick.
func stays(stay stayFunc, j *workload.Job, pick []int, free []bool) bool {
	if stay == nil || !j.Running() {
		return false
	}
	for _, g := range j.GPUsHeld {
		if !free[g] {
			return false
		}
	}
	return stay(j, pick)
}

// slowdown is the placer's estimate of j's time per iteration on gpus,
// relative to a median GPU inside one node.
func slowdown(env *policy.Env, j *workload.Job, gpus []int, scores bool) float64 {
	s := 1.0
	if scores && env.Scores != nil {
		// The slowest GPU sets the pace of a synchronous iteration.
		sf := env.Scores.SF[j.Class]
		s = sf[gpus[0]]
		for _, g := range gpus[1:] {
			s = max(s, sf[g])
		}
	}
	if env.Locality != nil && env.Cluster.SpansNodes(gpus) {
		s *= env.Locality(&j.Spec)
	}
	return s
}

// maName is a placer's name with the migration-aware suffix when on.
func maName(base string, on bool) string {
	if on {
		return base + MigrationAwareSuffix
	}
	return base
}

// MigrationAwareSuffix turns a non-sticky placement's name into its
// migration-aware variant's ("pal" -> "pal-ma").
const MigrationAwareSuffix = "-ma"
