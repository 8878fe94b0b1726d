package kube

import (
	"cmp"
	"slices"
	"strings"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// planner is what the round keeps of its plan from one round to the
// next, so that a round in which nothing can change pays for the
// crediting of the running gangs and no more.
//
// A round is dead, as in pal sim's incremental loop, when the placer is
// pure (policy.Pure: its answer depends only on the order, the cluster
// and the scores), the last round placed and changed nothing (every gang
// kept its GPUs or waited, nothing was bound, evicted or refused), and
// its input is the same: no change the placement reads (the state's plan
// generation), the same scores, no job's priority raised by the
// starvation guard, and the last round's order still sorted under this
// round's keys. Its answer is then the last round's, so the placer is not
// asked; the scheduling order still keys every job once, as its Order
// would. A migration-aware placement weighs moves against the remaining
// work, which shrinks while a gang runs: a move it did not make for more
// work left it does not make for less (the simulator relies on the same).
// Tenancy and Themis keep state of their own and are asked every round.
type planner struct {
	order []*workload.Job // the last round's order
	keys  []string        // its gangs' keys
	// before[i]: the gang of order[i-1] has a key before order[i]'s (how
	// a tie in the policy's key and the submit time is broken).
	before  []bool
	quiet   bool   // the last round placed and changed nothing
	gen     uint64 // the state's plan generation it placed on
	scores  *policy.Scores
	actions int64 // the scheduler's actions counter after it

	pending, inUse int
	mean           float64

	buf   []*workload.Job // the round's order is built in it
	ents  []orderEnt      // scratch for orderJobs
	tiers []tierEnt       // scratch for byPodPriority
	// tiered: the last round's order was rearranged by pod priority,
	// which the policy's keys do not hold, so dead cannot read it back.
	tiered bool
	// claims: the gangs the last round placed on GPUs it was having
	// vacated (they bind once those are free), by job id.
	claims     map[int]bool
	deadRounds int64 // rounds found dead (tests read it)
	noSkip     bool  // tests: place every round
}

type orderEnt struct {
	submit float64
	key    string
	j      *workload.Job
}

// orderJobs is the round's order: the jobs by submit time, then in the
// order this scheduler first saw their gangs (job id), then by gang key
// (arrival order, as the simulator keeps it), then stably by the
// scheduling policy's order. The API server keeps creation times to the
// second, so gangs created within one second tie on submit time; they
// keep the order they arrived in, not their names' (a gang bound a moment
// ago is not ordered behind one that came after it and sorts first).
func (s *Scheduler) orderJobs(now float64, order []*workload.Job, byJob map[*workload.Job]*gang) []*workload.Job {
	es := s.plan.ents[:0]
	for _, j := range order {
		es = append(es, orderEnt{j.Submit, byJob[j].Key, j})
	}
	slices.SortFunc(es, func(a, b orderEnt) int {
		if c := cmpFloat(a.submit, b.submit); c != 0 {
			return c
		}
		if c := cmp.Compare(a.j.ID, b.j.ID); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	for i := range es {
		order[i] = es[i].j
		es[i].j = nil
	}
	s.plan.ents = es[:0]
	return s.byPodPriority(s.pol.sched.Order(now, order), byJob)
}

// dead reports whether this round repeats the last (see planner). When
// it does, every job in the order is keyed once, as Order would key it.
func (p *planner) dead(s *Scheduler, snap *snapshot, order []*workload.Job, now float64, raised bool) bool {
	if p.noSkip || !p.quiet || raised || p.tiered || !s.pure || s.ten != nil || s.th != nil || snap.PlanGeneration != p.gen ||
		s.scores != p.scores || s.actions != p.actions || len(order) != len(p.order) {
		return false
	}
	ks, ok := s.pol.sched.(policy.KeyedScheduler)
	if !ok {
		return false
	}
	var prev policy.OrderKey
	for i, j := range p.order {
		k := ks.PeekKey(now, j)
		if i > 0 {
			c := prev.Compare(k)
			if c == 0 {
				if c = cmpFloat(p.order[i-1].Submit, j.Submit); c == 0 && !p.before[i] {
					c = 1
				}
			}
			if c > 0 {
				return false
			}
		}
		prev = k
	}
	switch ks.(type) {
	case schedule.FIFO, schedule.LAS, schedule.SRTF:
		// Their Key is PeekKey: nothing to update.
	default:
		for _, j := range p.order {
			ks.Key(now, j)
		}
	}
	p.deadRounds++
	return true
}

// record keeps what the next round compares itself with.
func (p *planner) record(s *Scheduler, snap *snapshot, order []*workload.Job, ds []round.Decision, actions int64) {
	p.quiet = s.actions == actions && !slices.ContainsFunc(ds, func(d round.Decision) bool { return d.Kind.Changes() })
	p.gen, p.scores, p.actions = snap.PlanGeneration, s.scores, s.actions
	p.order = append(p.order[:0], order...)
	p.keys, p.before = p.keys[:0], p.before[:0]
	for i, j := range order {
		p.keys = append(p.keys, snap.ByJob[j].Key)
		p.before = append(p.before, i > 0 && p.keys[i-1] < p.keys[i])
	}
}
