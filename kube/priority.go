package kube

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Pod priority: the API server's priority admission writes each pod's
// spec.priority (and spec.preemptionPolicy) from its PriorityClass. As
// in kube-scheduler, a gang of higher priority is placed before every
// gang of lower priority, whatever the policy says: the policy (FIFO,
// LAS, SRTF, Tiresias) orders the gangs within one priority only. So a
// waiting gang of higher priority takes GPUs from running gangs of lower
// priority, when it needs them, and a gang of lower priority never takes
// them from one of higher priority, which is kube-scheduler's rule of
// preemption. PAL's rounds carry it out as they carry out the policy's
// own preemptions: through the Eviction API, never for a gang that would
// lose work or that a disruption budget keeps (but, under
// preemptPastBudgets, for a gang of higher priority: budgets_past.go).
//
// A waiting gang whose PriorityClass says preemptionPolicy: Never goes
// ahead of waiting gangs of lower priority but of no running gang: it is
// placed after the last running gang of its priority or lower, so it
// takes only what they leave free, and the policy cannot preempt for it
// either (a FIFO gang it waited behind, or a gang LAS served longer).
// Nor does it take GPUs the last round had vacated for another gang of
// its priority or lower (which binds on them once they are free), as
// kube-scheduler's nominated pods keep theirs.
//
// With every gang at one priority (the usual cluster: no PriorityClass,
// priority 0) the order is the policy's, unchanged. Under Themis the
// auction, not an order, hands out GPUs: pod priority is not read there
// (a warning says so once). Forecasts order by pod priority, then the
// policy, and place a waiting Never gang, as the round does (tiered);
// they know no GPUs vacated for a gang, the round's claims.

// tierEnt is a job of the round's order with what byPodPriority sorts by.
type tierEnt struct {
	prio  int32
	pos   int // its place: twice its index, or just after a gang it waits behind
	never bool
	// shield: a running gang preemptPastBudgets let into the order
	// although its budgets refuse its eviction; it goes ahead of the
	// other gangs of its priority, so that those are preempted first.
	shield bool
	j      *workload.Job
}

// gangPriority is a gang's pod priority: the highest of its pods' (the
// pods of a controller's gang share one template; a gang of bare pods is
// as urgent as its most urgent pod), 0 for pods without one; and whether
// a waiting pod of it says preemptionPolicy: Never.
func gangPriority(g *gang) (prio int32, never bool) {
	first := true
	for _, ps := range [2][]*corev1.Pod{g.Pending, g.Bound} {
		for _, p := range ps {
			var v int32
			if p.Spec.Priority != nil {
				v = *p.Spec.Priority
			}
			if first || v > prio {
				prio, first = v, false
			}
		}
	}
	return prio, saysNever(g.Pending)
}

// saysNever reports whether a pod of pods says preemptionPolicy: Never.
func saysNever(pods []*corev1.Pod) bool {
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
		pp := p.Spec.PreemptionPolicy
		return pp != nil && *pp == corev1.PreemptNever
	})
}

// byPodPriority rearranges the policy's order by pod priority (see
// above); an order whose gangs share one priority, none of them waiting
// under preemptionPolicy: Never, comes back as it was.
func (s *Scheduler) byPodPriority(order []*workload.Job, byJob map[*workload.Job]*gang) []*workload.Job {
	es := s.plan.tiers[:0]
	mixed, never := false, false
	for i, j := range order {
		p, nv := gangPriority(byJob[j])
		nv = nv && !j.Running()
		es = append(es, tierEnt{prio: p, pos: 2 * i, never: nv, shield: len(s.pastBudget) > 0 && s.pastBudget[j], j: j})
		mixed = mixed || p != es[0].prio
		never = never || nv
	}
	defer func() {
		for i := range es {
			es[i].j = nil
		}
		s.plan.tiers = es[:0]
	}()
	s.plan.tiered = mixed || never
	if !s.plan.tiered {
		return order
	}
	if s.th != nil {
		if mixed && !s.warnedThemisPriority {
			s.warnedThemisPriority = true
			s.log.Warn("pods of different priorities (spec.priority): under themis the auction hands out GPUs by finish-time fairness, and pod priority is not read")
		}
		return order
	}
	slices.SortStableFunc(es, func(a, b tierEnt) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		return cmp.Compare(b2i(b.shield), b2i(a.shield))
	})
	if never {
		behindHolders(es, func(j *workload.Job) bool { return j.Running() || s.plan.claims[j.ID] })
	}
	for i := range es {
		order[i] = es[i].j
	}
	return order
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// behindHolders moves each waiting gang under preemptionPolicy: Never in
// es (sorted by priority) just behind the last gang of its priority or
// lower that holds GPUs (holds: running, or about to bind on GPUs the
// last round vacated for it), so that it takes only what they leave.
func behindHolders(es []tierEnt, holds func(*workload.Job) bool) {
	for i := range es {
		es[i].pos = 2 * i
	}
	for i := range es {
		if !es[i].never {
			continue
		}
		for k := len(es) - 1; k > i; k-- {
			if es[k].prio <= es[i].prio && holds(es[k].j) {
				es[i].pos = 2*k + 1 // just behind it
				break
			}
		}
	}
	slices.SortStableFunc(es, func(a, b tierEnt) int { return cmp.Compare(a.pos, b.pos) })
}

// tierWalk says, for the waiting gangs of a tiered order taken in
// turn, what of their place pod priority decided: the gangs of higher
// priority ahead, or the gangs of its priority or lower, running or
// about to bind, that preemptionPolicy: Never keeps ahead. It counts as it walks (one pass
// over the order, times the few priorities a cluster has).
type tierWalk struct {
	order  []*workload.Job
	byJob  map[*workload.Job]*gang
	next   int
	seen   []tierCount // by priority, the gangs before next
	off    bool
	claims map[int]bool // planner.claims
}

type tierCount struct {
	prio             int32
	gangs, runningOf int
}

func (s *Scheduler) tierWalk(order []*workload.Job, byJob map[*workload.Job]*gang) *tierWalk {
	return &tierWalk{order: order, byJob: byJob, off: !s.plan.tiered || s.th != nil, claims: s.plan.claims}
}

// why is the text for order[i]; calls come with i increasing.
func (w *tierWalk) why(i int) string {
	if w.off {
		return ""
	}
	for ; w.next < i; w.next++ {
		j := w.order[w.next]
		q, _ := gangPriority(w.byJob[j])
		k := slices.IndexFunc(w.seen, func(c tierCount) bool { return c.prio == q })
		if k < 0 {
			w.seen, k = append(w.seen, tierCount{prio: q}), len(w.seen)
		}
		w.seen[k].gangs++
		if j.Running() || w.claims[j.ID] {
			w.seen[k].runningOf++
		}
	}
	p, never := gangPriority(w.byJob[w.order[i]])
	higher, lowerRunning := 0, 0
	for _, c := range w.seen {
		if c.prio > p {
			higher += c.gangs
		} else {
			lowerRunning += c.runningOf
		}
	}
	why := fmt.Sprintf("; pod priority %d", p)
	if higher > 0 {
		why += fmt.Sprintf(": %d gang(s) of higher priority go first", higher)
	}
	if never && lowerRunning > 0 {
		why += fmt.Sprintf("; its preemptionPolicy Never keeps it behind %d running gang(s) of its priority or lower", lowerRunning)
	}
	return why
}

// tierSpan separates two pod-priority ranks in a tiered key: a policy's
// own priorities are below it (999, and 1 once the starvation guard
// raised a job).
const tierSpan = 1000

// tieredKeys is a keyed scheduler whose keys put a job's pod-priority
// rank before the policy's own priority, so that a forecast's simulation
// orders as the round does: by pod priority, then by the policy, with
// the starvation guard raising a job within its priority only. Ranks,
// not priorities, keep the keys within the simulator's 32-bit priority.
type tieredKeys struct {
	policy.KeyedScheduler
	rank map[int]int // job id -> rank among the priorities present, 0 the highest
}

func (t tieredKeys) Key(now float64, j *workload.Job) policy.OrderKey {
	return t.lift(t.KeyedScheduler.Key(now, j), j)
}

func (t tieredKeys) PeekKey(now float64, j *workload.Job) policy.OrderKey {
	return t.lift(t.KeyedScheduler.PeekKey(now, j), j)
}

func (t tieredKeys) lift(k policy.OrderKey, j *workload.Job) policy.OrderKey {
	k.Priority += t.rank[j.ID] * tierSpan
	return k
}

// Steady and Fixed are the policy's: a rank never changes with time or
// service. Forget passes a finished job on (Tiresias keeps its queue).
func (t tieredKeys) Steady() bool {
	st, ok := t.KeyedScheduler.(policy.Steady)
	return ok && st.Steady()
}

func (t tieredKeys) Fixed() bool {
	f, ok := t.KeyedScheduler.(policy.Fixed)
	return ok && f.Fixed()
}

func (t tieredKeys) Forget(id int) { forgetIn(t.KeyedScheduler, id) }

// forgetIn passes a finished job on to a scheduler that keeps state of
// it (Tiresias' queue).
func forgetIn(s policy.Scheduler, id int) {
	if f, ok := s.(interface{ Forget(id int) }); ok {
		f.Forget(id)
	}
}

// Order is Key for every job, then a stable sort, as KeyedScheduler says.
func (t tieredKeys) Order(now float64, jobs []*workload.Job) []*workload.Job {
	type ent struct {
		k policy.OrderKey
		j *workload.Job
	}
	es := make([]ent, len(jobs))
	for i, j := range jobs {
		es[i] = ent{t.Key(now, j), j}
	}
	slices.SortStableFunc(es, func(a, b ent) int { return a.k.Compare(b.k) })
	for i := range es {
		jobs[i] = es[i].j
	}
	return jobs
}

// tiered is sched for a forecast of order: itself when the order's gangs
// share one pod priority and none says preemptionPolicy: Never (or sched
// is not keyed); else tieredKeys over the priorities present, and if a
// gang says Never, neverBehind over that.
func tiered(sched policy.Scheduler, order []*workload.Job, byJob map[*workload.Job]*gang) policy.Scheduler {
	ks, ok := sched.(policy.KeyedScheduler)
	if !ok || len(order) == 0 {
		return sched
	}
	prio := make(map[int]int32, len(order))
	never := map[int]bool{}
	var levels []int32
	for _, j := range order {
		g := byJob[j]
		if g == nil {
			continue
		}
		p, _ := gangPriority(g)
		prio[j.ID] = p
		if !slices.Contains(levels, p) {
			levels = append(levels, p)
		}
		// Any pod of the gang, running or not: a running gang the
		// forecast preempts waits under its class's policy too.
		if saysNever(g.Pending) || saysNever(g.Bound) {
			never[j.ID] = true
		}
	}
	out := sched
	if len(levels) > 1 {
		slices.Sort(levels)
		slices.Reverse(levels)
		rank := make(map[int]int, len(prio))
		for id, p := range prio {
			rank[id] = slices.Index(levels, p)
		}
		out = tieredKeys{ks, rank}
	}
	if len(never) > 0 {
		// Not keyed: which gangs hold GPUs, which a Never gang's place
		// depends on, changes as the forecast runs, and a keyed
		// scheduler's keys change only with a job's own service.
		return &neverBehind{Scheduler: out, prio: prio, never: never}
	}
	return out
}

// neverBehind is a forecast's order with gangs under preemptionPolicy:
// Never placed as the round places them (behindHolders), each time they
// wait: the order of its Scheduler (the policy's, tiered by pod
// priority), then every waiting Never gang behind the last running gang
// of its priority or lower.
type neverBehind struct {
	policy.Scheduler
	prio  map[int]int32
	never map[int]bool
	es    []tierEnt
}

func (n *neverBehind) Order(now float64, jobs []*workload.Job) []*workload.Job {
	jobs = n.Scheduler.Order(now, jobs)
	es := n.es[:0]
	moved := false
	for i, j := range jobs {
		nv := n.never[j.ID] && !j.Running()
		es = append(es, tierEnt{prio: n.prio[j.ID], pos: 2 * i, never: nv, j: j})
		moved = moved || nv
	}
	if moved {
		behindHolders(es, (*workload.Job).Running)
		for i := range es {
			jobs[i] = es[i].j
		}
	}
	clear(es)
	n.es = es[:0]
	return jobs
}

// Forget passes a finished job on (Tiresias keeps its queue).
func (n *neverBehind) Forget(id int) { forgetIn(n.Scheduler, id) }
