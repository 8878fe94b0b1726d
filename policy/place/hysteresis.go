package place

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Migration-aware placement. The non-sticky placers re-plan every job
// every round, so a running job moves whenever its fresh pick differs
// from what it holds, however small the gain; on a real cluster each move
// is a checkpoint and a restart (workload.MoveCost). Their migration-aware
// variants (the "-ma" names) keep a running job where it is unless the
// move's expected gain over its remaining work exceeds its migration cost,
// which is hysteresis: a job moves for a clearly better placement, not
// for a tie or a marginal one, and never because a job of another class
// was placed first. moves.go states the rule and its frame.
//
// The variants stay policy.Pure although their answer also reads each
// running job's remaining work: the work only shrinks between rounds, and
// with it the gain, so a job kept because its move did not pay is kept
// again while nothing else changes, and a round in which nothing moved
// repeats (the simulator's dead-round skipping relies on that; its
// property test checks it).

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
