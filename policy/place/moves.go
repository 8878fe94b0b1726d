package place

import (
	"math"
	"slices"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The migration rule. On a real cluster a move is a checkpoint and a
// restart, so under a migration-aware placement ("-ma") a running job
// whose move has a price keeps its GPUs unless moving pays for itself:
//
//	Remaining x IterTime x (slowdown(held) - slowdown(pick)) > MoveCost.Migration
//
// whoever would take its GPUs. This is the one statement of the rule;
// the frames below apply it and the drivers read a move's gain through
// policy.MoveJudge, so the simulator's records and the Kubernetes
// driver's evictions cite the same number.
//
// A frame under the rule (moveFrame) first reserves the GPUs of every
// running job whose move has a price (pinned). It then walks the base
// placer's order unchanged: a pinned job, at its turn, is offered its
// base pick with its own GPUs free again and takes it only when Pays;
// any other job picks among the GPUs nobody reserved. A job that does
// not fit may take GPUs from running jobs only through a preemption the
// scheduler's order asks for, as a sticky placer does: jobs behind it in
// the order, from the tail, until it fits (if it never fits, nothing is
// preempted); only the victims whose GPUs it takes stop. No job starts
// behind one that waits this round (one that does not fit, or a victim),
// so nothing is backfilled past it. A job that no preemption may touch (MoveCost.Preemption
// +Inf, e.g. a bare pod that nothing would recreate) is never a victim,
// and one with MoveCost.Migration +Inf never moves.
//
// Jobs whose moves are free are not pinned and the frame is the base
// placer's for them, so at cost 0 a "-ma" variant returns exactly its
// base answer (the artifact calibrations rely on it).
//
// The slowdown is the placer's own estimate (slowdown): the worst
// PM-score of the GPUs, times the locality penalty when they span nodes,
// for the variability-aware placers; only the locality penalty for the
// variability-blind baselines, which know nothing else.

// Pays reports whether moving j is worth its price: gain is the expected
// saving over its remaining work, in seconds (MoveGain).
func Pays(j *workload.Job, gain float64) bool { return gain > j.MoveCost.Migration }

// MoveGain is the time j is expected to save over its remaining work by
// running on to instead of from; scores says whether the estimate weighs
// PM-scores (variability-aware placers) or only locality.
func MoveGain(env *policy.Env, j *workload.Job, from, to []int, scores bool) float64 {
	return j.Remaining() * j.IterTime * (slowdown(env, j, from, scores) - slowdown(env, j, to, scores))
}

// pinned: j is running and its move has a price, so a migration-aware
// frame keeps its GPUs unless a move pays or the order preempts it.
func pinned(j *workload.Job) bool { return j.Running() && j.MoveCost.Migration > 0 }

// preemptible: a preemption may take j's GPUs.
func preemptible(j *workload.Job) bool { return !math.IsInf(j.MoveCost.Preemption, 1) }

// mover is a migration-aware placement's rule for one round (nil for a
// base placer: every running job is free to move).
type mover struct {
	env    *policy.Env
	scores bool
	// freeBelow(c, thr, need), if set, counts the GPUs free now whose
	// class-c score is below thr, stopping at need (the index counts
	// them per bin); without it the class's best score anywhere (best)
	// bounds what a pick can reach.
	freeBelow func(c int, thr float64, need int) int
	// room(n, held), if set, reports whether some node could hold all
	// n GPUs of a pinned job holding held, counting those as free (nil:
	// assume so).
	room func(n int, held []int) bool
	// spans(c, n, held), if set, reports that the placer's pick for a
	// pinned job of class c and n GPUs holding held (counted free)
	// certainly spans nodes (false: it may not), which prices the pick
	// as no room does. Neither reads the job: at its turn it is out of
	// the cache.
	spans func(c variability.Class, n int, held []int) bool
	// visited(p), if set, is told when the job at position p of the
	// visiting order has had its turn: at p = 0, then at the p its last
	// call returned (the next turn it needs to hear of). Told at every
	// turn, it took 8,584 calls a round at 27,648 GPUs, nearly all with
	// nothing to do.
	visited func(p int) (next int)
	// ready, if set, streams the answer (see policy.Streamer) when the
	// visiting order is the order itself: a job's turn changes only the
	// lines of jobs behind it, so every line before it is final.
	ready func(n int)
	best  [variability.NumClasses]float64
	bestK bool
}

// hysteresis makes the rule for env; scores says whether the placer
// weighs PM-scores. It returns nil, the base placer, when off.
func hysteresis(on bool, env *policy.Env, scores bool) *mover {
	if !on {
		return nil
	}
	return &mover{env: env, scores: scores}
}

// any reports whether the rule pins a job of order: without one the
// frame is the base placer's.
func (m *mover) any(order []*workload.Job) bool {
	if m == nil {
		return false
	}
	for _, j := range order {
		if pinned(j) {
			return true
		}
	}
	return false
}

// pinBound is what mayPay reads of a pinned job that stays the same
// all round, worked out while the frame's pass over the order reads the
// job anyway (reserve, or the index's gatherPinned): at its turn most
// pinned jobs are then kept without a read of the job, which by then is
// out of the cache (2,914 pinned jobs a PM-First round at 27,648 GPUs,
// all but 9 kept; 1,424 of them on the count at hi alone).
type pinBound struct {
	thr   float64  // slowdown(held) - MoveCost.Migration / (Remaining x IterTime)
	pen   float64  // the locality penalty (1 without one)
	below [2]int32 // j's GPUs scoring below hi and below lo (see hi)
	gpus  int32
	class int8 // variability.Class (NumClasses of them): the bounds stay 32 bytes
	never bool // Migration is +Inf or no work remains: no move pays
}

// hi and lo are the larger and the smaller of the two thresholds mayPay
// may apply, thr and thr / pen.
func (b *pinBound) hi() float64 { return max(b.thr, b.thr/b.pen) }
func (b *pinBound) lo() float64 { return min(b.thr, b.thr/b.pen) }

// bound works out pinned job j's pinBound. It asks env.Locality for
// every pinned job whose move may pay, once a round (mayPay used to ask
// only when room or spans called for the penalty): a pure function of
// the job's spec, cheap for the constant penalty, a map lookup or two
// for a per-model LocalityModel.
func (m *mover) bound(j *workload.Job) pinBound {
	b := pinBound{pen: 1, gpus: int32(j.GPUs), class: int8(j.Class)}
	c := j.MoveCost.Migration
	w := j.Remaining() * j.IterTime
	if math.IsInf(c, 1) || !(w > 0) {
		b.never = true
		return b
	}
	b.thr = slowdown(m.env, j, j.GPUsHeld, m.scores) - c/w
	if m.env.Locality != nil {
		b.pen = m.env.Locality(&j.Spec)
	}
	nh, nl := m.heldCounts(j, b.hi(), b.lo())
	b.below = [2]int32{int32(nh), int32(nl)}
	return b
}

// mayPay reports whether some pick could pay for moving a pinned job,
// without making one; b is its bound and held its GPUs. A move pays
// only if the pick's slowdown is below thr = slowdown(held) - MoveCost.Migration /
// (Remaining x IterTime). A pick inside one node is at least as slow as
// its worst GPU (1 for a placer that weighs only locality); one that
// spans nodes, the only kind left when no node has room for the job
// (counting its own GPUs) and the only kind the placer would pick when
// spans says so, is slower by the locality penalty on top. So a move can
// pay only if GPUs(j) GPUs, among those free now and its own, score
// below thr (or thr / penalty). Most pinned jobs are kept on this count
// alone, and many of those on the count at the larger of the two
// thresholds (hi), which needs neither room nor spans (they read the
// cluster around the job's GPUs): the count only grows with the
// threshold.
func (m *mover) mayPay(b *pinBound, held []int) bool {
	if b.never || !m.reach(variability.Class(b.class), int(b.gpus), int(b.below[0]), b.hi()) {
		return false
	}
	if m.env.Locality == nil {
		return true // hi is thr
	}
	thr := b.thr
	if m.room != nil && !m.room(int(b.gpus), held) || m.spans != nil && m.spans(variability.Class(b.class), int(b.gpus), held) {
		thr /= b.pen
	}
	if thr == b.hi() {
		return true
	}
	return m.reach(variability.Class(b.class), int(b.gpus), int(b.below[1]), b.lo()) // thr is lo
}

// heldCounts are the numbers of j's GPUs scoring below hi and below lo
// (for a placer that weighs only locality, unused: 0).
func (m *mover) heldCounts(j *workload.Job, hi, lo float64) (nh, nl int) {
	if !m.scores || m.env.Scores == nil {
		return 0, 0
	}
	sf := m.env.Scores.SF[j.Class]
	for _, g := range j.GPUsHeld {
		nh += bit(sf[g] < hi)
		nl += bit(sf[g] < lo)
	}
	return nh, nl
}

// reach reports whether gpus GPUs of class c, among those free now and
// the n of a job's own that score below thr, score below thr (for a
// placer that weighs only locality: thr > 1).
func (m *mover) reach(c variability.Class, gpus, n int, thr float64) bool {
	if !m.scores || m.env.Scores == nil {
		return thr > 1
	}
	if n >= gpus {
		return true
	}
	if m.freeBelow != nil {
		return n+m.freeBelow(int(c), thr, gpus-n) >= gpus
	}
	if !m.bestK {
		m.bestK = true
		for k := range m.best {
			m.best[k] = math.Inf(1)
			for _, v := range m.env.Scores.SF[k] {
				m.best[k] = min(m.best[k], v)
			}
		}
	}
	return m.best[c] < thr
}

// pays applies the rule to a pick for pinned job j (nil: nothing fits).
func (m *mover) pays(j *workload.Job, pick []int) bool {
	return pick != nil && Pays(j, MoveGain(m.env, j, j.GPUsHeld, pick, m.scores))
}

// moveSpace is the free-GPU structure a frame picks from.
type moveSpace interface {
	take(gpus []int)
	give(gpus []int)
	// takePick takes the GPUs of a pick for a job not pinned (its turn's
	// pick, or a preemption's), which a space may have taken as it
	// picked (see scoreIndex.fuse).
	takePick(gpus []int)
	// discard says a pick was not taken (a placer caching free GPUs
	// must rebuild).
	discard()
	// freeCount is the number of free GPUs.
	freeCount() int
	// lend frees pinned job j's GPUs for its own pick only; unlend takes
	// them back, and settle frees them for everyone (j moves).
	lend(j *workload.Job)
	unlend(j *workload.Job)
	settle(j *workload.Job)
	// reserve marks every job of order in st (size, mark), and for every
	// order[i] the rule pins takes its GPUs and makes them its line of
	// the answer, out[i], until a move pays: one pass over the order,
	// which at 27,648 GPUs holds thousands of jobs, none of them in the
	// cache (so the frame reads what it needs of them off st).
	reserve(order []*workload.Job, m *mover, st *moveScratch, out [][]int)
}

// moveScratch is a migration-aware frame's per-job state, kept between
// rounds.
type moveScratch struct {
	pin      []bool     // pinned, until its turn
	ran      []bool     // running (see mark)
	bounds   []pinBound // per pinned job (see pinBound)
	launched []int      // jobs launched this round (they held nothing)
	vict     []int
	saved    [][]int
}

// moveFrame is the frame under the rule (see above) for the jobs of
// order visited in idx (the base placer's visiting order), into out
// (len(order), all nil). pick(i) is the base placer's pick for order[i]
// on sp (scratch memory: own(i, g) makes it the answer's).
//
// blocked is the first job in the order that waits this round (does not
// fit, or is preempted): no job behind it starts, so a job the frame
// visits early (PAL's frame sorts the prefix by class) and launches is
// taken back when a job ahead of it turns out not to fit. Jobs ahead of
// it are still placed if they fit.
func (m *mover) moveFrame(order []*workload.Job, idx []int, out [][]int, sp moveSpace, st *moveScratch,
	pick func(i int) []int, own func(i int, g []int) []int) {
	n := len(order)
	st.launched = st.launched[:0]
	sp.reserve(order, m, st, out)
	blocked, visit := n, 0
	for p, i := range idx {
		if m.visited != nil && p > 0 && p-1 >= visit {
			visit = m.visited(p - 1)
		}
		if m.ready != nil && p%policy.StreamChunk == 0 && p > 0 {
			m.ready(p)
		}
		j := order[i]
		if st.pin[i] {
			st.pin[i] = false
			if !m.mayPay(&st.bounds[i], out[i]) { // out[i]: j's GPUs (reserve)
				continue
			}
			sp.lend(j)
			if g := pick(i); m.pays(j, g) {
				g = own(i, g)
				sp.settle(j)
				sp.take(g)
				out[i] = g
			} else {
				sp.discard()
				sp.unlend(j)
			}
			continue
		}
		if i >= blocked {
			continue // behind a job that waits (or itself preempted)
		}
		g := pick(i)
		if g == nil {
			var first int
			g, first = m.preempt(order, i, out, sp, st, pick)
			blocked = min(blocked, first)
		}
		if g == nil {
			blocked = i
			m.unlaunch(i, out, sp, st)
			continue
		}
		g = own(i, g)
		sp.takePick(g)
		out[i] = g
		if !st.ran[i] {
			st.launched = append(st.launched, i)
		}
	}
}

// size makes the per-job columns n long, cleared (before marks).
func (st *moveScratch) size(n int) {
	st.pin = resizeBools(st.pin, n)
	st.ran = resizeBools(st.ran, n)
	st.bounds = slices.Grow(st.bounds[:0], n)[:n]
}

// mark records order[i] = j while the frame's pass over the order reads
// it (see pinBound): whether it runs, and if the rule pins it, that it
// is pinned and its bound. It reports whether j is pinned.
func (st *moveScratch) mark(m *mover, i int, j *workload.Job) bool {
	if !j.Running() {
		return false
	}
	st.ran[i] = true
	if !pinned(j) {
		return false
	}
	st.pin[i] = true
	st.bounds[i] = m.bound(j)
	return true
}

// unlaunch takes back the launches of jobs behind order[i], which waits.
func (m *mover) unlaunch(i int, out [][]int, sp moveSpace, st *moveScratch) {
	kept := st.launched[:0]
	for _, k := range st.launched {
		if k > i && out[k] != nil {
			sp.give(out[k])
			out[k] = nil
			continue
		}
		kept = append(kept, k)
	}
	st.launched = kept
}

// preempt frees GPUs for order[i] from the jobs behind it in the order,
// from the tail, until its pick succeeds, and returns the pick and the
// first (in order) of the jobs it stops; if the pick never succeeds, every
// victim gets its GPUs back and it returns nil. Of the victims, only
// those whose GPUs the pick uses stop, and whatever stands behind the
// first of them that has not started yet (a launch this round) does not
// start; the rest keep their GPUs.
func (m *mover) preempt(order []*workload.Job, i int, out [][]int, sp moveSpace, st *moveScratch, pick func(i int) []int) ([]int, int) {
	st.vict, st.saved = st.vict[:0], st.saved[:0]
	n := len(order)
	// Picks fail for want of free GPUs, so the victims a pick needs at
	// least are found by counting, before any is stopped; if the whole
	// tail cannot make up the count, nothing is touched.
	short := order[i].GPUs - sp.freeCount()
	k := n - 1
	for ; k > i && short > 0; k-- {
		if out[k] != nil && preemptible(order[k]) {
			st.vict = append(st.vict, k)
			st.saved = append(st.saved, out[k])
			short -= len(out[k])
		}
	}
	if short > 0 {
		return nil, n
	}
	for _, v := range st.vict {
		sp.give(out[v])
		out[v] = nil
	}
	for {
		if g := pick(i); g != nil {
			return g, m.settle(order, out, sp, st, g)
		}
		// Short of something else than the count (a hand-built L×V
		// order): one more victim.
		for ; k > i && (out[k] == nil || !preemptible(order[k])); k-- {
		}
		if k <= i {
			break
		}
		sp.give(out[k])
		st.vict = append(st.vict, k)
		st.saved = append(st.saved, out[k])
		out[k] = nil
		k--
	}
	for a := len(st.vict) - 1; a >= 0; a-- {
		sp.take(st.saved[a])
		out[st.vict[a]] = st.saved[a]
	}
	sp.discard()
	return nil, n
}

// settle decides the victims of a preemption whose pick is g: those whose
// GPUs g uses stop, and so does every launch of this round behind the
// first of them; the rest get their GPUs back. It returns the first
// victim that stops, in order.
func (m *mover) settle(order []*workload.Job, out [][]int, sp moveSpace, st *moveScratch, g []int) int {
	first := len(order)
	for a, v := range st.vict {
		if overlaps(st.saved[a], g) {
			first = min(first, v)
		}
	}
	for a, v := range st.vict {
		if overlaps(st.saved[a], g) {
			st.pin[v] = false
		} else if order[v].Running() || v < first {
			sp.take(st.saved[a])
			out[v] = st.saved[a]
		}
	}
	sp.discard()
	return first
}

// overlaps reports whether two ascending GPU lists share a GPU.
func overlaps(a, b []int) bool {
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] == b[0]:
			return true
		case a[0] < b[0]:
			a = a[1:]
		default:
			b = b[1:]
		}
	}
	return false
}

func resizeBools(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	s = s[:n]
	clear(s)
	return s
}
