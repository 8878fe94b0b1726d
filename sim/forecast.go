package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Outcome is what a forward run says of one job: its first launch after
// the forecast's time (-1 if it never launches again: it ran on from
// then to its end) and its completion.
type Outcome struct {
	Start, Finish float64
}

// Forward is a forecast: from jobs as they stand at round boundary T
// (after that round's placement: a running job holds its GPUs, each
// with its progress), it runs cfg's policies on, round by round, with no
// arrivals after T, until every job has finished, and says when each
// launches and ends. cfg's trace, extra load and snapshot are not used;
// its scheduler and placer must be in the state the run they forecast
// had at T (a fresh one for stateless policies). Its tenancy stage, if
// any, is the run's own: the forecast runs a copy of it (Forker), from
// the cells as they stand at T. The jobs are copied, never changed. No
// node or cells event comes after T: cfg's are not used.
//
// With the same policies and exact durations (the simulator's own
// model) and no arrivals after T, a forecast start is the start the run
// itself gives the job; a property test holds it to that.
func Forward(cfg Config, T float64, jobs []*workload.Job) (map[int]Outcome, error) {
	return ForwardWatch(cfg, T, jobs, Watch{})
}

// Forker is a tenancy stage whose state a forecast can copy: Fork is a
// stage that decides from the same state on as the original would, and
// shares nothing a decision changes with it.
type Forker interface {
	Fork() policy.Tenancy
}

// Watch narrows a forecast to the jobs it is for, as a live scheduler
// asks it: which gangs wait and when they start, among running ones
// whose work may not be known.
type Watch struct {
	// Of, if set, names the jobs the forecast is for (nil: every job).
	// The run ends once each has finished, or, for one whose work is not
	// known (Iterations +Inf: it never ends), started; the others are not
	// waited for and their outcomes may be -1.
	Of func(*workload.Job) bool
	// Horizon, if > 0, ends the run at T + Horizon instead of failing at
	// cfg's round limit: a job not started (finished) by then has Start
	// (Finish) -1.
	Horizon float64
	// Starts ends the run once every job it is for has started. A job
	// that has not finished by then ends, in the answer, where its
	// progress on the GPUs it then holds reaches its work (the rounds
	// credited one by one, as the run would): exact while nothing moves
	// or preempts it later, as under FIFO with a sticky placement, and
	// a run of a few rounds rather than of every job's remaining time.
	Starts bool
	// Arrivals, if any, are jobs assumed to arrive after T (ascending
	// submit times > T, ids apart from the jobs'): admitted as a trace's
	// would be, never waited for.
	Arrivals []workload.Spec
}

// ForwardWatch is Forward for the jobs w names, up to w's horizon.
func ForwardWatch(cfg Config, T float64, jobs []*workload.Job, w Watch) (map[int]Outcome, error) {
	if cfg.Cluster == nil || cfg.Scheduler == nil || cfg.Placer == nil || !(cfg.Round > 0) {
		return nil, fmt.Errorf("sim: forecast: cluster, scheduler, placer and round are required")
	}
	if cfg.Hook != nil {
		return nil, fmt.Errorf("sim: forecast: not with a score hook, whose state a forecast cannot copy")
	}
	if cfg.Tenancy != nil {
		f, ok := cfg.Tenancy.(Forker)
		if !ok {
			return nil, fmt.Errorf("sim: forecast: not with tenancy stage %s, whose state a forecast cannot copy", cfg.Tenancy.Name())
		}
		cfg.Tenancy = f.Fork()
	}
	cfg.NodeEvents, cfg.StageEvents = nil, nil
	cfg.Trace = &workload.Trace{Name: "forecast"}
	for i, a := range w.Arrivals {
		if !(a.Submit > T) || i > 0 && a.Submit < w.Arrivals[i-1].Submit {
			return nil, fmt.Errorf("sim: forecast: assumed arrival %d at %v s: want ascending times after %v s", a.ID, a.Submit, T)
		}
		a.Tracked = false
		cfg.Trace.Jobs = append(cfg.Trace.Jobs, a)
	}
	cfg.ExtraLoad, cfg.Snapshot, cfg.NoRecords, cfg.Track = 0, nil, false, nil
	if w.Horizon > 0 {
		if !(w.Horizon < math.Inf(1)) || !(cfg.Round > 0) {
			return nil, fmt.Errorf("sim: forecast: horizon %v s: want a finite time > 0", w.Horizon)
		}
		cfg.MaxRounds = int(math.Round(T/cfg.Round)) + 2 + int(math.Ceil(w.Horizon/cfg.Round))
	}
	out := map[int]Outcome{}
	user := cfg.Observe
	var s *state
	cfg.Observe = func(t float64, order []*workload.Job, alloc [][]int) {
		for i, j := range order {
			if alloc[i] == nil || j.Running() {
				continue
			}
			if o := out[j.ID]; o.Start < 0 {
				o.Start = t
				out[j.ID] = o
				if j.Tracked && (w.Starts || math.IsInf(j.Iterations, 1)) {
					// Watched until it starts (it never ends, or only
					// starts are run for).
					j.Tracked = false
					s.tracked--
				}
			}
		}
		if user != nil {
			user(t, order, alloc)
		}
	}
	// The assumed arrivals are untracked, and s.tracked is set below from
	// the jobs copied in.
	var err error
	if s, err = newState(&cfg, 0); err != nil {
		return nil, err
	}
	tracked := 0
	watched := map[int]bool{}
	for _, j := range jobs {
		c := *j
		c.GPUsHeld = slices.Clone(j.GPUsHeld)
		c.Tracked = w.Of == nil || w.Of(j)
		if c.Tracked {
			watched[c.ID] = true
		}
		if c.Tracked && c.Running() && (w.Starts || math.IsInf(c.Iterations, 1)) {
			c.Tracked = false // it started before T (and never ends)
		}
		if c.Tracked {
			tracked++
		}
		if c.Running() {
			if err := s.cl.Assign(c.ID, c.GPUsHeld); err != nil {
				return nil, fmt.Errorf("sim: forecast: %w", err)
			}
		}
		s.active = append(s.active, &c)
		out[c.ID] = Outcome{Start: -1, Finish: -1}
	}
	s.tracked, s.trackedAll = tracked, tracked
	if s.tracked == 0 {
		return out, nil
	}
	first := int(math.Round(T/cfg.Round)) + 1
	if math.Abs(float64(first-1)*cfg.Round-T) > 1e-6*math.Max(1, T) {
		return nil, fmt.Errorf("sim: forecast: t = %g s is not a round boundary (round %g s)", T, cfg.Round)
	}
	res, err := s.runFrom(first)
	if err != nil {
		if !(w.Horizon > 0) || !errors.As(err, new(tooLongError)) {
			return nil, err
		}
		res = s.result(s.active) // the horizon: what is known by then
	}
	for _, r := range res.Jobs {
		o := out[r.ID]
		o.Finish = r.Completion
		out[r.ID] = o
	}
	if w.Starts && s.nRounds > 0 {
		// The run stopped at the boundary after the last start.
		at := s.lastT + cfg.Round
		for _, j := range s.active {
			if !watched[j.ID] || !j.Running() || math.IsInf(j.Iterations, 1) {
				continue
			}
			c := *j
			for k := 1; k <= cfg.maxRounds(); k++ {
				credit(&c, cfg.Round)
				if c.Executed >= c.Iterations {
					o := out[j.ID]
					o.Finish = at + float64(k)*cfg.Round
					out[j.ID] = o
					break
				}
			}
		}
	}
	return out, nil
}
