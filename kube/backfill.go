package kube

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
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
	// b.Last.In is on the placer's clock (the jobs' seconds); the message
	// is read beside wall times, so it says wall seconds.
	return fmt.Sprintf("; backfill reserves %d GPUs for it, free in about %.0f s by the running gangs' pal.io/iterations", len(b.Last.GPUs), b.Last.In/s.cfg.TimeScale)
}

// The promises backfill made outlive the process through the pods: a
// gang that backfill started past a waiting head carries the head's gang
// key and its promised start in wall time (AnnBackfillHead,
// AnnBackfillPromise), and a fresh placer (a new process, a new leader
// term) reads them back before it places (restoreBackfillRecords). The
// placer's clock is the scheduler's jobTime: at a round that starts at
// wall time start, clock P is wall start + (P - jobTime) / TimeScale.

// promiseRange bounds how far from the round a recorded promise may lie
// (wall time): beyond it a record is not one this scheduler wrote.
const promiseRange = 366 * 24 * time.Hour

// backfillRecord is what a gang's bind records when backfill started j
// past a waiting head: the head's gang key and its promised start ("":
// none), or nothing when j was not backfilled.
func (s *Scheduler) backfillRecord(j *workload.Job, order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) (head, promise string) {
	b := backfill.Unwrap(s.pol.place)
	if b == nil {
		return "", ""
	}
	h, at, ok := b.Jumped(j.ID)
	if !ok {
		return "", ""
	}
	for _, o := range order {
		if o.ID == h {
			if g := byJob[o]; g != nil {
				head = g.Key
			}
			break
		}
	}
	if head == "" {
		return "", ""
	}
	if w, ok := s.promiseWall(at, start); ok {
		promise = w.UTC().Format(time.RFC3339Nano)
	}
	return head, promise
}

// promiseWall is the wall time of clock time at (see above), at a round
// that starts at start; false beyond promiseRange (an infinite at too).
func (s *Scheduler) promiseWall(at float64, start time.Time) (time.Time, bool) {
	d := (at - s.jobTime) / s.cfg.TimeScale
	if !(math.Abs(d) <= promiseRange.Seconds()) {
		return time.Time{}, false
	}
	return start.Add(time.Duration(d * float64(time.Second))), true
}

// writePromises records on the pending pods of every waiting gang that
// backfill has promised a start (the head, and heads overtaken since)
// that promise, AnnBackfillPromise without AnnBackfillHead, in the
// background. A promise lived in memory until a gang was backfilled past
// its head, so a restart promised such a head afresh from its
// reservation then, which had grown meanwhile, and backfilled gangs the
// old scheduler would have held back: a restart changed the plan. It is
// written once per head (again only when the promise moves by a second
// or more), and tells the gang's owner the start EASY backfill holds
// for it.
func (s *Scheduler) writePromises(order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) {
	b := backfill.Unwrap(s.pol.place)
	if b == nil {
		return
	}
	var writes map[*corev1.Pod]string
	for _, j := range order {
		g := byJob[j]
		if g == nil {
			continue
		}
		at, ok := b.Promised(j.ID)
		if !ok {
			continue
		}
		w, ok := s.promiseWall(at, start)
		if !ok {
			continue
		}
		if len(g.Pending) == 0 {
			// Evicted this round: its pods are going, and the ones its
			// controller makes next carry nothing yet. Its work record
			// keeps the promise until they come.
			k := workKey(g.Key, g.Bound)
			if e, ok := s.evictedWork[k]; ok && (e.promise.IsZero() || e.promise.Sub(w).Abs() >= time.Second) {
				e.promise = w
				s.evictedWork[k] = e
				s.evicted.dirty = true
			}
			continue
		}
		for _, p := range g.Pending {
			if v, err := time.Parse(time.RFC3339Nano, p.Annotations[AnnBackfillPromise]); err == nil && v.Sub(w).Abs() < time.Second {
				continue
			}
			if writes == nil {
				writes = map[*corev1.Pod]string{}
			}
			writes[p] = w.UTC().Format(time.RFC3339Nano)
		}
	}
	s.annotateInBackground(&s.promising, AnnBackfillPromise, "backfill: writing "+AnnBackfillPromise, writes)
}

// restoreBackfillRecords gives the backfill placer the records the
// running gangs' pods carry (see backfillRecord) whose head still waits,
// their promised times on the placer's clock. A record naming a head that
// runs or is gone says nothing more; one that cannot be read is logged
// (once per gang, naming the pod and the annotation) and ignored. It
// reports whether a gang with a record is partly bound (a crash cut its
// binding off): the next round, which completes it, looks again.
func (s *Scheduler) restoreBackfillRecords(snap *snapshot, start time.Time) bool {
	b := backfill.Unwrap(s.pol.place)
	if b == nil {
		return false
	}
	again := false
	for _, g := range snap.Gangs {
		if g.Job == nil || (g.State != state.GangRunning && g.State != state.GangPartial) {
			continue
		}
		var p *corev1.Pod
		for _, q := range g.Bound {
			if _, ok := q.Annotations[AnnBackfillHead]; ok {
				p = q
				break
			}
		}
		if p == nil {
			continue
		}
		if g.State == state.GangPartial {
			again = true
			continue
		}
		key := p.Annotations[AnnBackfillHead]
		if key == "" || key == g.Key {
			s.log.Warn("ignoring a backfill record", "pod", podKey(p), "annotation", AnnBackfillHead,
				"value", quote.Value(key), "err", "want the key of another gang")
			continue
		}
		at := math.Inf(1)
		if v, ok := p.Annotations[AnnBackfillPromise]; ok {
			w, err := parsePromise(v, start)
			if err != nil {
				s.log.Warn("ignoring a backfill record", "pod", podKey(p), "annotation", AnnBackfillPromise,
					"value", quote.Value(v), "err", err)
				continue
			}
			at = s.jobTime + w.Sub(start).Seconds()*s.cfg.TimeScale
		}
		head := snap.ByKey[key]
		if head == nil || head.Job == nil || head.State != state.GangQueued {
			continue // the head runs, or is gone: the promise is kept or moot
		}
		if s.staleRecord(head, p) {
			continue // another gang under the head's key, or the head ran since
		}
		if b.Restore(g.Job.ID, head.Job.ID, at) {
			s.log.Info("backfill record restored", "gang", gangName(g.Key), "head", gangName(key), "promised", p.Annotations[AnnBackfillPromise])
		}
	}
	for _, g := range snap.Gangs {
		if g.Job != nil && g.State == state.GangQueued {
			s.restorePromise(b, g, start)
		}
	}
	return again
}

// restorePromise gives the placer the promise a waiting gang's pods
// record (writePromises). A promise is made to a gang that waits, so one
// earlier than the gang's oldest pod is not the scheduler's: it is
// logged and ignored. A pod's owner can still write a later one; the
// earliest promise a head was ever given stands (backfill.Placer.Promise).
func (s *Scheduler) restorePromise(b *backfill.Placer, g *gang, start time.Time) {
	var p *corev1.Pod
	for _, q := range g.Pending {
		if _, ok := q.Annotations[AnnBackfillHead]; ok {
			return // a record of a gang backfilled past another, not of this one's own promise
		}
		if _, ok := q.Annotations[AnnBackfillPromise]; ok && p == nil {
			p = q
		}
	}
	born := oldestPod(g.Pending)
	if p == nil {
		// None written on its pods yet: one kept with the work of the
		// gang evicted under this key, if these are its controller's.
		if e, ok := s.evictedWork[workKey(g.Key, g.Pending)]; ok && !e.promise.IsZero() && e.owner == controllerUID(g.Pending) {
			if w := e.promise; inPromiseRange(w, start) == nil &&
				b.Promise(g.Job.ID, s.jobTime+w.Sub(start).Seconds()*s.cfg.TimeScale) {
				s.log.Info("backfill promise restored", "gang", gangName(g.Key), "promised", e.promise.UTC().Format(time.RFC3339Nano), "from", "evicted work")
			}
		}
		return
	}
	v := p.Annotations[AnnBackfillPromise]
	w, err := parsePromise(v, start)
	if err == nil && w.Before(born) {
		err = fmt.Errorf("%s is before the gang's first pod was made (%s)", w.UTC().Format(time.RFC3339), born.UTC().Format(time.RFC3339))
	}
	if err != nil {
		s.log.Warn("ignoring a backfill promise", "pod", podKey(p), "annotation", AnnBackfillPromise, "value", quote.Value(v), "err", err)
		return
	}
	if b.Promise(g.Job.ID, s.jobTime+w.Sub(start).Seconds()*s.cfg.TimeScale) {
		s.log.Info("backfill promise restored", "gang", gangName(g.Key), "promised", v)
	}
}

// staleRecord says whether p's backfill record no longer names a head
// that waits since the round that bound p (its pal.io/bind-info): the
// gang head arrived after that round, so it is not the gang p's gang was
// backfilled past but one that came later under its key (a Job applied
// again, a pal.io/gang name used again); or head has been bound since,
// and waits again after an eviction. The placer that made the record
// forgot it as soon as its head ran. A gang arrives with its oldest pod,
// or earlier when its work record says it is an evicted gang come back
// (resumeEvicted keeps its Submit): a head that ran and was stopped in
// the round that backfilled p's gang past it waits with pods its
// controller made after that round, and is still the gang p's gang
// jumped. Without a readable bind-info it says false.
func (s *Scheduler) staleRecord(head *gang, p *corev1.Pod) bool {
	bi, err := ParseBindInfo(p.Annotations[AnnBindInfo])
	if err != nil {
		return false
	}
	round, err := time.Parse(time.RFC3339Nano, bi.Round)
	if err != nil {
		return false
	}
	if len(head.Pending) == 0 {
		return false
	}
	if e, ok := s.evictedWork[workKey(head.Key, head.Pending)]; ok && e.owner == controllerUID(head.Pending) && e.bound.After(round) {
		return true
	}
	// A millisecond's slack for the clock's arithmetic: pods' creation
	// times are whole seconds.
	return s.wallOf(head.Job.Submit).After(round.Add(time.Millisecond))
}

// parsePromise reads AnnBackfillPromise: RFC 3339 (fractions of a second
// allowed) or unix seconds, within promiseRange of start.
func parsePromise(v string, start time.Time) (time.Time, error) {
	var w time.Time
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f-float64(start.Unix())) > promiseRange.Seconds() {
			return time.Time{}, fmt.Errorf("unix seconds %v: want a time within %v of now", f, promiseRange)
		}
		sec, frac := math.Modf(f)
		w = time.Unix(int64(sec), int64(frac*1e9))
	} else if w, err = time.Parse(time.RFC3339Nano, v); err != nil {
		return time.Time{}, errors.New("want RFC 3339 or unix seconds")
	}
	if err := inPromiseRange(w, start); err != nil {
		return time.Time{}, err
	}
	return w, nil
}

// inPromiseRange refuses a promise more than promiseRange from start: a
// start a year away is no scheduler's promise, and the placer's clock
// arithmetic should not meet one.
func inPromiseRange(w, start time.Time) error {
	if d := w.Sub(start); d > promiseRange || d < -promiseRange {
		return fmt.Errorf("%s is more than %v from now", w.UTC().Format(time.RFC3339), promiseRange)
	}
	return nil
}
