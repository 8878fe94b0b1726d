package kube

import (
	"fmt"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/palsched/pal/workload"
)

// No pod stops the scheduler. Pods are read with bounds on every value
// (package podspec), and what still goes wrong while one gang is planned
// or bound is kept to that gang: the panic is recovered, logged with its
// stack, counted in pal_round_errors_total by stage, and the gang is set
// aside as unschedulable, with a FailedScheduling event saying so, until
// one of its pods changes; the round goes on for the others.

var everything = labels.Everything()

// fault logs and counts a recovered panic of stage (for gang, when one is
// to blame).
func (s *Scheduler) fault(stage, gang string, v any, stack []byte) {
	s.roundError(stage, gang)
	s.log.Error("recovered from a fault; the scheduler goes on", "stage", stage, "gang", gang, "fault", fmt.Sprint(v), "stack", string(stack))
}

// roundError counts one error of stage.
func (s *Scheduler) roundError(stage, _ string) {
	s.metrics.RoundErrors.WithLabelValues(stage).Inc()
}

// guard runs f for gang g, isolating a panic to g.
func (s *Scheduler) guard(stage string, g *gang, f func()) {
	defer func() {
		if v := recover(); v != nil {
			s.fault(stage, g.Key, v, debug.Stack())
			s.markFaulty(g, v)
		}
	}()
	f()
}

// markFaulty sets a gang aside until one of its pods changes.
func (s *Scheduler) markFaulty(g *gang, v any) {
	s.faulty[g.Key] = g.Gen
	s.actions++
	pods := g.Pending
	if len(pods) == 0 {
		pods = g.Bound
	}
	s.wait(g.Key, pods, fmt.Sprintf("unschedulable: pal-kube scheduler failed while planning this gang (%v); it is set aside until one of its pods changes", v))
}

// JobBackoff is the batch/v1 Job controller's delay before it creates the
// pods of a Job again after pods of it failed: 10 s, doubled for each
// failed pod, at most 6 minutes (the controller's defaults since
// Kubernetes 1.26; an evicted pod counts as failed even when a
// podFailurePolicy keeps it from the Job's backoffLimit). Evicting a
// gang of n pods of one Job holds its restart back that long: 10 s for
// one pod, 80 s for 4, the full 6 minutes from 7 pods on.
func JobBackoff(pods int) time.Duration {
	const base, limit = 10 * time.Second, 6 * time.Minute
	if pods <= 0 {
		return 0
	}
	if pods > 6 {
		return limit
	}
	return min(base<<(pods-1), limit)
}

// moveCost is what moving gang g costs, in the jobs' seconds: the
// config's migrationCost (checkpoint, eviction, restart, warm-up) plus,
// for the pods of a batch/v1 Job, the Job controller's backoff before it
// recreates them (JobBackoff of the most pods one Job loses). A
// migration-aware placement weighs a move's gain against it, and a move
// made charges it as the gang's debt.
func (s *Scheduler) moveCost(g *gang) workload.MoveCost {
	c := s.cost
	if g.JobPods > 0 {
		c.Migration += JobBackoff(g.JobPods).Seconds() * s.cfg.TimeScale // wall time, in the jobs' seconds
	}
	return c
}

// podKey is how messages name a pod.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
