package kube

import (
	"fmt"
	"github.com/palsched/pal/policy/backfill"
	corev1 "k8s.io/api/core/v1"

	"math"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// estimate is a gang's run time from now until it ends on gpus (of the
// placer's view of the cluster), for backfill's reservation: its
// remaining pal.io/iterations at its model's time per iteration, times
// the slowdown those GPUs give it (a running gang's own, as credited
// each round; for another set, its slowest GPU's binned score and the
// locality penalty when it spans nodes). A gang whose pods do not say
// pal.io/iterations, or whose model is unknown, has no estimate (+Inf):
// it never counts as ending before a reservation, so it may start
// behind a waiting gang only on GPUs the reservation leaves alone.
func (s *Scheduler) estimate(env *policy.Env, j *workload.Job, gpus []int) float64 {
	if !(j.IterTime > 0) || !s.workKnown(j) {
		return math.Inf(1)
	}
	return workEstimate(env, j, gpus, s.cfg.LocalityPenalty)
}

// workEstimate is a gang's run time on gpus from its remaining work (see
// estimate); penalty is the slowdown of a gang spread over nodes.
func workEstimate(env *policy.Env, j *workload.Job, gpus []int, penalty float64) float64 {
	// A gang that has run past the iterations its pods state is credited
	// beyond its work; it is due now, not in the past.
	rem := math.Max(j.Remaining(), 0)
	if j.Running() && round.Same(j.GPUsHeld, gpus) && j.PM > 0 {
		return rem * j.IterTime * j.PM * j.Loc
	}
	slow := 1.0
	if sc := env.Scores; sc != nil && sc.SF[j.Class] != nil {
		slow = 0
		for _, g := range gpus {
			slow = math.Max(slow, sc.SF[j.Class][g])
		}
	}
	if env.Cluster.SpansNodes(gpus) {
		slow *= penalty
	}
	return rem * j.IterTime * slow
}

// workKnown says whether j's pods state their work (pal.io/iterations).
func (s *Scheduler) workKnown(j *workload.Job) bool {
	g := s.byJob[j]
	if g == nil {
		return false
	}
	for _, ps := range [][]*corev1.Pod{g.Bound, g.Pending} {
		for _, p := range ps {
			_, ok := p.Annotations[AnnIterations]
			return ok
		}
	}
	return false
}

// reserved is what a waiting message adds for the gang backfill holds
// GPUs for: when they should be free.
func (s *Scheduler) reserved(j *workload.Job) string {
	b := backfill.Unwrap(s.pol.place)
	if b == nil || b.Last.JobID != j.ID {
		return ""
	}
	if math.IsInf(b.Last.In, 1) {
		return "; backfill keeps its place at the head, no running gang's end is known"
	}
	return fmt.Sprintf("; backfill reserves %d GPUs for it, free in about %.0f s by the running gangs' pal.io/iterations", len(b.Last.GPUs), b.Last.In)
}
