package kube

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/bind"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// Round runs one round: bring the state up to date, order, place, plan,
// then hand the binds and evictions to the binder. No fault stops the
// scheduler: a panic anywhere in a round is recovered, logged with its
// stack and counted in pal_round_errors_total{stage="round"}, and the
// next round runs as usual.
func (s *Scheduler) Round(ctx context.Context, start time.Time) {
	t0 := time.Now()
	s.events.gate()
	defer func() {
		if v := recover(); v != nil {
			s.fault("round", "", v, debug.Stack())
		}
		s.events.ungate()
		s.metrics.RoundSeconds.Observe(time.Since(t0).Seconds())
	}()
	defer s.saveEvictedWork(ctx, start)
	s.roundCount.Add(1)
	s.roundCtx = ctx
	elapsed := 0.0
	if !s.lastRound.IsZero() {
		elapsed = start.Sub(s.lastRound).Seconds() * s.cfg.TimeScale
	}
	s.lastRound = start
	s.roundAt.Store(start.UnixNano())
	s.jobTime += elapsed
	now := float64(start.UnixNano())/1e9 - s.epoch

	s.state.Sync()
	snap := s.state.Snapshot()
	s.sel.keys.round()
	for _, w := range snap.Warnings {
		if !s.warned[w] {
			s.warned[w] = true
			s.log.Warn(w)
		}
	}
	if len(s.warned) > len(snap.Warnings) {
		now := make(map[string]bool, len(snap.Warnings))
		for _, w := range snap.Warnings {
			now[w] = true
		}
		for w := range s.warned {
			if !now[w] {
				delete(s.warned, w)
			}
		}
	}
	for _, b := range snap.Bad {
		s.wait(b.Pod.Namespace+"/pod:"+b.Pod.Name, []*corev1.Pod{b.Pod}, b.Why)
	}
	if s.evicted.restore {
		s.restoreEvictedWork(ctx, true)
	}
	for k, e := range s.evictedWork {
		if time.Since(e.seen) > evictedWorkKept {
			delete(s.evictedWork, k)
			s.evicted.dirty = true
		}
	}
	for _, g := range snap.Removed {
		delete(s.faulty, g.Key)
		if f, ok := s.pol.sched.(interface{ Forget(id int) }); ok && g.Job != nil {
			f.Forget(g.Job.ID) // Tiresias keeps a state per job
		}
	}
	if snap.Cluster != nil {
		if s.learn != nil {
			s.learnNodeIDs() // before the binning: a replaced node's GPUs are not scored as the old ones
		}
		s.loadScores(snap)
		if s.learn != nil {
			ours, _ := s.ours.List(everything)
			s.learnRound(ctx, snap, ours, start)
		}
		s.rand.Cluster, s.rand.Scores = snap.Cluster, s.scores
	}

	// Complete gangs a crash cut off, from their bind-info, before anything
	// else may take their GPUs.
	order := s.plan.buf[:0]
	byJob := snap.ByJob
	s.byJob = byJob
	s.kept = s.kept[:0]
	clear(s.keptSet)
	boundPods := 0
	raised := false // a waiting job's priority was raised (the order may change)
	actions := s.actions
	// A running gang's slowdown changes only with its GPUs or the scores:
	// with neither changed since the last round, the one it has stands.
	pmValid := snap.PlanGeneration == s.pmGen && s.raw == s.pmRaw
	s.pmGen, s.pmRaw = snap.PlanGeneration, s.raw
	if s.ten != nil {
		clear(s.ten.fixed)
	}
	clear(s.pastBudget)
	var top int32 // preemptPastBudgets: the highest priority that waits and may preempt
	anyTop := false
	if s.cfg.PreemptPastBudgets && snap.Cluster != nil {
		top, anyTop = s.preemptorTop(snap)
	}
	for _, g := range snap.Gangs {
		boundPods += len(g.Bound)
		if gen, bad := s.faulty[g.Key]; bad {
			if g.Gen == gen {
				continue // its planning failed, and none of its pods changed since
			}
			delete(s.faulty, g.Key)
		}
		switch g.State {
		case state.GangPartial:
			s.guard("complete", g, func() { s.complete(snap, g, start) })
		case state.GangWaiting:
			if s.stillArriving(g, start) {
				continue
			}
			s.wait(g.Key, g.Pending, g.Why)
		case state.GangQueued, state.GangRunning:
			j := g.Job
			if snap.Cluster == nil || (g.State == state.GangRunning && len(g.GPUs) != j.GPUs) {
				continue // its node left the cluster: not placeable until it ends
			}
			j.MoveCost = s.moveCost(g)
			if len(s.evictedWork) > 0 {
				s.resumeEvicted(g)
			}
			if g.State == state.GangRunning {
				j.GPUsHeld = g.GPUs
				first := j.Attained == 0 // no round of this scheduler has credited it yet
				// Its progress over the last period, as the simulator
				// credits a round: a migration-aware placement weighs a
				// move's gain against the work that is left.
				if j.IterTime > 0 && elapsed > 0 {
					if !pmValid || !(j.PM > 0) {
						j.PM = s.slowdown(snap, j, g.GPUs)
					}
					j.Loc = 1
					j.Progress(elapsed)
				}
				j.Attained += elapsed
				j.GPUService += elapsed * float64(j.GPUs)
				j.SinceScheduled = 0
				if j.FirstStart < 0 {
					j.FirstStart = now
				}
				if first {
					// First seen running (bound by another process or
					// term, or in the last round): credited the time
					// since its bind, at its GPUs' pace, so that a
					// restarted scheduler does not read its whole
					// pal.io/iterations as still to do, nor the gang as
					// never served. Once per gang: it reads the
					// bind-info's JSON.
					if !(j.PM > 0) && j.IterTime > 0 {
						j.PM, j.Loc = s.slowdown(snap, j, g.GPUs), 1
					}
					s.creditBound(g, j, start, j.PM*j.Loc*j.IterTime)
				}
				if lost, budget := s.keptBy(g); lost != "" {
					stays := !s.cfg.PreemptBarePods || budget
					if stays && budget && s.admitPastBudgets(g, j, top, anyTop) {
						// Kept by its budgets alone, while a gang of
						// higher priority waits: in the order, to be
						// preempted for such a gang only (budgets_past.go).
						stays = false
					}
					// Its eviction would lose work (bare pods, or a Job
					// it would fail), or a disruption budget would refuse
					// it: it keeps its GPUs (until it ends, or its
					// budgets allow it). A controller's gang, or one a
					// budget keeps, is told why (once): it could move,
					// were its Job's or its pods' budget larger.
					if stays && (g.Bare() == 0 || budget) && len(g.Bound) > 0 {
						why := "left on " + snap.Devices(g.GPUs) + " until it ends, never moved or preempted: " + lost
						if budget {
							why = "left on " + snap.Devices(g.GPUs) + ", never moved or preempted while its disruption budgets refuse its eviction: " + lost
							if s.budgets.blocks(g.Bound) == "" {
								why = "left on " + snap.Devices(g.GPUs) + ", not moved or preempted: " + lost
							} else if s.cfg.PreemptPastBudgets && s.budgetsOnly(g) {
								why = "left on " + snap.Devices(g.GPUs) + ", never moved, and preempted only for a waiting gang of higher pod priority (preemptPastBudgets), while its disruption budgets refuse its eviction: " + lost
							}
						}
						s.noteOn(g, g.Bound[:1], "gang kept in place", why)
					}
					if stays && s.ten != nil {
						s.ten.fixed[j.ID] = budget // the cells keep it where it runs
					}
					if stays && s.ten == nil {
						// The placer does not see its GPUs (as another
						// scheduler's pods').
						s.keep(j)
						continue
					}
					// It may be preempted, never migrated: act refuses
					// a move that a placement still makes.
					j.MoveCost.Migration = neverMoves
				}
			} else {
				j.GPUsHeld = nil
				j.SinceScheduled += elapsed
				if g := s.cfg.StarvationGuard.Seconds(); g > 0 && j.SinceScheduled >= g && j.Priority != 1 {
					j.Priority, raised = 1, true
				}
			}
			order = append(order, j)
		}
	}
	s.plan.buf = order[:0] // its backing array serves the next round
	if s.restoreBackfill {
		s.restoreBackfill = s.restoreBackfillRecords(snap, start)
	}
	s.cleanWhy(snap)
	s.metrics.BoundNow.Set(float64(boundPods))

	if s.ten != nil {
		order = s.tenancyOrder(snap, order, byJob)
	}
	if (len(order) > 0 || s.runsEmpty(snap)) && !s.plan.dead(s, snap, order, now, raised) {
		order = s.orderJobs(now, order, byJob)
		var alloc [][]int
		var ds []round.Decision
		var ok bool
		snap, order, alloc, ds, ok = s.planRound(snap, order, byJob, start)
		if !ok {
			s.plan.quiet = false
			return
		}
		s.act(snap, byJob, order, ds, start)
		s.writePromises(order, byJob, start)
		s.forecastRound(snap, order, alloc, start)
		pending := 0
		clear(s.sel.free)
		tw := s.tierWalk(order, byJob)
		for i, j := range order {
			if alloc[i] == nil {
				pending++
				g := byJob[j]
				why := tw.why(i)
				if s.ten != nil {
					if w := s.ten.why(j, snap); w != "" {
						why += "; " + w
					}
				}
				s.wait(g.Key, g.Pending, fmt.Sprintf("gang of %d pods (%d GPUs) waits at queue position %d under %s/%s: %d GPUs free%s",
					g.Spec.Size, j.GPUs, i+1, s.pol.sched.Name(), s.pol.place.Name(), snap.Cluster.FreeCount(), why+s.keptWhy(j, snap, byJob)+s.selectorWhy(j, g, snap.Cluster)+s.reserved(j)+s.etaNote(g.Key)))
			}
		}
		s.plan.pending, s.plan.mean = pending, s.meanScore(order, alloc)
		s.plan.record(s, snap, order, ds, actions)
	} else if len(order) == 0 && !s.runsEmpty(snap) {
		s.plan.quiet, s.plan.pending, s.plan.mean = false, 0, 0
	}
	s.plan.inUse = 0
	if snap.Cluster != nil {
		s.plan.inUse = snap.Cluster.Size() - snap.Cluster.FreeCount()
	}
	s.writeGroupStatus(snap)
	s.metrics.PendingGangs.Set(float64(s.plan.pending))
	s.metrics.GPUsInUse.Set(float64(s.plan.inUse))
	s.metrics.MeanScore.Set(s.plan.mean)
}

// planRound places the round's order and reads the answer. A panic in
// the placer is isolated to the gang that causes it (see isolate); when
// the placement would move or preempt a gang the round may not evict
// (see refusals) and a launch was planned onto its GPUs while others may
// be free, the order is placed once more without that gang, whose GPUs
// the placer then sees as taken. It returns the snapshot the answer is
// on (when the order was placed again, a copy whose owner table is as
// it was before the first placement).
func (s *Scheduler) planRound(snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) (*snapshot, []*workload.Job, [][]int, []round.Decision, bool) {
	// The owner table before placement: it holds what this round handed
	// out already (the gangs it completed), which the state shows only
	// from the next Sync on, so a second placement starts from it.
	// Only a round without tenancy or Themis places twice, and only under
	// preemptBarePods or preemptPastBudgets: otherwise a gang the round
	// may not evict is not in its order, so no move of the plan is
	// refused.
	var before *cluster.Cluster
	if snap.Cluster != nil && s.ten == nil && s.th == nil && (s.cfg.PreemptBarePods || s.cfg.PreemptPastBudgets) {
		before = snap.Cluster.Clone()
	}
	for try := 0; ; try++ {
		alloc, err := s.placeIsolated(snap, order, byJob, start)
		if err != nil {
			s.log.Error("round: nothing placed", "err", err)
			return snap, order, nil, nil, false
		}
		s.honorSelectors(snap, order, byJob, alloc)
		ds, err := round.Plan(snap.Cluster, order, alloc)
		if err != nil {
			s.roundError("plan", "")
			s.log.Error("round: placer answer rejected; nothing bound this round", "placer", s.pol.place.Name(), "err", err)
			return snap, order, nil, nil, false
		}
		if try > 0 || s.ten != nil || s.th != nil {
			return snap, order, alloc, ds, true
		}
		kept, _, _ := s.refusals(snap, byJob, ds, false)
		if len(kept) == 0 || !slices.ContainsFunc(ds, func(d round.Decision) bool {
			return d.Kind == round.Launch && slices.ContainsFunc(d.To, func(x int) bool { return kept[x] != "" })
		}) {
			return snap, order, alloc, ds, true
		}
		// The plan launches onto GPUs a gang keeps: place again with that
		// gang out of the order, so that the placer sees its GPUs as taken
		// and may find others. The gang is told why it stays.
		s.refusals(snap, byJob, ds, true)
		keep := map[int]bool{}
		for _, d := range ds {
			if d.Kind == round.Preempt && s.pastBudget[d.Job] {
				// Admitted past its budgets, its preemption refused
				// because its GPUs went to no gang of higher priority:
				// it stays in the order, where such a gang may take
				// them once the gangs that kept theirs are out of it.
				continue
			}
			if (d.Kind == round.Migrate || d.Kind == round.Preempt) && slices.ContainsFunc(d.From, func(x int) bool { return kept[x] != "" }) {
				keep[d.Job.ID] = true
			}
		}
		rest := order[:0:0]
		for _, j := range order {
			if !keep[j.ID] {
				rest = append(rest, j)
			}
		}
		order = rest
		again := *snap
		again.Cluster = before.Clone()
		snap = &again
		s.rand.Cluster = snap.Cluster
	}
}

// placeIsolated is the round's placement (tenancy, Themis or the
// placer). A placer that panics is asked again on shorter prefixes of
// the order to find the first gang whose presence makes it panic; that
// gang is marked unschedulable until one of its pods changes (a
// FailedScheduling event says why, the fault is logged with its stack
// and counted in pal_round_errors_total{stage="plan"}), and the round
// places the others. At most a few gangs are set aside in one round.
func (s *Scheduler) placeIsolated(snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) ([][]int, error) {
	try := func(o []*workload.Job) (alloc [][]int, fault any, stack []byte) {
		saved := make([][]int, len(o))
		for i, j := range o {
			saved[i] = j.GPUsHeld
		}
		defer func() {
			if v := recover(); v != nil {
				fault, stack = v, debug.Stack()
				for i, j := range o {
					j.GPUsHeld = saved[i] // a placer may have left a view's ids behind
				}
			}
		}()
		return s.placeOnce(snap, o, byJob, start), nil, nil
	}
	alloc, fault, stack := try(order)
	if fault == nil {
		return alloc, nil
	}
	// A stateful placement (HiveD's cells, Themis' leases) may be left
	// half-changed by a panic; it is asked again only without tenancy
	// and Themis.
	full := order
	for set := 0; fault != nil; set++ {
		if s.ten != nil || s.th != nil || set == 3 {
			s.fault("plan", "", fault, stack)
			return nil, fmt.Errorf("the placement failed: %v", fault)
		}
		// The shortest failing prefix ends with the culprit.
		lo, hi := 0, len(order) // order[:lo] places; order[:hi] panics
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if _, f, _ := try(order[:mid]); f != nil {
				hi = mid
			} else {
				lo = mid
			}
		}
		bad := order[hi-1]
		g := byJob[bad]
		s.fault("plan", g.Key, fault, stack)
		s.markFaulty(g, fault)
		order = slices.Delete(slices.Clone(order), hi-1, hi)
		alloc, fault, stack = try(order)
	}
	// The answer in the round's order: the gangs set aside get nothing.
	out := make([][]int, len(full))
	k := 0
	for i, j := range full {
		if k < len(order) && order[k] == j {
			out[i] = alloc[k]
			k++
		} else if j.GPUsHeld != nil {
			out[i] = j.GPUsHeld // a running gang set aside keeps its GPUs
		}
	}
	return out, nil
}

// placeOnce is one run of the round's placement.
func (s *Scheduler) placeOnce(snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) [][]int {
	switch {
	case s.ten != nil && s.th != nil:
		return s.th.placeInVCs(s, snap, order, byJob, start)
	case s.ten != nil:
		return s.ten.place(&s.rand, snap, order, viewPlacer{s, snap})
	case s.th != nil:
		return s.th.place(s, snap, order, byJob, start)
	}
	return s.place(snap, order)
}

// keep records j as a running gang the round keeps out of its order.
func (s *Scheduler) keep(j *workload.Job) {
	s.kept = append(s.kept, j)
	if s.keptSet == nil {
		s.keptSet = map[*workload.Job]bool{}
	}
	s.keptSet[j] = true
}

// keptWhy is what a waiting message adds when gangs the round may not
// evict hold GPUs and too few are free for j: which gangs and what keeps
// each (a disruption budget, bare pods, a Job an eviction would fail),
// so that an operator looks there rather than at the queue.
func (s *Scheduler) keptWhy(j *workload.Job, snap *snapshot, byJob map[*workload.Job]*gang) string {
	if len(s.kept) == 0 || snap.Cluster.FreeCount() >= j.GPUs {
		return ""
	}
	held := 0
	names := make([]string, 0, len(s.kept))
	for _, k := range s.kept {
		if g := byJob[k]; g != nil {
			by := "its Job would fail"
			switch {
			case s.budgets.blocks(g.Bound) != "":
				by = "a disruption budget"
			case s.refusedEv.blocks(g.Bound, s.lastRound) != "":
				by = "its eviction was refused"
			case g.Bare() > 0:
				by = "bare pods"
			}
			held += len(g.GPUs)
			names = append(names, gangName(g.Key)+" ("+by+")")
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return fmt.Sprintf("; %d GPUs are held by gangs it may not evict: %s", held, firstNames(names, 3))
}

// cutOutside lists the GPUs a placer may hand out: every GPU of cl but
// those held by jobs outside order. toView maps a GPU to its id in the
// view (-1: cut out), toReal maps back, and sizes and names are the view's
// nodes that keep a GPU.
func cutOutside(cl *cluster.Cluster, order []*workload.Job) (toView, toReal, sizes []int, names []string) {
	inOrder := make(map[int]bool, len(order))
	for _, j := range order {
		inOrder[j.ID] = true
	}
	toView = make([]int, cl.Size())
	for n, nd := range cl.Nodes {
		k := 0
		for _, g := range nd.GPUs {
			if o := cl.Owner(g); o != cluster.Free && !inOrder[o] {
				toView[g] = -1
				continue
			}
			toView[g] = len(toReal)
			toReal = append(toReal, g)
			k++
		}
		if k > 0 {
			sizes = append(sizes, k)
			names = append(names, cl.Nodes[n].Name)
		}
	}
	return toView, toReal, sizes, names
}

// place runs the placer on the GPUs it may hand out. Placers take every
// GPU not held by a job in the order as free (in the simulator every
// GPU belongs to such a job), so GPUs of other schedulers' pods, of
// leaving gangs and of partly bound gangs are cut out of the cluster the
// placer sees: it gets a view without them (same bins and L×V order, GPU
// ids renumbered), and its answer is mapped back. With nothing to cut
// out the view is the cluster itself.
func (s *Scheduler) place(snap *snapshot, order []*workload.Job) [][]int {
	if c, ok := s.pol.place.(interface{ SetNow(float64) }); ok {
		c.SetNow(s.jobTime) // backfill: has a reserved gang's promised start come
	}
	if len(s.kept) > 0 && backfill.Unwrap(s.pol.place) != nil {
		// Backfill sees the kept gangs where they run (its Keep holds
		// them there): cut out, their GPUs would never free in the
		// reservation's reckoning, and a gang needing them would get
		// none, every gang behind it starting as under greedy.
		n := len(order)
		return s.placeView(snap, append(slices.Clip(order), s.kept...))[:n]
	}
	return s.placeView(snap, order)
}

// placeView is place on order, whatever it holds.
func (s *Scheduler) placeView(snap *snapshot, order []*workload.Job) [][]int {
	cl := snap.Cluster
	toView, toReal, sizes, names := cutOutside(cl, order)
	if len(toReal) == cl.Size() {
		return s.pol.place.Place(&s.rand, order)
	}
	if len(toReal) == 0 {
		return make([][]int, len(order))
	}
	view, err := cluster.NewSized(sizes)
	if err != nil {
		s.log.Error("round: building the placer's view", "err", err)
		return make([][]int, len(order))
	}
	for i := range view.Nodes {
		view.Nodes[i].Name = names[i]
	}
	env := policy.Env{Cluster: view, Rand: s.rand.Rand, Scores: s.viewScores(toReal)}
	held := make([][]int, len(order))
	defer func() {
		for i, j := range order {
			if held[i] != nil {
				j.GPUsHeld = held[i]
			}
		}
	}()
	for i, j := range order {
		if j.GPUsHeld == nil {
			continue
		}
		held[i] = j.GPUsHeld
		v := make([]int, len(j.GPUsHeld))
		for k, g := range j.GPUsHeld {
			v[k] = toView[g]
		}
		_ = view.Assign(j.ID, v)
		j.GPUsHeld = v
	}
	alloc := s.pol.place.Place(&env, order)
	for i := range order {
		if alloc[i] == nil {
			continue
		}
		// toReal is increasing, so an ascending view list maps to an
		// ascending real one.
		r := make([]int, len(alloc[i]))
		for k, v := range alloc[i] {
			r[k] = toReal[v]
		}
		alloc[i] = r
	}
	return alloc
}

// viewScores is the round's scores for a view whose GPU v is the
// cluster's toReal[v] (nil without scores).
func (s *Scheduler) viewScores(toReal []int) *policy.Scores {
	if s.scores == nil {
		return nil
	}
	sc := &policy.Scores{LV: s.scores.LV}
	for c := range sc.SF {
		sc.SF[c] = make([]float64, len(toReal))
		for v, g := range toReal {
			sc.SF[c][v] = s.scores.SF[c][g]
		}
	}
	return sc
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// refusals finds the moves the round may not make: a gang with a bare
// pod is never migrated, and preempted only under preemptBarePods; a
// gang its budgets keep is never migrated, and preempted only when
// preemptPastBudgets admitted it and gangs of higher priority take its
// GPUs (pastBudgetTakers); a migration onto GPUs such a gang keeps is
// refused too. It returns the kept GPUs (by the gang that keeps them),
// the refused decisions, and the preemptions to carry out past the
// victim's budgets (by decision, the takers' names); with tell, each
// kept gang's pods are told why.
func (s *Scheduler) refusals(snap *snapshot, byJob map[*workload.Job]*gang, ds []round.Decision, tell bool) (map[int]string, map[int]bool, map[int]string) {
	kept := map[int]string{}
	refused := map[int]bool{}
	var past map[int]string
	for changed := true; changed; {
		changed = false
		for i, d := range ds {
			if refused[i] || (d.Kind != round.Preempt && d.Kind != round.Migrate) {
				continue
			}
			g := byJob[d.Job]
			var why string
			if !s.movable(g, d.Kind) {
				cause, budget := s.keptBy(g)
				whyNot := ""
				if d.Kind == round.Preempt && s.pastBudget[d.Job] {
					var takers string
					if takers, whyNot = s.pastBudgetTakers(snap, d, byJob); whyNot == "" {
						if past == nil {
							past = map[int]string{}
						}
						past[i] = takers
						continue
					}
					whyNot = "; " + whyNot
				}
				verb := "migrate"
				if d.Kind == round.Preempt && !budget {
					verb = "preempt (preemptBarePods is off)"
				} else if d.Kind == round.Preempt {
					verb = "preempt"
				}
				why = fmt.Sprintf("kept on %s: the %s placement would %s it, but %s%s",
					snap.Devices(d.From), s.pol.place.Name(), verb, cause, whyNot)
			} else if d.Kind == round.Migrate {
				for _, x := range d.To {
					if k := kept[x]; k != "" {
						why = fmt.Sprintf("kept on %s: the %s placement would migrate it to %s, which %s keeps", snap.Devices(d.From), s.pol.place.Name(), snap.Devices(d.To), k)
						break
					}
				}
			}
			if why == "" {
				continue
			}
			refused[i], changed = true, true
			for _, x := range d.From {
				kept[x] = gangName(g.Key)
			}
			if tell {
				s.note(g, why)
			}
		}
	}
	return kept, refused, past
}

// act hands the binder the launched gangs' binds and the preempted or
// migrated gangs' evictions. A move that would evict a bare pod it may
// not evict (see movable) is refused: the gang keeps its GPUs, and a
// launch or migration onto them waits.
func (s *Scheduler) act(snap *snapshot, byJob map[*workload.Job]*gang, order []*workload.Job, ds []round.Decision, start time.Time) {
	kept, refused, past := s.refusals(snap, byJob, ds, true)
	var byID map[int]*gang
	var pos map[int]int
	// GPUs of gangs evicted this round stay busy until their pods are
	// gone; a launch onto them waits for a later round (the kubelet would
	// otherwise see two pods on one device).
	vacating := map[int]string{}
	var tasks []*bind.Task
	// Each task is assumed in the state when it is made: were a panic
	// (recovered by Round) to skip handing them over, the assumed binds
	// would hold their devices, and the assumed evictions keep their
	// gangs leaving, for good. So they go to the binder however act ends.
	defer func() { s.submit(tasks) }()
	for i, d := range ds {
		if refused[i] || (d.Kind != round.Preempt && d.Kind != round.Migrate) {
			continue
		}
		if byID == nil {
			byID = make(map[int]*gang, len(snap.Gangs))
			for _, g := range snap.Gangs {
				if g.Job != nil {
					byID[g.Job.ID] = g
				}
			}
			pos = make(map[int]int, len(order))
			for i, j := range order {
				pos[j.ID] = i
			}
		}
		g := byJob[d.Job]
		why := s.reason(snap, d, byID, pos)
		// The restart costs what the placement weighed (lost progress,
		// paid once the gang runs again), as in pal sim --moves
		// evict-relaunch. Charged before evict, whose record of the
		// gang's work carries it.
		if d.Kind == round.Migrate {
			d.Job.Debt += d.Job.MoveCost.Migration
		} else {
			d.Job.Debt += d.Job.MoveCost.Preemption
		}
		var b string // the budgets a preemption past them overrides
		if past[i] != "" {
			b = s.budgets.blocks(g.Bound)
		}
		if b != "" {
			tasks = append(tasks, s.evictPastBudgets(g, why, b, past[i])...)
		} else {
			tasks = append(tasks, s.evict(g, why)...)
		}
		for _, x := range d.From {
			vacating[x] = gangName(g.Key)
		}
	}
	// A launch onto GPUs that are kept or still being vacated waits.
	if s.plan.claims == nil {
		s.plan.claims = map[int]bool{}
	}
	clear(s.plan.claims)
	for _, d := range ds {
		if d.Kind != round.Launch {
			continue
		}
		var busy []int
		var holders []string
		for _, x := range d.To {
			h := kept[x]
			if h == "" {
				h = vacating[x]
			}
			if h != "" {
				busy = append(busy, x)
				if !slices.Contains(holders, h) {
					holders = append(holders, h)
				}
			}
		}
		if len(busy) > 0 {
			g := byJob[d.Job]
			s.plan.claims[d.Job.ID] = true
			slices.Sort(holders)
			s.wait(g.Key, g.Pending, fmt.Sprintf("placed on %s, which %s still hold(s); binds once they are free", snap.Devices(busy), strings.Join(holders, ", ")))
		}
	}
	for _, d := range ds {
		if d.Kind != round.Launch {
			continue
		}
		g := byJob[d.Job]
		if slices.ContainsFunc(d.To, func(x int) bool { return vacating[x] != "" || kept[x] != "" }) {
			continue // told above
		}
		s.guard("bind", g, func() {
			parts := snap.Split(g, d.To)
			if parts == nil {
				// The placer's set does not split into whole pods per node;
				// pack by node instead from what is left free.
				if err := snap.Cluster.Release(d.Job.ID, d.To); err != nil {
					s.log.Error("round: release", "err", err)
					return
				}
				alt := snap.PackByNode(g, func(x int) bool { return vacating[x] != "" || kept[x] != "" })
				if alt == nil || snap.Cluster.Assign(d.Job.ID, alt) != nil {
					s.wait(g.Key, g.Pending, fmt.Sprintf("the %s set %v does not split into pods of %d GPUs per node, and no node-packed set is free", s.pol.place.Name(), d.To, g.Spec.GPUs))
					return
				}
				s.log.Info("placer's GPU set does not split into pods; packed by node", "gang", g.Key, "placer_set", d.To, "used", alt)
				d.To = alt
				parts = snap.Split(g, alt)
			}
			info := BindInfo{Gang: g.Key, Round: start.UTC().Format(time.RFC3339Nano), Pods: map[string]PodBind{}}
			if x := d.Job.Executed; x > 0 && !math.IsInf(x, 0) {
				info.Done = x // a gang moved, or placed again after a preemption
			}
			if x := d.Job.Attained; x > 0 && !math.IsInf(x, 0) {
				info.Attained = x
			}
			if w := s.wallOf(d.Job.Submit); w.Before(oldestPod(g.Pending).Add(-time.Millisecond)) {
				info.Arrived = w.UTC().Format(time.RFC3339Nano)
			}
			if x := d.Job.Debt; x > 0 && !math.IsInf(x, 0) {
				info.Debt = x
			}
			if x := d.Job.GPUService; x > 0 && !math.IsInf(x, 0) {
				info.Service = x
			}
			for i, p := range g.Pending {
				info.Pods[p.Name] = parts[i]
			}
			raw := mustJSON(info)
			slow := s.slowdown(snap, d.Job, d.To)
			head, promise := s.backfillRecord(d.Job, order, byJob, start)
			for i, p := range g.Pending {
				ann := s.th.annotate(g.Key, map[string]string{
					AnnGPUIndices: FormatIndices(parts[i].GPUs), AnnBindInfo: raw, AnnSlowdown: fmtFloat(slow),
				})
				if head != "" {
					ann[AnnBackfillHead] = head
					if promise != "" {
						ann[AnnBackfillPromise] = promise
					}
				}
				tasks = append(tasks, s.bindTask(p, parts[i].Node, ann, g.Key))
			}
			delete(s.lastWhy, g.Key)
		})
	}
}

// complete binds the missing members of a gang whose binding a crash cut
// off, as its bind-info recorded. Recorded slots whose pod is gone go to
// the gang's unbound pods in name order. If the record cannot be
// followed (no bind-info, or a slot's devices are taken), the bound
// members are evicted so the whole gang queues again (under Themis, once
// their lease ends: evictPartial). A Job whose parallelism was raised
// while its pods run is such a gang: its new pod has no slot recorded.
func (s *Scheduler) complete(snap *snapshot, g *gang, start time.Time) {
	var info *BindInfo
	for _, p := range g.Bound {
		if bi, err := ParseBindInfo(p.Annotations[AnnBindInfo]); err == nil && bi.Gang == g.Key {
			info = bi
			break
		}
	}
	if info == nil || len(info.Pods) != g.Spec.Size {
		s.evictPartial(g, start, "partly bound without a usable "+AnnBindInfo+" for all its pods")
		return
	}
	raw := mustJSON(info)
	used := map[string]bool{}
	for _, p := range g.Bound {
		used[p.Name] = true
	}
	for _, n := range g.Finished {
		used[n] = true
	}
	// A bound member the record does not name took a vanished member's
	// slot when the gang was completed before: it holds that slot (by its
	// node and devices), which is not free for another.
	for _, p := range g.Bound {
		if _, ok := info.Pods[p.Name]; ok {
			continue
		}
		for name, pb := range info.Pods {
			if !used[name] && pb.Node == p.Spec.NodeName && FormatIndices(pb.GPUs) == p.Annotations[AnnGPUIndices] {
				used[name] = true
				break
			}
		}
	}
	var free []string // recorded slots of members that vanished (deleted, to be recreated)
	for name := range info.Pods {
		if !used[name] {
			free = append(free, name)
		}
	}
	slices.Sort(free)
	var todo []*corev1.Pod
	var slots []PodBind
	var rest []*corev1.Pod
	for _, p := range g.Pending {
		if pb, ok := info.Pods[p.Name]; ok && !used[p.Name] {
			todo, slots = append(todo, p), append(slots, pb)
			free = slices.DeleteFunc(free, func(n string) bool { return n == p.Name })
		} else {
			rest = append(rest, p)
		}
	}
	for i, p := range rest {
		if i < len(free) {
			todo, slots = append(todo, p), append(slots, info.Pods[free[i]])
		}
	}
	// Members still to be made again (a Job's controller recreates a
	// deleted pod after its backoff): their recorded devices stay the
	// gang's meanwhile, else another gang bound on them would leave the
	// new member's slot taken and the whole gang evicted.
	var missing []string
	if len(rest) < len(free) {
		missing = free[len(rest):]
	}
	// A gang of bare pods has no controller to make its missing members
	// again: their slots are not held (they were, until its other pods
	// ended, for a pod nothing would make), and it says so. A member the
	// user makes again is bound on its slot if that is still free.
	bare := len(g.BarePods()) == len(g.Bound)
	if bare {
		missing = nil
	}
	if len(todo) == 0 {
		s.holdSlots(snap, g, info, missing)
		msg := fmt.Sprintf("gang partly bound (%d of %d): waits for its missing pods to be recreated", len(g.Bound), g.Spec.Size)
		if bare {
			msg = fmt.Sprintf("gang partly bound (%d of %d): its pods are bare, so nothing makes its missing pods (%s) again; their GPUs are free to other gangs, and its other pods run on. Create them again to complete it, or delete the gang's pods to queue it again", len(g.Bound), g.Spec.Size, strings.Join(free, ", "))
			if s.lastWhy[g.Key] != msg {
				// No pod of it waits to carry a FailedScheduling event:
				// its running pods say it, once.
				for _, p := range g.Bound {
					s.events.post(podRef(p), corev1.EventTypeWarning, ReasonIncomplete, "Scheduling", msg)
				}
			}
		}
		s.wait(g.Key, nil, msg)
		return
	}
	for i := range todo {
		n, ok := snap.NodeIndex[slots[i].Node]
		if !ok {
			s.evictPartial(g, start, "partly bound, and its recorded node "+slots[i].Node+" "+s.whyUnusable(slots[i].Node))
			return
		}
		if why := notAllowedOn(todo[i], s.state.Node(slots[i].Node)); why != "" {
			// Tainted or relabelled since: binding the new member there
			// would defy what the operator set, as on a cordoned node.
			s.evictPartial(g, start, "partly bound, and pod "+todo[i].Name+" "+why)
			return
		}
		glob := make([]int, len(slots[i].GPUs))
		for k, x := range slots[i].GPUs {
			if x < 0 || x >= len(snap.Cluster.Nodes[n].GPUs) {
				s.evictPartial(g, start, "partly bound, and its recorded devices "+slots[i].Node+" GPUs "+FormatIndices(slots[i].GPUs)+" are beyond the node")
				return
			}
			glob[k] = snap.First[n] + x
		}
		if err := snap.Cluster.Assign(g.Job.ID, glob); err != nil {
			s.evictPartial(g, start, "partly bound, and its recorded devices "+slots[i].Node+" GPUs "+FormatIndices(slots[i].GPUs)+" are taken")
			return
		}
	}
	s.holdSlots(snap, g, info, missing)
	s.log.Info("completing a gang cut off by a crash", "gang", g.Key, "bound", len(g.Bound), "binding", len(todo))
	tasks := make([]*bind.Task, 0, len(todo))
	for i, p := range todo {
		ann := map[string]string{AnnGPUIndices: FormatIndices(slots[i].GPUs), AnnBindInfo: raw}
		for _, k := range []string{AnnSlowdown, AnnBackfillHead, AnnBackfillPromise} {
			if v := g.Bound[0].Annotations[k]; v != "" {
				ann[k] = v
			}
		}
		tasks = append(tasks, s.bindTask(p, slots[i].Node, ann, g.Key))
	}
	s.submit(tasks)
}

// holdSlots keeps the recorded devices of gang g's vanished members
// (names) out of this round's plan: they are free on the owner table
// while no pod holds them, but the member made again will be bound on
// them. Devices already taken, or on a node the round does not have, are
// left as they are (the member's bind then finds its slot unusable).
func (s *Scheduler) holdSlots(snap *snapshot, g *gang, info *BindInfo, names []string) {
	if snap.Cluster == nil {
		return
	}
	for _, name := range names {
		pb := info.Pods[name]
		n, ok := snap.NodeIndex[pb.Node]
		if !ok {
			continue
		}
		glob := make([]int, 0, len(pb.GPUs))
		for _, x := range pb.GPUs {
			if x >= 0 && x < len(snap.Cluster.Nodes[n].GPUs) {
				glob = append(glob, snap.First[n]+x)
			}
		}
		if len(glob) == len(pb.GPUs) {
			snap.Cluster.TryAssign(g.Job.ID, glob)
		}
	}
}

// whyUnusable says why the round has no GPUs of a node. A node that is
// cordoned or has a taint of the node lifecycle's still runs its pods but takes no new ones, and its
// devices lie outside the round's cluster, so a slot recorded there is
// never bound: the operator keeps new work off it (a drain, a benchmark)
// and what holds its GPUs is not known.
func (s *Scheduler) whyUnusable(name string) string {
	n := s.state.Node(name)
	switch {
	case n == nil:
		return "is gone"
	case n.Spec.Unschedulable:
		return "is cordoned (unschedulable)"
	case NodeGPUs(n) == 0:
		return "offers no " + string(ResourceGPU)
	}
	for _, t := range n.Spec.Taints {
		if state.KeepsOff(t) && state.SystemTaint(t.Key) {
			return "has taint " + t.Key + ":" + string(t.Effect)
		}
	}
	return "is not usable"
}

// evictPartial evicts the bound members of a gang that a crash cut off
// and that cannot be completed, so that the whole gang queues again once
// its controller recreates them. Bare pods would be lost, so a gang with
// one is evicted only under preemptBarePods; otherwise it waits, saying
// what to do. Under Themis a gang whose lease has not ended keeps its
// GPUs until it ends (leases are never revoked early): its pending
// members wait, told so, and the round at or after the lease's end
// evicts it.
func (s *Scheduler) evictPartial(g *gang, start time.Time, why string) {
	if end := s.th.leasedUntil(g, start); !end.IsZero() {
		s.wait(g.Key, g.Pending, fmt.Sprintf("%s %s; its bound pods keep their GPUs until their Themis lease ends at %s (leases are never revoked early), then the gang is evicted to be placed again whole",
			gangName(g.Key), why, end.UTC().Format(time.RFC3339)))
		return
	}
	if bare := g.BarePods(); len(bare) > 0 && !s.cfg.PreemptBarePods {
		s.wait(g.Key, g.Pending, fmt.Sprintf("%s %s; its bare pods %s are not evicted, since nothing would recreate them: delete them to queue the gang again",
			gangName(g.Key), why, strings.Join(bare, ", ")))
		return
	}
	if r := s.refusedEv.blocks(g.Bound, start); r != "" {
		s.wait(g.Key, g.Pending, fmt.Sprintf("%s %s; its bound pods are not evicted yet: %s", gangName(g.Key), why, r))
		return
	}
	if lost := s.jobsAtRisk(g.Bound); len(lost) > 0 && !s.cfg.PreemptBarePods {
		s.wait(g.Key, g.Pending, fmt.Sprintf("%s %s; its bound pods are not evicted, since %s: delete them to queue the gang again",
			gangName(g.Key), why, strings.Join(lost, "; ")))
		return
	}
	s.submit(s.evict(g, gangName(g.Key)+" "+why+"; evicting its bound pods to queue it again whole"))
}

// evict turns a gang's eviction into tasks for the binder, one per bound
// member, each assumed evicted at once; the pods' controller recreates
// them and they queue again. Callers check that the gang may be evicted
// (movable, evictPartial).
func (s *Scheduler) evict(g *gang, why string) []*bind.Task {
	return s.evictAs(g, why, bind.Evict, "")
}

// evictAs is evict with the tasks' kind: bind.Evict, or bind.Delete
// (with the DisruptionTarget condition's message target) for a
// preemption past the gang's budgets.
func (s *Scheduler) evictAs(g *gang, why string, kind bind.Kind, target string) []*bind.Task {
	var names []string
	for _, p := range g.Bound {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	s.log.Info("evicting gang", "gang", gangName(g.Key), "pods", strings.Join(names, ","), "why", why)
	s.learnEvicted(g.Key)
	s.th.evicted(g)
	if j := g.Job; j != nil {
		if uid := controllerUID(g.Bound); uid != "" {
			now := time.Now()
			s.evictedWork[workKey(g.Key, g.Bound)] = evictedWork{executed: j.Executed, attained: j.Attained, service: j.GPUService,
				owner: uid, at: now, seen: now, saved: now, arrived: s.wallOf(j.Submit), debt: j.Debt, bound: boundRound(g.Bound)}
			s.evicted.dirty = true
		}
	}
	s.markDisrupted(g, why)
	var tasks []*bind.Task
	now := time.Now()
	for _, p := range g.Bound {
		if p.DeletionTimestamp != nil {
			continue
		}
		seq := s.state.AssumeEvicted(p, now)
		tasks = append(tasks, &bind.Task{Kind: kind, Pod: p, Seq: seq, Gang: g.Key, Reason: why, Target: target})
	}
	return tasks
}

// stillArriving reports a gang whose pods are still being created and
// whose oldest pod is younger than a period: a controller or a user
// creates a gang's pods one request at a time, and telling each member
// why it waits as the count grows would post one event per pod per new
// member for nothing. kube-scheduler is as quiet about a gang under its
// minimum count. Past a period the gang is told, since a member that
// does not come is then worth a look.
func (s *Scheduler) stillArriving(g *state.Gang, now time.Time) bool {
	if len(g.Bound) > 0 || len(g.Pending) == 0 || len(g.Pending) >= g.Spec.Size {
		return false
	}
	return now.Sub(oldestPod(g.Pending)) < s.cfg.Period.Duration
}

// wait tells a waiting gang's pods why, once per distinct reason.
func (s *Scheduler) wait(key string, pods []*corev1.Pod, why string) {
	if s.lastWhy[key] == why {
		return
	}
	s.lastWhy[key] = why
	for _, p := range pods {
		s.events.post(podRef(p), corev1.EventTypeWarning, ReasonFailedScheduling, "Scheduling", why)
	}
	s.log.Info("waiting", "gang", gangName(key), "why", why)
}

// note tells a running gang's pods that a move was refused, once per
// distinct reason.
func (s *Scheduler) note(g *gang, why string) {
	s.noteOn(g, g.Bound, "move refused", why)
}

// noteOn is note with the pods told and the log's message given: a gang
// kept out of every round's plan from the start (a Job an eviction
// would fail) tells its first pod only, since at a restart every such
// gang says it at once, in the event queue that Scheduled events share.
func (s *Scheduler) noteOn(g *gang, pods []*corev1.Pod, msg, why string) {
	if s.lastWhy[g.Key] == why {
		return
	}
	s.lastWhy[g.Key] = why
	for _, p := range pods {
		s.events.post(podRef(p), corev1.EventTypeNormal, ReasonKept, "Keeping", why)
	}
	s.log.Info(msg, "gang", gangName(g.Key), "why", why)
}

// cleanWhy forgets the reasons of gangs and pods that left.
func (s *Scheduler) cleanWhy(snap *snapshot) {
	for _, g := range snap.Removed {
		delete(s.lastWhy, g.Key)
	}
	if len(s.lastWhy) == 0 || snap.Generation == s.whyGen && len(s.lastWhy) <= s.whyLen {
		return // nothing left since the last look
	}
	defer func() { s.whyGen, s.whyLen = snap.Generation, len(s.lastWhy) }()
	bad := make(map[string]bool, len(snap.Bad))
	for _, b := range snap.Bad {
		bad[b.Pod.Namespace+"/pod:"+b.Pod.Name] = true
	}
	for k := range s.lastWhy {
		if snap.ByKey[k] == nil && !bad[k] {
			delete(s.lastWhy, k)
		}
	}
}

// creditBound credits j, gang g's job, at least what g's first bound
// pod's pal.io/bind-info tells of its run by at: the work, attained
// service and GPU service before that bind (Done, Attained, Service)
// plus the time since it (in job time: wall seconds times timeScale), at
// perIter seconds an iteration (the caller's: its GPUs' pace; no work
// is credited for the time without it), on its GPUs. It is what a
// scheduler that did not see the bind (a restart, another leader)
// credits at least. A gang with no bind-info, or a figure not finite and
// >= 0, gets nothing from it, and a bind dated after at no time since.
func (s *Scheduler) creditBound(g *gang, j *workload.Job, at time.Time, perIter float64) {
	if len(g.Bound) == 0 {
		return
	}
	bi, err := ParseBindInfo(g.Bound[0].Annotations[AnnBindInfo])
	if err != nil {
		return
	}
	since := 0.0
	if t, err := time.Parse(time.RFC3339Nano, bi.Round); err == nil && t.Before(at) {
		since = at.Sub(t).Seconds() * s.cfg.TimeScale
	}
	known := func(v float64) float64 {
		if v > 0 && !math.IsInf(v, 0) {
			return v
		}
		return 0
	}
	// The restart cost the gang owed at its bind is paid first, as
	// Progress pays it.
	debt := known(bi.Debt)
	if perIter > 0 {
		j.Executed = math.Max(j.Executed, known(bi.Done)+math.Max(since-debt, 0)/perIter)
	}
	j.Debt = math.Max(debt-since, 0)
	j.Attained = math.Max(j.Attained, known(bi.Attained)+since)
	j.GPUService = math.Max(j.GPUService, known(bi.Service)+since*float64(j.GPUs))
	if w, err := time.Parse(time.RFC3339Nano, bi.Arrived); err == nil {
		if r, err := time.Parse(time.RFC3339Nano, bi.Round); err == nil && !w.After(r) {
			j.Submit = math.Min(j.Submit, s.clockOf(w)) // not after the bind: a gang arrives before it is placed
		}
	}
}

// oldestPod is the creation time of the oldest of pods (zero for none).
func oldestPod(pods []*corev1.Pod) time.Time {
	var t time.Time
	for _, p := range pods {
		if c := p.CreationTimestamp.Time; t.IsZero() || c.Before(t) {
			t = c
		}
	}
	return t
}

// slowdown is the simulator's slowdown of a job on gpus: its slowest GPU
// times the locality penalty when the GPUs span nodes.
func (s *Scheduler) slowdown(snap *snapshot, j *workload.Job, gpus []int) float64 {
	pm := 1.0
	if s.raw != nil {
		v := s.raw.Values[j.Class]
		pm = v[gpus[0]]
		for _, g := range gpus[1:] {
			pm = math.Max(pm, v[g])
		}
	}
	if snap.Cluster.SpansNodes(gpus) {
		return pm * s.cfg.LocalityPenalty
	}
	return pm
}

// meanScore is the mean binned PM-score over the GPUs of every placed job
// (lower is faster; 0 when there are no scores).
func (s *Scheduler) meanScore(order []*workload.Job, alloc [][]int) float64 {
	if s.scores == nil {
		return 0
	}
	sum, n := 0.0, 0
	for i, j := range order {
		sf := s.scores.SF[j.Class]
		for _, g := range alloc[i] {
			sum += sf[g]
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// evictedWork is what a gang had been credited when this scheduler
// evicted it. Its controller makes its pods again, but a Job's only after
// its failure backoff (10 s, doubling): rounds run meanwhile with no pod
// of the gang, the state forgets it, and its new pods would make a new
// job that had run nothing: its new bind-info would record no done, and
// LAS would read it as never served.
type evictedWork struct {
	executed, attained, service float64
	owner                       types.UID // the pods' controller
	at                          time.Time // when it was evicted
	// seen is when the gang was last seen waiting (at until it is), and
	// the record is dropped evictedWorkKept after it; saved is the seen
	// the ConfigMap holds, written again once evictedSeenSaved old.
	seen, saved time.Time
	// arrived is when the gang arrived (its job's Submit; zero: not
	// known). The pods its controller makes again are younger, and a
	// gang is as old as its oldest pod, so without it an evicted gang
	// went to the back of FIFO's line (and behind every gang that came
	// after it in a Tiresias queue) once the scheduler had forgotten it
	// for want of pods, or was restarted.
	arrived time.Time
	// debt is the restart cost the gang still owes (job seconds without
	// progress once it runs again: its moves' checkpoint-restarts).
	debt float64
	// promise is the start backfill promised the gang as a waiting head
	// while it had no pending pod to record it on (writePromises).
	promise time.Time
	// bound is the round that last bound the gang before its eviction
	// (its pods' bind-info; zero: not known): a gang backfilled past it
	// at an earlier round jumped a head that has run since, and its
	// record is spent (staleRecord).
	bound time.Time
}

// boundRound is the round that bound pods (the first readable bind-info's;
// zero: none).
func boundRound(pods []*corev1.Pod) time.Time {
	for _, p := range pods {
		bi, err := ParseBindInfo(p.Annotations[AnnBindInfo])
		if err != nil {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, bi.Round); err == nil {
			return t
		}
	}
	return time.Time{}
}

// wallOf is the wall time of a time on the jobs' clock (a Submit).
func (s *Scheduler) wallOf(t float64) time.Time {
	return time.Unix(0, int64(math.Round((t+s.epoch)*1e9)))
}

// clockOf is wallOf's inverse.
func (s *Scheduler) clockOf(w time.Time) float64 {
	return float64(w.UnixNano())/1e9 - s.epoch
}

// evictedSeenSaved is how stale the ConfigMap's seen of a record may get
// before a sighting is written: a write every round for each waiting
// gang would cost more than a record kept 10 minutes longer.
const evictedSeenSaved = 10 * time.Minute

// evictedWorkKept is how long an evicted gang's record is kept after
// the gang was last seen waiting (or evicted): a Job's backoff is at
// most 6 minutes, so a gang not seen for this long is gone.
const evictedWorkKept = time.Hour

// resumeEvicted credits a queued gang that this scheduler, or another
// leader before it, evicted, and whose record the state does not hold
// (it forgot the gang while it had no pod, or this scheduler is new),
// with the work it had been credited, when its pods have the controller
// the evicted ones had (a Job deleted and submitted again under its
// name starts over). The record stays while the gang waits, so that a
// restart before it runs again finds it too, and goes once it is bound
// (its bind-info then carries the work) or its pods have another
// controller; one not seen for evictedWorkKept is dropped (Round).
func (s *Scheduler) resumeEvicted(g *gang) {
	pods := g.Pending
	if len(pods) == 0 {
		pods = g.Bound
	}
	k := workKey(g.Key, pods)
	e, ok := s.evictedWork[k]
	if !ok {
		return
	}
	if len(g.Bound) > 0 || controllerUID(pods) != e.owner {
		// Bound (by this term, another or another leader, which
		// recorded the work in its bind-info's done: crediting the
		// record too would count it twice), or not the gang evicted.
		delete(s.evictedWork, k)
		s.evicted.dirty = true
		return
	}
	j := g.Job
	if !e.arrived.IsZero() {
		j.Submit = math.Min(j.Submit, s.clockOf(e.arrived))
	}
	if now := time.Now(); now.Sub(e.saved) > evictedSeenSaved {
		e.seen, e.saved = now, now
		s.evicted.dirty = true
		s.evictedWork[k] = e
	} else {
		e.seen = now
		s.evictedWork[k] = e
	}
	if j.Executed > 0 || j.Attained > 0 {
		return // kept by the state: its work is its own
	}
	j.Executed, j.Attained, j.GPUService, j.Debt = e.executed, e.attained, e.service, e.debt
	if len(g.Bound) == 0 {
		// Back after a round or more without pods (its controller's
		// failure backoff, its old pods' termination): the placer forgot
		// its promise and the gangs backfilled past it then (the head was
		// gone), which a restart now would restore from the pods and
		// this record. Read them back this round, as a restart does.
		s.restoreBackfill = true
	}
}

// workKey is what an evicted gang's work is kept by: its gang key, but
// for a one-pod gang of a batch Job (a Job of parallelism 1, whose pods
// are gangs of their own, namespace/pod:NAME) its Job's UID, since the
// pod the Job makes again has another name, and so another gang key.
// Such a Job runs one pod at a time, so the next pod that gang's Job
// makes after the eviction is the one that goes on with its work.
func workKey(key string, pods []*corev1.Pod) string {
	if len(pods) == 0 || !strings.Contains(key, "/pod:") {
		return key
	}
	if ref := metav1.GetControllerOfNoCopy(pods[0]); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
		return "job-uid:" + string(ref.UID)
	}
	return key
}

// controllerUID is the UID of the controller of pods' first pod ("" for
// none: a bare pod is not made again).
func controllerUID(pods []*corev1.Pod) types.UID {
	if len(pods) == 0 {
		return ""
	}
	if ref := metav1.GetControllerOfNoCopy(pods[0]); ref != nil {
		return ref.UID
	}
	return ""
}
