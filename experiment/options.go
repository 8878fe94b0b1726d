// Package experiment turns user-facing options (a preset plus overrides)
// into simulator runs: it resolves built-in traces and profiles, decides
// when the PAL artifact's pinned inputs apply, bins the GPU scores, and
// runs one or many placements on the same inputs.
//
// Presets group every point where the PAL artifact's code and the paper's
// text disagree:
//
//	setting            artifact (default)              paper
//	round length       360 s (Sia scripts)             300 s (§V-C)
//	extra load         2 jobs/h after the trace        none
//	class map          code: vgg19 C, DCGAN B, PointNet D   Table II: vgg19 A, DCGAN A, PointNet C
//	GPU sampling       with replacement (per row)      without replacement
//	K selection        2 + #outliers (dead silhouette) silhouette sweep, outliers apart
//	PM-First ties      same-bin locality tie-break     plain score sort (Algorithm 1)
//	locality penalty   constant 1.7 everywhere         per model and GPU count (bp-main table)
//	pinned inputs      artifact's GPU table and arrivals on 16x4   none
//
// Each row is also its own option, so any mix can be run.
package experiment

import (
	"fmt"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/sim"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/themis"
)

// Options is everything that defines a run (or a family of runs that
// differ only in placement).
type Options struct {
	Preset    string `json:"preset"`
	Trace     string `json:"trace"`
	Cluster   string `json:"cluster"`
	Profile   string `json:"profile"`
	GPUScores string `json:"gpu_scores,omitempty"`
	// ActualGPUScores are the GPUs' true speeds when they differ from
	// what GPUScores (or the profile) makes the scheduler believe;
	// GPUEvents change them during the run; LearnScores updates the
	// beliefs from the jobs' pace, and LearnFrom says what a job shows:
	// "job" (or ""), its pace alone, the slowest of its GPUs; "gpu",
	// each GPU's own pace, as workers that time their own step before
	// the all-reduce report it. GPUHints are telemetry's priors for the
	// learner (a simulated DCGM exporter; variability.Learner.Hint).
	// GPUEventsKnown tells the scheduler each GPU event as it happens
	// (its beliefs are the true table, binned again): the oracle of a
	// run whose truth moves, which learning is measured against.
	ActualGPUScores string `json:"actual_gpu_scores,omitempty"`
	GPUEvents       string `json:"gpu_events,omitempty"`
	GPUEventsKnown  bool   `json:"gpu_events_known,omitempty"`
	GPUHints        string `json:"gpu_hints,omitempty"`
	LearnScores     bool   `json:"learn_scores,omitempty"`
	LearnFrom       string `json:"learn_from,omitempty"`
	// QuarantineAbove quarantines a GPU whose slowdown (learned, or told
	// by GPUEventsKnown) reaches it, until it falls below halfway back to
	// 1 (variability.Quarantine): under hived a bad cell of one device,
	// without tenancy the slowest bin of every class. 0: off.
	QuarantineAbove float64 `json:"quarantine_above,omitempty"`
	Scheduler       string  `json:"scheduler"`
	Placements      string  `json:"placements"`
	Round           float64 `json:"round_s"`
	LocalityPenalty float64 `json:"locality_penalty"`
	LocalityModel   string  `json:"locality_model"`
	ClassMap        string  `json:"class_map"`
	ExtraLoad       float64 `json:"extra_load_jobs_per_hour"`
	Sampling        string  `json:"sampling"`
	KStrategy       string  `json:"k_strategy"`
	TieBreak        string  `json:"pmfirst_tiebreak"`
	Seed            uint64  `json:"seed"`
	Track           string  `json:"track,omitempty"`
	Pinned          bool    `json:"pinned"`
	StarvationGuard float64 `json:"starvation_guard_s"`
	Models          string  `json:"models,omitempty"`
	// MigrationCost and PreemptionCost are seconds of lost progress per
	// move (0: free, the artifact's model); the model table may price a
	// model on its own.
	MigrationCost  float64 `json:"migration_cost_s,omitempty"`
	PreemptionCost float64 `json:"preemption_cost_s,omitempty"`
	// Moves is how a migration is carried out: in-place (default) or
	// evict-relaunch (as the Kubernetes driver does; see sim.MoveModel).
	Moves string `json:"moves,omitempty"`
	// Tiresias 2D-LAS knobs (scheduler tiresias-las only).
	TiresiasThresholds []float64 `json:"tiresias_thresholds_gpu_s,omitempty"`
	TiresiasStarvation float64   `json:"tiresias_starvation,omitempty"`
	// Tenancy: none (default), quota, hived or private; Cells is a
	// HiveD-format cells file (default: one VC holding the whole
	// --cluster). CheckInvariants checks the tenancy stage every round.
	Tenancy         string `json:"tenancy,omitempty"`
	Cells           string `json:"cells,omitempty"`
	CheckInvariants bool   `json:"check_invariants,omitempty"`
	// PrivateDraws: under --tenancy private, each VC's private cluster is
	// its cells drawn this many times at random from the physical cluster
	// (its GPUs' values are those GPUs'), and its figures are pooled over
	// the draws; 0 gives each private cluster fresh values from the
	// profile instead.
	PrivateDraws int `json:"private_draws,omitempty"`
	// NodeEvents is a CSV of time_s,node,event (down or up); needs hived.
	NodeEvents string `json:"node_events,omitempty"`
	// CellsEvents is a CSV of time_s,cells: at each time the cells file
	// named (relative to the CSV) is applied under the running jobs;
	// needs hived and --cells.
	CellsEvents string `json:"cells_events,omitempty"`
	// Backfill lets jobs start behind a gang that waits: none (default,
	// strict order), easy (with a reservation for the gang) or greedy
	// (see package backfill).
	Backfill string `json:"backfill,omitempty"`

	// Explicit records which preset-driven inputs the user named. A
	// preset's background arrivals and pinned artifact tables belong to
	// the built-in traces (that is what reproduces the paper); a trace
	// file gets them only when asked for (see Effective).
	Explicit Explicit `json:"-"`
}

// Explicit says which options were given rather than defaulted.
type Explicit struct {
	Preset, ExtraLoad, Pinned bool
	// Flags names every flag given, for NoEffect's warnings.
	Flags []string
}

// IsBuiltinTrace says whether a --trace name is one of the embedded
// traces (sia-philly/N, frontera/NAME) rather than a file of the user's.
func IsBuiltinTrace(name string) bool {
	return strings.HasPrefix(name, "sia-philly/") || strings.HasPrefix(name, "frontera/")
}

// Effective returns the options a run really uses. On a trace file the
// preset's background arrivals and pinned tables do not apply unless
// the user asked for them (--extra-load, --pinned, or --preset given on
// the command line): a default never adds jobs to a user's own trace.
func (o Options) Effective() Options {
	if PlacesToo(o.Scheduler) {
		// Themis (and the elastic baselines) schedule and place at once;
		// their rounds are shorter than their leases unless --round says
		// otherwise.
		o.Placements = o.Scheduler
		if !slices.Contains(o.Explicit.Flags, "round") {
			o.Round = themis.DefaultRound
		}
	}
	if IsBuiltinTrace(o.Trace) || o.Explicit.Preset {
		return o
	}
	if !o.Explicit.ExtraLoad {
		o.ExtraLoad = 0
	}
	if !o.Explicit.Pinned {
		o.Pinned = false
	}
	return o
}

// SchedulerThemis is the --scheduler that hands whole rounds to Themis'
// leases and partial-allocation auctions (policy/themis, defaults: f =
// 0.8, 600 s leases, payments on; `pal themis sim` has every knob). The
// registry builds it; the name is repeated here for the commands' flags.
const SchedulerThemis = registry.SchedulerThemis

// PlacesToo reports whether a --scheduler also places (Themis and the
// elastic baselines of package baseline: gandiva-fair, slaq, optimus), so
// that --placement does not apply.
func PlacesToo(scheduler string) bool { return registry.PlacesToo(scheduler) }

// Spec is the registry's description of the options' policies, placement
// being the one placement of the list a run uses ("" when only the
// scheduler is wanted).
func (o Options) Spec(placement string) registry.Spec {
	return registry.Spec{
		Scheduler:          o.Scheduler,
		TiresiasThresholds: o.TiresiasThresholds,
		TiresiasStarvation: o.TiresiasStarvation,
		Seed:               o.Seed,
		Placement:          placement,
		TieBreak:           o.TieBreak,
		Tenancy:            o.Tenancy,
	}
}

// DefaultSeed is the seed every command uses when none is given.
const DefaultSeed = 42

// Presets lists the preset names.
func Presets() []string { return []string{"artifact", "paper"} }

// Preset returns the defaults of a preset.
func Preset(name string) (Options, error) {
	o := Options{
		Preset:          "artifact",
		Trace:           "sia-philly/1",
		Cluster:         "16x4",
		Profile:         "longhorn",
		Scheduler:       "fifo",
		Placements:      "pal,packed-sticky,packed-nonsticky,random-sticky,random-nonsticky,pm-first",
		Round:           360,
		LocalityPenalty: 1.7,
		LocalityModel:   "constant",
		ClassMap:        "artifact",
		ExtraLoad:       2,
		Sampling:        "with",
		KStrategy:       "artifact",
		TieBreak:        "artifact",
		Seed:            DefaultSeed,
		Pinned:          true,
		StarvationGuard: 3.6e6,
	}
	switch name {
	case "", "artifact":
		return o, nil
	case "paper":
		o.Preset = "paper"
		o.Round = 300
		o.ExtraLoad = 0
		o.ClassMap = "paper"
		o.Sampling = "without"
		o.KStrategy = "paper"
		o.TieBreak = "paper"
		o.LocalityModel = "per-model"
		o.Pinned = false
		return o, nil
	}
	return Options{}, fmt.Errorf("--preset %s: want artifact or paper", quote.Value(name))
}

// Limits that keep a run's memory and clock finite: a round longer than a
// year or more than 1,000 background arrivals an hour are typos, and
// they would otherwise overflow the clock or grow the queue without bound.
const (
	MaxRound     = 365 * 24 * 3600.0
	MaxExtraLoad = 1000.0
)

// Validate checks every number an option carries, so that bad values fail
// with the flag's name before any simulation (and never reach a
// division, a clock or a JSON encoder as NaN or Inf).
func (o Options) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !(o.Round > 0) || !finite(o.Round) || o.Round > MaxRound:
		return fmt.Errorf("--round must be positive seconds (at most %g), got %v", MaxRound, o.Round)
	case !(o.LocalityPenalty >= 1) || !finite(o.LocalityPenalty):
		return fmt.Errorf("--locality-penalty must be >= 1 (a slowdown), got %v", o.LocalityPenalty)
	case !(o.ExtraLoad >= 0) || o.ExtraLoad > MaxExtraLoad:
		return fmt.Errorf("--extra-load must be between 0 and %g jobs/hour, got %v", MaxExtraLoad, o.ExtraLoad)
	case !(o.StarvationGuard >= 0) || !finite(o.StarvationGuard):
		return fmt.Errorf("--starvation-guard must be >= 0 seconds (0: off), got %v", o.StarvationGuard)
	case !(o.TiresiasStarvation >= 0) || !finite(o.TiresiasStarvation):
		return fmt.Errorf("--tiresias-starvation must be >= 0 (0: off), got %v", o.TiresiasStarvation)
	case !(o.MigrationCost >= 0) || !finite(o.MigrationCost):
		return fmt.Errorf("--migration-cost must be finite seconds >= 0 (0: free), got %v", o.MigrationCost)
	case !(o.PreemptionCost >= 0) || !finite(o.PreemptionCost):
		return fmt.Errorf("--preemption-cost must be finite seconds >= 0 (0: free), got %v", o.PreemptionCost)
	}
	if _, err := sim.ParseMoveModel(o.Moves); err != nil {
		return err
	}
	if m, err := backfill.ParseMode(o.Backfill); err != nil {
		return fmt.Errorf("--%v", err)
	} else if m != backfill.None {
		switch {
		case o.Tenancy != "" && o.Tenancy != "none":
			return fmt.Errorf("--backfill %s: not with --tenancy %s (a VC's placer keeps strict order)", m, o.Tenancy)
		case PlacesToo(o.Scheduler):
			return fmt.Errorf("--backfill %s: not with --scheduler %s, which places jobs itself", m, o.Scheduler)
		}
	}
	for _, t := range o.TiresiasThresholds {
		if !finite(t) {
			return fmt.Errorf("--tiresias-thresholds must be finite GPU-seconds, got %v", o.TiresiasThresholds)
		}
	}
	if o.Sampling == "uuid" || o.Sampling == "by-uuid" {
		if o.GPUScores == "" {
			return fmt.Errorf("--sampling uuid needs GPU UUIDs, which a simulated cluster does not have; pin real GPUs with --gpu-scores FILE (with a GPU_UUID column) instead")
		}
	}
	if _, err := ParseTrack(o.Track); err != nil {
		return err
	}
	return nil
}

// ParseTrack reads "FROM-TO" (inclusive job ids).
func ParseTrack(s string) (*[2]int, error) {
	if s == "" {
		return nil, nil
	}
	a, b, ok := strings.Cut(s, "-")
	from, err1 := strconv.Atoi(strings.TrimSpace(a))
	to, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || from < 0 || to < from {
		return nil, fmt.Errorf("--track %s: want FROM-TO job ids with FROM <= TO, e.g. 0-159", quote.Value(s))
	}
	return &[2]int{from, to}, nil
}

// PlacementList splits the comma list.
func (o *Options) PlacementList() []string {
	var out []string
	for _, p := range strings.Split(o.Placements, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
