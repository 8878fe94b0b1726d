// Package round is the one reading of a scheduling round that every driver
// shares: a placer returns, for the jobs in scheduler order, the GPUs each
// should hold after the round; this package compares that answer with what
// each job holds now and turns the difference into launches, preemptions
// and migrations, applying it to the cluster's owner table.
//
// The simulator applies the result to its model of progress; the
// Kubernetes driver binds and evicts pods. Keeping the reading here means
// a "migration" or a "preemption" is the same event in both, which is what
// lets a replay on a real cluster be compared job for job with `pal sim`.
package round

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/workload"
)

// Kind is what a round does to one job.
type Kind uint8

const (
	// Wait: the job held no GPUs and gets none.
	Wait Kind = iota
	// Launch: the job held no GPUs and gets some.
	Launch
	// Keep: the job runs on exactly the GPUs it held.
	Keep
	// Preempt: the job held GPUs and gets none.
	Preempt
	// Migrate: the job held GPUs and gets a different set.
	Migrate
)

var kindNames = [...]string{"wait", "launch", "keep", "preempt", "migrate"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Runs reports whether the job holds GPUs after the round.
func (k Kind) Runs() bool { return k == Launch || k == Keep || k == Migrate }

// Changes reports whether the job's GPUs change.
func (k Kind) Changes() bool { return k == Launch || k == Preempt || k == Migrate }

// Classify reads one line of a placer's answer: held is what the job holds
// now (nil when not running), next what the placer gives it (nil: nothing).
func Classify(held, next []int) Kind {
	switch {
	case held == nil && next == nil:
		return Wait
	case held == nil:
		return Launch
	case next == nil:
		return Preempt
	case Same(held, next):
		return Keep
	default:
		return Migrate
	}
}

// Same reports whether two GPU lists are equal. Placers hand a job that
// stays its own list back, so the common case is one pointer compare.
func Same(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// Apply makes cl hold the placer's answer: alloc[i] is the ascending GPU
// list of order[i] after the round, nil if it does not run. Every running
// job whose GPUs change releases them first, so that GPUs moving between
// jobs never collide; then every launched or migrated job takes its new
// set. visit, if not nil, is called once per job in order, after cl holds
// the whole new allocation, with the job's index and Kind; the jobs
// themselves are not changed (their GPUsHeld is still the old set), which
// is the driver's part.
//
// A placer that gives a job the wrong number of GPUs, or one GPU to two
// jobs, is an error naming the job; cl may then be partly changed, and the
// caller should treat it as a bug in the placer.
func Apply(cl *cluster.Cluster, order []*workload.Job, alloc [][]int, visit func(i int, k Kind)) error {
	if len(alloc) != len(order) {
		return fmt.Errorf("round: placer answered for %d jobs, %d were ordered", len(alloc), len(order))
	}
	kinds := make([]Kind, len(order))
	for i, j := range order {
		kinds[i] = Classify(j.GPUsHeld, alloc[i])
		if k := kinds[i]; k == Preempt || k == Migrate {
			if err := cl.Release(j.ID, j.GPUsHeld); err != nil {
				return fmt.Errorf("round: %w", err)
			}
		}
	}
	for i, j := range order {
		if k := kinds[i]; k != Launch && k != Migrate {
			continue
		}
		g := alloc[i]
		if want, most := j.GPUs, j.Most(); len(g) < want || len(g) > most {
			if most > want {
				return fmt.Errorf("round: job %d got %d GPUs, it runs on %d..%d", j.ID, len(g), want, most)
			}
			return fmt.Errorf("round: job %d got %d GPUs, its demand is %d", j.ID, len(g), want)
		}
		if err := cl.Assign(j.ID, g); err != nil {
			return fmt.Errorf("round: %w", err)
		}
	}
	if visit != nil {
		for i, k := range kinds {
			visit(i, k)
		}
	}
	return nil
}

// Applier is Apply for a driver that reads each job of a round once: its
// visit comes as soon as the job is classified. It keeps its scratch
// space from round to round.
//
// It rebuilds the owner table in one pass over the answer instead of
// releasing and assigning job by job: every job the answer runs writes
// its GPUs into a fresh table, which replaces the cluster's at the end.
// A job stays (Keep) when the answer gives it as many GPUs as it holds,
// ascending, each owned by it in the table the round started from; the
// job's own list is never read, which on a large cluster, where most
// running jobs move or stay every round, saves reading one scattered list
// per job. So the order must hold every job that holds GPUs (a driver's
// whole active set, as the simulator hands it); a job outside it that
// holds GPUs is an error, since the rebuilt table would take them away.
type Applier struct {
	next    []int // the owner table being built
	free    []int // an all-free table, which Begin copies into next
	held    int   // GPUs the jobs read so far hold (see Line)
	taken   int   // GPUs claimed in next so far (see Line)
	touched int   // what the round's reads ahead (touch) summed, kept so they stay
}

// Apply does what the package's Apply does to cl, with the same kinds and
// the same resulting owner table, but calls visit(i, k) for each job in
// order right after classifying it, before the next job is read. visit
// may change the job it is given (its GPUsHeld included: Apply has read
// it by then) but must not read cl's owners, which change at the end.
// order must hold every job holding GPUs in cl (see Applier). A placer
// that gives a job the wrong number of GPUs, or one GPU to two jobs, is an
// error naming the job, and cl is then unchanged; jobs before the failing
// one have been visited.
func (a *Applier) Apply(cl *cluster.Cluster, order []*workload.Job, alloc [][]int, visit func(i int, k Kind)) error {
	return a.apply(cl, order, alloc, nil, visit)
}

// Stream is Apply for an answer a placer is still producing on another
// goroutine (see policy.Streamer), told through r: job i is read and
// visited as soon as r says alloc[i] is final, so visits overlap the
// placing of later jobs. Same kinds, table and errors as Apply (a GPU
// given to two jobs is reported on the later one). It returns only after
// r has reached len(order), error or not, so the placer is done with
// order and alloc by then.
func (a *Applier) Stream(cl *cluster.Cluster, order []*workload.Job, alloc [][]int, r *Relay, visit func(i int, k Kind)) error {
	err := a.apply(cl, order, alloc, r, visit)
	for n := r.n.Load(); int(n) < len(order); n = r.n.Load() {
		r.wait(int(n))
	}
	return err
}

func (a *Applier) apply(cl *cluster.Cluster, order []*workload.Job, alloc [][]int, r *Relay, visit func(i int, k Kind)) error {
	if err := a.Begin(cl, len(order), len(alloc)); err != nil {
		return err
	}
	ready := len(order)
	if r != nil {
		ready = 0
	}
	touched, touchedTo := 0, 0
	if len(order) < touchMin {
		touchedTo = -1 // no reads ahead: i never reaches it
	}
	for i := range order {
		if i == ready {
			ready = r.wait(i)
		}
		if i == touchedTo {
			touchedTo = min(i+touchBlock, ready)
			touched += ReadAhead(cl, order[i:touchedTo], alloc[i:touchedTo])
		}
		k, err := a.Line(cl, order[i], alloc[i])
		if err != nil {
			return err
		}
		visit(i, k)
	}
	a.touched = touched
	return a.End(cl)
}

// Begin starts a round of n ordered jobs and an answer of m lines (an
// error unless m == n) for a driver that runs Apply's loop itself, so
// that its own part of each job (Apply's visit) sits in its loop rather
// than behind a call: Line reads each job in order, End installs the
// table. The three make exactly Apply's reading (Apply is written with
// them), with the same kinds, table and errors.
func (a *Applier) Begin(cl *cluster.Cluster, n, m int) error {
	if m != n {
		return fmt.Errorf("round: placer answered for %d jobs, %d were ordered", m, n)
	}
	size := cl.Size()
	if len(a.free) != size {
		a.setFree(size)
	}
	if cap(a.next) < size {
		a.next = make([]int, size)
	}
	a.next = a.next[:size]
	copy(a.next, a.free) // one copy, not a store of Free per GPU
	a.held, a.taken = 0, 0
	return nil
}

// setFree makes free an all-free table of size GPUs.
func (a *Applier) setFree(size int) {
	a.free = make([]int, size)
	for g := range a.free {
		a.free[g] = cluster.Free
	}
}

// Line classifies the next job of the round begun by Begin: j holds
// j.GPUsHeld and the answer gives it g. It claims g in the table being
// built. After it returns, the driver may change j (its GPUsHeld
// included) but must not read cl's owners, which change at End.
func (a *Applier) Line(cl *cluster.Cluster, j *workload.Job, g []int) (Kind, error) {
	h := j.GPUsHeld
	a.held += len(h)
	var k Kind
	switch {
	case h == nil && g == nil:
		return Wait, nil
	case h == nil:
		k = Launch
	case g == nil:
		return Preempt, nil
	case stays(cl, j.ID, h, g):
		k = Keep
	default:
		k = Migrate
	}
	if k != Keep && (len(g) < j.GPUs || len(g) > j.Most()) {
		return k, sizeErr(j, g)
	}
	if !claimed(a.next, j.ID, g) {
		return k, fmt.Errorf("round: %w", claim(a.next, j.ID, g))
	}
	a.taken += len(g)
	return k, nil
}

// sizeErr is the error for an answer that gives j g, outside its demand.
func sizeErr(j *workload.Job, g []int) error {
	if want, most := j.GPUs, j.Most(); most > want {
		return fmt.Errorf("round: job %d got %d GPUs, it runs on %d..%d", j.ID, len(g), want, most)
	}
	return fmt.Errorf("round: job %d got %d GPUs, its demand is %d", j.ID, len(g), j.GPUs)
}

// End checks that the jobs read since Begin hold every GPU taken in cl
// and makes cl hold the table they built.
func (a *Applier) End(cl *cluster.Cluster) error {
	if busy := cl.Size() - cl.FreeCount(); a.held != busy {
		return fmt.Errorf("round: the ordered jobs hold %d GPUs but %d are taken: every job holding GPUs must be in the order", a.held, busy)
	}
	// Every GPU claimed was checked free first (claimed), so the table
	// holds exactly taken GPUs: it is not counted again.
	old, err := cl.Adopt(a.next, len(a.next)-a.taken)
	if err != nil {
		return fmt.Errorf("round: %w", err)
	}
	a.next = old
	return nil
}

// touchMin is the shortest order apply reads ahead in (see touch). In a
// short one the reads ahead cost more than they save: a round of the
// 20,000-job Synergy trace on 16x4 under LAS orders about 69 jobs, and
// the run without them took 0.96-0.97 of the CPU time, while on 4608x6,
// where a round of the 100,000-job trace orders about 13,000, they save
// time (docs/measurements/sim-scale-20k-las-pgo-2026-12-05.txt). Orders
// in between were not measured; 1,024 is where a placer starts to
// stream (two policy.StreamChunk).
const touchMin = 1024

// ReadsAhead reports whether Apply and Stream read ahead in an order of
// n jobs (see touch). Line reads nothing ahead, so a driver running
// Apply's loop itself (see Begin) should leave an order this long to
// Apply.
func ReadsAhead(n int) bool { return n >= touchMin }

// touchBlock is how many jobs apply reads (see touch) in one tight loop
// before classifying them one by one.
const touchBlock = 32

// TouchBlock is touchBlock for a driver that runs Apply's loop itself
// over a long order (see ReadAhead).
const TouchBlock = touchBlock

// ReadAhead reads, for each job of order and its line of alloc, what
// Line and a driver's visit read (see touch) and the owner of the line's
// first GPU, as Apply does every TouchBlock jobs of an order for which
// ReadsAhead holds, and returns something of it for the caller to keep
// (so that the reads stay in the compiled code). A driver running
// Apply's loop itself (see Begin) over such an order calls it so.
func ReadAhead(cl *cluster.Cluster, order []*workload.Job, alloc [][]int) int {
	touched, size := 0, cl.Size()
	alloc = alloc[:len(order)]
	for k, j := range order {
		g := alloc[k]
		touched += touch(j, g)
		if len(g) > 0 && uint(g[0]) < uint(size) {
			touched += cl.Owner(g[0]) // what stays reads first
		}
	}
	return touched
}

// touch reads the words of j that classifying it reads (its GPU list,
// id and demand) and that a driver's visit typically reads or writes,
// and returns something of them so that the reads stay in the compiled
// code. A job that starts or stops (it holds GPUs and next is nil, or
// the other way round) has its launch and preemption record read too
// (Preemptions, beside FirstStart, LastGPUs and MoveCost in workload.Job):
// under LAS most of a round's jobs start or stop, and that line was a
// miss waited for in every visit. In an order of at least touchMin jobs,
// apply reads a block of jobs so before their turn (and the owner
// of the first GPU of each one's final line): in a loop that
// does nothing else the processor has the reads of many jobs in flight
// at once, while the loop body between two jobs (the visit) is too long
// for it to run ahead into the next job by itself. Without it every job
// of a large round was a cache miss waited for in turn (a fifth of a
// million-job simulation's CPU time on 4608x6). Reading a job the placer
// may still be reading is no race: a placer does not write jobs.
func touch(j *workload.Job, next []int) int {
	t := len(j.GPUsHeld) + j.RoundsRun + j.ID + j.MaxGPUs
	if (j.GPUsHeld == nil) != (next == nil) {
		t += j.Preemptions
	}
	return t
}

// stays reports whether job id, holding held, keeps exactly those GPUs
// under next: the same list (one pointer compare, as placers hand a job
// that stays its own list), or as many GPUs, ascending, each owned by it
// now, which read off the owner table is the same set without reading
// the job's list. An answer that is not ascending is compared element by
// element, as Classify does.
func stays(cl *cluster.Cluster, id int, held, next []int) bool {
	if len(held) != len(next) {
		return false
	}
	if &held[0] == &next[0] {
		return true
	}
	prev := -1
	for _, g := range next {
		if g <= prev || g >= cl.Size() {
			return slices.Equal(held, next)
		}
		if cl.Owner(g) != id {
			return false
		}
		prev = g
	}
	return true
}

// claimed is claim's common case, small enough to inline into Line: it
// writes job's GPUs into the owner table being built and reports whether
// each was free (and the job id and GPU ids valid). When one was not, it
// frees again the ones it wrote, so that claim, run next on the table as
// it was, finds the same fault and words the error.
func claimed(next []int, job int, gpus []int) bool {
	if job < 0 {
		return false
	}
	for i, g := range gpus {
		if uint(g) >= uint(len(next)) || next[g] != cluster.Free {
			for _, w := range gpus[:i] {
				next[w] = cluster.Free
			}
			return false
		}
		next[g] = job
	}
	return true
}

// claim writes job's GPUs into the owner table being built, with Assign's
// checks and errors.
func claim(next []int, job int, gpus []int) error {
	if job < 0 {
		return fmt.Errorf("cluster: invalid job id %d", job)
	}
	for _, g := range gpus {
		if g < 0 || g >= len(next) {
			return fmt.Errorf("cluster: job %d: GPU %d does not exist", job, g)
		}
		switch o := next[g]; {
		case o == job:
			return fmt.Errorf("cluster: job %d: GPU %d listed twice", job, g)
		case o != cluster.Free:
			return fmt.Errorf("cluster: job %d: GPU %d already held by job %d", job, g, o)
		}
		next[g] = job
	}
	return nil
}

// Relay carries a streaming placer's progress to Applier.Stream on
// another goroutine: the placer calls Ready (policy.Streamer's ready),
// Stream waits on it. Waiting parks the goroutine rather than spinning,
// so on a busy machine the two take turns instead of burning a core.
type Relay struct {
	n    atomic.Int64
	wake chan struct{}
}

// NewRelay makes a relay for one answer at a time.
func NewRelay() *Relay { return &Relay{wake: make(chan struct{}, 1)} }

// Ready records that the answer's first n lines are final.
func (r *Relay) Ready(n int) {
	r.n.Store(int64(n))
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is already pending; it will see n
	}
}

// Reset readies r for the next answer; no Ready may be in flight.
func (r *Relay) Reset() {
	r.n.Store(0)
	select {
	case <-r.wake:
	default:
	}
}

// wait returns the number of final lines once it exceeds i.
func (r *Relay) wait(i int) int {
	for {
		if n := int(r.n.Load()); n > i {
			return n
		}
		<-r.wake
	}
}

// Decision is one job whose GPUs change in a round, with the reason a
// person reads in an event or a log line.
type Decision struct {
	Index    int // position in the round's order
	Job      *workload.Job
	Kind     Kind
	From, To []int // GPUs held before and after (nil: none)
	Reason   string
}

// Plan applies the placer's answer to cl like Apply and returns every
// launch, preemption and migration in order, each with its reason. A job
// that loses GPUs is told which jobs now hold them (they were ordered
// ahead of it) or that the placer left it out.
func Plan(cl *cluster.Cluster, order []*workload.Job, alloc [][]int) ([]Decision, error) {
	var out []Decision
	err := Apply(cl, order, alloc, func(i int, k Kind) {
		if !k.Changes() {
			return
		}
		j := order[i]
		d := Decision{Index: i, Job: j, Kind: k, From: j.GPUsHeld, To: alloc[i]}
		switch k {
		case Launch:
			d.Reason = "launched on GPUs " + ints(d.To)
		case Preempt:
			d.Reason = fmt.Sprintf("preempted at queue position %d: %s", i+1, takers(cl, j.ID, d.From))
		case Migrate:
			d.Reason = fmt.Sprintf("migrated from GPUs %s to %s: %s", ints(d.From), ints(d.To), takers(cl, j.ID, d.From))
		}
		out = append(out, d)
	})
	return out, err
}

// takers says who holds a job's former GPUs after the round.
func takers(cl *cluster.Cluster, self int, gpus []int) string {
	var ids []int
	for _, g := range gpus {
		if o := cl.Owner(g); o != cluster.Free && o != self && !slices.Contains(ids, o) {
			ids = append(ids, o)
		}
	}
	if len(ids) == 0 {
		return "the placer re-planned it without taking its GPUs for another job"
	}
	slices.Sort(ids)
	return "its GPUs " + ints(gpus) + " go to job(s) " + ints(ids) + " ordered ahead of it"
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// Evictions carries out a placer's answer the way a driver that can only
// stop and start jobs does (the Kubernetes driver: a migration is an
// eviction, and the job's pods are bound again once recreated): a job
// the answer migrates is stopped this round and placed afresh from the
// next, and a job launched onto GPUs that a job stopped this round still
// holds waits for a later round (its pods would otherwise share a
// device with pods still shutting down). It keeps its scratch space from
// round to round.
type Evictions struct {
	vacated []bool
	// Moved[i] is the set the answer gave order[i] when Rewrite turned its
	// migration into a stop (nil otherwise): the move's target, for
	// pricing it.
	Moved [][]int
}

// Rewrite changes alloc in place as above, for a cluster of size GPUs.
func (e *Evictions) Rewrite(size int, order []*workload.Job, alloc [][]int) {
	if cap(e.vacated) < size {
		e.vacated = make([]bool, size)
	}
	e.vacated = e.vacated[:size]
	clear(e.vacated)
	e.Moved = slices.Grow(e.Moved[:0], len(order))[:len(order)]
	clear(e.Moved)
	for i, j := range order {
		switch Classify(j.GPUsHeld, alloc[i]) {
		case Migrate:
			e.Moved[i] = alloc[i]
			alloc[i] = nil
			fallthrough
		case Preempt:
			for _, g := range j.GPUsHeld {
				e.vacated[g] = true
			}
		}
	}
	for i, j := range order {
		if j.GPUsHeld == nil && alloc[i] != nil && slices.ContainsFunc(alloc[i], func(g int) bool { return e.vacated[g] }) {
			alloc[i] = nil
		}
	}
}
