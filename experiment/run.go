package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/palsched/pal/draws"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// RunResult is one placement's run, in the JSON shape `pal sim` prints.
type RunResult struct {
	Trace     string `json:"trace"`
	Scheduler string `json:"scheduler"`
	Placement string `json:"placement"`
	metrics.Summary
	Rounds int `json:"rounds"`
	// Extras counts generated background arrivals that entered the run;
	// ExtrasCapped says the generator's bound stopped them.
	Extras       int     `json:"extras_generated"`
	ExtrasCapped bool    `json:"extras_capped,omitempty"`
	WallMS       float64 `json:"wall_ms"`

	// Fairness is the apps' finish-time fairness (every app's ρ and
	// their summary, package fairness), set when the inputs WantFairness:
	// the trace has an app column or the scheduler is Themis or an
	// elastic baseline. nil otherwise.
	Fairness *fairness.RunFairness `json:"fairness,omitempty"`

	// Under tenancy: each VC's wait, JCT and delivered speed, and the
	// cluster's mean speed per class beside them; Draws is
	// --private-draws (the private run's figures pool that many runs).
	VCs          []VCFigures                      `json:"vcs,omitempty"`
	ClusterSpeed *[variability.NumClasses]float64 `json:"cluster_speed,omitempty"`
	Draws        int                              `json:"private_draws,omitempty"`
	// Quarantine, with --quarantine-above, counts what the rule did.
	Quarantine *QuarantineFigures `json:"quarantine,omitempty"`

	JobRecords []metrics.JobRecord `json:"-"`
	RoundStats []sim.RoundStat     `json:"-"`
	// Forecast is, with Hooks.ForecastAt, every job waiting then and
	// when a forecast made then says it starts and ends.
	Forecast []ForecastRow `json:"-"`
	// WhatIf is, for each Hooks.WhatIf, the forecast's waiting jobs
	// summed up now and under the change.
	WhatIf []WhatIfResult `json:"-"`
}

// Run simulates one placement on the prepared inputs.
func (in *Inputs) Run(placement string) (*RunResult, error) { return in.RunProgress(placement, nil) }

// RunProgress is Run with a progress hook fed by the simulator's driver
// after every round (nil: none).
func (in *Inputs) RunProgress(placement string, progress func(sim.Status)) (*RunResult, error) {
	r, err := in.runProgress(placement, progress)
	if err != nil || !in.WantFairness() {
		return r, err
	}
	f := fairness.Measure(in.Trace, r.JobRecords, in.Cluster.Size())
	for _, s := range r.RoundStats {
		f.GPUTime += float64(s.GPUsInUse) * in.Opts.Round
	}
	r.Fairness = &f
	if in.noRecords {
		r.JobRecords = nil // kept only for the fairness (Hooks.NoJobRecords)
	}
	return r, nil
}

// WantFairness reports whether runs on these inputs measure the apps'
// finish-time fairness: when the trace has an app column, or the
// scheduler is Themis or one of its elastic baselines (each job without
// an app is then an app of its own).
func (in *Inputs) WantFairness() bool {
	return in.Trace.HasApp || PlacesToo(in.Opts.Scheduler)
}

func (in *Inputs) runProgress(placement string, progress func(sim.Status)) (*RunResult, error) {
	if in.Layout != nil && in.Opts.Tenancy == "private" {
		return in.runPrivate(placement, progress)
	}
	cfg, err := in.Config(placement)
	if err != nil {
		return nil, err
	}
	cfg.Progress = progress
	var fc []ForecastRow
	var wi []WhatIfResult
	var ferr error
	if in.forecastAt >= 0 {
		cfg.SnapshotAt = in.forecastAt
		cfg.Snapshot = func(T float64, order []*workload.Job) {
			if fc, ferr = in.Forecast(placement, cfg.Placer, cfg.Tenancy, T, order, in.forecastOpts); ferr == nil {
				wi, ferr = in.whatIf(placement, cfg.Tenancy, T, order, fc)
			}
		}
	}
	start := time.Now()
	res, err := sim.Run(cfg)
	if err == nil {
		err = ferr
	}
	if err != nil {
		return nil, err
	}
	wall := time.Since(start)
	for i := range res.Jobs {
		res.Jobs[i].Origin = in.Origin(res.Jobs[i].ID)
	}
	var vcs []VCFigures
	if in.Layout != nil {
		var acc vcAcc
		acc.add(res.Jobs, cfg.Raw)
		vcs = acc.figures(in.Layout.VCs())
	}
	return &RunResult{VCs: vcs, ClusterSpeed: clusterSpeedIf(in.Layout != nil, cfg.Raw),
		Trace: in.Opts.Trace, Scheduler: cfg.Scheduler.Name(), Placement: cfg.Placer.Name(),
		Summary: res.Summary, Rounds: res.NumRounds, Extras: res.Extras, ExtrasCapped: res.ExtrasCapped,
		WallMS:     float64(wall.Microseconds()) / 1000,
		JobRecords: res.Jobs, RoundStats: res.Rounds, Forecast: fc, WhatIf: wi,
		Quarantine: quarantineFigures(cfg.Hook),
	}, nil
}

// RunAll runs every placement of the options on the same inputs.
func RunAll(o Options) (*Inputs, []*RunResult, error) { return RunAllWith(o, Hooks{}) }

// Hooks let a caller watch RunAllWith.
type Hooks struct {
	// Ready sees the prepared inputs before the first run (to print
	// their warnings, say).
	Ready func(*Inputs)
	// Progress gives each placement's run a simulator progress hook.
	Progress func(placement string) func(sim.Status)
	// ForecastAt, when >= 0, makes a forecast at the first round boundary
	// at or after it (RunResult.Forecast); Forecast must be true too (the
	// zero Hooks make none).
	ForecastAt float64
	Forecast   bool
	// ForecastOptions are the forecast's draws and assumed arrivals (its
	// Seed is the run's, Options.Seed).
	ForecastOptions ForecastOptions
	// WhatIf are KEY=VALUE changes (placement, scheduler, backfill) the
	// forecast is run again under (RunResult.WhatIf).
	WhatIf []string
	// NoJobRecords says the caller reads only summaries: the runs keep no
	// per-job records (RunResult.JobRecords stays empty), which bounds the
	// memory of a long trace by its active jobs.
	NoJobRecords bool
	// NoMoveGains says the caller prints no per-job or per-round move
	// columns: migrations are counted but not priced
	// (sim.Config.NoMoveGains).
	NoMoveGains bool
	// NoRoundStats says the caller prints no per-round lines: the runs
	// count their rounds but keep none (RunResult.RoundStats stays empty
	// unless the apps' fairness needs them).
	NoRoundStats bool
	// StreamTrace reads a trace file row by row as each run's clock
	// reaches them rather than whole up front, where nothing needs it
	// whole (no tenancy, extra arrivals, apps, forecast or per-job
	// records): a million-row trace then costs kilobytes, not a fifth of
	// a gigabyte, for a few tenths of a second more per reading.
	StreamTrace bool
	// Pipeline places each round and applies its answer on two cores
	// (sim.Config.Pipeline).
	Pipeline bool
}

// RunAllWith is RunAll with hooks.
func RunAllWith(o Options, h Hooks) (*Inputs, []*RunResult, error) {
	if o.Scheduler == SchedulerThemis && slices.Contains(o.Explicit.Flags, "placement") && o.Placements != SchedulerThemis {
		return nil, nil, fmt.Errorf("--placement %s: --scheduler themis places every job itself (its auctions choose the GPUs), so a placement list would not be used; leave --placement out", o.Placements)
	}
	if baseline.Is(o.Scheduler) && slices.Contains(o.Explicit.Flags, "placement") && o.Placements != o.Scheduler {
		return nil, nil, fmt.Errorf("--placement %s: --scheduler %s places every job itself (it plans GPU counts and packs them), so a placement list would not be used; leave --placement out", o.Placements, o.Scheduler)
	}
	o = o.Effective()
	if PlacesToo(o.Scheduler) {
		// Themis places too: the placement list is not used.
	} else if _, err := place.Canonical(o.PlacementList()); err != nil {
		return nil, nil, fmt.Errorf("--placement: %v", err)
	}
	for _, p := range o.PlacementList() {
		if PlacesToo(o.Scheduler) {
			break
		}
		if _, err := registry.NewPlacer(o.Spec(p)); err != nil {
			return nil, nil, err
		}
	}
	if _, err := registry.NewScheduler(o.Spec("")); err != nil {
		return nil, nil, err
	}
	if len(o.PlacementList()) == 0 {
		return nil, nil, fmt.Errorf("--placement: no placement given")
	}
	in, err := prepare(o, nil, h.StreamTrace && h.NoJobRecords && !h.Forecast)
	if err != nil {
		return nil, nil, err
	}
	in.noRecords = h.NoJobRecords
	in.noMoveGains = h.NoMoveGains
	in.noRoundStats = h.NoRoundStats
	in.pipeline = h.Pipeline
	in.forecastAt = -1
	if h.Forecast {
		if err := forecastable(o, h.ForecastAt); err != nil {
			return nil, nil, err
		}
		in.forecastAt = h.ForecastAt
		for _, kv := range h.WhatIf {
			if _, _, err := whatIfOptions(o, "", kv); err != nil {
				return nil, nil, err
			}
		}
		in.whatIfs = h.WhatIf
		if err := h.ForecastOptions.check(); err != nil {
			return nil, nil, err
		}
		in.forecastOpts = h.ForecastOptions
		in.forecastOpts.Seed = o.Seed
	} else if len(h.WhatIf) > 0 {
		return nil, nil, fmt.Errorf("--what-if: only with --forecast-at")
	}
	if h.Ready != nil {
		h.Ready(in)
	}
	var out []*RunResult
	for _, p := range o.PlacementList() {
		var hook func(sim.Status)
		if h.Progress != nil {
			hook = h.Progress(p)
		}
		r, err := in.RunProgress(p, hook)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
	}
	return in, out, nil
}

// Input is one named input of a run, for headers.
type Input struct{ Name, Value string }

// Header lists every input that shaped the runs, in the order the table
// header prints them; JSON carries the same under "inputs".
func (in *Inputs) Header() []Input {
	o := in.Opts
	track := "every trace row (the tracked column, if any, decides)"
	if in.Track != nil {
		track = fmt.Sprintf("job ids %d-%d", in.Track[0], in.Track[1])
	}
	guard := "off"
	if o.StarvationGuard > 0 {
		guard = fmt.Sprintf("a job waiting %s s (%s h) jumps the queue", strconv.FormatFloat(o.StarvationGuard, 'f', -1, 64), strconv.FormatFloat(o.StarvationGuard/3600, 'f', -1, 64))
	}
	models := "embedded table"
	if o.Models != "" {
		models = o.Models
	}
	tracked := in.Trace.TrackedCount()
	var ten []Input
	if t := in.TenancyDescription(); t != "" {
		ten = []Input{{"tenancy", t}}
	}
	return append([]Input{
		{"preset", o.Preset},
		{"trace", fmt.Sprintf("%s; %d rows, %d tracked", traceFrom(o.Trace, in.TraceFrom), in.Trace.Len(), tracked)},
		{"extra_arrivals", in.Extras},
		{"cluster", in.Cluster.String()},
		{"gpu_values", in.RawFrom},
		{"scheduler", o.Scheduler + schedulerKnobs(o)},
		{"round", fmt.Sprintf("%g s", o.Round)},
		{"locality", in.LocalityDescription()},
		{"class_map", o.ClassMap},
		{"models", models},
		{"k_strategy", o.KStrategy},
		{"pmfirst_tiebreak", o.TieBreak},
		{"seed", fmt.Sprintf("%d (random placements, K-Means seeding%s)", o.Seed, seedAlso(in))},
		{"track", track},
		{"starvation_guard", guard},
		{"move_costs", in.Costs.String()},
		{"moves", movesDescription(o.Moves)},
	}, append(append(append(in.truthDescription(), ten...), in.backfillDescription()...), in.forecastDescription()...)...)
}

// forecastDescription is the forecast's line, only when there is one.
func (in *Inputs) forecastDescription() []Input {
	if in.forecastAt < 0 {
		return nil
	}
	fo := in.forecastOpts
	s := fmt.Sprintf("at the first round boundary at or after %g s, the run's policies run on from there; ", in.forecastAt)
	if fo.ArrivalsPerHour > 0 {
		s += fmt.Sprintf("%g jobs/h assumed to arrive after it (Poisson, seed %d, each a copy of a running or waiting job, up to %g days on)", fo.ArrivalsPerHour, fo.Seed, draws.Horizon/86400)
	} else {
		s += "no arrivals after it"
	}
	if fo.Draws > 0 {
		s += fmt.Sprintf("; %d draws of the remaining work x a lognormal factor of mean 1 and CV %g per job (seed %d), starts' p10/p50/p90 over them", fo.Draws, fo.Noise, fo.Seed)
	}
	return []Input{{"forecast", s}}
}

// backfillDescription is the backfill line, only when backfill is on (a
// strict-order run's header stays as it was).
func (in *Inputs) backfillDescription() []Input {
	switch in.Opts.Backfill {
	case "", "none":
		return nil
	case "easy":
		return []Input{{"backfill", "easy (jobs behind a waiting gang start if they end before its reservation or use no GPU of it)"}}
	}
	return []Input{{"backfill", in.Opts.Backfill + " (any job that fits starts, no reservation)"}}
}

func traceFrom(name, from string) string {
	if name == from {
		return name
	}
	return name + ": " + from
}

func schedulerKnobs(o Options) string {
	switch {
	case o.Scheduler == SchedulerThemis:
		return fmt.Sprintf(" (f 0.8, lease 600 s, payment draws seed %d)", o.Seed)
	case baseline.Is(o.Scheduler):
		return fmt.Sprintf(" (lease %g s)", baseline.DefaultLease)
	case o.Scheduler != "tiresias-las":
		return ""
	}
	th := "3250,7200"
	if len(o.TiresiasThresholds) > 0 {
		th = fmt.Sprint(o.TiresiasThresholds)
	}
	return fmt.Sprintf(" (thresholds %s GPU-s, starvation %g)", th, o.TiresiasStarvation)
}

// seedAlso names what else the seed drew for this run.
func seedAlso(in *Inputs) string {
	s := ""
	if !strings.Contains(in.RawFrom, "pinned") && in.Opts.GPUScores == "" {
		s += ", GPU values"
	}
	if strings.Contains(in.Extras, "generated") {
		s += ", extra arrivals"
	}
	return s
}

// Describe is Header as a map, for JSON output.
func (in *Inputs) Describe() map[string]string {
	m := map[string]string{}
	for _, kv := range in.Header() {
		m[kv.Name] = kv.Value
	}
	return m
}

func movesDescription(m string) string {
	if sim.MoveModel(m) == sim.MovesEvictRelaunch {
		return "evict-relaunch (a migrated job stops and is placed again from the next round; a launch onto GPUs freed this round waits a round)"
	}
	return "in-place (a migrated job runs on its new GPUs from the round it moves)"
}
