package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// What PAL writes on group objects, so that `kubectl get podgroups`
// tells the truth without kube-scheduler or the scheduler-plugins
// controller running.
//
// Native PodGroups get kube-scheduler's PodGroupInitiallyScheduled
// condition: True with reason Scheduled once the whole gang is bound,
// False with reason Unschedulable and the wait reason while it waits. A
// True condition is final and never goes back to False (kube-scheduler's
// rule: pods evicted later do not unschedule the group), and the patch
// is skipped when the condition would not change.
//
// scheduler-plugins PodGroups get the status the coscheduling plugin and
// its controller keep: phase, scheduled, running, succeeded, failed and
// scheduleStartTime (see coschedStatus). Those values are a function of
// the member pods, so they agree with that controller where it runs.
const (
	// ReasonPodGroupScheduled is the reason of PodGroupInitiallyScheduled=True.
	ReasonPodGroupScheduled = "Scheduled"
)

// nativeWant is the PodGroupInitiallyScheduled condition for a gang:
// bound (every member bound) or waiting for why ("" when there is
// nothing to say: the gang is neither bound nor known to wait).
func nativeWant(bound bool, size int, scheduler, why string) (metav1.Condition, bool) {
	if bound {
		return metav1.Condition{Type: schedv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			Reason: ReasonPodGroupScheduled, Message: fmt.Sprintf("all %d pods bound by %s", size, scheduler)}, true
	}
	if why == "" {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: schedv1beta1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse,
		Reason: schedv1beta1.PodGroupReasonUnschedulable, Message: why}, true
}

// nextNativeConditions is pg's conditions with want set, or nil when
// nothing would change. A True PodGroupInitiallyScheduled stays True. A
// gang bound again is no longer a disruption target: its DisruptionTarget
// condition goes.
func nextNativeConditions(pg *schedv1beta1.PodGroup, want metav1.Condition, now time.Time) []metav1.Condition {
	if old := apimeta.FindStatusCondition(pg.Status.Conditions, want.Type); old != nil &&
		old.Type == schedv1beta1.PodGroupInitiallyScheduled && old.Status == metav1.ConditionTrue && want.Status != metav1.ConditionTrue {
		return nil
	}
	want.ObservedGeneration = pg.Generation
	want.LastTransitionTime = metav1.NewTime(now)
	conds := make([]metav1.Condition, len(pg.Status.Conditions))
	for i := range pg.Status.Conditions {
		pg.Status.Conditions[i].DeepCopyInto(&conds[i])
	}
	changed := apimeta.SetStatusCondition(&conds, want)
	if want.Type == schedv1beta1.PodGroupInitiallyScheduled && want.Status == metav1.ConditionTrue &&
		apimeta.RemoveStatusCondition(&conds, schedv1beta1.DisruptionTarget) {
		changed = true
	}
	if !changed {
		return nil
	}
	return conds
}

// markDisrupted sets DisruptionTarget=True (reason PreemptionByScheduler,
// message why) on the native PodGroup of a gang PAL evicts, as
// kube-scheduler marks a preempted group, and forgets what was written
// so that the gang's next bind clears it.
func (s *Scheduler) markDisrupted(g *gang, why string) {
	id := g.Spec.Group
	if id.Kind != podspec.GroupNative || s.groups.native.lister == nil {
		return
	}
	s.groupMu.Lock()
	delete(s.groupWrote, g.Key)
	s.groupMu.Unlock()
	pg, err := s.groups.native.lister.PodGroups(id.NS).Get(id.Name)
	if err != nil {
		return
	}
	conds := nextNativeConditions(pg, metav1.Condition{Type: schedv1beta1.DisruptionTarget, Status: metav1.ConditionTrue,
		Reason: schedv1beta1.PodGroupReasonPreemptionByScheduler, Message: why}, time.Now())
	if conds == nil {
		return
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	s.writeStatuses([]statusPatch{{id: id, body: body}})
}

// Phases of a scheduler-plugins PodGroup, as its API defines them.
const (
	CoschedPending       = "Pending"       // fewer than minMember pods exist
	CoschedPreScheduling = "PreScheduling" // minMember pods exist, none bound yet
	CoschedScheduling    = "Scheduling"    // some bound, fewer than minMember
	CoschedScheduled     = "Scheduled"     // minMember bound
	CoschedRunning       = "Running"       // minMember running (or done)
	CoschedFinished      = "Finished"      // minMember succeeded (final)
	CoschedFailed        = "Failed"        // a member failed and minMember ran (final)
)

// coschedCounts are a scheduler-plugins PodGroup's member pods.
type coschedCounts struct {
	Pods      int // members that exist (pending, bound or finished)
	Scheduled int // bound or finished
	Running   int
	Succeeded int
	Failed    int
}

// coschedStatus is the status PAL writes on a scheduler-plugins PodGroup
// of minMember min whose members are c, given its current status old:
// the phase follows the counts in the order of the phase constants, and
// Finished and Failed are final (old is returned as it is). Fields PAL
// does not own (occupiedBy) are kept; scheduleStartTime is set once, at
// the first bind.
func coschedStatus(old map[string]any, min int, c coschedCounts, now time.Time) map[string]any {
	phase, _ := old["phase"].(string)
	if phase == CoschedFinished || phase == CoschedFailed {
		return old
	}
	out := map[string]any{}
	for k, v := range old {
		out[k] = v
	}
	switch {
	case c.Scheduled == 0 && c.Pods < min:
		phase = CoschedPending
	case c.Scheduled == 0:
		phase = CoschedPreScheduling
	case c.Scheduled < min:
		phase = CoschedScheduling
	default:
		phase = CoschedScheduled
		if c.Running+c.Succeeded >= min {
			phase = CoschedRunning
		}
		if c.Failed > 0 && c.Failed+c.Running+c.Succeeded >= min {
			phase = CoschedFailed
		}
		if c.Succeeded >= min {
			phase = CoschedFinished
		}
	}
	out["phase"] = phase
	for k, v := range map[string]int{"scheduled": c.Scheduled, "running": c.Running, "succeeded": c.Succeeded, "failed": c.Failed} {
		if v == 0 {
			delete(out, k) // omitempty, as the API writes it
		} else {
			out[k] = int64(v)
		}
	}
	if t, _ := out["scheduleStartTime"].(string); t == "" && c.Scheduled > 0 {
		out["scheduleStartTime"] = now.UTC().Format(time.RFC3339)
	}
	return out
}

// sameStatus compares two decoded status objects through JSON (int64 and
// float64 numbers alike).
func sameStatus(a, b map[string]any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// statusPatch is one group object's status write.
type statusPatch struct {
	id   podspec.GroupID
	key  string // gang key, for the written-once memory
	sig  string // what was decided, remembered once written
	body []byte // merge patch of the status subresource
}

// writeGroupStatus updates the status of every gang's group object after
// a round (see ReasonPodGroupScheduled): a gang counts as bound whole
// once the binder bound all of it. Writes go out in the background and
// are remembered, so a status is written once per change even before
// the informers show it.
func (s *Scheduler) writeGroupStatus(snap *snapshot) {
	s.groupMu.Lock()
	bound := s.boundGangs
	s.boundGangs = map[string]bool{}
	wrote := maps.Clone(s.groupWrote)
	s.groupMu.Unlock()
	now := time.Now()
	live := map[string]bool{}
	var todo []statusPatch
	for _, g := range snap.Grouped {
		id := g.Spec.Group
		live[g.Key] = true
		switch id.Kind {
		case podspec.GroupNative:
			want, ok := nativeWant(g.State == state.GangRunning || bound[g.Key], g.Spec.Size, s.cfg.SchedulerName, s.lastWhy[g.Key])
			if g.State == state.GangPartial || g.State == state.GangLeaving {
				ok = false
			}
			if !ok {
				continue
			}
			sig := string(want.Status) + "|" + want.Reason + "|" + want.Message
			if wrote[g.Key] == sig || s.groups.native.lister == nil {
				continue
			}
			pg, err := s.groups.native.lister.PodGroups(id.NS).Get(id.Name)
			if err != nil {
				continue
			}
			conds := nextNativeConditions(pg, want, now)
			if conds == nil {
				s.setWrote(g.Key, sig)
				continue
			}
			body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
			todo = append(todo, statusPatch{id, g.Key, sig, body})
		case podspec.GroupCosched:
			if s.groups.cosched.lister == nil {
				continue
			}
			obj, err := s.groups.cosched.lister.Namespace(id.NS).Get(id.Name)
			if err != nil {
				continue
			}
			old, _, _ := unstructured.NestedMap(obj.Object, "status")
			if old == nil {
				old = map[string]any{}
			}
			c := coschedCounts{Pods: len(g.Pending) + len(g.Bound) + len(g.Finished), Scheduled: len(g.Bound) + len(g.Finished),
				Succeeded: len(g.Finished) - g.Failed, Failed: g.Failed}
			if bound[g.Key] {
				c.Scheduled = max(c.Scheduled, g.Spec.Size)
			}
			for _, p := range g.Bound {
				if p.Status.Phase == "Running" {
					c.Running++
				}
			}
			next := coschedStatus(old, g.Spec.Size, c, now)
			body, _ := json.Marshal(map[string]any{"status": next})
			sig := fmt.Sprint(next["phase"], c) // not the start time: it is set once
			if wrote[g.Key] == sig {
				continue
			}
			if sameStatus(old, next) {
				s.setWrote(g.Key, sig)
				continue
			}
			todo = append(todo, statusPatch{id, g.Key, sig, body})
		}
	}
	s.groupMu.Lock()
	for k := range s.groupWrote {
		if !live[k] {
			delete(s.groupWrote, k)
		}
	}
	s.groupMu.Unlock()
	s.writeStatuses(todo)
}

func (s *Scheduler) setWrote(key, sig string) {
	s.groupMu.Lock()
	s.groupWrote[key] = sig
	s.groupMu.Unlock()
}

// writeStatuses sends status patches in the background, a few at once
// (the round does not wait on the network); each one written is
// remembered under its gang.
func (s *Scheduler) writeStatuses(todo []statusPatch) {
	if len(todo) == 0 {
		return
	}
	s.inBackground(func(ctx context.Context) {
		var wg sync.WaitGroup
		work := make(chan statusPatch)
		for range min(statusWriters, len(todo)) {
			wg.Go(func() {
				for w := range work {
					if err := s.patchGroupStatus(ctx, w); err != nil {
						s.log.Warn("PodGroup status not written", "podgroup", w.id.String(), "err", err)
						continue
					}
					if w.key != "" {
						s.setWrote(w.key, w.sig)
					}
				}
			})
		}
		for _, w := range todo {
			work <- w
		}
		close(work)
		wg.Wait()
	})
}

// inBackground runs f beside the rounds, with the round's context
// (Background outside a round): the round does not wait on the network.
// Tests wait for it (statusWG).
func (s *Scheduler) inBackground(f func(ctx context.Context)) {
	ctx := s.roundCtx
	if ctx == nil {
		ctx = context.Background()
	}
	s.statusWG.Add(1)
	go func() {
		defer s.statusWG.Done()
		f(ctx)
	}()
}

// annotateInBackground sets annotation key on each pod of writes to its
// value by merge patch, in the background (inBackground), unless busy
// says the last such batch is still going: the caller's next batch then
// writes what is still due. A failure is logged (at Info: the next batch
// tries again) with what.
func (s *Scheduler) annotateInBackground(busy *atomic.Bool, key, what string, writes map[*corev1.Pod]string) {
	if len(writes) == 0 || !busy.CompareAndSwap(false, true) {
		return
	}
	s.inBackground(func(ctx context.Context) {
		defer busy.Store(false)
		for p, v := range writes {
			// The pod's UID in the patch makes the apiserver refuse it
			// (metadata.uid is immutable) for a pod deleted and made
			// again under its name meanwhile (an eviction's successor):
			// not the pod this was meant for.
			meta := map[string]any{"annotations": map[string]string{key: v}}
			if p.UID != "" {
				meta["uid"] = p.UID
			}
			patch, _ := json.Marshal(map[string]any{"metadata": meta})
			if _, err := s.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				if apierrors.IsForbidden(err) {
					s.forbiddenPatch(what, p, err)
					continue
				}
				s.log.Info(what, "pod", podKey(p), "err", err)
			}
		}
	})
}

// forbiddenPatch says at Error, once per kind of write (what), that the
// apiserver refused a background annotation patch as Forbidden: the
// scheduler's role lacks patch on pods (deploy/rbac.yaml grants it), or
// an admission policy refuses its identity. Every later such write fails
// the same way, so logged at Info with the others it would go unseen,
// while what it records (a promise, a lease) is lost to a restart.
func (s *Scheduler) forbiddenPatch(what string, p *corev1.Pod, err error) {
	if _, said := s.forbidden.LoadOrStore(what, true); said {
		s.log.Info(what, "pod", podKey(p), "err", err)
		return
	}
	s.log.Error(what+": forbidden, and every such write will be; the scheduler's role needs patch on pods", "pod", podKey(p), "err", err)
}

// statusWriters is how many group status patches go out at once.
const statusWriters = 8

// patchGroupStatus sends one status merge patch.
func (s *Scheduler) patchGroupStatus(ctx context.Context, w statusPatch) error {
	switch w.id.Kind {
	case podspec.GroupNative:
		_, err := s.client.SchedulingV1beta1().PodGroups(w.id.NS).Patch(ctx, w.id.Name, types.MergePatchType, w.body, metav1.PatchOptions{}, "status")
		return err
	case podspec.GroupCosched:
		if s.dyn == nil {
			return fmt.Errorf("no dynamic client")
		}
		_, err := s.dyn.Resource(CoschedPodGroups).Namespace(w.id.NS).Patch(ctx, w.id.Name, types.MergePatchType, w.body, metav1.PatchOptions{}, "status")
		return err
	}
	return nil
}
