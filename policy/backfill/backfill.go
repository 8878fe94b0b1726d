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
// fit) keeps its GPUs when nothing placed this round took them. Backfill
// never preempts: it only places on GPUs the base answer leaves free.
//
// Candidates are placed by the base placer itself, on a cluster made of
// the free GPUs only, so a backfilled job lands where the base policy
// would put it given what is left.
//
// The reservation is recomputed every round from the jobs that hold GPUs
// then. A job that runs longer than its estimate is not preempted: the
// next round's reservation reads its new remaining time, so an estimate
// that is too short can delay the head; with exact durations (the
// simulator's own model) it cannot.
package backfill

import (
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/draws"
	"github.com/palsched/pal/policy"
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
}

// Placer is a placer with backfill.
type Placer struct {
	Base policy.Placer
	Mode Mode
	Est  Estimate
	// Last is the reservation the last round made (JobID -1: none).
	Last Reservation
	// jumped maps a job started by backfill to the head it jumped, while
	// that head waits (see placeBase).
	jumped map[int]int
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
	if c := Unwrap(q); c != nil && len(b.jumped) > 0 {
		c.jumped = make(map[int]int, len(b.jumped))
		for k, v := range b.jumped {
			c.jumped[k] = v
		}
	}
	return q
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
	p.Last = Reservation{JobID: -1}
	h := slices.IndexFunc(alloc, func(g []int) bool { return g == nil })
	if h < 0 {
		return alloc
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
	res := Reservation{JobID: order[h].ID, In: math.Inf(1)}
	if p.Mode == EASY {
		var sub subCluster
		res = p.reserve(env, order, alloc, h, free, &sub)
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

// placeBase is the base placer's answer with every protected job kept
// where it runs: a job that started by backfill is not a victim of the
// head it jumped, nor moved for it, until that head has started (the
// base frames would otherwise preempt it for the head as soon as the head
// is first in line, undoing the backfill). The base then places the other
// jobs on the GPUs the protected ones leave, through a view of the
// cluster without them.
func (p *Placer) placeBase(env *policy.Env, order []*workload.Job) [][]int {
	if len(p.jumped) == 0 {
		return p.Base.Place(env, order)
	}
	waiting := map[int]bool{}
	for _, j := range order {
		if !j.Running() {
			waiting[j.ID] = true
		}
	}
	var prot []bool
	c := env.Cluster
	hidden := make([]bool, c.Size())
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
		for _, g := range j.GPUsHeld {
			hidden[g] = true
		}
	}
	if prot == nil {
		return p.Base.Place(env, order)
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
// places the head on the GPUs free by then.
func (p *Placer) reserve(env *policy.Env, order []*workload.Job, alloc [][]int, h int, free []bool, sub *subCluster) Reservation {
	head := order[h]
	res := Reservation{JobID: head.ID, In: math.Inf(1)}
	type end struct {
		t float64
		g []int
	}
	var ends []end
	n := 0
	for g := range free {
		if free[g] {
			n++
		}
	}
	for i, g := range alloc {
		if g != nil {
			ends = append(ends, end{p.Est(env, order[i], g), g})
		}
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
	for k := 0; ; {
		if n >= head.GPUs {
			if g := sub.pick(env, p.Base, head, ok, k); g != nil {
				res.In, res.GPUs = t, g
				return res
			}
		}
		if k == len(ends) || math.IsInf(ends[k].t, 1) {
			return res
		}
		t = ends[k].t
		for ; k < len(ends) && ends[k].t == t; k++ {
			for _, x := range ends[k].g {
				then[x] = true
				n++
			}
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
