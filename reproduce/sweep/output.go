package sweep

import (
	"fmt"
	"github.com/palsched/pal/internal/jsonround"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/atomicfile"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/workload"
)

// Columns of the CSV and the table, in order. Wall time is left out: it is
// the only value that changes between two runs of the same grid.
var csvHeaders = []string{
	"index", "trace", "load_jobs_per_hour", "locality_penalty", "seed", "scheduler", "placement",
	"jobs", "avg_jct_s", "avg_jct_vs_packed_sticky_pct", "p50_jct_s", "p99_jct_s", "p99_jct_artifact_s", "max_jct_s",
	"avg_wait_s", "makespan_s", "end_time_s", "utilization", "multi_gpu_jobs", "multi_gpu_avg_jct_s",
	"preemptions", "migrations", "lost_gpu_s", "rounds",
}

// Table lays rows out with full precision (CSV keeps the shortest exact
// form; text output rounds). The comparison is avg JCT relative to the
// packed-sticky run of the same point, in percent as pal sim shows it; a
// point without one is an empty cell.
func Table(title string, rows []Row) *report.Table {
	t := report.NewTable(title, csvHeaders...)
	for _, r := range rows {
		t.AddRow(r.Index, r.Trace, r.Load, r.LocalityPenalty, r.Seed, r.Scheduler, r.Placement,
			r.Jobs, r.AvgJCT, r.vsCell(), r.P50JCT, r.P99JCT, r.P99JCTIndex, r.MaxJCT,
			r.AvgWait, r.Makespan, r.EndTime, r.Utilization, r.MultiGPUJobs, r.MultiGPUAvgJCT,
			r.Preemptions, r.Migrations, r.LostGPUSeconds, r.Rounds)
	}
	return withUnitPrecision(t)
}

// withUnitPrecision gives each column of a sweep table the digits pal sim
// prints for it: the grid's own values (load, L) as given, mean seconds to
// 0.01 s, other seconds whole, percentages to 0.1, utilisation to 0.001.
func withUnitPrecision(t *report.Table) *report.Table {
	for _, h := range t.Headers {
		switch h {
		case "load_jobs_per_hour", "locality_penalty", "load (jobs/h)", "L":
			t.SetPrec(h, -1)
		case "avg_jct_s", "avg_wait_s", "multi_gpu_avg_jct_s", "avg JCT (s)":
			t.SetPrec(h, 2)
		case "p50_jct_s", "p99_jct_s", "p99_jct_artifact_s", "max_jct_s", "makespan_s", "end_time_s", "lost_gpu_s", "p99 (s)", "makespan (s)":
			t.SetPrec(h, 0)
		case "avg_jct_vs_packed_sticky_pct", "vs packed-sticky (%)":
			t.SetPrec(h, 1)
		case "utilization", "util":
			t.SetPrec(h, 3)
		}
	}
	return t
}

// vsCell is the comparison cell: percent, or empty without a baseline.
func (r Row) vsCell() any {
	if r.VsPackedSticky > 0 {
		return r.VsPackedStickyPct
	}
	return nil
}

// narrowHeaders are the columns of the default text table; --wide shows
// every column of the CSV.
var narrowHeaders = []string{"trace", "load (jobs/h)", "L", "seed", "scheduler", "placement",
	"jobs", "avg JCT (s)", "vs packed-sticky (%)", "p99 (s)", "makespan (s)", "util"}

// NarrowTable is the default text table: the point and the headline
// figures, in units, so that it fits a terminal.
func NarrowTable(title string, rows []Row) *report.Table {
	t := report.NewTable(title, narrowHeaders...)
	for _, r := range rows {
		t.AddRow(r.Trace, r.Load, r.LocalityPenalty, r.Seed, r.Scheduler, r.Placement,
			r.Jobs, r.AvgJCT, r.vsCell(), r.P99JCT, r.Makespan, r.Utilization)
	}
	return withUnitPrecision(t)
}

// Inputs describes what shaped every run of a grid, for the header of
// each output (the table's first lines, "# " lines in CSV, "inputs" in
// JSON). What varies per point (trace, load, L, seed, scheduler,
// placement) is in each row.
func Inputs(g *Grid) []experiment.Input {
	o := g.Base
	values := fmt.Sprintf("profile %s, sampling %s replacement, drawn from each point's seed", o.Profile, o.Sampling)
	if o.GPUScores != "" {
		values = o.GPUScores + " (every point)"
	} else if o.Pinned && o.Cluster == "16x4" && o.Profile == "longhorn" && o.Sampling == "with" {
		values = "built-in traces: the artifact's pinned table (reference/pal-artifact-gpu-pmscores.csv); trace files and synergy (unless --pinned or --preset is given): " + values
	}
	extras := "the load column: jobs/h of background arrivals after the trace (Poisson, generated from the point's seed, at most 20 per trace row)"
	if o.Pinned && o.Cluster == "16x4" {
		extras += "; on built-in Sia-Philly traces load 2 is the artifact's own pinned arrivals"
	}
	extras += "; a trace file gets none unless --load or --extra-load is given; a synergy trace carries its own"
	guard := "off"
	if o.StarvationGuard > 0 {
		guard = strconv.FormatFloat(o.StarvationGuard, 'f', -1, 64) + " s of waiting jumps the queue"
	}
	models := "embedded table"
	if o.Models != "" {
		models = o.Models
	}
	in := []experiment.Input{
		{Name: "preset", Value: o.Preset},
		{Name: "cluster", Value: o.Cluster},
		{Name: "gpu_values", Value: values},
		{Name: "extra_arrivals", Value: extras},
		{Name: "round", Value: strconv.FormatFloat(o.Round, 'f', -1, 64) + " s"},
		{Name: "locality_model", Value: o.LocalityModel},
		{Name: "class_map", Value: o.ClassMap},
		{Name: "models", Value: models},
		{Name: "k_strategy", Value: o.KStrategy},
		{Name: "pmfirst_tiebreak", Value: o.TieBreak},
		{Name: "starvation_guard", Value: guard},
		{Name: "move_costs", Value: moveCosts(o)},
	}
	if o.Track != "" {
		in = append(in, experiment.Input{Name: "track", Value: o.Track})
	}
	for _, t := range g.Traces {
		if t == SynergyTrace {
			in = append(in, experiment.Input{Name: "synergy", Value: fmt.Sprintf("%d jobs, ids %s measured, generated per load and seed", g.Synergy.jobs(), g.Synergy.TrackRange())})
			break
		}
	}
	return in
}

// moveCosts says what a migration and a restart cost every run.
func moveCosts(o experiment.Options) string {
	c := workload.Costs{Default: workload.MoveCost{Migration: o.MigrationCost, Preemption: o.PreemptionCost}}
	s := c.String()
	if o.Models != "" {
		s += "; a model's own migration_cost_s / preemption_cost_s in " + o.Models + " wins"
	}
	return s
}

// WriteInputs writes Inputs as lines starting with prefix ("# " for CSV).
func WriteInputs(w io.Writer, g *Grid, prefix string) { WriteInputList(w, Inputs(g), prefix) }

// Document is the JSON form of a sweep: the grid as run, whether it is
// complete, and the rows.
type Document struct {
	Inputs    map[string]string  `json:"inputs"`
	Partial   bool               `json:"partial"`
	RunsDone  int                `json:"runs_done"`
	RunsTotal int                `json:"runs_total"`
	Base      experiment.Options `json:"base"`
	Grid      GridDoc            `json:"grid"`
	Rows      []Row              `json:"rows"`
}

// GridDoc lists a grid's dimensions for the JSON header.
type GridDoc struct {
	Traces       []string  `json:"traces"`
	Loads        []float64 `json:"loads_jobs_per_hour,omitempty"`
	Localities   []float64 `json:"locality_penalties,omitempty"`
	Seeds        []uint64  `json:"seeds,omitempty"`
	Schedulers   []string  `json:"schedulers"`
	Placements   []string  `json:"placements"`
	SynergyJobs  int       `json:"synergy_jobs,omitempty"`
	SynergyTrack string    `json:"synergy_track,omitempty"`
}

// NewDocument describes a result for JSON output.
func NewDocument(res *Result) Document {
	g := res.Grid
	d := Document{
		Inputs:  map[string]string{},
		Partial: res.Partial, RunsDone: len(res.Rows), RunsTotal: res.Total, Base: g.Base, Rows: res.Rows,
		Grid: GridDoc{Traces: g.Traces, Loads: g.Loads, Localities: g.Localities, Seeds: g.Seeds,
			Schedulers: g.Schedulers, Placements: g.Placements},
	}
	for _, t := range g.Traces {
		if t == SynergyTrace {
			d.Grid.SynergyJobs = g.Synergy.jobs()
			d.Grid.SynergyTrack = g.Synergy.TrackRange().String()
		}
	}
	for _, kv := range Inputs(g) {
		d.Inputs[kv.Name] = kv.Value
	}
	if d.Rows == nil {
		d.Rows = []Row{}
	}
	return d
}

// WriteJSON writes the document, indented.
func WriteJSON(w io.Writer, res *Result) error { return WriteDocumentJSON(w, NewDocument(res)) }

// WriteDocumentJSON writes a document, indented: what WriteJSON writes
// for the result it came from.
func WriteDocumentJSON(w io.Writer, d Document) error {
	return jsonround.Encode(w, d, "  ")
}

// PartialFile is written beside sweep.csv when the sweep did not finish,
// since a CSV has no place for such a note; a complete sweep removes a
// stale one.
const PartialFile = "PARTIAL"

// WriteDir writes dir/sweep.csv and dir/sweep.json, and dir/PARTIAL when
// the result is partial. Files are written whole or not at all (via a
// temporary name), so an interrupted write never leaves half a CSV.
func WriteDir(dir string, res *Result) error { return WriteDocumentDir(dir, NewDocument(res)) }

// WriteDocumentDir is WriteDir for a document (a merged sweep's, say):
// the same files, byte for byte, as for the result it describes.
func WriteDocumentDir(dir string, d Document) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "sweep.csv"), func(w io.Writer) error {
		return Table("", d.Rows).WriteCSV(w)
	}); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "sweep.json"), func(w io.Writer) error { return WriteDocumentJSON(w, d) }); err != nil {
		return err
	}
	p := filepath.Join(dir, PartialFile)
	if !d.Partial {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	msg := "partial sweep: " + strconv.Itoa(d.RunsDone) + " of " + strconv.Itoa(d.RunsTotal) +
		" runs finished (stopped early); sweep.csv and sweep.json hold the finished runs only\n"
	return os.WriteFile(p, []byte(msg), 0o644)
}

// WriteInputList writes inputs as lines starting with prefix, as
// WriteInputs does for a grid.
func WriteInputList(w io.Writer, in []experiment.Input, prefix string) {
	for _, kv := range in {
		fmt.Fprintf(w, "%s%s: %s\n", prefix, kv.Name, kv.Value)
	}
}
