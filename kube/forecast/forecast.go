// Package forecast runs a forecast from pal-kube scheduler's state: the
// simulator's forward run (sim.ForwardWatch) on the round's gangs, GPUs
// and fresh copies of its policies, with no arrivals. It sits above both
// drivers so that neither imports the other: the scheduler gets Run
// through kube.WithForecaster.
package forecast

import (
	"fmt"
	"math"

	"github.com/palsched/pal/draws"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// Horizon is how far a forecast looks, in the jobs' seconds: a gang not
// started by then (behind one whose work is not stated, say) has no
// estimated start.
const Horizon = draws.Horizon

// Run forecasts st's waiting gangs: when each starts and ends, in the
// jobs' seconds from st's round (-1: not within Horizon; a gang without
// pal.io/iterations never ends). The simulator's own model runs it: a
// running gang progresses at its slowest GPU's raw value (times the
// locality penalty across nodes) per model iteration, and ends when its
// pal.io/iterations are done. The run stops at the last start; a gang
// still running then ends, in the answer, where its progress on its
// GPUs reaches its work (sim.Watch.Starts).
func Run(st *kube.ForecastState) ([]kube.ForecastRow, error) { return RunWith(st, Options{}) }

// Options are a forecast's assumptions beyond the state.
type Options struct {
	// ArrivalsPerHour > 0 assumes gangs keep arriving (Assumed).
	ArrivalsPerHour float64
	Seed            uint64
}

// RunWith is Run under o's assumptions.
func RunWith(st *kube.ForecastState, o Options) ([]kube.ForecastRow, error) {
	var arr []workload.Spec
	if o.ArrivalsPerHour != 0 {
		var err error
		if arr, err = Assumed(st, o.ArrivalsPerHour, o.Seed); err != nil {
			return nil, err
		}
	}
	out, err := forward(st, arr)
	if err != nil {
		return nil, err
	}
	rows := make([]kube.ForecastRow, len(st.Pending))
	for i, p := range st.Pending {
		o, ok := out[p.JobID]
		if !ok {
			o = sim.Outcome{Start: -1, Finish: -1}
		}
		rows[i] = kube.ForecastRow{Gang: p.Key, Position: p.Position, GPUs: p.GPUs, Start: o.Start, Finish: o.Finish, Reason: p.Reason}
	}
	return rows, nil
}

func forward(st *kube.ForecastState, arrivals []workload.Spec) (map[int]sim.Outcome, error) {
	if len(st.Pending) == 0 {
		return map[int]sim.Outcome{}, nil
	}
	pen := st.Locality
	cfg := sim.Config{
		Cluster: st.Cluster, Scheduler: st.Scheduler, Placer: st.Placer, Round: st.Round,
		Locality: func(*workload.Spec) float64 { return pen },
		Raw:      st.Raw, Scores: st.Scores, Costs: st.Costs, Seed: st.Seed,
		StarvationGuard: st.StarvationGuard, Moves: sim.MovesEvictRelaunch,
	}
	waiting := make(map[int]bool, len(st.Pending))
	for _, p := range st.Pending {
		waiting[p.JobID] = true
	}
	out, err := sim.ForwardWatch(cfg, 0, st.Jobs, sim.Watch{
		Of:       func(j *workload.Job) bool { return waiting[j.ID] },
		Horizon:  Horizon,
		Starts:   true,
		Arrivals: arrivals,
	})
	if err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	for id, o := range out {
		if math.IsInf(o.Finish, 0) {
			o.Finish = -1
			out[id] = o
		}
	}
	return out, nil
}

// MaxAssumed bounds the arrivals a forecast assumes.
const MaxAssumed = draws.MaxArrivals

// Assumed are gangs assumed to arrive after st's round, a Poisson
// process of perHour a wall hour (in the jobs' time, at st's time
// scale) up to Horizon: each a copy of a gang of st's drawn at random,
// running or waiting, with its whole work (a gang whose work is not
// stated never ends). Seeded: the same seed, the same arrivals.
func Assumed(st *kube.ForecastState, perHour float64, seed uint64) ([]workload.Spec, error) {
	if !(perHour > 0) || math.IsInf(perHour, 1) {
		return nil, fmt.Errorf("--assume-arrivals %v: want gangs per hour > 0", perHour)
	}
	// draws.Arrivals, as pal sim --assume-arrivals, per second of the
	// jobs' time.
	return draws.Arrivals(st.Jobs, perHour/3600/st.TimeScale, 0, Horizon, seed)
}
