package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// The incremental loop gives the reference loop's results (state.run)
// while paying per round for what changed rather than for the queue:
//
//   - Order. Under a policy.KeyedScheduler a waiting job's key changes only
//     when the driver raises its priority or a wake-up it announced falls
//     due, so waiting jobs sit in an ordered set (waitq) keyed by (key, arrival
//     sequence), the same total order the reference's stable sort gives.
//     Running jobs, whose keys change with their service, are re-keyed
//     every round and kept in a small sorted list beside it.
//   - Placement. Every frame stops at the first job that does not fit,
//     and the jobs it placed keep their GPUs, so it never reaches a
//     waiting job once the waiting jobs before it need more GPUs than the
//     cluster has. The placer is handed the running jobs and the waiting
//     ones up to that point, in order; the rest of the queue stays
//     untouched (the property test checks this against the whole order).
//   - Waiting. A waiting job's SinceScheduled only grows by R per round,
//     so it is kept as the round it started from and read off a table of
//     running sums (the same additions, so the same floats) when a key or
//     a guard needs it.
//   - Dead rounds. After a round in which placement changed nothing, a
//     policy.Pure placer gives the same answer as long as its input stays
//     the same: no arrival, no completion, no guard or wake-up due and the
//     same order. The loop looks ahead with copies of the running jobs to
//     the first round where one of those can happen and credits the rounds
//     before it without placing.

// job is a job's runtime state plus what the incremental loop keeps for
// it. Jobs live in fixed slabs (see slots), so a *job stays valid for the
// job's life and a finished job's slot is reused: memory follows the
// active jobs, not the trace.
//
// A job is 448 bytes, seven cache lines, and a slab starts on a page, so
// what the loop reads of every running job every round (the item, the
// running flag and the head of workload.Job, see there) lies in the first
// three lines of each, and a job that starts or stops touches one more
// (workload.Job's launch and preemption record; its waiting stretch's
// base is in the first line). Under LAS most of a round's jobs start or
// stop. TestJobLayout checks the lines. The item's seq is the job's
// admission order (ties in the order keep it; -1 once the slot is free).
type job struct {
	it      item  // key, seq and slot packed for the queue
	base    int32 // round whose SinceScheduled was 0 (see waitedAt)
	running bool
	workload.Job
	_ [32]byte
}

// item is a waiting job's entry in the waiting queue: its key packed into
// two words that compare as the key does, the sequence that breaks ties,
// and its slot. It holds no pointer, so moving items inside the queue costs
// the garbage collector nothing, and comparing two is three integer
// compares.
type item struct {
	hi, lo uint64 // priority and level; value (see packKey)
	seq    int32
	slot   int32
}

func (j *job) item() item { return j.it }

// setKey sets the key a job is ordered by: its packed item, whose seq
// and slot are set when the job is admitted.
func (j *job) setKey(k policy.OrderKey) {
	j.it.hi, j.it.lo = packKey(k)
}

// key is the key a job is filed under, as unpackKey reads it back.
func (j *job) key() policy.OrderKey { return unpackKey(j.it.hi, j.it.lo) }

// packKey maps a key to words whose unsigned order is OrderKey.Compare's:
// priority and level as offset 32-bit integers, the value's bits made
// sortable (NaN first and all equal, -0 equal to +0, as cmp.Compare).
// It is small enough to inline where a running job is re-keyed every
// round: the sign is flipped without a branch, and the panic formats
// nothing here.
func packKey(k policy.OrderKey) (hi, lo uint64) {
	p, l := int32(k.Priority), int32(k.Level)
	if int(p) != k.Priority || int(l) != k.Level {
		panic(keyOutOfRange(k))
	}
	hi = uint64(uint32(p)^1<<31)<<32 | uint64(uint32(l)^1<<31)
	return hi, packValue(k.Value)
}

// packValue is packKey's word for a key's value.
func packValue(v float64) uint64 {
	if v != v { // NaN
		return 0
	}
	b := math.Float64bits(v + 0) // -0 + 0 is +0; any other v + 0 is v
	// A negative value has all its bits flipped, any other its sign bit set.
	return b ^ (uint64(int64(b)>>63) | 1<<63)
}

// keyOutOfRange is packKey's panic for a key it cannot pack.
type keyOutOfRange policy.OrderKey

func (k keyOutOfRange) Error() string {
	return fmt.Sprintf("sim: order key %+v out of the packed range", policy.OrderKey(k))
}

// unpackKey is packKey's inverse up to what OrderKey.Compare cannot tell
// apart: every NaN comes back as one NaN, -0 as +0. A key read back
// compares with any other key as the key packed did.
func unpackKey(hi, lo uint64) policy.OrderKey {
	k := policy.OrderKey{Priority: int(int32(uint32(hi>>32) ^ 1<<31)), Level: int(int32(uint32(hi) ^ 1<<31))}
	if lo>>63 != 0 {
		lo &^= 1 << 63
	} else {
		lo = ^lo
	}
	k.Value = math.Float64frombits(lo)
	return k
}

func itemLess(a, b item) bool {
	if a.hi != b.hi {
		return a.hi < b.hi
	}
	if a.lo != b.lo {
		return a.lo < b.lo
	}
	return a.seq < b.seq
}

// itemsSorted reports whether s is ascending: the running jobs' new keys
// (taken in creditNext) seldom change their order, so the check spares
// most rounds a sort.
func itemsSorted(s []item) bool {
	for i := 1; i < len(s); i++ {
		if itemLess(s[i], s[i-1]) {
			return false
		}
	}
	return true
}

// event is a wake-up for the job admitted as seq, in slot, if it is still
// waiting since base.
type event struct {
	due, base, seq int
	slot           int32
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(a, b int) bool {
	if h[a].due != h[b].due {
		return h[a].due < h[b].due
	}
	return h[a].seq < h[b].seq
}
func (h eventHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type incremental struct {
	*state
	ks    policy.KeyedScheduler
	R     float64
	limit int // GPUs: see buildView
	wait  waitq
	// run holds the running jobs' items, sorted by (key, seq) before
	// placing: building the view and sorting read no running job (the
	// slot finds it), and the list holds no pointer, so the garbage
	// collector neither scans it nor guards its writes.
	run []item
	// due lists (ascending) the running jobs whose next credit completes
	// them.
	due       []int32
	runSpare  []item
	slabs     []*[slabSize]job
	gpus      []int32       // demand by slot, so buildView need not touch a waiting job
	extraSpec workload.Spec // the extra being admitted
	free      []int32
	seq       int
	waits     waitClock // SinceScheduled after m waiting rounds
	mGuard    int       // waiting rounds that trip the starvation guard (0: off)
	guards    guardList // one per waiting job, due mGuard rounds after its base
	wakes     eventHeap
	view      []*job
	order     []*workload.Job
	ahead     []workload.Job // look-ahead copies of the running jobs
	aheadKy   []policy.OrderKey
	pos       []int // view position of each running job (look-ahead)
	// stream places with a policy.Streamer when the run pipelines
	// (Config.Pipeline) and there is a second core to apply the answer on
	// (see schedule); relay and streamErr connect
	// the two goroutines.
	stream    bool
	relay     *round.Relay
	streamErr chan error
	// The round being applied, for visit: the answer, the round, its
	// boundary and the next one; what visit found (GPUs in use, whether
	// anything launched, moved or stopped); visitFn is visit bound once.
	vAlloc  [][]int
	vRound  int
	vT, vTn float64
	inUse   int
	changed bool
	visitFn func(int, round.Kind)
	// started and stopped hold the items of the jobs the round launches
	// and stops, in view order, which is the queue's: visit collects
	// them and requeue takes the first out of the waiting queue and files
	// the second in, each in one ordered run after the pass (nothing
	// reads the queue in between).
	started, stopped []item
	// steady: the scheduler never wakes a waiting job (policy.Steady),
	// so waiting arms no wake-up.
	steady bool
	// fixed: a job's key changes only with its priority (policy.Fixed),
	// so creditNext keys no running job again.
	fixed bool
	// attained: a job's key is its priority and attained service
	// (policy.ByAttained), so creditNext packs the service itself.
	attained bool
	// touched keeps what applyLong's reads ahead summed, so that they
	// stay in the compiled code.
	touched int
}

func (s *state) runIncremental(ks policy.KeyedScheduler) (*Result, error) {
	x := &incremental{state: s, ks: ks, R: s.cfg.Round, limit: s.cl.Size(),
		waits: newWaitClock(s.cfg.Round), stream: s.cfg.Pipeline && runtime.GOMAXPROCS(0) > 1,
		relay: round.NewRelay(), streamErr: make(chan error, 1)}
	if g := s.cfg.StarvationGuard; g > 0 {
		x.mGuard = x.roundsToWait(g)
	}
	x.guards.head, x.guards.tail = -1, -1
	if st, ok := ks.(policy.Steady); ok {
		x.steady = st.Steady()
	}
	if f, ok := ks.(policy.Fixed); ok {
		x.fixed = f.Fixed()
	}
	if a, ok := ks.(policy.ByAttained); ok {
		x.attained = a.ByAttained()
	}
	pure := false
	if p, ok := s.cfg.Placer.(policy.Pure); ok {
		pure = p.Pure()
	}
	for round := 0; ; round++ {
		if round >= s.maxRound {
			return nil, s.tooLong(round)
		}
		T := float64(round) * x.R
		x.progress(T)
		if s.tracked == 0 {
			break
		}
		x.arrive(round, T)
		if s.rows.err != nil {
			return nil, s.rows.err
		}
		x.events(round, T)
		changed, stat := x.schedule(round, T)
		s.report(round, x.active())
		if !changed && pure && !s.cfg.noSkip {
			round = x.skip(round, stat)
		}
	}
	// The jobs still active, in arrival order as the plain loop keeps them.
	rest := make([]*job, 0, x.active())
	for _, it := range x.run {
		rest = append(rest, x.at(it.slot))
	}
	x.wait.Scan(func(it item) bool {
		rest = append(rest, x.at(it.slot))
		return true
	})
	slices.SortFunc(rest, func(a, b *job) int { return cmp.Compare(a.it.seq, b.it.seq) })
	unfinished := make([]*workload.Job, len(rest))
	for i, j := range rest {
		unfinished[i] = &j.Job
	}
	return s.result(unfinished), nil
}

func (x *incremental) active() int { return len(x.run) + x.wait.Len() }

// waitedAt is SinceScheduled of a job that started waiting at base, as
// seen by the scheduler in round r: the sum of r-base additions of R.
func (x *incremental) waitedAt(r, base int) float64 { return x.waits.at(r - base) }

// roundsToWait is the first number of waiting rounds whose SinceScheduled
// reaches w (w > 0 and finite).
func (x *incremental) roundsToWait(w float64) int { return x.waits.rounds(w) }

// progress completes the jobs that reached their total at T. A running
// job is credited for the round (T-R, T] and re-keyed at T ahead of time,
// at the end of the round before, as the answer is applied (see
// creditNext), so the jobs done are already known (due) and this pass
// reads none of the others.
func (x *incremental) progress(T float64) {
	if len(x.due) == 0 {
		return
	}
	// The jobs before the first due stay where they are; each stretch
	// between two dues moves down in one copy.
	n := int(x.due[0])
	for d, i := range x.due {
		j := x.at(x.run[i].slot)
		x.finish(&j.Job, T)
		x.release(j)
		lo, hi := int(i)+1, len(x.run)
		if d+1 < len(x.due) {
			hi = int(x.due[d+1])
		}
		copy(x.run[n:], x.run[lo:hi])
		n += hi - lo
	}
	x.run = x.run[:n]
	x.due = x.due[:0]
}

// startRun empties the running list before the answer's visit (or a
// skip's last credit) fills it again through addRun.
func (x *incremental) startRun() {
	x.run, x.due = x.run[:0], x.due[:0]
}

// addRun appends a running job, already credited for the next round by
// creditNext.
func (x *incremental) addRun(j *job, done bool) {
	if done {
		x.due = append(x.due, int32(len(x.run)))
	}
	x.run = append(x.run, j.it)
}

// creditNext does for a running job what the reference loop's progress
// does at the next boundary Tn, ahead of time: credit the round ending at
// Tn and, unless that completes the job, take its key at Tn. Nothing
// reads a running job's progress or key between the two (arrivals and
// events touch waiting jobs only; skip looks ahead from there), and a
// key depends only on Tn and the job. Done here, inside the answer's
// visit, it costs no pass of its own and, when the answer streams, runs
// beside the placer. It reports whether the job completes at Tn.
func (x *incremental) creditNext(j *job, Tn float64) bool {
	x.busy += int64(len(j.GPUsHeld))
	credit(&j.Job, x.R)
	if j.Executed >= j.Iterations {
		return true
	}
	switch {
	case x.attained:
		// Only the value moves (LAS's key is the priority and the
		// service): the first word holds the priority the job was
		// filed under, which a running job keeps (events raise only a
		// waiting job's).
		j.it.lo = packValue(j.Attained)
	case !x.fixed:
		// A fixed key (FIFO's) is the one the job was filed under:
		// a running job's priority does not change.
		j.setKey(x.ks.Key(Tn, &j.Job))
	}
	return false
}

func (x *incremental) arrive(round int, T float64) {
	s := x.state
	for sp := s.rows.peek(); sp != nil && sp.Submit <= T; sp = s.rows.peek() {
		x.admit(round, T, sp)
		s.rows.pop()
	}
	if s.rows.done() {
		for s.extra.on() && s.extra.peek() <= T {
			x.extraSpec = s.extra.pop()
			x.admit(round, T, &x.extraSpec)
		}
	}
}

func (x *incremental) admit(round int, T float64, sp *workload.Spec) {
	j := x.alloc()
	j.Job = workload.Job{Spec: *sp, Priority: workload.DefaultPriority, FirstStart: -1, Completion: -1}
	if sp != &x.extraSpec {
		j.Tracked = x.tracks(sp)
	}
	j.MoveCost = x.cfg.Costs.For(&j.Spec)
	x.gpus[j.it.slot] = int32(j.GPUs)
	j.it.seq, j.base = int32(x.seq), int32(round)
	x.seq++
	j.setKey(x.ks.Key(T, &j.Job))
	x.file(j)
	x.waiting(j, round)
}

// slabSize jobs are allocated at a time.
const slabSize = 1024

func (x *incremental) at(slot int32) *job {
	s := uint32(slot) // unsigned: a shift and a mask, no bounds check on the slab
	return &x.slabs[s/slabSize][s%slabSize]
}

func (x *incremental) alloc() *job {
	if len(x.free) == 0 {
		base := int32(len(x.slabs) * slabSize)
		x.slabs = append(x.slabs, new([slabSize]job))
		x.gpus = append(x.gpus, make([]int32, slabSize)...)
		x.guards.grow(slabSize)
		for i := int32(slabSize) - 1; i >= 0; i-- {
			x.free = append(x.free, base+i)
		}
	}
	slot := x.free[len(x.free)-1]
	x.free = x.free[:len(x.free)-1]
	j := x.at(slot)
	j.it.slot = slot
	return j
}

// release returns a finished job's slot.
func (x *incremental) release(j *job) {
	slot := j.it.slot
	*j = job{}
	j.it.seq = -1
	x.guards.remove(slot)
	x.free = append(x.free, slot)
}

// file puts a waiting job in the waiting queue; unfile takes it out. Both go
// by the key the job is filed under, so a key changes only in between.
func (x *incremental) file(j *job)   { x.wait.Set(j.item()) }
func (x *incremental) unfile(j *job) { x.wait.Delete(j.item()) }

// waiting arms the starvation guard and any wake-up of a job that starts
// waiting at round.
func (x *incremental) waiting(j *job, round int) {
	if x.mGuard > 0 {
		// The job's guard from an earlier wait, if any, is stale: a
		// guard belongs to one stretch of waiting.
		x.guards.remove(j.it.slot)
		if j.Priority != 1 {
			x.guards.push(j.it.slot, round, int(j.it.seq))
		}
	}
	if !x.steady {
		x.arm(j, round)
	}
}

func (x *incremental) arm(j *job, round int) {
	if w := x.ks.WakeAfter(&j.Job); !math.IsInf(w, 1) && !math.IsNaN(w) {
		due := round + 1
		if w > 0 {
			due = int(j.base) + max(1, x.roundsToWait(w))
		}
		heap.Push(&x.wakes, event{due: max(due, round+1), base: int(j.base), seq: int(j.it.seq), slot: j.it.slot})
	}
}

// job is the event's job if it is still waiting since the event's base.
func (x *incremental) job(e event) *job {
	if j := x.at(e.slot); int(j.it.seq) == e.seq && !j.running && int(j.base) == e.base {
		return j
	}
	return nil
}

// events applies the guards and wake-ups due this round, re-filing the
// jobs whose key they change.
func (x *incremental) events(round int, T float64) {
	for g := &x.guards; g.head >= 0 && int(g.base[g.head])+x.mGuard <= round; {
		e := g.pop()
		j := x.job(e)
		if j == nil || j.Priority == 1 {
			continue
		}
		x.unfile(j)
		j.Priority = 1
		x.rekeyWaiting(j, round, T)
	}
	for len(x.wakes) > 0 && x.wakes[0].due <= round {
		j := x.job(heap.Pop(&x.wakes).(event))
		if j == nil {
			continue
		}
		x.unfile(j)
		x.rekeyWaiting(j, round, T)
		x.arm(j, round)
	}
}

// rekeyWaiting files a waiting job (out of the queue) under its key now.
func (x *incremental) rekeyWaiting(j *job, round int, T float64) {
	j.SinceScheduled = x.waitedAt(round, int(j.base))
	j.setKey(x.ks.Key(T, &j.Job))
	x.file(j)
}

// schedule re-keys the running jobs, places the view and applies the
// answer. It reports whether anything was launched, moved or preempted.
func (x *incremental) schedule(rnd int, T float64) (bool, RoundStat) {
	// The running jobs are in last round's order, which their new keys
	// (taken in creditNext) seldom change (LAS and SRTF move them all by
	// the same service).
	if !itemsSorted(x.run) {
		slices.SortFunc(x.run, func(a, b item) int {
			if itemLess(a, b) {
				return -1
			}
			return 1
		})
	}
	x.buildView()
	sp, stream := x.cfg.Placer.(policy.Streamer)
	stream = stream && x.stream && !sp.Sticky() && x.cfg.Observe == nil && x.evict == nil && len(x.order) >= 2*policy.StreamChunk
	var alloc [][]int
	// The answer's outer list lives only for this round here (the jobs
	// keep its inner lists), so one buffer serves every round; a
	// streaming placer's Place is PlaceTo into a fresh list, so it can
	// fill the buffer instead even when nothing streams. An observer may
	// keep the answer, so it gets a fresh one.
	if sp != nil && (stream || x.cfg.Observe == nil) {
		alloc = x.answer(len(x.order))
		if !stream {
			sp.PlaceTo(&x.env, x.order, alloc, nil)
		}
	} else {
		alloc = x.cfg.Placer.Place(&x.env, x.order)
	}
	if x.cfg.Observe != nil {
		for _, j := range x.view {
			if !j.running {
				j.SinceScheduled = x.waitedAt(rnd, int(j.base))
			}
		}
		x.cfg.Observe(T, x.order, alloc)
	}
	x.carryOut(x.order, alloc)
	// One pass over the view applies the answer and moves the jobs that
	// start or stop running between the running list and the waiting
	// queue (a waiting job's SinceScheduled is kept as its base round).
	x.inUse, x.changed = 0, false
	x.startRun()
	x.vAlloc, x.vRound, x.vT, x.vTn = alloc, rnd, T, float64(rnd+1)*x.R
	if x.visitFn == nil {
		x.visitFn = x.visit
	}
	visit := x.visitFn
	var err error
	if stream {
		// The placer runs here while another goroutine applies the lines
		// it has finished (Config.Pipeline: on a shared 2-core virtual
		// machine this cost more than it hid). Same answer, same visits,
		// same order.
		x.relay.Reset()
		go func() { x.streamErr <- x.applier.Stream(x.cl, x.order, alloc, x.relay, visit) }()
		sp.PlaceTo(&x.env, x.order, alloc, x.relay.Ready)
		err = <-x.streamErr
	} else if round.ReadsAhead(len(x.order)) {
		err = x.applyLong(alloc)
	} else {
		err = x.applyView(alloc)
	}
	if err != nil {
		x.placerBug(err)
	}
	x.requeue()
	x.vAlloc = nil
	st := x.roundStat(T, x.inUse, len(x.run), x.wait.Len())
	x.addRound(st)
	return x.changed, st
}

// visit applies line i of the round's answer (x.vAlloc) to the view's
// job i: the one pass over the view that moves the jobs that start or
// stop running between the running list and the waiting queue (a
// waiting job's SinceScheduled is kept as its base round). It is a
// method, bound once, with the round's inputs in fields, so that a round
// allocates no closure.
func (x *incremental) visit(i int, k round.Kind) {
	if k != round.Wait { // a waiting job that stays waiting: visitJob changes nothing
		x.visitJob(i, x.view[i], x.vAlloc[i], k)
	}
}

// applyView is the applier's Apply of the round's answer (an order too
// short to read ahead in, see round.ReadsAhead) with the visit in its own
// loop (see round.Applier.Begin): the same reading, kinds and visits, but
// the visit is no call through a function value, and a job left waiting
// is not visited (visit changes nothing then). Of about 69 jobs a round
// under LAS on the 20,000-job trace, 60 start or stop. It is kept out of
// schedule, which is too large for the profile-guided build to inline the
// applier's Line and the visit into.
//
//go:noinline
func (x *incremental) applyView(alloc [][]int) error {
	a := &x.applier
	if err := a.Begin(x.cl, len(x.view), len(alloc)); err != nil {
		return err
	}
	alloc = alloc[:len(x.view)]
	for i, j := range x.view {
		g := alloc[i]
		k, err := a.Line(x.cl, &j.Job, g)
		if err != nil {
			return err
		}
		if k == round.Wait {
			continue // a waiting job that stays waiting: visit changes nothing
		}
		x.visitJob(i, j, g, k)
	}
	return a.End(x.cl)
}

// applyLong is applyView for an order long enough to read ahead in (see
// round.ReadsAhead): before every round.TouchBlock jobs it reads them
// ahead as the applier's Apply does (round.ReadAhead), so that their
// cache misses overlap. Against Apply with visit, each job is one call
// fewer (no visit through a function value) and a job left waiting is
// not visited.
//
//go:noinline
func (x *incremental) applyLong(alloc [][]int) error {
	a := &x.applier
	if err := a.Begin(x.cl, len(x.view), len(alloc)); err != nil {
		return err
	}
	view, order := x.view, x.order[:len(x.view)]
	alloc = alloc[:len(view)]
	touched := 0
	for lo := 0; lo < len(view); lo += round.TouchBlock {
		hi := min(lo+round.TouchBlock, len(view))
		touched += round.ReadAhead(x.cl, order[lo:hi], alloc[lo:hi])
		for i := lo; i < hi; i++ {
			j, g := view[i], alloc[i]
			k, err := a.Line(x.cl, &j.Job, g)
			if err != nil {
				return err
			}
			if k == round.Wait {
				continue // a waiting job that stays waiting: visit changes nothing
			}
			x.visitJob(i, j, g, k)
		}
	}
	x.touched = touched
	return a.End(x.cl)
}

// visitJob is visit of the view's job i, j, whose line of the answer
// is g and kind k, which is not round.Wait. It is kept out of applyView:
// inlined there, the profile-guided build no longer inlined its own
// callees into it, and the LAS run of the 20,000-job Synergy trace on
// 16x4 took 5,792 million instructions rather than 5,763 million.
//
//go:noinline
func (x *incremental) visitJob(i int, j *job, g []int, k round.Kind) {
	// The kind says what the job was and becomes (a preempted job ran
	// and stops, a launched one waited and runs, a kept or migrated one
	// ran and runs), so each case does its part of applyJob without
	// asking again.
	switch k {
	case round.Preempt:
		x.changed = true
		if x.evict != nil {
			x.applyAt(i, &j.Job, g, k, x.vT)
		} else {
			x.preempt(&j.Job)
		}
		j.running = false
		j.base = int32(x.vRound)
		x.stopped = appendAscending(x.stopped, j.item())
		x.waiting(j, x.vRound)
		return
	case round.Launch:
		x.changed = true
		if !x.relaunched(&j.Job, g) {
			x.launch(&j.Job, g, x.vT)
		}
		x.started = append(x.started, j.item()) // the key it is filed under: creditNext re-keys it
		j.running = true
	case round.Migrate:
		x.changed = true
		x.migrate(&j.Job, g)
	}
	j.SinceScheduled = 0
	x.inUse += len(g)
	x.addRun(j, x.creditNext(j, x.vTn))
}

// relaunched launches a job on g if g is the very list it stopped on,
// keeping the slowdown factors hold set for that list, and reports
// whether it did (else the caller launches it). Answers are read-only
// (see policy.Placer), so the same list is the same GPUs; no score hook
// moves the true speeds here (a run with one takes the reference loop);
// and a job that stopped has started, so its FirstStart stays too. PAL
// hands a job its last list back for 1.56 million of the 3.54 million
// launches of the LAS run of the 20,000-job Synergy trace on 16x4. It is
// small enough to inline into visitJob (as a call of its own, with
// launch inlined into it, it cost 21 instructions a launch).
func (x *incremental) relaunched(j *workload.Job, g []int) bool {
	if l := j.LastGPUs; len(l) != len(g) || len(g) == 0 || &l[0] != &g[0] {
		return false
	}
	j.GPUsHeld = g
	return true
}

// requeue takes the jobs the round launched out of the waiting queue
// and files those it stopped (see started), which visitJob checked are
// ascending as it collected them. Launched jobs are most often the
// queue's first ones, which DeleteRun takes in one step.
func (x *incremental) requeue() {
	x.wait.DeleteRun(x.started)
	x.wait.SetRun(x.stopped)
	x.started, x.stopped = x.started[:0], x.stopped[:0]
}

// appendAscending appends it to s, which must stay ascending: the
// view's order is our own bookkeeping, so an item out of it is a bug.
func appendAscending(s []item, it item) []item {
	if n := len(s); n > 0 && itemLess(it, s[n-1]) {
		panic("sim: the view is out of order")
	}
	return append(s, it)
}

// buildView merges the running jobs with the waiting ones a frame can
// reach: in order, up to and including the first whose demand, added to
// the demand of the waiting jobs before it, exceeds the cluster. A frame
// reaches a waiting job only after placing every waiting job before it,
// and placed jobs keep their GPUs to the end of the round (victims are
// taken only behind the job being placed), so the waiting jobs before it
// fit the cluster together.
func (x *incremental) buildView() {
	// Built in locals: an append to a field reloads and stores it.
	view, order := x.view[:0], x.order[:0]
	run, slabs := x.run, x.slabs
	demand := 0 // of the waiting jobs in the view
	// The waiting queue's blocks are read in place (a cursor's reads
	// cost a bounds check and a reload of the block each), a stretch
	// of waiting jobs at a time: reach finds it on the packed items
	// (most have no running job before them), then the jobs are
	// appended in a loop that does nothing else.
	for b := 0; b < len(x.wait.bs) && demand <= x.limit; b++ {
		its := x.wait.bs[b].items()
		for len(its) > 0 {
			var n int
			n, demand = x.reach(its, run, demand)
			view, order = appendJobs(view, order, slabs, its[:n])
			if demand > x.limit {
				break
			}
			if its = its[n:]; len(its) > 0 {
				// The running jobs before the next waiting one.
				p := runBefore(run, its[0])
				view, order = appendJobs(view, order, slabs, run[:p])
				run = run[p:]
			}
		}
	}
	x.view, x.order = appendJobs(view, order, slabs, run)
}

// reach is the number of waiting items at the start of its that come
// before the next running one, run[0] (all of them when run is empty),
// up to and including the one whose demand takes the view's past the
// cluster, and the view's demand with theirs. Both lists are sorted, so
// it sums the demand first and compares only the last item it reached
// with run[0]: most often that one comes first, and so do the others.
func (x *incremental) reach(its, run []item, demand int) (int, int) {
	gpus, limit := x.gpus, x.limit
	if len(run) > 0 {
		// Every job needs a GPU, so the sum passes the cluster within
		// limit-demand+1 items: when run[0] comes before the last of
		// them, the stretch is cut there first rather than summed past
		// (under FIFO, whose running jobs sit among the waiting ones, the
		// sum ran up to a whole block's worth before it was cut).
		if m := min(len(its), limit-demand+1); m > 0 && !itemLess(its[m-1], run[0]) {
			its = its[:lowerBound(its[:m], run[0])]
			if len(its) == 0 {
				return 0, demand
			}
		}
	}
	n, d := len(its), demand
	for k, w := range its {
		d += int(gpus[w.slot])
		if d > limit {
			n = k + 1
			break
		}
	}
	if len(run) > 0 && !itemLess(its[n-1], run[0]) {
		n, d = lowerBound(its[:n], run[0]), demand
		for _, w := range its[:n] {
			d += int(gpus[w.slot])
		}
	}
	return n, d
}

// appendJobs appends the jobs of its (found by slot in slabs, as at
// does; none of them is read) to view and order.
func appendJobs(view []*job, order []*workload.Job, slabs []*[slabSize]job, its []item) ([]*job, []*workload.Job) {
	n := len(view)
	view = slices.Grow(view, len(its))[:n+len(its)]
	order = slices.Grow(order, len(its))[:n+len(its)]
	fillJobs(view[n:], order[n:], slabs, its)
	return view, order
}

// fillJobs writes the jobs of its to view and order, as long as its. It
// is appendJobs's loop, compiled on its own: inlined into buildView, it
// kept its index and slices on the stack (36 instructions a job).
//
//go:noinline
func fillJobs(view []*job, order []*workload.Job, slabs []*[slabSize]job, its []item) {
	view, order = view[:len(its)], order[:len(its)]
	for k, it := range its {
		s := uint32(it.slot)
		j := &slabs[s/slabSize][s%slabSize]
		view[k], order[k] = j, &j.Job
	}
}

// runBefore is the number of running items at the start of run that
// come before w: a galloping search, since the running jobs ahead of a
// waiting one are usually many or none.
func runBefore(run []item, w item) int {
	n := len(run)
	lo, step, hi := 0, 1, 0
	for hi < n && !itemLess(w, run[hi]) {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, n)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if itemLess(w, run[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// skip is called after a round that changed nothing. It finds the first
// later round whose input to the placer can differ, credits the rounds
// before it exactly as placing them would have, and returns the last
// credited round.
func (x *incremental) skip(round int, st RoundStat) int {
	stop := x.maxRound
	if a := x.nextArrival(); !math.IsInf(a, 1) {
		stop = min(stop, x.roundAtOrAfter(a))
	}
	for g := &x.guards; g.head >= 0; g.pop() {
		if x.job(g.event(g.head)) != nil {
			stop = min(stop, int(g.base[g.head])+x.mGuard)
			break
		}
	}
	for len(x.wakes) > 0 && x.job(x.wakes[0]) == nil {
		heap.Pop(&x.wakes)
	}
	if len(x.wakes) > 0 {
		stop = min(stop, x.wakes[0].due)
	}
	if stop <= round+1 || len(x.run) == 0 && stop == x.maxRound {
		return round
	}
	// Look ahead on copies of the running jobs: round r is dead when none
	// completes at r and the view keeps its order under the keys at r.
	// The jobs are credited for round+1 already, and keyed at it (see
	// creditNext).
	if len(x.due) > 0 {
		return round
	}
	x.ahead = x.ahead[:0]
	x.pos = x.pos[:0]
	for i, j := range x.view {
		if j.running {
			x.ahead = append(x.ahead, j.Job)
			x.pos = append(x.pos, i)
		}
	}
	x.aheadKy = slices.Grow(x.aheadKy[:0], len(x.view))[:len(x.view)]
	for i, j := range x.view {
		x.aheadKy[i] = j.key()
	}
	r := round + 1
	for ; r < stop; r++ {
		T := float64(r) * x.R
		done := false
		// The view's order is checked at round+1 (the running jobs were
		// re-keyed after the view was built); after that only when a
		// key moved: keys that compare equal to the last checked ones
		// leave every comparison as it was. Under FIFO no key ever
		// moves, and the neighbour checks were a tenth of a run.
		moved := r == round+1
		for k := range x.ahead {
			a := &x.ahead[k]
			if r > round+1 {
				credit(a, x.R)
			}
			if a.Executed >= a.Iterations {
				done = true
			}
			ky := x.ks.PeekKey(T, a)
			p := &x.aheadKy[x.pos[k]]
			if !moved && ky.Compare(*p) != 0 {
				moved = true
			}
			*p = ky
		}
		if done || moved && !x.viewSorted() {
			break
		}
	}
	if r == round+1 {
		return round
	}
	// Rounds round+1 .. r-1 repeat round: each is credited (ahead, as in
	// creditNext) at the end of the one before.
	for q := round + 1; q < r; q++ {
		T := float64(q) * x.R
		st.T = T
		x.addRound(st)
		if x.cfg.Observe != nil {
			x.observeRepeat(q, T)
		}
		x.report(q, x.active())
		if q+1 < r {
			for _, it := range x.run {
				j := x.at(it.slot)
				x.busy += int64(len(j.GPUsHeld))
				credit(&j.Job, x.R)
			}
		}
	}
	// Round r-1 credits round r as the answer's visit would.
	run := append(x.runSpare[:0], x.run...)
	x.startRun()
	Tr := float64(r) * x.R
	for _, it := range run {
		j := x.at(it.slot)
		x.addRun(j, x.creditNext(j, Tr))
	}
	x.runSpare = run
	return r - 1
}

// viewSorted checks, under the look-ahead keys, that every pair of
// neighbours in the view involving a running job is still in order.
func (x *incremental) viewSorted() bool {
	for _, p := range x.pos {
		if p > 0 && !x.inOrder(p-1, p) || p+1 < len(x.view) && !x.inOrder(p, p+1) {
			return false
		}
	}
	return true
}

func (x *incremental) inOrder(a, b int) bool {
	if c := x.aheadKy[a].Compare(x.aheadKy[b]); c != 0 {
		return c < 0
	}
	return x.view[a].it.seq < x.view[b].it.seq
}

// observeRepeat shows a skipped round to Config.Observe: the same order
// and, since nothing changes, every job keeping what it holds.
func (x *incremental) observeRepeat(round int, T float64) {
	alloc := make([][]int, len(x.view))
	for i, j := range x.view {
		alloc[i] = j.GPUsHeld
		if !j.running {
			j.SinceScheduled = x.waitedAt(round, int(j.base))
		}
	}
	x.cfg.Observe(T, x.order, alloc)
}

// roundAtOrAfter is the first round whose boundary is >= t, as the loop
// computes boundaries.
func (x *incremental) roundAtOrAfter(t float64) int {
	if t <= 0 {
		return 0
	}
	q := t / x.R
	if q >= float64(x.maxRound) {
		return x.maxRound
	}
	r := int(math.Ceil(q))
	for r > 0 && float64(r-1)*x.R >= t {
		r--
	}
	for float64(r)*x.R < t {
		r++
	}
	return r
}

// guardList holds the starvation guards: at most one per job slot, for
// the job's current stretch of waiting, linked through the slots in the
// order they were armed. A guard is due a fixed number of rounds after
// the round it was armed in, so that order is also the order they fall
// due: the next due is the head, arming appends, and a job that starts
// waiting again (after a preemption) unlinks its old guard first. Memory
// is bounded by the jobs in the system, not by the preemptions so far
// (under LAS millions of them on a 20,000-job trace, each of which
// appended to a list in the first version).
type guardList struct {
	head, tail int32
	next, prev []int32 // -1: none; prev -2: slot not linked
	base, seq  []int32 // the waiting stretch the guard was armed for
}

// grow adds n unlinked slots.
func (g *guardList) grow(n int) {
	for range n {
		g.next = append(g.next, -1)
		g.prev = append(g.prev, -2)
		g.base = append(g.base, 0)
		g.seq = append(g.seq, 0)
	}
}

// push arms slot's guard for a wait that started at base (the newest
// guard, so the last due).
func (g *guardList) push(slot int32, base, seq int) {
	g.base[slot], g.seq[slot] = int32(base), int32(seq)
	g.prev[slot], g.next[slot] = g.tail, -1
	if g.tail >= 0 {
		g.next[g.tail] = slot
	} else {
		g.head = slot
	}
	g.tail = slot
}

// remove unlinks slot's guard, if it has one.
func (g *guardList) remove(slot int32) {
	p := g.prev[slot]
	if p == -2 {
		return
	}
	n := g.next[slot]
	if p >= 0 {
		g.next[p] = n
	} else {
		g.head = n
	}
	if n >= 0 {
		g.prev[n] = p
	} else {
		g.tail = p
	}
	g.prev[slot], g.next[slot] = -2, -1
}

// event is slot's guard as an event (due is left out: callers compare
// base + mGuard).
func (g *guardList) event(slot int32) event {
	return event{base: int(g.base[slot]), seq: int(g.seq[slot]), slot: slot}
}

// pop unlinks and returns the head guard.
func (g *guardList) pop() event {
	e := g.event(g.head)
	g.remove(g.head)
	return e
}
