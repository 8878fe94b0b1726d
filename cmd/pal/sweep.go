package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/progress"
	"github.com/palsched/pal/reproduce/sweep"
	"github.com/palsched/pal/workload"
)

func newSweepCmd() *cobra.Command {
	var (
		loads   sweepFloats
		locs    sweepFloats
		seeds   sweepSeeds
		jobs    int
		workers int
		outDir  string
		output  string
		wide    bool
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a grid of simulations (placements × schedulers × traces × loads × penalties × seeds) on all cores",
		Long: `Run every combination of the listed placements, schedulers, traces, loads,
locality penalties and seeds, in parallel on all cores, and print or write one
row per run in grid order (traces outermost, placements innermost), whatever
order the runs finish in.

--trace takes built-in traces (sia-philly/1..8, sia-philly/all), trace files,
or "synergy", which generates a Synergy-style trace (PAL §V-C) per load and
seed: --jobs jobs, Poisson arrivals at the load, tracking ids --track (default
jobs/2 to 3·jobs/4, i.e. the paper's 2000-3000 for 4000 jobs).

--load is arrivals per hour. For synergy it is the arrival rate (default
8,10,12,14, the artifact's loads). For a replayed trace it is the rate of the
artifact's background arrivals after the trace (--extra-load; default the
preset's, 2 for the artifact); only load 2 uses the artifact's pinned extra
arrivals on 16x4.

Every other option (--preset, --cluster, --round, ...) applies to all runs
as given: the paper's Synergy runs want --cluster 64x4 --round 300.

Ctrl-C stops starting new runs, waits for the running ones and still writes
what finished, marked partial.

Every output starts with the inputs shared by all runs. The table shows the
point (trace, load, L, seed, scheduler, placement) and: jobs = tracked jobs
finished; avg JCT in seconds; vs packed-sticky = avg JCT relative to the
packed-sticky run of the same point, in percent (empty without one); p99 JCT
(linear interpolation); makespan = last tracked completion minus first tracked
arrival; util = GPU-seconds held over GPU-seconds available. --wide, CSV and
JSON add p50, the artifact's p99 (sorted JCTs at int(0.99 n)), max JCT, mean
wait, the end time on the simulator clock, multi-GPU jobs and their mean JCT,
preemptions, migrations, GPU-seconds lost to moves and rounds simulated.`,
		Example: `  pal sweep --trace sia-philly/all --locality-penalty 1,1.5,2,2.5,3 --out sweep-l
  pal sweep --trace synergy --cluster 64x4 --round 300 --pinned=false --scheduler fifo,las,srtf --load 4,6,8,10,12,14 --out sweep-syn`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	resolve := bindRunFlags(fs)
	// The single-valued run flags that a sweep varies become lists. The
	// comma-list string flags (--placement, --scheduler, --trace) keep
	// their type and are split here; the numeric ones get list values.
	fs.Lookup("scheduler").Usage = "comma list of schedulers: fifo, las, srtf, tiresias-las"
	fs.Lookup("trace").Usage = "comma list of traces: sia-philly/1..8, sia-philly/all, CSV files, or synergy"
	sweepSwapValue(fs, "locality-penalty", &locs, "comma list of locality penalties (slowdown of a job spread across nodes)")
	sweepSwapValue(fs, "seed", &seeds, "comma list of seeds (each also seeds a generated Synergy trace)")
	fs.Var(&loads, "load", "comma list of loads, jobs/hour (synergy: arrival rate; replayed traces: extra arrivals after the trace)")
	fs.IntVar(&jobs, "jobs", sweep.DefaultSynergyJobs, "jobs per generated Synergy trace")
	fs.IntVar(&workers, "workers", 0, "runs at once (0: GOMAXPROCS)")
	fs.StringVar(&outDir, "out", "", "write DIR/sweep.csv and DIR/sweep.json instead of printing")
	fs.StringVarP(&output, "output", "o", DefaultOutput, "stdout format without --out: table, csv or json")
	fs.BoolVar(&wide, "wide", false, "table output: every column of the CSV, not just the headline ones")
	sh := bindShardFlags(fs)
	cmd.AddCommand(newSweepMergeCmd())

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if output != "table" && output != "csv" && output != "json" {
			return fmt.Errorf("--output %q: want table, csv or json", output)
		}
		o, err := resolve()
		if err != nil {
			return err
		}
		g := &sweep.Grid{
			Base:       o,
			Placements: sweepSplit(o.Placements),
			Schedulers: sweepSplit(o.Scheduler),
			Traces:     sweep.ExpandTraces(sweepSplit(o.Trace)),
			Loads:      loads,
			Localities: locs,
			Seeds:      seeds,
			Synergy:    sweep.SynergySpec{Jobs: jobs},
		}
		if o.Track != "" && sweepHas(g.Traces, sweep.SynergyTrace) {
			t, err := workload.ParseTrackRange(o.Track)
			if err != nil {
				return fmt.Errorf("--track: %v", err)
			}
			g.Synergy.Track = &t
		}
		all, err := g.Expand()
		if err != nil {
			return err
		}
		if sh.kubernetes {
			return writeSweepJob(cmd, sh, fs)
		}
		if g.Shard, err = sh.parse(output); err != nil {
			return err
		}
		pts, err := g.Points()
		if err != nil {
			return err
		}
		for _, w := range sweepNoEffect(g) {
			fmt.Fprintln(cmd.ErrOrStderr(), "pal: warning:", w)
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		progress, _, closeBar := newSweepProgress(cmd.ErrOrStderr(), len(pts), "sweep")
		results, runErr := sweep.Run(ctx, []*sweep.Grid{g}, sweep.RunOptions{Workers: workers, Progress: progress})
		closeBar()
		if results == nil {
			return runErr
		}
		res := results[0]
		if res.Partial {
			fmt.Fprintf(cmd.ErrOrStderr(), "pal: partial sweep: %d of %d runs finished\n", len(res.Rows), res.Total)
		}
		if sh.shard != "" {
			if err := writeSweepPart(cmd, outDir, res, g.Shard, pts, len(all)); err != nil {
				return err
			}
			return runErr
		}
		if err := writeSweepResult(cmd.OutOrStdout(), outDir, output, wide, sweep.NewDocument(res), sweep.Inputs(res.Grid)); err != nil {
			return err
		}
		return runErr
	}
	return cmd
}

// writeSweepResult writes a sweep's document to dir, or to w in the
// output format. An unsharded sweep and a merge of its parts both write
// through here, so their files are the same byte for byte.
func writeSweepResult(w io.Writer, dir, output string, wide bool, doc sweep.Document, inputs []experiment.Input) error {
	if dir != "" {
		return sweep.WriteDocumentDir(dir, doc)
	}
	switch output {
	case "csv":
		sweep.WriteInputList(w, inputs, "# ")
		return sweep.Table("", doc.Rows).WriteCSV(w)
	case "json":
		return sweep.WriteDocumentJSON(w, doc)
	}
	title := fmt.Sprintf("sweep: %d runs", doc.RunsTotal)
	if doc.Partial {
		title = fmt.Sprintf("sweep (partial: %d of %d runs)", doc.RunsDone, doc.RunsTotal)
	}
	sweep.WriteInputList(w, inputs, "")
	fmt.Fprintln(w)
	if wide {
		return sweep.Table(title, doc.Rows).WriteText(w)
	}
	return sweep.NarrowTable(title, doc.Rows).WriteText(w)
}

// sweepNoEffect collects, once each, the warnings about given options
// that change none of the grid's runs.
func sweepNoEffect(g *sweep.Grid) []string {
	seen := map[string]bool{}
	var out []string
	for _, tr := range g.Traces {
		if tr == sweep.SynergyTrace {
			continue
		}
		for _, sc := range g.Schedulers {
			o := g.Base
			o.Trace, o.Scheduler, o.Placements = tr, sc, strings.Join(g.Placements, ",")
			for _, w := range experiment.NoEffect(o, o.Explicit.Flags) {
				if !seen[w] {
					seen[w] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// newSweepProgress returns a progress callback, a function that wipes the
// line (so that a log line can be printed) and one that removes it for
// good. The line (runs done/total, elapsed, rate) only appears on an
// interactive terminal outside CI: on a pipe or in a CI log nothing is
// drawn.
func newSweepProgress(w io.Writer, total int, what string) (update func(done, total int), clear, closeBar func()) {
	l := progress.ForTerminal(w, what, 0)
	if l == nil {
		return nil, func() {}, func() {}
	}
	return l.Runs, l.Clear, l.Clear
}

// sweepSwapValue gives an already registered run flag a list value, keeping its
// name and default (the preset's value) so that `pal sim` and `pal sweep`
// read the same.
func sweepSwapValue(fs *pflag.FlagSet, name string, v pflag.Value, usage string) {
	f := fs.Lookup(name)
	f.Value = v
	f.Usage = usage
}

func sweepSplit(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func sweepHas(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sweepFloats is a comma-separated list of numbers as a flag value; repeated
// flags add to the list.
type sweepFloats []float64

func (l *sweepFloats) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (l *sweepFloats) Set(v string) error {
	for _, p := range sweepSplit(v) {
		x, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", p)
		}
		*l = append(*l, x)
	}
	return nil
}

func (l *sweepFloats) Type() string { return "numbers" }

// sweepSeeds is a comma-separated list of seeds.
type sweepSeeds []uint64

func (l *sweepSeeds) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(s, ",")
}

func (l *sweepSeeds) Set(v string) error {
	for _, p := range sweepSplit(v) {
		x, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a seed (a non-negative integer)", p)
		}
		*l = append(*l, x)
	}
	return nil
}

func (l *sweepSeeds) Type() string { return "seeds" }
