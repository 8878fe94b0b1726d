package kube

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/kube/bind"
	"github.com/palsched/pal/kube/state"
)

// The round hands its binds and evictions to the binder (package
// kube/bind) and goes on; what the binder learns comes back through
// bindDone, on the binder's goroutines: the outcome goes to the state
// (which holds an assumed bind's devices until then), and the scheduler
// posts the pod's event, counts it, and logs one line per gang once all
// of a gang's binds are settled.

// bindBook follows the gangs whose binds are in flight.
type bindBook struct {
	mu    sync.Mutex
	gangs map[string]*gangBinds
}

// gangBinds is one gang's binds of one round.
type gangBinds struct {
	left   int
	failed int
	parts  []PodBind
}

// bindTask assumes a bind in the state and makes its task.
func (s *Scheduler) bindTask(p *corev1.Pod, node string, ann map[string]string, gangKey string) *bind.Task {
	seq := s.state.Assume(p, node, ann)
	return &bind.Task{Kind: bind.Bind, Pod: p, Node: node, Annots: ann, Seq: seq, Gang: gangKey}
}

// submit hands tasks to the binder, noting each gang's binds.
func (s *Scheduler) submit(tasks []*bind.Task) {
	if len(tasks) == 0 {
		return
	}
	s.actions++
	s.binding.mu.Lock()
	if s.binding.gangs == nil {
		s.binding.gangs = map[string]*gangBinds{}
	}
	for _, t := range tasks {
		if t.Kind != bind.Bind {
			continue
		}
		gb := s.binding.gangs[t.Gang]
		if gb == nil {
			gb = &gangBinds{}
			s.binding.gangs[t.Gang] = gb
		}
		gb.left++
	}
	s.binding.mu.Unlock()
	s.metrics.BindsInFlight.Add(float64(len(tasks)))
	s.binder.Submit(tasks...)
}

// verifyUnsettled asks the apiserver about the binds an earlier term
// left unsettled (the binder stopped before it learnt their outcome), and
// forgets the evictions it left unsettled: the rounds decide again.
//
// The earlier term's binder dropped its unsettled tasks without a
// Result, so nothing counts them down: the in-flight gauge and the
// gangs' bind bookkeeping start again from what this term submits. It
// runs once that binder has stopped (Start waits for its workers) and
// before this term's first round, so nothing else is in flight.
func (s *Scheduler) verifyUnsettled() {
	if n := s.state.ForgetUnsettledEvictions(); n > 0 {
		s.log.Info("forgetting evictions an earlier term left unsettled", "pods", n)
	}
	var tasks []*bind.Task
	for _, p := range s.state.Unsettled() {
		tasks = append(tasks, &bind.Task{Kind: bind.Verify, Pod: p.Pod, Node: p.Node, Annots: p.Annots, Seq: p.Seq, Unsure: true})
	}
	s.binding.mu.Lock()
	s.binding.gangs = nil // a verification has no gang (see bindDone)
	s.binding.mu.Unlock()
	s.metrics.BindsInFlight.Set(float64(len(tasks)))
	if len(tasks) > 0 {
		s.log.Info("verifying binds an earlier term left unsettled", "pods", len(tasks))
		s.binder.Submit(tasks...)
	}
}

// bindDone is the binder's report of one task (on a binder goroutine).
func (s *Scheduler) bindDone(r bind.Result) {
	t := r.Task
	if r.Panic != nil {
		// The task goes on as a verification; the gang is told.
		s.fault("bind", t.Gang, r.Panic, r.Stack)
		s.events.post(podRef(t.Pod), corev1.EventTypeWarning, ReasonFailedScheduling, "Binding",
			fmt.Sprintf("pal-kube scheduler failed while binding this pod (%v); it checks whether the bind landed", r.Panic))
		return
	}
	s.metrics.BindsInFlight.Dec()
	key := state.Key(t.Pod)
	s.state.Settle(state.Settlement{Key: key, Seq: t.Seq, Outcome: r.Outcome})
	switch t.Kind {
	case bind.Evict, bind.Delete:
		if r.Outcome != state.Evicted {
			// Refused: the pod runs on, and its gang is kept until the
			// backoff ends (evict_refused.go), dated by the round that
			// asked for it, on the rounds' clock (the wall clock but in
			// tests).
			at := time.Now()
			if ns := s.roundAt.Load(); ns != 0 {
				at = time.Unix(0, ns)
			}
			until := s.refusedEv.note(t.Pod, r.Err, at)
			s.metrics.EvictionsRefused.Inc()
			s.log.Warn("eviction refused", "pod", key, "how", t.Kind.String(), "err", r.Err, "notBefore", until.UTC().Format(time.RFC3339))
			s.poke()
			return
		}
		s.refusedEv.forget(t.Pod)
		s.metrics.Evictions.Inc()
		if t.Kind == bind.Delete {
			s.events.post(podRef(t.Pod), corev1.EventTypeNormal, ReasonPreempted, "Deleting", fmt.Sprintf("Deleted by %s past its PodDisruptionBudget: %s", s.cfg.SchedulerName, t.Reason))
			return
		}
		s.events.post(podRef(t.Pod), corev1.EventTypeNormal, ReasonPreempted, "Evicting", fmt.Sprintf("Evicted by %s: %s", s.cfg.SchedulerName, t.Reason))
		return
	}
	if (t.Kind == bind.Verify || t.Unsure) && t.Gang == "" {
		// An earlier term's bind (an Unsure one found unbound was posted
		// again, and its Kind is Bind now).
		s.log.Info("unsettled bind verified", "pod", key, "bound", r.Outcome == state.Bound, "postedAgain", t.Kind == bind.Bind, "err", r.Err)
		if r.Outcome != state.Bound {
			s.poke()
		}
		return
	}
	ok := r.Outcome == state.Bound
	if ok {
		if r.Err != nil {
			s.log.Info("bind answered with an error but landed", "pod", key, "node", t.Node, "err", r.Err)
		}
		s.metrics.BoundPods.Inc()
		s.metrics.BoundNow.Inc() // bound now, not at the next round's count
		s.log.Debug("bound", "pod", key, "node", t.Node, "gpus", t.Annots[AnnGPUIndices], "gang", t.Gang)
		s.events.post(podRef(t.Pod), corev1.EventTypeNormal, ReasonScheduled, "Binding", s.scheduledMessage(t.Node, t.Annots[AnnGPUIndices], t.Gang))
	} else {
		s.metrics.BindErrors.Inc()
		s.log.Warn("bind failed", "pod", key, "node", t.Node, "err", r.Err)
		s.poke() // its devices are free again
	}
	s.binding.mu.Lock()
	gb := s.binding.gangs[t.Gang]
	var whole, last bool
	var parts []PodBind
	var failed int
	if gb != nil {
		gb.left--
		if ok {
			idx, _ := ParseIndices(t.Annots[AnnGPUIndices])
			gb.parts = append(gb.parts, PodBind{Node: t.Node, GPUs: idx})
		} else {
			gb.failed++
		}
		if gb.left == 0 {
			delete(s.binding.gangs, t.Gang)
			last, whole, parts, failed = true, gb.failed == 0, gb.parts, gb.failed
		}
	}
	s.binding.mu.Unlock()
	if last {
		s.logGangBound(t.Gang, parts, failed)
		if whole {
			s.groupMu.Lock()
			s.boundGangs[t.Gang] = true
			s.groupMu.Unlock()
		}
	}
	if ok {
		if n := s.binds.Add(1); s.killAfter > 0 && n == s.killAfter {
			s.log.Warn("test hook: killing myself after bind", "binds", n)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}
