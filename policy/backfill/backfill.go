// Package backfill lets jobs start behind a gang that waits.
//
// Every placer of package place walks the scheduler's order and stops at
// the first job that does not fit: no job starts behind one that waits.
// That keeps a big gang from starving, but the GPUs it cannot use yet sit
// idle until enough of them are free, even when a short job could run on
// them and be gone in time. A backfill placer wraps any placer and, after
// it has answered, fills the GPUs it left idle:
//
//   - none: the base placer's answer unchanged (strict order).
//   - easy: EASY backfill, as in Slurm. The first job in the order that
//     got no GPUs (the head) gets a reservation: the earliest time at
//     which enough GPUs are free for the base placer to place it, reading
//     the remaining run time of every job that holds GPUs, and the GPUs
//     the base placer would give it then. A job behind the head starts
//     now only on GPUs outside the reservation, or on reserved GPUs if it
//     is estimated to finish by the reservation's time. With exact
//     estimates the head therefore starts no later than it would have in
//     strict order.
//   - greedy: every job behind the head that fits starts, with no
//     reservation: the yardstick that shows what the reservation costs.
//
// In both backfill modes a running job behind the head that the base
// placer stopped (a non-sticky placer re-plans only up to the head; a
// sticky one suspends jobs from the tail for a head that still does not
// fit) keeps its GPUs when nothing placed this round took them, and a
// waiting job behind the head that the base started anyway (the pod
// guard drops a job whose pods it cannot fit and goes on) waits, to
// start only as backfill allows.
//
// Candidates are placed by the base placer itself, on a cluster made of
// the free GPUs only, so a backfilled job lands where the base policy
// would put it given what is left.
//
// The reservation is recomputed every round from the jobs that hold GPUs
// then, and two rules keep it from moving later than the first one said
// (the head's promised time):
//
//   - The pin. In easy mode, while a job waits, every running job the
//     base keeps running keeps its GPUs, and a running job the base
//     stopped although nothing ahead of it started keeps them too: the
//     base is asked again with those jobs where they run, hidden from
//     it as backfilled jobs are. A non-sticky placer (PAL) re-places
//     running jobs every round; a job moved to other GPUs runs at their
//     speed and pays the move, so it ends at another time than the one
//     the reservation read, and the head's GPUs free later (on Synergy
//     under FIFO with exact estimates, 5 of 1,072 reserved gangs started
//     up to 155 s past their promise before the pin). The pin costs
//     PAL's moves while a job waits, which moves mean JCT either way on
//     the reproduction grid (docs/reproduce.md gives the figures). A
//     job the order preempts (one ahead of it started) is still stopped.
//   - Preemption. Once the promised time has come, a backfilled job
//     counts as ending then, whatever its estimate now says; if the head
//     can then start on GPUs that are free or held only by backfilled
//     jobs, those jobs are preempted (they wait again with their
//     progress, as any preempted job) and the head starts. Preempting
//     is the rule rather than moving the reservation to other GPUs:
//     the reservation already takes the earliest GPUs the base would
//     give the head, and other GPUs free only later, so moving it would
//     make the head wait for a job that ran past its estimate, which is
//     what the reservation exists to rule out. With exact estimates a
//     backfilled job always ends in time and none is preempted under
//     FIFO; under Tiresias the order moves a reservation later, and a
//     job backfilled for it may then be preempted.
//
// A job ahead of the head that runs past its estimate still delays it:
// it was not started by backfill. With exact estimates (the simulator's
// own model) a reserved head therefore starts by its first reservation
// plus one round under FIFO, and under any order as long as no job
// overtakes it; `pal-reproduce backfill` asserts both.
//
// The clock is the driver's: the simulator and the Kubernetes scheduler
// call SetNow each round (a placer never told the time never preempts).
package backfill

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/draws"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// Mode is a backfill policy.
type Mode string

const (
	None   Mode = "none"
	EASY   Mode = "easy"
	Greedy Mode = "greedy"
)

// Modes lists the modes, the default first.
func Modes() []Mode { return []Mode{None, EASY, Greedy} }

// ParseMode reads a mode name ("" is none).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", None:
		return None, nil
	case EASY, Greedy:
		return Mode(s), nil
	}
	return "", fmt.Errorf("backfill %q: want none, easy or greedy", s)
}

// Estimate is how long, in seconds from now, j would run until it
// finishes on gpus of env's cluster (for a running job on its own GPUs:
// its remaining time). +Inf means unknown: such a job never ends before
// a reservation.
type Estimate func(env *policy.Env, j *workload.Job, gpus []int) float64

// Reservation is the head's place in the future, as of the last round.
type Reservation struct {
	JobID int
	// In is the time from the round until the head can start (+Inf when
	// no end of a running job frees enough GPUs).
	In   float64
	GPUs []int
	// By is the job whose end the reservation waits for last (-1 when
	// the head can start now or no end frees enough GPUs), and
	// ByBackfill says that it started by backfill: what measurements
	// read to say why a head started later than first promised.
	By         int
	ByBackfill bool
	// Preempted lists the backfilled jobs this round stopped because
	// they still held GPUs the head needed after its first promised
	// time.
	Preempted []int
}

// Placer is a placer with backfill.
type Placer struct {
	Base policy.Placer
	Mode Mode
	Est  Estimate
	// Last is the reservation the last round made (JobID -1: none).
	Last Reservation
	// Keep, when set, marks running jobs that stay where they run and
	// are never preempted (a driver's gangs whose eviction would lose
	// them): they are in the order only so that the reservation reads
	// when they end.
	Keep func(j *workload.Job) bool
	// jumped maps a job started by backfill to the head it jumped, while
	// that head waits (see placeBase).
	jumped map[int]int
	// promise maps a waiting head to the time its first reservation
	// said it would start (the clock's time), while it waits.
	promise map[int]float64
	// now is the round's time, as the driver's clock says (SetNow).
	now float64
}

// SetNow tells the placer the round's time, in the same seconds as the
// estimates. A driver that never calls it leaves the clock at 0: no
// head's promised time then comes, and no backfilled job is preempted.
func (p *Placer) SetNow(T float64) { p.now = T }

// Now is the clock's time as the last SetNow set it.
func (p *Placer) Now() float64 { return p.now }

// Jumped says whether job was started by backfill past a head that
// still waited when the placer last looked, which head, and the time the
// head was promised (the clock's time; +Inf when its reservation made no
// promise). A driver records it where it outlives the placer (pal-kube
// scheduler: on the job's pods) and gives it back through Restore.
func (p *Placer) Jumped(job int) (head int, promisedAt float64, ok bool) {
	head, ok = p.jumped[job]
	if !ok {
		return -1, math.Inf(1), false
	}
	promisedAt, has := p.promise[head]
	if !has {
		promisedAt = math.Inf(1)
	}
	return head, promisedAt, true
}

// Restore gives a placer that starts afresh (a driver's new process)
// what an earlier one knew of a running job it started by backfill: the
// head it jumped and the time the head was promised (the clock's time,
// as SetNow reads it; +Inf: no promise). The head's promise is kept as
// the earliest it was ever given. It answers false, changing nothing,
// when the record cannot be one: the job is its own head, an id is
// negative, or promisedAt is not a number or -Inf. The next Place
// forgets what does not hold in its order, as it does with its own
// record: a job that no longer runs or is gone, a head that runs or is
// gone; a job Keep keeps is never a backfilled one.
func (p *Placer) Restore(job, head int, promisedAt float64) bool {
	if job == head || job < 0 || head < 0 || math.IsNaN(promisedAt) || math.IsInf(promisedAt, -1) {
		return false
	}
	if p.jumped == nil {
		p.jumped = map[int]int{}
	}
	p.jumped[job] = head
	if !math.IsInf(promisedAt, 1) {
		p.keepPromise(head, promisedAt)
	}
	return true
}

// Promised says the time a waiting head was promised (the clock's time),
// if its reservation made one: a driver records it where it outlives the
// placer (pal-kube scheduler: on the head's pods) and gives it back
// through Promise. Without that, a fresh placer promised a head that no
// job had jumped yet afresh, from its reservation then, which had grown
// meanwhile: the jobs it backfilled next were held to the later time.
func (p *Placer) Promised(head int) (float64, bool) {
	at, ok := p.promise[head]
	return at, ok
}

// Promise gives a placer that starts afresh the time an earlier one
// promised a waiting head (see Promised); the earliest promise stands,
// as with Restore. It answers false, changing nothing, for a negative
// id or a time that is not finite.
func (p *Placer) Promise(head int, at float64) bool {
	if head < 0 || math.IsNaN(at) || math.IsInf(at, 0) {
		return false
	}
	p.keepPromise(head, at)
	return true
}

// keepPromise records at as head's promise unless an earlier one stands.
func (p *Placer) keepPromise(head int, at float64) {
	if P, ok := p.promise[head]; !ok || at < P {
		if p.promise == nil {
			p.promise = map[int]float64{}
		}
		p.promise[head] = at
	}
}

// Wrap returns base with backfill in mode m, or base itself for none. A
// base that prices moves (policy.MoveJudge) keeps doing so.
func Wrap(base policy.Placer, m Mode, est Estimate) policy.Placer {
	if m == None || m == "" {
		return base
	}
	p := &Placer{Base: base, Mode: m, Est: est, Last: Reservation{JobID: -1}}
	if j, ok := base.(policy.MoveJudge); ok {
		return &judge{p, j}
	}
	return p
}

// Unwrap returns the backfill placer inside p (nil if there is none).
func Unwrap(p policy.Placer) *Placer {
	switch x := p.(type) {
	case *Placer:
		return x
	case *judge:
		return x.Placer
	}
	return nil
}

// Fork returns a placer like p's placer (mode, estimate and the jobs
// it protects as they are now) over a fresh base: a forecast runs it on
// while the run goes on with p.
func Fork(p policy.Placer, base policy.Placer) policy.Placer {
	b := Unwrap(p)
	if b == nil {
		return base
	}
	q := Wrap(base, b.Mode, b.Est)
	if c := Unwrap(q); c != nil {
		c.now = b.now
		if len(b.jumped) > 0 {
			c.jumped = maps.Clone(b.jumped)
		}
		if len(b.promise) > 0 {
			c.promise = maps.Clone(b.promise)
		}
	}
	return q
}

// Rebase sets the clock of p's backfill placer (if any) back by d
// seconds, promises with it: a forecast that counts its time from 0
// runs on a copy of a live placer whose clock reads d.
func Rebase(p policy.Placer, d float64) {
	b := Unwrap(p)
	if b == nil {
		return
	}
	b.now -= d
	for k := range b.promise {
		b.promise[k] -= d
	}
}

type judge struct {
	*Placer
	j policy.MoveJudge
}

// MoveGain implements policy.MoveJudge.
func (p *judge) MoveGain(env *policy.Env, j *workload.Job, from, to []int) float64 {
	return p.j.MoveGain(env, j, from, to)
}

// Name implements policy.Placer: the base placer's name, so that records
// and tables keep naming the placement.
func (p *Placer) Name() string { return p.Base.Name() }

// Sticky implements policy.Placer.
func (p *Placer) Sticky() bool { return p.Base.Sticky() }

// WholeQueue says that the placer must see every waiting job, not only
// the prefix a strict-order placer could reach (the simulator's
// incremental loop hands it only that prefix otherwise).
func (p *Placer) WholeQueue() bool { return true }

// Place implements policy.Placer.
func (p *Placer) Place(env *policy.Env, order []*workload.Job) [][]int {
	alloc := p.placeBase(env, order)
	p.Last = Reservation{JobID: -1, By: -1}
	p.forget(order)
	h := slices.IndexFunc(alloc, func(g []int) bool { return g == nil })
	if h < 0 {
		return alloc
	}
	// A waiting job behind the head that the base started anyway (a
	// placer that does not stop at the head: the pod guard drops a job
	// whose pods it cannot fit and goes on) waits here too, and starts
	// only as backfill may start it: on GPUs outside the reservation or
	// ending in time.
	for i := h + 1; i < len(order); i++ {
		if alloc[i] != nil && !order[i].Running() {
			alloc[i] = nil
		}
	}
	c := env.Cluster
	free := make([]bool, c.Size())
	for g := range free {
		free[g] = true
	}
	for _, g := range alloc {
		for _, x := range g {
			free[x] = false
		}
	}
	// Running jobs behind the head that the base stopped keep their GPUs
	// when they are still free.
	for i := h + 1; i < len(order); i++ {
		j := order[i]
		if alloc[i] != nil || !j.Running() || !allFree(free, j.GPUsHeld) {
			continue
		}
		alloc[i] = j.GPUsHeld
		take(free, j.GPUsHeld)
	}
	res := Reservation{JobID: order[h].ID, In: math.Inf(1), By: -1}
	if p.Mode == EASY {
		var sub subCluster
		head := order[h].ID
		res = p.reserve(env, order, alloc, h, free, &sub, math.Inf(1))
		if P, ok := p.promise[head]; ok && res.In > P-p.now+1e-6 && len(p.jumped) > 0 {
			// Later than promised: backfilled jobs count as ending by
			// the promised time, when they are preempted if the head
			// still needs their GPUs.
			var late subCluster
			res = p.reserve(env, order, alloc, h, free, &late, max(0, P-p.now))
		}
		if _, ok := p.promise[head]; !ok && res.GPUs != nil && !math.IsInf(res.In, 1) {
			if p.promise == nil {
				p.promise = map[int]float64{}
			}
			p.promise[head] = p.now + res.In
		}
		if res.In <= 0 && res.GPUs != nil && p.preempt(order, alloc, h, free, &res) {
			// The head starts now; what is left waits for the next
			// round, behind it in strict order.
			p.Last = res
			return alloc
		}
		p.Last = res
	}
	// The views of the free GPUs change only when a job is backfilled
	// (gen), so a queue of jobs that do not fit costs one placement each
	// on the same view, not a view each.
	var subOut, subIn subCluster
	gen := 0
	reserved := make([]bool, c.Size())
	for _, x := range res.GPUs {
		reserved[x] = true
	}
	outside := func(g int) bool { return free[g] && !reserved[g] }
	inside := func(g int) bool { return free[g] }
	for i := h + 1; i < len(order); i++ {
		j := order[i]
		if alloc[i] != nil || j.Running() {
			continue
		}
		g := subOut.pick(env, p.Base, j, outside, gen)
		if g == nil && res.GPUs != nil {
			if g = subIn.pick(env, p.Base, j, inside, gen); g != nil && !(p.Est(env, j, g) <= res.In) {
				g = nil
			}
		}
		if g != nil {
			alloc[i] = g
			take(free, g)
			gen++
			if p.jumped == nil {
				p.jumped = map[int]int{}
			}
			p.jumped[j.ID] = order[h].ID
		}
	}
	return alloc
}

// forget drops the promises of heads that no longer wait.
func (p *Placer) forget(order []*workload.Job) {
	if len(p.promise) == 0 {
		return
	}
	waiting := make(map[int]bool, len(p.promise))
	for _, j := range order {
		if _, ok := p.promise[j.ID]; ok && !j.Running() {
			waiting[j.ID] = true
		}
	}
	maps.DeleteFunc(p.promise, func(id int, _ float64) bool { return !waiting[id] })
}

// preempt starts the head on res.GPUs now (free, for a head the base
// left waiting where the placer alone places it: the pod guard, say)
// when every one of them that is not free is held by a backfilled job (the reservation counted it
// as ending by now: it ran past its estimate, or past the head's
// promised time), stopping those jobs; false, changing nothing, when a
// job that did not start by backfill holds one.
func (p *Placer) preempt(order []*workload.Job, alloc [][]int, h int, free []bool, res *Reservation) bool {
	owner := make([]int, len(free))
	for g := range owner {
		owner[g] = -1
	}
	for i, g := range alloc {
		for _, x := range g {
			owner[x] = i
		}
	}
	var victims []int
	for _, x := range res.GPUs {
		if free[x] {
			continue
		}
		i := owner[x]
		if i < 0 || !order[i].Running() {
			return false
		}
		if _, ok := p.jumped[order[i].ID]; !ok {
			return false
		}
		if !slices.Contains(victims, i) {
			victims = append(victims, i)
		}
	}
	for _, i := range victims {
		for _, x := range alloc[i] {
			free[x] = true
		}
		alloc[i] = nil
		delete(p.jumped, order[i].ID)
		res.Preempted = append(res.Preempted, order[i].ID)
	}
	alloc[h] = res.GPUs
	take(free, res.GPUs)
	return true
}

// placeBase is the base placer's answer with every protected job kept
// where it runs: a job that started by backfill is not a victim of the
// head it jumped, nor moved for it, until that head has started (the
// base frames would otherwise preempt it for the head as soon as the head
// is first in line, undoing the backfill). The base then places the other
// jobs on the GPUs the protected ones leave, through a view of the
// cluster without them.
//
// In easy mode, when a job is left waiting, every running job the base
// keeps running also keeps its GPUs (the pin): a placer that is not
// sticky re-places running jobs every round, and a job moved to other
// GPUs runs at another speed and pays its move, so it would end at
// another time than the one the reservation read. The base is then
// asked again with those jobs where they run; jobs it stops are still
// stopped (the order may preempt), only moves are undone.
func (p *Placer) placeBase(env *policy.Env, order []*workload.Job) [][]int {
	prot := p.protected(order)
	alloc := p.placeAround(env, order, prot)
	if p.Mode != EASY {
		return alloc
	}
	// Each pass pins more running jobs, so this ends within as many
	// passes as jobs run; a pass that pins none is the answer.
	for {
		pin := p.pins(order, alloc, prot)
		if pin == nil {
			return alloc
		}
		prot = pin
		alloc = p.placeAround(env, order, prot)
	}
}

// pins is prot with the running jobs the pin keeps where they run, or
// nil when alloc leaves none to pin: every job runs, or none moved or
// was stopped other than by the order. The base keeps running a job it
// moved, so it is pinned; a running job it stopped is pinned when no
// job ahead of it starts this round (nothing the order puts first takes
// its place: the base's re-plan, a pod it could not fit again say,
// stopped it).
func (p *Placer) pins(order []*workload.Job, alloc [][]int, prot []bool) []bool {
	if !slices.ContainsFunc(alloc, func(g []int) bool { return g == nil }) {
		return nil
	}
	var out []bool
	started := false
	for i, j := range order {
		if !j.Running() {
			started = started || alloc[i] != nil
			continue
		}
		if prot != nil && prot[i] {
			continue
		}
		moved := alloc[i] != nil && !round.Same(alloc[i], j.GPUsHeld)
		stopped := alloc[i] == nil && !started
		if !moved && !stopped {
			continue
		}
		if out == nil {
			out = make([]bool, len(order))
			if prot != nil {
				copy(out, prot)
			}
			for k, o := range order {
				if o.Running() && alloc[k] != nil {
					out[k] = true
				}
			}
		}
		out[i] = true
	}
	return out
}

// protected marks the jobs started by backfill whose head still waits
// and the jobs Keep keeps (nil: none), forgetting the others.
func (p *Placer) protected(order []*workload.Job) []bool {
	var prot []bool
	if p.Keep != nil {
		for i, j := range order {
			if !j.Running() || !p.Keep(j) {
				continue
			}
			if prot == nil {
				prot = make([]bool, len(order))
			}
			prot[i] = true
			delete(p.jumped, j.ID) // never a victim of preempt
		}
	}
	if len(p.jumped) == 0 {
		return prot
	}
	waiting := map[int]bool{}
	for _, j := range order {
		if !j.Running() {
			waiting[j.ID] = true
		}
	}
	// A job that left the order (it ended, or its gang is gone) is
	// forgotten too, or the record grows with every job ever backfilled.
	inOrder := make(map[int]bool, len(order))
	for _, j := range order {
		inOrder[j.ID] = true
	}
	maps.DeleteFunc(p.jumped, func(id, _ int) bool { return !inOrder[id] })
	for i, j := range order {
		head, ok := p.jumped[j.ID]
		if ok && (!j.Running() || !waiting[head]) {
			delete(p.jumped, j.ID)
			continue
		}
		if !ok {
			continue
		}
		if prot == nil {
			prot = make([]bool, len(order))
		}
		prot[i] = true
	}
	return prot
}

// placeAround places order with every job prot marks kept on the GPUs it
// holds, hidden from the base placer (prot nil: the base placer's
// answer).
func (p *Placer) placeAround(env *policy.Env, order []*workload.Job, prot []bool) [][]int {
	if prot == nil {
		return p.Base.Place(env, order)
	}
	c := env.Cluster
	hidden := make([]bool, c.Size())
	for i, j := range order {
		if prot[i] {
			for _, g := range j.GPUsHeld {
				hidden[g] = true
			}
		}
	}
	alloc := make([][]int, len(order))
	var sub subCluster
	e, ok := sub.view(env, func(g int) bool { return !hidden[g] })
	if !ok {
		for i, j := range order {
			if prot[i] {
				alloc[i] = j.GPUsHeld
			}
		}
		return alloc
	}
	toSub := make([]int, c.Size())
	for v, g := range sub.toPhy {
		toSub[g] = v
	}
	var rest []*workload.Job
	var at []int
	for i, j := range order {
		if prot[i] {
			alloc[i] = j.GPUsHeld
			continue
		}
		cp := *j
		if j.GPUsHeld != nil {
			cp.GPUsHeld = make([]int, len(j.GPUsHeld))
			for k, g := range j.GPUsHeld {
				cp.GPUsHeld[k] = toSub[g]
			}
		}
		rest = append(rest, &cp)
		at = append(at, i)
	}
	got := p.Base.Place(&e, rest)
	for k, i := range at {
		if got[k] == nil {
			continue
		}
		if order[i].Running() && sameView(got[k], rest[k].GPUsHeld) {
			alloc[i] = order[i].GPUsHeld
			continue
		}
		alloc[i] = sub.phys(got[k])
	}
	return alloc
}

func sameView(a, b []int) bool { return slices.Equal(a, b) }

// reserve finds the head's reservation: walking the ends of the jobs
// holding GPUs in time order, the first time at which the base placer
// places the head on the GPUs free by then. A job started by backfill
// counts as ending by capped at the latest (+Inf: at its estimate).
func (p *Placer) reserve(env *policy.Env, order []*workload.Job, alloc [][]int, h int, free []bool, sub *subCluster, capped float64) Reservation {
	head := order[h]
	res := Reservation{JobID: head.ID, In: math.Inf(1), By: -1}
	type end struct {
		t    float64
		i    int
		back bool
	}
	var ends []end
	n := 0
	for g := range free {
		if free[g] {
			n++
		}
	}
	for i, g := range alloc {
		if g == nil {
			continue
		}
		e := end{p.Est(env, order[i], g), i, false}
		if math.IsNaN(e.t) {
			// Not a number reads as unknown: the walk below steps
			// from one end's time to the next and would never pass it.
			e.t = math.Inf(1)
		}
		if _, ok := p.jumped[order[i].ID]; ok && order[i].Running() {
			e.back = true
			e.t = min(e.t, capped)
		}
		ends = append(ends, e)
	}
	slices.SortStableFunc(ends, func(a, b end) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	then := slices.Clone(free)
	ok := func(g int) bool { return then[g] }
	t := 0.0
	by, back := -1, false
	for k := 0; ; {
		if n >= head.GPUs {
			if g := sub.pick(env, p.Base, head, ok, k); g != nil {
				res.In, res.GPUs, res.By, res.ByBackfill = t, g, by, back
				return res
			}
		}
		if k == len(ends) || math.IsInf(ends[k].t, 1) {
			return res
		}
		t = ends[k].t
		by, back = order[ends[k].i].ID, ends[k].back
		for ; k < len(ends) && ends[k].t == t; k++ {
			for _, x := range alloc[ends[k].i] {
				then[x] = true
				n++
			}
			back = back && ends[k].back
		}
	}
}

func allFree(free []bool, g []int) bool {
	for _, x := range g {
		if !free[x] {
			return false
		}
	}
	return true
}

func take(free []bool, g []int) {
	for _, x := range g {
		free[x] = false
	}
}

// subCluster is the cluster cut down to the GPUs a predicate allows, each
// node keeping its order (so a placer's tie-breaks read the same), and
// the map back to the cluster's GPU ids.
type subCluster struct {
	toPhy []int
	// The last view, kept while the caller's generation stays the same.
	env       policy.Env
	n         int
	gen       int
	has, fine bool
}

// pick asks base to place j alone on the GPUs ok allows; nil if it does
// not.
// gen says which set ok allows: while it is the same as at the last
// call, the view made then is used again.
func (s *subCluster) pick(env *policy.Env, base policy.Placer, j *workload.Job, ok func(g int) bool, gen int) []int {
	if !s.has || s.gen != gen {
		s.has, s.gen = true, gen
		s.n = s.count(env.Cluster, ok)
		s.fine = false
		if s.n > 0 {
			s.env, s.fine = s.view(env, ok)
		}
	}
	if s.n < j.GPUs || !s.fine {
		return nil
	}
	e := s.env
	if j.Running() {
		// A running job the base stopped (the head may be one) is
		// placed afresh: its GPUs are not in the view's numbering.
		cp := *j
		cp.GPUsHeld = nil
		j = &cp
	}
	got := base.Place(&e, []*workload.Job{j})
	if len(got) != 1 || got[0] == nil {
		return nil
	}
	return s.phys(got[0])
}

func (s *subCluster) count(c *cluster.Cluster, ok func(g int) bool) int {
	n := 0
	for g := range c.Size() {
		if ok(g) {
			n++
		}
	}
	return n
}

// phys maps a view's GPU list back to the cluster's, ascending.
func (s *subCluster) phys(g []int) []int {
	out := make([]int, len(g))
	for k, v := range g {
		out[k] = s.toPhy[v]
	}
	slices.Sort(out)
	return out
}

// view is env on the GPUs ok allows (false: none).
func (s *subCluster) view(env *policy.Env, ok func(g int) bool) (policy.Env, bool) {
	c := env.Cluster
	s.toPhy = s.toPhy[:0]
	var sizes []int
	var names []string
	for _, nd := range c.Nodes {
		k := 0
		for _, g := range nd.GPUs {
			if ok(g) {
				s.toPhy = append(s.toPhy, g)
				k++
			}
		}
		if k > 0 {
			sizes = append(sizes, k)
			names = append(names, nd.Name)
		}
	}
	if len(sizes) == 0 {
		return policy.Env{}, false
	}
	view, err := cluster.NewSized(sizes)
	if err != nil {
		return policy.Env{}, false
	}
	for i := range view.Nodes {
		view.Nodes[i].Name = names[i]
	}
	e := *env
	e.Cluster = view
	if env.Scores != nil {
		sc := &policy.Scores{LV: env.Scores.LV}
		for k := range sc.SF {
			if env.Scores.SF[k] == nil {
				continue
			}
			sc.SF[k] = make([]float64, len(s.toPhy))
			for v, g := range s.toPhy {
				sc.SF[k][v] = env.Scores.SF[k][g]
			}
		}
		e.Scores = sc
	}
	return e, true
}

// Noisy is est with each job's estimate off by a factor of its own: a
// lognormal draw of mean 1 and coefficient of variation cv, fixed per job
// id and seed (draws.Lognormal.Factor), as a user's stated run time is
// off by about the same factor each time it is read. Measurements use it
// to see what the reservation is worth when estimates are wrong; cv 0 is
// est itself.
func Noisy(est Estimate, cv float64, seed uint64) (Estimate, error) {
	l, err := draws.NewLognormal(cv)
	if err != nil {
		return nil, err
	}
	if cv == 0 {
		return est, nil
	}
	return func(env *policy.Env, j *workload.Job, gpus []int) float64 {
		return est(env, j, gpus) * l.Factor(seed, uint64(j.ID))
	}, nil
}
