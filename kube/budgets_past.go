package kube

import (
	"fmt"
	"slices"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/bind"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// Preemption past disruption budgets (config preemptPastBudgets, off by
// default). A gang whose PodDisruptionBudgets refuse its eviction is
// kept out of the round's order (budgets.go), and so, by default, is
// never preempted, whatever the priority of the gang that waits for its
// GPUs: whoever may create budgets could keep their gang running for
// good. kube-scheduler's preemption prefers victims whose eviction
// breaks no budget, but preempts past a budget when it must (it deletes
// its victims; budgets are best effort for preemption). With the option
// on, the round does as much for pod priority:
//
//   - a running gang kept only by its budgets (no bare pod, no Job its
//     eviction would fail, no eviction of it refused within its backoff)
//     enters the round's order while some waiting gang of strictly
//     higher pod priority exists whose preemptionPolicy is not Never;
//   - in the order it goes ahead of the other gangs of its priority, so
//     that the placements, which take their victims from the tail of the
//     order, preempt the gangs of its priority that no budget protects
//     first;
//   - it is never migrated (its migration cost is neverMoves, and the
//     round refuses a migration a placement still makes), and its
//     preemption is carried out only when every gang that takes its GPUs
//     is of strictly higher pod priority and may preempt (not Never);
//     any other preemption of it is refused as before;
//   - carried out, the preemption marks each pod with a DisruptionTarget
//     condition (reason PreemptionByScheduler, naming the gangs it makes
//     room for) and deletes it under a precondition on its UID, as
//     kube-scheduler deletes a preemption victim; the Eviction API would
//     refuse it (bind.Delete). The eviction's log line and Preempted
//     events say that the budget was overridden, and for whom.
//
// Not with scheduler themis or a tenancy (Validate): neither orders by
// pod priority. Forecasts still count such a gang as kept.

// preemptorTop is the highest pod priority of the round's waiting gangs
// that may preempt (whose preemptionPolicy is not Never), and whether
// there is one. A gang whose planning panicked and whose pods have not
// changed since is left out, as the round leaves it out.
func (s *Scheduler) preemptorTop(snap *snapshot) (top int32, ok bool) {
	for _, g := range snap.Gangs {
		if g.Job == nil || g.State != state.GangQueued {
			continue
		}
		if gen, bad := s.faulty[g.Key]; bad && g.Gen == gen {
			continue
		}
		p, never := gangPriority(g)
		if never {
			continue
		}
		if !ok || p > top {
			top, ok = p, true
		}
	}
	return top, ok
}

// budgetsOnly reports whether only its disruption budgets keep running
// gang g from being evicted: they refuse it, and it has no bare pod, no
// Job its eviction would fail, and no eviction refused within its
// backoff. Bare pods stay out whatever the config says: deleted past a
// budget, nothing would make them again.
func (s *Scheduler) budgetsOnly(g *gang) bool {
	return s.budgets.blocks(g.Bound) != "" && s.refusedEv.blocks(g.Bound, s.lastRound) == "" && s.loses(g) == ""
}

// admitPastBudgets puts running gang g (job j), whose budgets refuse its
// eviction, into this round's order when preemptPastBudgets is on, it is
// kept only by its budgets, and a waiting gang of strictly higher pod
// priority that may preempt exists (top, exists: preemptorTop). It reports
// whether it did.
func (s *Scheduler) admitPastBudgets(g *gang, j *workload.Job, top int32, exists bool) bool {
	if !s.cfg.PreemptPastBudgets || !exists {
		return false
	}
	if p, _ := gangPriority(g); p >= top || !s.budgetsOnly(g) {
		return false
	}
	if s.pastBudget == nil {
		s.pastBudget = map[*workload.Job]bool{}
	}
	s.pastBudget[j] = true
	return true
}

// pastBudgetTakers checks a preemption d of a gang admitted past its
// budgets: it may go on only when some gang of the round takes its
// GPUs and every one that does is of strictly higher pod priority and
// may preempt. It returns the takers as messages name them ("gang ns/a
// (pod priority 1000)"), or why not.
func (s *Scheduler) pastBudgetTakers(snap *snapshot, d round.Decision, byJob map[*workload.Job]*gang) (takers, whyNot string) {
	g := byJob[d.Job]
	own, _ := gangPriority(g)
	owners := map[int]bool{}
	for _, x := range d.From {
		if o := snap.Cluster.Owner(x); o != cluster.Free && o != d.Job.ID {
			owners[o] = true
		}
	}
	only := fmt.Sprintf("preemptPastBudgets preempts it only for gangs of pod priority above its own %d that may preempt, and ", own)
	if len(owners) == 0 {
		return "", only + "no gang would take its GPUs"
	}
	var ok, not []string
	for j, tg := range byJob {
		if !owners[j.ID] {
			continue
		}
		delete(owners, j.ID)
		p, never := gangPriority(tg)
		name := fmt.Sprintf("%s (pod priority %d)", gangName(tg.Key), p)
		switch {
		case p <= own:
			not = append(not, name)
		case never && !j.Running():
			not = append(not, name+", whose preemptionPolicy is Never")
		default:
			ok = append(ok, name)
		}
	}
	if len(owners) > 0 {
		return "", only + "its GPUs would go to pods of no gang of the round"
	}
	slices.Sort(ok)
	slices.Sort(not)
	if len(not) > 0 {
		return "", only + "its GPUs would go to " + strings.Join(not, ", ")
	}
	return strings.Join(ok, ", "), ""
}

// evictPastBudgets is evict for a gang preempted past its budgets
// (blocks says how they refuse it) for takers: its pods are deleted
// (bind.Delete), and why says that the budget was overridden and for
// whom.
func (s *Scheduler) evictPastBudgets(g *gang, why, blocks, takers string) []*bind.Task {
	own, _ := gangPriority(g)
	why = fmt.Sprintf("%s; its disruption budgets refuse its eviction (%s), overridden under preemptPastBudgets for %s, above its own pod priority %d: its pods are marked DisruptionTarget and deleted, as kube-scheduler preempts",
		why, blocks, takers, own)
	target := fmt.Sprintf("%s: preempting to accommodate %s of higher priority, past the pod's PodDisruptionBudget", s.cfg.SchedulerName, takers)
	return s.evictAs(g, why, bind.Delete, target)
}
