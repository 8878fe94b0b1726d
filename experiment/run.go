package experiment

import (
	"fmt"
	"time"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/sim"
)

// RunResult is one placement's run, in the JSON shape `pal sim` prints.
type RunResult struct {
	Trace     string `json:"trace"`
	Scheduler string `json:"scheduler"`
	Placement string `json:"placement"`
	metrics.Summary
	Rounds int     `json:"rounds"`
	WallMS float64 `json:"wall_ms"`

	JobRecords []metrics.JobRecord `json:"-"`
	RoundStats []sim.RoundStat     `json:"-"`
}

// Run simulates one placement on the prepared inputs.
func (in *Inputs) Run(placement string) (*RunResult, error) {
	cfg, err := in.config(placement)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := sim.Run(cfg)
	if err != nil {
		return nil, err
	}
	wall := time.Since(start)
	return &RunResult{
		Trace: in.Opts.Trace, Scheduler: cfg.Scheduler.Name(), Placement: cfg.Placer.Name(),
		Summary: res.Summary, Rounds: len(res.Rounds),
		WallMS:     float64(wall.Microseconds()) / 1000,
		JobRecords: res.Jobs, RoundStats: res.Rounds,
	}, nil
}

// RunAll runs every placement of the options on the same inputs.
func RunAll(o Options) (*Inputs, []*RunResult, error) {
	for _, p := range o.PlacementList() {
		if _, err := newPlacer(p, o.TieBreak); err != nil {
			return nil, nil, err
		}
	}
	if _, err := newScheduler(o); err != nil {
		return nil, nil, err
	}
	if len(o.PlacementList()) == 0 {
		return nil, nil, fmt.Errorf("--placement: no placement given")
	}
	in, err := Prepare(o)
	if err != nil {
		return nil, nil, err
	}
	var out []*RunResult
	for _, p := range o.PlacementList() {
		r, err := in.Run(p)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
	}
	return in, out, nil
}

// Describe says which inputs a run used, for output headers and JSON.
func (in *Inputs) Describe() map[string]string {
	return map[string]string{
		"trace_from": in.TraceFrom,
		"gpu_values": in.RawFrom,
		"locality":   in.LocalityDescription(),
		"cluster":    in.Cluster.String(),
		"preset":     in.Opts.Preset,
		"class_map":  in.Opts.ClassMap,
		"k_strategy": in.Opts.KStrategy,
	}
}
