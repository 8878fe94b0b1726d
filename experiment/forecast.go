package experiment

import (
	"fmt"
	"math"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// ForecastRow is one job waiting at the forecast's time: its place among
// the waiting jobs (1 is the next in line), why it waits, and when the
// forecast says it starts and ends.
type ForecastRow struct {
	At            float64 // the round boundary the forecast starts from
	JobID         int
	Position      int
	GPUs          int
	Arrival       float64
	Start, Finish float64 // -1: never, within the forecast
	Reason        string
}

// forecastable refuses forecasts whose policies keep state a fresh copy
// would not have.
func forecastable(o Options, at float64) error {
	switch {
	case !(at >= 0) || math.IsInf(at, 1):
		return fmt.Errorf("--forecast-at must be a time >= 0 in seconds, got %v", at)
	case PlacesToo(o.Scheduler):
		return fmt.Errorf("--forecast-at: not with --scheduler %s, whose leases a forecast cannot copy", o.Scheduler)
	case o.Tenancy != "" && o.Tenancy != "none":
		return fmt.Errorf("--forecast-at: not with --tenancy %s, whose cells a forecast cannot copy", o.Tenancy)
	case o.LearnScores || o.GPUEvents != "":
		return fmt.Errorf("--forecast-at: not with --learn-scores or --gpu-events (the forecast runs on the scores in force)")
	}
	return nil
}

// forecast runs the run's policies on from the state at T (fresh copies,
// the backfill placer's protections carried over), with no arrivals
// after T, and reads each waiting job's start and end.
func (in *Inputs) forecast(placement string, live policy.Placer, T float64, order []*workload.Job) ([]ForecastRow, error) {
	cfg, err := in.Config(placement)
	if err != nil {
		return nil, err
	}
	if b := backfill.Unwrap(cfg.Placer); b != nil {
		cfg.Placer = backfill.Fork(live, b.Base)
	}
	out, err := sim.Forward(cfg, T, order)
	if err != nil {
		return nil, err
	}
	free := in.Cluster.Size()
	for _, j := range order {
		free -= len(j.GPUsHeld)
	}
	mode, _ := backfill.ParseMode(in.Opts.Backfill)
	var rows []ForecastRow
	head := -1
	for _, j := range order {
		if j.Running() {
			continue
		}
		o := out[j.ID]
		r := ForecastRow{At: T, JobID: j.ID, Position: len(rows) + 1, GPUs: j.GPUs, Arrival: j.Submit, Start: o.Start, Finish: o.Finish}
		switch {
		case head < 0 || j.GPUs > free:
			r.Reason = fmt.Sprintf("does not fit: needs %d GPUs, %d free", j.GPUs, free)
		case mode == backfill.None:
			r.Reason = fmt.Sprintf("behind job %d, which waits (strict order)", head)
		default:
			r.Reason = fmt.Sprintf("would hold GPUs job %d's reservation needs past its time", head)
		}
		if head < 0 {
			head = j.ID
		}
		rows = append(rows, r)
	}
	return rows, nil
}
