package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/data"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Inputs are the resolved, read-only inputs shared by every placement of
// one comparison (and safe to share across goroutines).
type Inputs struct {
	// noRecords runs without per-job records (Hooks.NoJobRecords).
	noRecords     bool
	noMoveGains   bool    // Hooks.NoMoveGains
	noRoundStats  bool    // Hooks.NoRoundStats
	pipeline      bool    // Hooks.Pipeline
	forecastAt    float64 // -1: no forecast (Hooks.ForecastAt)
	forecastOpts  ForecastOptions
	whatIfs       []string // Hooks.WhatIf
	Opts          Options
	Cluster       *cluster.Cluster
	Trace         *workload.Trace
	Raw           *variability.Table
	Scores        *policy.Scores
	Bins          [variability.NumClasses]*variability.Binning
	Locality      sim.LocalityFunc
	LocalityModel variability.LocalityModel
	ClassL        [variability.NumClasses]float64 // L used in each class's L×V order
	Track         *[2]int
	// Costs prices migrations and preemptions (flags, then the model
	// table's per-model values).
	Costs     workload.Costs
	TraceFrom string // where the trace came from (pinned reference, embedded, file)
	RawFrom   string // where the GPU values came from
	// Extras says which background arrivals the run gets and why.
	Extras string
	// Warnings are said once, before the runs: inputs that make a run
	// very long, or options that have no effect on it.
	Warnings []string
	// pinned: the artifact's pinned trace stands in for the generator,
	// its tracked=0 rows (pinnedExtras of them) being the artifact's own
	// extra arrivals.
	pinned       bool
	pinnedExtras int
	// ids are the trace's job ids, and the pinned extras', for Origin,
	// made on its first call (only a run writing per-job rows asks).
	// Made up front, with the extras as a map, they were 50 of the 930
	// page faults of a Sia-Philly run, and a first touch of a page costs
	// 15-25 us on a virtual machine.
	ids func() jobIDs
	// Layout is the cells the tenancy stage works on (nil: no tenancy).
	Layout      *tenant.Layout
	nodeEvents  []sim.NodeEvent
	cellsEvents []cellsEvent
	// truth is what the GPUs really do when it is not what the
	// scheduler believes (see learn.go).
	truth truthInputs
}

// artifactPinShape is the only cluster the artifact's pinned inputs exist for.
const artifactPinShape = "16x4"

// Prepare resolves options into inputs.
func Prepare(o Options) (*Inputs, error) { return PrepareWith(o, nil) }

// PrepareWith is Prepare with an already built trace (a generated
// Synergy workload, say) in place of Options.Trace; Options.Trace then
// only names it in the output.
func PrepareWith(o Options, trace *workload.Trace) (*Inputs, error) {
	return prepare(o, trace, false)
}

// prepare is PrepareWith; stream reads a trace file row by row as the
// runs need it rather than whole, where the runs allow (see streamable).
func prepare(o Options, trace *workload.Trace, stream bool) (*Inputs, error) {
	o = o.Effective()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	in := &Inputs{Opts: o, forecastAt: -1}
	var err error
	if in.Cluster, err = cluster.Parse(o.Cluster); err != nil {
		return nil, err
	}
	if in.Track, err = ParseTrack(o.Track); err != nil {
		return nil, err
	}
	cm, err := workload.ParseClassMap(o.ClassMap)
	if err != nil {
		return nil, err
	}
	models := workload.DefaultModels()
	if o.Models != "" {
		if models, err = workload.LoadModels(o.Models); err != nil {
			return nil, err
		}
	}
	models = models.WithClassMap(cm)
	in.Costs = workload.Costs{Default: workload.MoveCost{Migration: o.MigrationCost, Preemption: o.PreemptionCost}, Models: models}
	if trace != nil {
		in.Trace, in.TraceFrom = trace, trace.Name
	} else if in.Trace, in.TraceFrom, err = in.loadTrace(models, stream && in.streamable()); err != nil {
		return nil, err
	}
	in.ids = sync.OnceValue(in.jobIDs)
	if err := in.setupTenancy(); err != nil {
		return nil, err
	}
	in.Extras = in.describeExtras()
	in.warnLong()
	in.Warnings = append(in.Warnings, NoEffect(o, o.Explicit.Flags)...)
	in.warnCosts()
	if in.Raw, in.RawFrom, err = in.loadRaw(); err != nil {
		return nil, err
	}
	if err := in.locality(); err != nil {
		return nil, err
	}
	if err := in.bin(); err != nil {
		return nil, err
	}
	if err := in.loadTruth(); err != nil {
		return nil, err
	}
	return in, nil
}

// pinnedApplies says whether the artifact's own pinned inputs stand in for
// draws we cannot replay (Python's generator): the artifact preset's
// settings on its 16x4 cluster.
func (in *Inputs) pinnedApplies() bool {
	o := in.Opts
	return o.Pinned && in.Cluster.String() == artifactPinShape
}

// streamable says whether the runs can take the trace row by row: no
// part of them reads it whole. Tenancy splits it by VC, generated extra
// arrivals reuse its rows, and Themis and the elastic baselines measure
// apps. Whether a built-in trace gets generated extras depends on its
// tracked column, so it is streamed (its rows kept compact) and read
// whole after all if it does (see loadTrace).
func (in *Inputs) streamable() bool {
	o := in.Opts
	return !o.tenancyOn() && !PlacesToo(o.Scheduler) && (o.ExtraLoad == 0 || IsBuiltinTrace(o.Trace))
}

func (in *Inputs) loadTrace(models *workload.Models, stream bool) (*workload.Trace, string, error) {
	t, from, err := in.loadTraceAs(models, stream)
	if err == nil && t.Streamed() && !t.HasTracked && in.Opts.ExtraLoad > 0 {
		// The generator's extra arrivals reuse the rows (as sim's
		// extrasOn has it): they need them whole.
		t, err = t.Whole()
	}
	return t, from, err
}

// loadTraceAs reads Options.Trace: the artifact's pinned copy where it
// applies, else as loadTrace does.
func (in *Inputs) loadTraceAs(models *workload.Models, stream bool) (*workload.Trace, string, error) {
	name := in.Opts.Trace
	if n, ok := strings.CutPrefix(name, "sia-philly/"); ok {
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > 8 {
			return nil, "", fmt.Errorf("--trace %s: built-in Sia-Philly traces are sia-philly/1 .. sia-philly/8", quote.Value(name))
		}
		// The artifact's extra arrivals come from Python's generator; the
		// reference copy carries them as tracked=0 rows (a --track window
		// re-marks rows by id, extras included, as the artifact's id
		// window does).
		if in.pinnedApplies() && in.Opts.ExtraLoad == 2 {
			p := fmt.Sprintf("reference/sia-philly-extended/workload-%d.csv", k)
			t, err := readEmbedded(data.Reference, p, models, stream)
			if err == nil {
				in.pinned = true
				err = t.Each(func(s *workload.Spec) error {
					if !s.Tracked {
						in.pinnedExtras++
					}
					return nil
				})
			}
			return t, p + " (pinned: the artifact's trace plus its extra arrivals)", err
		}
	}
	return loadTrace(name, models, stream)
}

// LoadTrace reads a built-in trace (sia-philly/1..8,
// frontera/sia-160job-trace) or a CSV file, and says where it came from.
func LoadTrace(name string, models *workload.Models) (*workload.Trace, string, error) {
	return loadTrace(name, models, false)
}

// loadTrace is LoadTrace; stream streams a trace file unless it has
// apps, whose fairness reads every row, and keeps a built-in trace's
// rows compact (workload.StreamTraceFS).
func loadTrace(name string, models *workload.Models, stream bool) (*workload.Trace, string, error) {
	if n, ok := strings.CutPrefix(name, "sia-philly/"); ok {
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > 8 {
			return nil, "", fmt.Errorf("--trace %s: built-in Sia-Philly traces are sia-philly/1 .. sia-philly/8", quote.Value(name))
		}
		p := fmt.Sprintf("traces/sia-philly/workload-%d.csv", k)
		t, err := readEmbedded(data.Traces, p, models, stream)
		return t, p + " (embedded)", err
	}
	if n, ok := strings.CutPrefix(name, "frontera/"); ok {
		p := "traces/frontera-testbed/" + n
		if !strings.HasSuffix(p, ".csv") {
			p += ".csv"
		}
		t, err := readEmbedded(data.Traces, p, models, stream)
		return t, p + " (embedded)", err
	}
	if _, err := os.Stat(name); err != nil {
		return nil, "", fmt.Errorf("--trace %s: not a built-in trace (sia-philly/1..8, frontera/sia-160job-trace) and not a readable file: %v", quote.Value(name), err)
	}
	if stream {
		t, err := workload.StreamTraceFile(name, models)
		if err == nil && t.HasApp {
			t, err = t.Whole()
		}
		return t, name, err
	}
	t, err := workload.ReadTraceFile(name, models)
	return t, name, err
}

// LongRun is the simulated time past which a run is worth a warning
// before it starts: a year.
const LongRun = 365 * 24 * 3600.0

// warnLong warns about trace rows that alone keep the simulation going
// for more than LongRun (the simulator refuses rows past its horizon).
func (in *Inputs) warnLong() {
	// No row ends that late even untracked: a streamed trace knows from
	// its first reading, so the usual run reads it once less.
	if !(in.Trace.LatestEnd() > LongRun) {
		return
	}
	errEnough := errors.New("enough warnings")
	err := in.Trace.Each(func(j *workload.Spec) error {
		if end := j.Submit + j.IdealRuntime(); end > LongRun && j.Tracked {
			// Blame the larger of the two terms: a far arrival is the
			// submit_time's doing, not the duration's.
			field, what, hint := j.DurationField(), fmt.Sprintf("runs %s (%s) on median GPUs", j.DurationText(), years(j.IdealRuntime())), j.DurationHint()
			if j.Submit > j.IdealRuntime() {
				field, what, hint = "submit_time", fmt.Sprintf("arrives at %.6g s (%s)", j.Submit, years(j.Submit)), ""
			}
			in.Warnings = append(in.Warnings, fmt.Sprintf("%s:%d: field %q: job %d %s, so the run simulates at least %.3g rounds%s",
				j.Source, j.Line, field, j.ID, what, end/in.Opts.Round, hint))
			if len(in.Warnings) >= 3 {
				return errEnough
			}
		}
		return nil
	})
	if err != nil && err != errEnough {
		in.Warnings = append(in.Warnings, fmt.Sprintf("reading the trace for long rows: %v", err))
	}
}

// years says a time in years, in a few digits however large.
func years(s float64) string {
	if y := s / LongRun; y < 1e6 {
		return fmt.Sprintf("%.1f years", y)
	}
	return fmt.Sprintf("%.3g years", s/LongRun)
}

// warnCosts warns when a move costs a whole round or more: a job that a
// placement or a scheduler moves every round (non-sticky packing, LAS
// time-slicing) then pays again before it has paid off the last move,
// never progresses, and the run ends only at the horizon.
func (in *Inputs) warnCosts() {
	o := in.Opts
	if c := max(o.MigrationCost, o.PreemptionCost); c >= o.Round {
		in.Warnings = append(in.Warnings, fmt.Sprintf("a move costs %g s, at least a round (%g s): a job moved or preempted every round never progresses (LAS and non-sticky placements do that); such a run stops only at the horizon", c, o.Round))
	}
}

// describeExtras says which background arrivals shape the run.
func (in *Inputs) describeExtras() string {
	o := in.Opts
	switch {
	case in.pinned:
		return fmt.Sprintf("%g jobs/h after the trace: the artifact's own %d extra arrivals, pinned (the tracked=0 rows of %s); marked extra-pinned in --jobs-out",
			o.ExtraLoad, in.pinnedExtras, strings.TrimSuffix(in.TraceFrom, " (pinned: the artifact's trace plus its extra arrivals)"))
	case in.Trace.HasTracked:
		return "none generated: the trace's tracked column marks its own background rows (tracked=0)"
	case o.ExtraLoad == 0 && !IsBuiltinTrace(o.Trace) && !o.Explicit.ExtraLoad && !o.Explicit.Preset:
		return "none: a trace file gets no background arrivals unless --extra-load or --preset is given"
	case o.ExtraLoad == 0:
		return "none (--extra-load 0)"
	}
	return fmt.Sprintf("%g jobs/h after the trace, generated: Poisson gaps ceil(-ln(1-U)/rate) h from seed %d, trace rows reused in file order, until every tracked job has finished or %d extras (the bound); marked extra-generated in --jobs-out",
		o.ExtraLoad, o.Seed, sim.DefaultMaxExtras(in.Trace.Len()))
}

// Origin says where a job of a run came from: "trace" (a row of the
// trace), "extra-pinned" (one of the artifact's own extra arrivals) or
// "extra-generated" (made by the background-arrival generator).
func (in *Inputs) Origin(id int) string {
	if in.Trace.Streamed() && !in.pinned {
		return "trace" // a streamed trace gets no generated extras (sim refuses them)
	}
	get := in.ids
	if get == nil {
		get = in.jobIDs // Inputs made by hand (tests)
	}
	ids := get()
	switch {
	case inSorted(ids.extras, id):
		return "extra-pinned"
	case inSorted(ids.trace, id):
		return "trace"
	}
	return "extra-generated"
}

// jobIDs are a trace's job ids, ascending (sorted slices: a map of a
// million ids costs tens of megabytes), and those of its pinned extras.
type jobIDs struct{ trace, extras []int }

// jobIDs lists the trace's ids, and its tracked=0 rows' as the pinned
// extras when the pinned trace is in use.
func (in *Inputs) jobIDs() jobIDs {
	var ids jobIDs
	if in.Trace.Streamed() && !in.pinned {
		return ids // Origin does not ask
	}
	ids.trace = make([]int, 0, in.Trace.Len())
	if in.pinned {
		ids.extras = make([]int, 0, in.pinnedExtras)
	}
	// A built-in trace's rows are in memory, streamed or not: Each
	// cannot fail.
	_ = in.Trace.Each(func(j *workload.Spec) error {
		ids.trace = append(ids.trace, j.ID)
		if in.pinned && !j.Tracked {
			ids.extras = append(ids.extras, j.ID)
		}
		return nil
	})
	slices.Sort(ids.trace)
	slices.Sort(ids.extras)
	return ids
}

// inSorted reports whether id is in ids (ascending).
func inSorted(ids []int, id int) bool {
	_, ok := slices.BinarySearch(ids, id)
	return ok
}

func readEmbedded(fsys fs.FS, p string, models *workload.Models, stream bool) (*workload.Trace, error) {
	if _, err := fs.Stat(fsys, p); err != nil {
		return nil, fmt.Errorf("built-in %s: %v", p, err)
	}
	if stream {
		if t := workload.BuiltinTrace(p, models); t != nil {
			return t, nil // the same rows, compiled (see workload.BuiltinTrace)
		}
		return workload.StreamTraceFS(fsys, p, models)
	}
	return workload.ReadTraceFS(fsys, p, models)
}

func (in *Inputs) loadRaw() (*variability.Table, string, error) {
	o := in.Opts
	if o.GPUScores != "" {
		gs, err := variability.ReadGPUScoresFile(o.GPUScores)
		if err != nil {
			return nil, "", err
		}
		if gs.Table.NumGPUs() != in.Cluster.Size() {
			return nil, "", fmt.Errorf("--gpu-scores %s has %d GPUs but --cluster %s has %d", o.GPUScores, gs.Table.NumGPUs(), o.Cluster, in.Cluster.Size())
		}
		// The table must describe this cluster's layout too: GPU ids are
		// node-major, so GPU g sits on the node --cluster puts it on.
		for g, node := range gs.Node {
			if want := in.Cluster.NodeOf(g); node != want {
				return nil, "", fmt.Errorf("%s:%d: field \"Node_ID\": GPU %d is on node %d, but --cluster %s puts it on node %d (GPU ids run node by node)",
					o.GPUScores, gs.Line[g], g, node, o.Cluster, want)
			}
		}
		return gs.Table, o.GPUScores, nil
	}
	mode, err := variability.ParseSampleMode(o.Sampling)
	if err != nil {
		return nil, "", fmt.Errorf("--sampling: %v", err)
	}
	if in.pinnedApplies() && o.Profile == variability.DefaultProfile && mode == variability.WithReplacement {
		const p = "reference/pal-artifact-gpu-pmscores.csv"
		b, err := fs.ReadFile(data.Reference, p)
		if err != nil {
			return nil, "", err
		}
		gs, err := variability.ReadGPUScores(path.Base(p), bytes.NewReader(b))
		if err != nil {
			return nil, "", err
		}
		return gs.Table, p + " (pinned: the artifact's seed-42 draw)", nil
	}
	profiles, err := variability.LoadProfileSet(o.Profile)
	if err != nil {
		return nil, "", err
	}
	t, err := variability.Assign(profiles, in.Cluster.Size(), mode, variability.NewRand(o.Seed), nil)
	if err != nil {
		return nil, "", err
	}
	return t, fmt.Sprintf("profile %s, one draw per GPU and class (sampling %s replacement), seed %d", o.Profile, mode, o.Seed), nil
}

// newPlacer builds one instance of a placement, pods kept whole.
func (in *Inputs) newPlacer(placement string) (policy.Placer, error) {
	pl, err := registry.NewPlacer(in.Opts.Spec(placement))
	if err != nil {
		return nil, err
	}
	if in.hasPods() {
		// A pod never spans nodes, whatever the placement.
		pl = place.PodGuard{Placer: pl}
	}
	return pl, nil
}

// Config is the simulator's configuration of one placement on the
// prepared inputs (what Run runs; tests add an Observe hook to it).
func (in *Inputs) Config(placement string) (sim.Config, error) {
	sched, err := registry.NewScheduler(in.Opts.Spec(placement))
	if err != nil {
		return sim.Config{}, err
	}
	var pl policy.Placer
	if th, ok := sched.(*themis.Policy); ok {
		pl = th
	} else if b, ok := sched.(*baseline.Policy); ok {
		pl = b
	} else if pl, err = in.newPlacer(placement); err != nil {
		return sim.Config{}, err
	}
	cfg := sim.Config{
		Cluster:         in.Cluster,
		Trace:           in.Trace,
		Scheduler:       sched,
		Placer:          pl,
		Round:           in.Opts.Round,
		Locality:        in.Locality,
		Raw:             in.Raw,
		Scores:          in.Scores,
		Costs:           in.Costs,
		Moves:           sim.MoveModel(in.Opts.Moves),
		ExtraLoad:       in.Opts.ExtraLoad,
		Seed:            in.Opts.Seed,
		StarvationGuard: in.Opts.StarvationGuard,
		Track:           in.Track,
		NoRecords:       in.noRecords && !in.WantFairness() && in.Layout == nil, // fairness and the per-VC figures read the records
		NoMoveGains:     in.noMoveGains,
		NoRoundStats:    in.noRoundStats && !in.WantFairness(), // the fairness sums the GPUs in use round by round
		Pipeline:        in.pipeline,
	}
	if cfg.Raw, cfg.Hook, err = in.runTruth(); err != nil {
		return sim.Config{}, err
	}
	if err := in.addTenancy(&cfg, placement); err != nil {
		return sim.Config{}, err
	}
	if err := in.addQuarantine(&cfg); err != nil {
		return sim.Config{}, err
	}
	if m, _ := backfill.ParseMode(in.Opts.Backfill); m != backfill.None {
		est := cfg // the model the run uses, Raw included
		cfg.Placer = backfill.Wrap(cfg.Placer, m, est.Estimate)
	}
	return cfg, nil
}
