package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/palsched/pal/draws"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/whatif"
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
	// VC is the job's VC under tenancy (its vc column otherwise).
	VC string
	// Spread is the start over ForecastOptions.Draws noisy draws (nil
	// without draws).
	Spread *draws.Spread
}

// forecastable refuses forecasts whose policies keep state a fresh copy
// would not have.
func forecastable(o Options, at float64) error {
	switch {
	case !(at >= 0) || math.IsInf(at, 1):
		return fmt.Errorf("--forecast-at must be a time >= 0 in seconds, got %v", at)
	case PlacesToo(o.Scheduler):
		return fmt.Errorf("--forecast-at: not with --scheduler %s, whose leases a forecast cannot copy", o.Scheduler)
	case o.tenancyOn() && !o.hived():
		return fmt.Errorf("--forecast-at: not with --tenancy %s (a forecast copies the cells of hived, hived-pm and hived-speed, not %s's per-VC state)", o.Tenancy, o.Tenancy)
	case o.NodeEvents != "" || o.CellsEvents != "":
		return fmt.Errorf("--forecast-at: not with --node-events or --cells-events (a forecast assumes the hardware and the cells stay as they are at its time)")
	case o.LearnScores || o.GPUEvents != "":
		return fmt.Errorf("--forecast-at: not with --learn-scores or --gpu-events (the forecast runs on the scores in force)")
	}
	return nil
}

// ForecastOptions are a forecast's assumptions beyond the run's state
// (pal sim --forecast-draws, --duration-noise, --assume-arrivals; they
// mean what pal-kube forecast's flags of the same names mean).
type ForecastOptions struct {
	// Draws > 0 runs the forecast this many more times, each with every
	// job's remaining work scaled by its own lognormal factor of mean 1
	// and coefficient of variation Noise (draws.Perturb, seeded by Seed
	// and the draw), and gives each row its start's Spread over them.
	Draws int
	Noise float64
	// ArrivalsPerHour > 0 assumes jobs keep arriving after T: a Poisson
	// process of that rate, each a copy of a running or waiting job drawn
	// at random with its whole work (draws.Arrivals, seeded by Seed), up
	// to draws.Horizon after T. 0: none, as in the run itself.
	ArrivalsPerHour float64
	Seed            uint64
}

// check refuses options that would fail only once the run reaches T.
func (fo ForecastOptions) check() error {
	if fo.Draws < 0 || fo.Draws > draws.MaxDraws {
		return fmt.Errorf("--forecast-draws %d: want 0 (none) to %d draws", fo.Draws, draws.MaxDraws)
	}
	if _, err := draws.NewLognormal(fo.Noise); err != nil {
		return err
	}
	if !(fo.ArrivalsPerHour >= 0) || math.IsInf(fo.ArrivalsPerHour, 1) {
		return fmt.Errorf("--assume-arrivals %v: want jobs per hour >= 0 (0: none)", fo.ArrivalsPerHour)
	}
	return nil
}

// Forecast is the forecast a run of placement makes at round boundary T
// (after that round's placement), from the order it had then (every
// active job), its placer live (nil: fresh policies) and its tenancy
// stage ten (nil without one): the same policies run on, fresh copies
// with the backfill placer's protections and the stage's cells carried
// over, and each waiting job's start and end read off. With exact
// durations and no arrivals after T, each start is the run's own
// (sim.Forward).
func (in *Inputs) Forecast(placement string, live policy.Placer, ten policy.Tenancy, T float64, order []*workload.Job, fo ForecastOptions) ([]ForecastRow, error) {
	var arr []workload.Spec
	if fo.ArrivalsPerHour != 0 {
		var err error
		if arr, err = draws.Arrivals(order, fo.ArrivalsPerHour/3600, T, T+draws.Horizon, fo.Seed); err != nil {
			return nil, err
		}
	}
	rows, err := in.forecast(placement, live, ten, T, order, arr)
	if err != nil || fo.Draws == 0 {
		return rows, err
	}
	sp, err := draws.Over(order, fo.Draws, fo.Noise, fo.Seed, func(_ int, jobs []*workload.Job) ([]float64, error) {
		alt, err := in.forecast(placement, live, ten, T, jobs, arr)
		if err != nil {
			return nil, err
		}
		starts := make([]float64, len(alt))
		for i, r := range alt {
			starts[i] = r.Start
		}
		return starts, nil
	})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Spread = &sp[i]
	}
	return rows, nil
}

// forecast runs the run's policies on from the state at T (fresh copies,
// the backfill placer's protections carried over), with arrivals after T
// only as given, and reads each waiting job's start and end.
func (in *Inputs) forecast(placement string, live policy.Placer, ten policy.Tenancy, T float64, order []*workload.Job, arrivals []workload.Spec) ([]ForecastRow, error) {
	cfg, err := in.Config(placement)
	if err != nil {
		return nil, err
	}
	if b := backfill.Unwrap(cfg.Placer); b != nil && live != nil {
		cfg.Placer = backfill.Fork(live, b.Base)
	}
	if cfg.Tenancy != nil {
		// The forecast's stage (its own settings, fresh VC placers) starts
		// from the cells as the run's stage has them at T.
		h, ok := cfg.Tenancy.(*tenant.HiveD)
		lh, isHiveD := ten.(*tenant.HiveD)
		if !ok || !isHiveD {
			return nil, fmt.Errorf("tenancy %s: a forecast starts from the cells of a run under hived, hived-pm or hived-speed", in.Opts.Tenancy)
		}
		h.From(lh)
	}
	w := sim.Watch{Arrivals: arrivals}
	if len(arrivals) > 0 {
		// Arrivals may keep a job waiting for ever: the forecast stops
		// where they stop (a job not started by then has no start).
		w.Horizon = draws.Horizon
	}
	out, err := sim.ForwardWatch(cfg, T, order, w)
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
		r := ForecastRow{At: T, JobID: j.ID, Position: len(rows) + 1, GPUs: j.GPUs, Arrival: j.Submit, Start: o.Start, Finish: o.Finish, VC: j.VC}
		if in.Layout != nil {
			r.VC = in.Layout.VCOf(&j.Spec)
		}
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

// SummarizeForecast sums up a forecast's waiting jobs (whatif.Summarize).
func SummarizeForecast(rows []ForecastRow) whatif.Summary {
	jobs := make([]whatif.Job, len(rows))
	for i, r := range rows {
		jobs[i] = whatif.Job{VC: r.VC, Arrival: r.Arrival, Start: r.Start, Finish: r.Finish}
	}
	return whatif.Summarize(jobs)
}

// WhatIfResult is a forecast run again with one setting changed.
type WhatIfResult struct {
	Setting   string // KEY=VALUE
	Now, Then whatif.Summary
	Rows      []ForecastRow // the forecast under the change
}

// whatIfOptions is o (and placement) with kv's change.
func whatIfOptions(o Options, placement, kv string) (Options, string, error) {
	key, val, ok := strings.Cut(kv, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || val == "" {
		return o, "", fmt.Errorf("--what-if %s: want KEY=VALUE with KEY placement, scheduler, backfill or tenancy", quote.Value(kv))
	}
	switch key {
	case "placement":
		if _, err := registry.NewPlacer(o.Spec(val)); err != nil {
			return o, "", fmt.Errorf("--what-if %s: %v", kv, err)
		}
		placement = val
	case "scheduler":
		o.Scheduler = val
		if PlacesToo(val) {
			return o, "", fmt.Errorf("--what-if %s: not with a scheduler that places too, whose leases a forecast cannot copy", kv)
		}
		if _, err := registry.NewScheduler(o.Spec("")); err != nil {
			return o, "", fmt.Errorf("--what-if %s: %v", kv, err)
		}
	case "backfill":
		if _, err := backfill.ParseMode(val); err != nil {
			return o, "", fmt.Errorf("--what-if %s: %v", kv, err)
		}
		o.Backfill = val
	case "tenancy":
		// From the run's cells to other settings of them, or to none (one
		// queue over the whole cluster); a forecast cannot bind cells a
		// run without them never bound.
		if val != "none" && !(o.hived() && slices.Contains([]string{"hived", "hived-pm", "hived-speed"}, val)) {
			return o, "", fmt.Errorf("--what-if %s: want tenancy=none, or hived, hived-pm or hived-speed from a run under one of them (the forecast starts from the run's cells)", kv)
		}
		o.Tenancy = val
	case "drain", "add-node":
		return o, "", fmt.Errorf("--what-if %s: pal sim forecasts do not change the cluster (pal-kube forecast --what-if drains and adds nodes)", kv)
	default:
		return o, "", fmt.Errorf("--what-if %s: unknown setting (known: placement, scheduler, backfill, tenancy)", key)
	}
	return o, placement, nil
}

// whatIf runs the forecast at T again under each what-if: fresh
// policies of the changed options from the next round on (the round at
// T placed under the run's own).
func (in *Inputs) whatIf(placement string, ten policy.Tenancy, T float64, order []*workload.Job, now []ForecastRow) ([]WhatIfResult, error) {
	var out []WhatIfResult
	for _, kv := range in.whatIfs {
		o, pl, err := whatIfOptions(in.Opts, placement, kv)
		if err != nil {
			return nil, err
		}
		alt := *in
		alt.Opts = o
		if !o.tenancyOn() {
			alt.Layout = nil // one queue: no VC, no stage
		}
		// The assumed arrivals apply to a what-if too; the draws do not
		// (its summary reads the forecast's own starts).
		fo := in.forecastOpts
		fo.Draws = 0
		rows, err := alt.Forecast(pl, nil, ten, T, order, fo)
		if err != nil {
			return nil, fmt.Errorf("--what-if %s: %v", kv, err)
		}
		for i := range rows {
			rows[i].VC = now[i].VC // the same jobs, named by the run's VCs
		}
		out = append(out, WhatIfResult{Setting: kv, Now: SummarizeForecast(now), Then: SummarizeForecast(rows), Rows: rows})
	}
	return out, nil
}
