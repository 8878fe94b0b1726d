// Package policy defines the plugin points of a scheduling round, in the
// order the core calls them: admission (which arrived jobs enter the
// active set), scheduling (the priority order of active jobs) and
// placement (which GPUs each job in that order gets). Implementations live
// in the sub-packages schedule and place; drivers (the simulator, later a
// Kubernetes binder) own time and state and apply what policies return.
//
// Policies never mutate jobs or the cluster: a round is a pure function of
// its inputs plus an explicit random stream, which is what makes the
// simulator reproducible and the real scheduler testable with fakes.
package policy

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Admitter decides which newly arrived jobs enter the active set.
type Admitter interface {
	Name() string
	Admit(now float64, arrived []*workload.Job, active []*workload.Job, c *cluster.Cluster) (admit []*workload.Job)
}

// Scheduler orders the active jobs: earlier runs first.
type Scheduler interface {
	Name() string
	// Order returns the jobs in priority order. It may reorder the given
	// slice in place and return it; it must not change any job.
	Order(now float64, jobs []*workload.Job) []*workload.Job
}

// OrderKey is a job's place in a keyed scheduler's order: jobs sort by
// Priority, then Level, then Value (cmp.Compare, so equal values tie),
// and ties keep the order the jobs were given in (arrival order), as a
// stable sort does.
type OrderKey struct {
	Priority int
	Level    int
	Value    float64
}

// Compare orders two keys (ties are left to the caller).
func (a OrderKey) Compare(b OrderKey) int {
	if a.Priority != b.Priority {
		return cmp.Compare(a.Priority, b.Priority)
	}
	if a.Level != b.Level {
		return cmp.Compare(a.Level, b.Level)
	}
	return cmp.Compare(a.Value, b.Value)
}

// KeyedScheduler is a Scheduler whose Order is a stable sort by a per-job
// key. Between rounds a job's key changes only when it ran (its service
// grew), when the driver changed its priority, or when a wake-up it
// announced falls due, so a driver can keep the order across rounds and
// re-key only those jobs instead of sorting the whole queue every round.
type KeyedScheduler interface {
	Scheduler
	// Key returns j's key at now, first updating any per-job state of the
	// scheduler exactly as Order would for j (Tiresias' queues). Order is
	// Key for every job followed by a stable sort, so calling Key for a
	// job whose state cannot have changed is harmless.
	Key(now float64, j *workload.Job) OrderKey
	// PeekKey is the key Key would return, without updating anything: a
	// driver looks ahead with it.
	PeekKey(now float64, j *workload.Job) OrderKey
	// WakeAfter is, for a job that is not running, the waiting time
	// (SinceScheduled) from which its key may change without it running
	// (Tiresias' starvation promotion), or +Inf.
	WakeAfter(j *workload.Job) float64
}

// Steady is implemented by keyed schedulers whose WakeAfter is +Inf for
// every job: a waiting job's key changes only when the driver changes
// its priority, so a driver need not ask WakeAfter of each job that
// starts waiting (under LAS on the 20,000-job Synergy trace on 16x4,
// 3.5 million asks, 2% of the simulator's instructions).
type Steady interface {
	KeyedScheduler
	Steady() bool
}

// Fixed is implemented by keyed schedulers whose key for a job depends
// only on what the job was given when it arrived and on its priority
// (FIFO: the submit time), never on the time or on its service: Key
// returns the same key every time until the driver changes the job's
// priority, and updates nothing. A driver need not key a running job
// again every round.
type Fixed interface {
	KeyedScheduler
	Fixed() bool
}

// ByAttained is implemented by keyed schedulers whose key for a job is
// always its priority and its attained service, {Priority: j.Priority,
// Value: j.Attained} (LAS), whatever the time: a driver that re-keys
// every running job every round can then read the two fields itself
// rather than call Key through the interface (under LAS on the
// 20,000-job Synergy trace on 16x4, 4.1 million calls a run).
type ByAttained interface {
	KeyedScheduler
	ByAttained() bool
}

// Pure is implemented by placers whose answer depends only on the order
// (each job's demand, class and held GPUs), the cluster and the scores:
// no random draws and nothing remembered from earlier rounds that could
// change an answer. A driver may then take an identical round's answer
// as known without asking again (the simulator skips such rounds).
type Pure interface {
	Placer
	Pure() bool
}

// Env is what a placer may read besides the queue: the cluster's shape,
// per-GPU scores (nil for variability-blind placers) and the round's
// random stream.
type Env struct {
	Cluster *cluster.Cluster
	Scores  *Scores
	Rand    *rand.Rand
	// Locality is the slowdown of a job spread over nodes (nil: none).
	// Migration-aware placers weigh it in a move's gain.
	Locality func(*workload.Spec) float64
}

// Scores is the placement-facing view of a variability profile: for each
// class, every GPU's binned PM-score (SF; lower is faster) and PAL's L×V
// traversal order. Keeping it as plain numbers lets placement be tested on
// hand-built score tables without running K-Means.
//
// A Scores must not be changed once handed to a placer: placers index it
// on first use and reuse that index while the same Scores comes back.
type Scores struct {
	SF [variability.NumClasses][]float64
	LV [variability.NumClasses][]LVStep
}

// WithSlowest is sc with every GPU for which slow says true given its
// class's slowest score, in every class: how a quarantined GPU is placed
// when there is no tenancy to take it out of a VC (sensitive classes
// reach it last, others still may use it). sc itself is not changed.
func (sc *Scores) WithSlowest(slow func(g int) bool) *Scores {
	out := &Scores{LV: sc.LV}
	for c := range sc.SF {
		if len(sc.SF[c]) == 0 {
			continue
		}
		worst := slices.Max(sc.SF[c])
		out.SF[c] = slices.Clone(sc.SF[c])
		for g := range out.SF[c] {
			if slow(g) {
				out.SF[c][g] = worst
			}
		}
	}
	return out
}

// LVStep is one entry of PAL's L×V order: use GPUs with score <= V, inside
// one node (Across false) or spread over nodes (Across true).
type LVStep struct {
	V      float64
	Across bool
}

// Placer decides, for the jobs in scheduler order, which GPUs each holds
// after this round. Jobs currently running hold job.GPUsHeld; the placer
// sees the cluster as if those were still allocated and returns the full
// new allocation: out[i] is the ascending GPU list of order[i], or nil if
// it does not run this round. The driver turns the difference into
// launches, preemptions and migrations. Answers are read-only: a placer
// may hand the same backing array to several jobs or rounds (a running
// job's own GPUsHeld, or a window of a shared id list), so a driver that
// wants to change a list copies it first.
type Placer interface {
	Name() string
	// Sticky placers never move a running job; non-sticky ones re-plan
	// every job every round.
	Sticky() bool
	Place(env *Env, order []*workload.Job) [][]int
}

// HidingPlacer is a Placer that can be told GPUs of its cluster that are
// not its to give (a tenancy stage's: a driver's leaving job still holds
// them) instead of being handed a renumbered cluster without them: a
// placer that keys state by GPU id across rounds (Themis' leases) needs
// the numbering to stay put. PlaceHiding is Place with hidden(g) true for
// each such GPU; its answer is in env.Cluster's numbering.
type HidingPlacer interface {
	Placer
	PlaceHiding(env *Env, order []*workload.Job, hidden func(gpu int) bool) [][]int
}

// Hiding is p as a HidingPlacer, if it is one. A wrapper that has the
// method whatever it wraps says with Hides() whether it does.
func Hiding(p Placer) (HidingPlacer, bool) {
	h, ok := p.(HidingPlacer)
	if w, wraps := p.(interface{ Hides() bool }); ok && wraps {
		ok = w.Hides()
	}
	return h, ok
}

// Streamer is a Placer that can hand its answer over while it works, so
// that a driver applies the first jobs' lines on another core while later
// jobs are still being placed. PlaceTo fills alloc (len(order) entries,
// all nil on entry) with what Place would return, calling ready(n) each
// time alloc[:n] is final and the placer will not read order[:n] again
// (n ascending, the last call with len(order)). Between calls the driver
// may change those jobs' runtime state and the cluster's owner table, so a
// placer whose later picks read either calls ready only at the end. ready
// may be nil: the whole answer at once (Place is PlaceTo into a fresh
// list, and a driver may fill its own list the same way).
type Streamer interface {
	Placer
	PlaceTo(env *Env, order []*workload.Job, alloc [][]int, ready func(n int))
}

// MoveJudge is a placer that may move a running job and can say what a
// move is worth: the time it expects j to save over its remaining work by
// running on to rather than from, in seconds (negative when the move
// slows it down). A migration-aware placer moves a job only when this
// beats the job's migration cost; drivers record it beside every
// migration, so that the rule can be checked and a person can see why a
// job moved.
type MoveJudge interface {
	Placer
	MoveGain(env *Env, j *workload.Job, from, to []int) float64
}

// StreamChunk is how many jobs a streaming placer places between calls of
// ready: few enough calls that waking the driver costs little, enough that
// the driver starts early. A driver gains nothing from streaming an order
// shorter than two chunks.
const StreamChunk = 512

// AcceptAll admits every arrived job (the PAL artifact's only admission).
type AcceptAll struct{}

// Name implements Admitter.
func (AcceptAll) Name() string { return "accept-all" }

// Admit implements Admitter.
func (AcceptAll) Admit(_ float64, arrived, _ []*workload.Job, _ *cluster.Cluster) []*workload.Job {
	return arrived
}

// ScoresFrom takes the placement view of a binned profile.
func ScoresFrom(vs *variability.Scores) *Scores {
	s := &Scores{}
	for c := range s.SF {
		s.SF[c] = vs.SF[c]
		s.LV[c] = make([]LVStep, len(vs.LV[c]))
		for i, e := range vs.LV[c] {
			s.LV[c][i] = LVStep{V: e.V, Across: e.Across}
		}
	}
	return s
}
