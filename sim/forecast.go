package sim

import (
	"fmt"
	"math"
	"slices"

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
// had at T (a fresh one for stateless policies). The jobs are copied,
// never changed.
//
// With the same policies and exact durations (the simulator's own
// model) and no arrivals after T, a forecast start is the start the run
// itself gives the job; a property test holds it to that.
func Forward(cfg Config, T float64, jobs []*workload.Job) (map[int]Outcome, error) {
	if cfg.Cluster == nil || cfg.Scheduler == nil || cfg.Placer == nil || !(cfg.Round > 0) {
		return nil, fmt.Errorf("sim: forecast: cluster, scheduler, placer and round are required")
	}
	if cfg.Hook != nil || cfg.Tenancy != nil {
		return nil, fmt.Errorf("sim: forecast: not with a score hook or a tenancy stage, whose state a forecast cannot copy")
	}
	cfg.Trace = &workload.Trace{Name: "forecast"}
	cfg.ExtraLoad, cfg.Snapshot, cfg.NoRecords, cfg.Track = 0, nil, false, nil
	out := map[int]Outcome{}
	user := cfg.Observe
	cfg.Observe = func(t float64, order []*workload.Job, alloc [][]int) {
		for i, j := range order {
			if o := out[j.ID]; alloc[i] != nil && !j.Running() && o.Start < 0 {
				o.Start = t
				out[j.ID] = o
			}
		}
		if user != nil {
			user(t, order, alloc)
		}
	}
	s := newState(&cfg)
	for _, j := range jobs {
		c := *j
		c.GPUsHeld = slices.Clone(j.GPUsHeld)
		c.Tracked = true
		if c.Running() {
			if err := s.cl.Assign(c.ID, c.GPUsHeld); err != nil {
				return nil, fmt.Errorf("sim: forecast: %w", err)
			}
		}
		s.active = append(s.active, &c)
		out[c.ID] = Outcome{Start: -1, Finish: -1}
	}
	s.tracked, s.trackedAll = len(s.active), len(s.active)
	if s.tracked == 0 {
		return out, nil
	}
	first := int(math.Round(T/cfg.Round)) + 1
	if math.Abs(float64(first-1)*cfg.Round-T) > 1e-6*math.Max(1, T) {
		return nil, fmt.Errorf("sim: forecast: t = %g s is not a round boundary (round %g s)", T, cfg.Round)
	}
	res, err := s.runFrom(first)
	if err != nil {
		return nil, err
	}
	for _, r := range res.Jobs {
		o := out[r.ID]
		o.Finish = r.Completion
		out[r.ID] = o
	}
	return out, nil
}
