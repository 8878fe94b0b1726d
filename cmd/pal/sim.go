package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/hugeheap"
	"github.com/palsched/pal/internal/progress"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/whatif"
	"github.com/palsched/pal/workload"
)

// bindRunFlags registers the options shared by sim, sweep and reproduce;
// resolve() applies the preset first and then only the flags the user set.
func bindRunFlags(fs *pflag.FlagSet) func() (experiment.Options, error) {
	def, _ := experiment.Preset("artifact")
	o := def
	fs.StringVar(&o.Preset, "preset", "artifact", "artifact (what produced the paper's figures) or paper (the paper's text)")
	fs.StringVar(&o.Trace, "trace", def.Trace, "trace: sia-philly/1..8, frontera/sia-160job-trace, or a CSV file (format below)")
	fs.StringVar(&o.Cluster, "cluster", def.Cluster, "cluster shape NODESxGPUS (with --cells the cluster is the cells file's; a --cluster that disagrees is an error)")
	fs.StringVar(&o.Profile, "profile", def.Profile, "variability profile: longhorn, frontera, ls6, or a directory/JSON mapping")
	fs.StringVar(&o.GPUScores, "gpu-scores", "", "pin every GPU's per-class value from a CSV (GPU_ID,Node_ID,PerfVar_classA..D)")
	fs.StringVar(&o.ActualGPUScores, "actual-gpu-scores", "", "the GPUs' true per-class values (same format), which progress follows, while --gpu-scores (or the profile) is what the scheduler believes (default: the believed values)")
	fs.StringVar(&o.GPUEvents, "gpu-events", "", "CSV time_s,gpu,class (A-D or *),new_score changing true GPU speeds during the run")
	fs.Float64Var(&o.QuarantineAbove, "quarantine-above", 0, "quarantine a GPU whose slowdown (learned with --learn-scores, or told with --gpu-events-known) reaches this many times its profile, until it falls below halfway back to 1: under --tenancy hived* a bad cell of one device (no VC's guarantee counts it; opportunistic jobs may use it), without tenancy the slowest bin of every class (0: off)")
	fs.BoolVar(&o.GPUEventsKnown, "gpu-events-known", false, "tell the scheduler each --gpu-events row as it happens (its scores follow the true table: the oracle for a run whose truth moves)")
	fs.StringVar(&o.GPUHints, "gpu-hints", "", "with --learn-scores: CSV time_s,gpu,slowdown of telemetry's priors for the learner (a simulated DCGM exporter: GPU gpu runs about slowdown times slower than its profile, 1 when no longer)")
	fs.BoolVar(&o.LearnScores, "learn-scores", false, "learn the believed PM-scores online from each job's pace (its slowest GPU x locality) and re-bin as they move")
	fs.StringVar(&o.LearnFrom, "learn-from", "job", "with --learn-scores, what a job shows: job (its pace: the slowest of its GPUs) or gpu (each GPU's own pace, as workers that time their own step report it)")
	fs.StringVar(&o.Scheduler, "scheduler", def.Scheduler, "fifo, las, srtf, tiresias-las, themis (leases and auctions; places too, 60 s rounds unless --round), or the Themis paper's elastic baselines gandiva-fair, slaq, optimus, tiresias-blind, gandiva-score (600 s leases; place too)")
	fs.StringVar(&o.Placements, "placement", def.Placements, placementUsage)
	fs.Float64Var(&o.Round, "round", def.Round, "round length in seconds")
	fs.Float64Var(&o.LocalityPenalty, "locality-penalty", def.LocalityPenalty, "slowdown of a job spread across nodes")
	fs.StringVar(&o.LocalityModel, "locality-model", def.LocalityModel, "constant, per-class or per-model")
	fs.StringVar(&o.ClassMap, "class-map", def.ClassMap, "model to class: artifact (code) or paper (Table II)")
	fs.Float64Var(&o.ExtraLoad, "extra-load", def.ExtraLoad, "background arrivals after the trace, jobs/hour (0: none); the default applies to the built-in traces, a trace file gets none unless this or --preset is given")
	fs.StringVar(&o.Sampling, "sampling", def.Sampling, "GPU values from the profile: with (replacement), without, uuid")
	fs.StringVar(&o.KStrategy, "k-strategy", def.KStrategy, "PM-score bin count: artifact (2 + outliers) or paper (silhouette)")
	fs.StringVar(&o.TieBreak, "pmfirst-tiebreak", def.TieBreak, "PM-First ties: artifact (same-bin locality) or paper (plain sort)")
	fs.Uint64Var(&o.Seed, "seed", def.Seed, "seed of every random choice (while --pinned inputs apply, only random placements and K-Means seeding draw from it; use --pinned=false to redraw GPU values and extra arrivals)")
	fs.StringVar(&o.Track, "track", "", trackUsage)
	fs.BoolVar(&o.Pinned, "pinned", def.Pinned, "on 16x4, use the artifact's pinned GPU table and extra arrivals")
	fs.Float64Var(&o.StarvationGuard, "starvation-guard", def.StarvationGuard, "seconds of waiting before a job jumps the queue (0: off; the artifact's 1000 h)")
	fs.Lookup("starvation-guard").DefValue = strconv.FormatFloat(def.StarvationGuard, 'f', -1, 64)
	fs.StringVar(&o.Models, "models", "", "model table YAML (default: the embedded one)")
	fs.Var((*sweepFloats)(&o.TiresiasThresholds), "tiresias-thresholds", "tiresias-las queue thresholds in GPU-seconds, a comma list")
	fs.Lookup("tiresias-thresholds").DefValue = "3250,7200"
	fs.Float64Var(&o.TiresiasStarvation, "tiresias-starvation", 0, "tiresias-las: promote a job that waited S x its last service (0: off)")
	fs.Float64Var(&o.MigrationCost, "migration-cost", 0, "seconds of progress a job loses per migration (checkpoint, restart, warm-up; 0: free, the artifact's model); a model-table migration_cost_s wins for its model")
	fs.StringVar(&o.Moves, "moves", "in-place", "how a migration is carried out: in-place (the job runs on its new GPUs from the round it moves) or evict-relaunch (as pal-kube scheduler does it: the job is evicted and placed again from the next round, and a launch onto GPUs freed this round waits a round)")
	fs.Float64Var(&o.PreemptionCost, "preemption-cost", 0, "seconds of progress a job loses per preemption, paid when it restarts (0: free); a model-table preemption_cost_s wins for its model")
	fs.StringVar(&o.Tenancy, "tenancy", "none", "none, quota (each VC at most its GPU count), hived (VC cells by buddy allocation), hived-pm (hived, fastest equally safe cells by PM-score), hived-speed (hived-pm, and binding keeps each VC's mean GPU score at or below the cluster's) or private (each VC alone on its cells)")
	fs.StringVar(&o.Cells, "cells", "", "HiveD-format cells file: the cluster and its VCs (default with --tenancy: one VC holding the whole --cluster)")
	fs.StringVar(&o.NodeEvents, "node-events", "", "CSV of time_s,node,event (down or up) for node failures (needs --tenancy hived, hived-pm or hived-speed)")
	fs.StringVar(&o.CellsEvents, "cells-events", "", "CSV of time_s,cells: from each time on, that cells file (relative to the CSV; the same nodes, devices and VCs) applies under the running jobs, which keep their cells if they still fit and are lazily preempted if not (needs --tenancy hived, hived-pm or hived-speed and --cells)")
	fs.StringVar(&o.Backfill, "backfill", "none", "none (no job starts behind one that waits), easy (a job behind a waiting gang starts if it ends before the gang's reservation or uses none of its GPUs) or greedy (any job that fits starts, no reservation)")
	fs.IntVar(&o.PrivateDraws, "private-draws", 0, "with --tenancy private: each VC's private cluster is its cells drawn K times at random (--seed) from the physical cluster, with those GPUs' values, and its figures pool the K runs (0: one run, the private cluster's values drawn afresh from the profile)")
	fs.BoolVar(&o.CheckInvariants, "check-invariants", false, "check the tenancy stage's invariants (HiveD's full safety condition) every round")
	return func() (experiment.Options, error) {
		base, err := experiment.Preset(o.Preset)
		if err != nil {
			return o, err
		}
		set := o
		out := base
		fs.Visit(func(f *pflag.Flag) {
			out.Explicit.Flags = append(out.Explicit.Flags, f.Name)
			switch f.Name {
			case "preset":
				out.Explicit.Preset = true
			case "trace":
				out.Trace = set.Trace
			case "cluster":
				out.Cluster = set.Cluster
			case "profile":
				out.Profile = set.Profile
			case "gpu-scores":
				out.GPUScores = set.GPUScores
			case "actual-gpu-scores":
				out.ActualGPUScores = set.ActualGPUScores
			case "gpu-events":
				out.GPUEvents = set.GPUEvents
			case "gpu-events-known":
				out.GPUEventsKnown = set.GPUEventsKnown
			case "gpu-hints":
				out.GPUHints = set.GPUHints
			case "quarantine-above":
				out.QuarantineAbove = set.QuarantineAbove
			case "learn-scores":
				out.LearnScores = set.LearnScores
			case "learn-from":
				out.LearnFrom = set.LearnFrom
			case "scheduler":
				out.Scheduler = set.Scheduler
			case "placement":
				out.Placements = set.Placements
			case "round":
				out.Round = set.Round
			case "locality-penalty":
				out.LocalityPenalty = set.LocalityPenalty
			case "locality-model":
				out.LocalityModel = set.LocalityModel
			case "class-map":
				out.ClassMap = set.ClassMap
			case "extra-load":
				out.ExtraLoad = set.ExtraLoad
				out.Explicit.ExtraLoad = true
			case "sampling":
				out.Sampling = set.Sampling
			case "k-strategy":
				out.KStrategy = set.KStrategy
			case "pmfirst-tiebreak":
				out.TieBreak = set.TieBreak
			case "seed":
				out.Seed = set.Seed
			case "track":
				out.Track = set.Track
			case "pinned":
				out.Pinned = set.Pinned
				out.Explicit.Pinned = true
			case "starvation-guard":
				out.StarvationGuard = set.StarvationGuard
			case "models":
				out.Models = set.Models
			case "tiresias-thresholds":
				out.TiresiasThresholds = set.TiresiasThresholds
			case "tiresias-starvation":
				out.TiresiasStarvation = set.TiresiasStarvation
			case "migration-cost":
				out.MigrationCost = set.MigrationCost
			case "moves":
				out.Moves = set.Moves
			case "preemption-cost":
				out.PreemptionCost = set.PreemptionCost
			case "tenancy":
				out.Tenancy = set.Tenancy
			case "cells":
				out.Cells = set.Cells
			case "backfill":
				out.Backfill = set.Backfill
			case "private-draws":
				out.PrivateDraws = set.PrivateDraws
			case "check-invariants":
				out.CheckInvariants = set.CheckInvariants
			case "node-events":
				out.NodeEvents = set.NodeEvents
			case "cells-events":
				out.CellsEvents = set.CellsEvents
			}
		})
		return out, nil
	}
}

// placementUsage describes --placement: every placement place.New knows.
var placementUsage = "comma list of placements: " + strings.Join(place.Names(), ", ") +
	", spread (each GPU, or pod, on the node with the most free GPUs, as YARN lands containers; not in the default list)" +
	"; a non-sticky one with -ma (" + strings.Join(place.MigrationAwareNames(), ", ") + ") moves a running job only when the gain beats --migration-cost" +
	"; not with --scheduler themis, which places jobs itself"

// trackUsage is how every command describes --track.
const trackUsage = "measure only job ids FROM-TO (inclusive); the others still run as load"

// traceFormat is the trace file format, for help texts.
const traceFormat = `A trace file is a CSV with a header naming its columns, in any order:
  job_id       non-negative integer, unique
  num_gpus     GPUs the job needs, all at once (gang), at most the cluster's
  submit_time  arrival in seconds from 0 (admitted at the first round boundary at or after it)
  duration     length in iterations, not seconds: run time = duration x the
               model's iter_time_s on a median GPU inside one node
  duration_s   instead of duration and model: length in seconds on a median
               GPU inside one node (model then optional)
  model        a model of the model table (--models): BERT, DCGAN, GPT2,
               PointNet, resnet50, vgg19 in the embedded one
  tracked      optional, 1 or 0: only tracked jobs are measured; with this
               column no background arrivals are generated
  app          optional: the job's application, for finish-time fairness
  vc, priority, pod_gpus  optional, for --tenancy (see pal cells --help)
  pinned_cell, leaf_cell_type  optional, for --tenancy hived: run inside
               this pinned cell of the job's VC; only on devices of this
               leaf cell type (a device model of the cells)
  batch_size   optional, carried by Sia's testbed traces, not used
  max_gpus     optional: the job is elastic, running on num_gpus..max_gpus
               GPUs, faster in proportion to its GPUs; only Themis and the
               elastic baselines (optimus, slaq) give it more than num_gpus
A row with more fields than the header is an error, and so is a column
not listed here (a typo such as priorty would otherwise be lost);
--allow-extra-columns ignores such columns with a warning.`

// simColumns explains the summary columns of pal sim.
const simColumns = `Columns: jobs = tracked jobs finished; avg JCT = mean job completion time
(completion round boundary minus arrival), in seconds; vs packed-sticky = avg JCT
relative to the packed-sticky run, in percent (only when packed-sticky is in the
list); p50, p99 = median and 99th percentile JCT (linear interpolation); p99 art. =
the artifact's p99, sorted JCTs at index int(0.99 n); makespan = last tracked
completion minus first tracked arrival; util = GPU-seconds held over GPU-seconds
available until the run ended; preempt, migr = suspensions and moves, all jobs; wall ms =
this run's compute time.

With apps (a trace with an app column, or --scheduler themis or one of its
elastic baselines, each job without an app then an app of its own) a second
table gives each placement's finish-time fairness: ρ = an app's finish minus
arrival over its ideal time with 1/N of the cluster (1 = its fair share), as
max, p95 (nearest rank) and mean ρ, the apps with ρ > 2, Jain's index over
the ρ and the GPU-seconds the jobs held; -o csv appends the same columns and
--apps-out writes every app's ρ and its terms.`

func newSimCmd() *cobra.Command {
	var output, jobsOut, roundsOut, appsOut, forecastOut string
	var forecastAt float64
	var whatIfs []string
	var fo experiment.ForecastOptions
	var pipeline bool
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a trace under one or more placements and compare them",
		Long: `Simulate a trace round by round under one or more placements on the same
inputs and print a comparison. With no flags it runs Sia-Philly workload 1 on
16x4 GPUs with the Longhorn profile, FIFO, and every placement, with the PAL
artifact's settings (so the numbers match what the artifact printed).

Every output starts with the inputs that shaped it (table header, JSON
"inputs", "# " comment lines in CSV): trace, background arrivals and their
source, GPU values, class map, K strategy, seed and the rest.

` + traceFormat + `

` + simColumns,
		Args: cobra.NoArgs,
	}
	resolve := bindRunFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", DefaultOutput, "table, json or csv")
	cmd.Flags().StringVar(&jobsOut, "jobs-out", "", "write per-job records (CSV) to this file")
	cmd.Flags().StringVar(&roundsOut, "rounds-out", "", "write GPUs in use, running and queued jobs per round (CSV) to this file")
	cmd.Flags().StringVar(&appsOut, "apps-out", "", "write each app's finish-time fairness ρ and its terms, per placement (CSV), to this file (needs a trace with an app column, or --scheduler themis or an elastic baseline)")
	cmd.Flags().Float64Var(&forecastAt, "forecast-at", -1, "with --forecast-out: at the first round boundary at or after this time (s), forecast every waiting job's start and end by running the same policies on with no later arrivals")
	cmd.Flags().StringArrayVar(&whatIfs, "what-if", nil, "with --forecast-at: forecast again with one setting `KEY=VALUE` changed (placement, scheduler, backfill or tenancy; repeatable) and print the waiting jobs' mean wait and JCT, and each VC's mean wait, now and under it")
	cmd.Flags().Lookup("what-if").DefValue = ""
	cmd.Flags().StringVar(&forecastOut, "forecast-out", "", "write the --forecast-at forecast (CSV: placement, forecast_at_s, job_id, queue_position, gpus, arrival_s, estimated_start_s, estimated_finish_s, with --forecast-draws estimated_start_p10, _p50, _p90, then reason) to this file")
	cmd.Flags().IntVar(&fo.Draws, "forecast-draws", 0, "with --forecast-at: run the forecast this many more times with noisy remaining work and write each waiting job's estimated start p10/p50/p90 (0: off), as pal-kube forecast does")
	cmd.Flags().Float64Var(&fo.Noise, "duration-noise", 0.3, "with --forecast-draws: coefficient of variation of each job's lognormal factor (mean 1) on its remaining work, seeded by --seed")
	cmd.Flags().BoolVar(&pipeline, "pipeline", false, "place each round and apply its answer on two cores at once (rounds of 1,024 jobs or more; the results are the same): slower on a shared 2-core virtual machine, where it used 65% more CPU and 19% more time, so off by default")
	cmd.Flags().Float64Var(&fo.ArrivalsPerHour, "assume-arrivals", 0, "with --forecast-at: assume jobs keep arriving after it, this many an hour (Poisson, seeded by --seed, each a copy of a running or waiting job; 0: none), in the forecast and its what-ifs")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		o, err := resolve()
		if err != nil {
			return err
		}
		if output != "table" && output != "json" && output != "csv" {
			return fmt.Errorf("--output %q: want table, json or csv", output)
		}
		if (forecastOut == "") != (forecastAt < 0) {
			return fmt.Errorf("--forecast-at and --forecast-out go together (a time >= 0 and a file)")
		}
		for _, f := range []string{"forecast-draws", "assume-arrivals"} {
			if cmd.Flags().Changed(f) && forecastOut == "" {
				return fmt.Errorf("--%s goes with --forecast-at and --forecast-out", f)
			}
		}
		if cmd.Flags().Changed("duration-noise") && fo.Draws == 0 {
			return fmt.Errorf("--duration-noise goes with --forecast-draws K (K > 0)")
		}
		// A long trace file's rows and their kept copy are the first
		// pages its run touches: they take huge pages too if the heap is
		// set up before the trace is read (the Ready hook below does it
		// for a long trace that is not a file).
		if wantHugeHeapFile(o.Trace) {
			hugeheap.Reserve()
		}
		// A run longer than about 2 s shows where it is on a terminal.
		line := progress.ForTerminal(cmd.ErrOrStderr(), "simulating", 2*time.Second)
		in, runs, err := experiment.RunAllWith(o, experiment.Hooks{
			Ready: func(in *experiment.Inputs) {
				// A long trace's run fills its heap within a second: huge
				// pages spare it most first touches (a tenth of the CPU
				// time on a virtual machine). A short one touches a few
				// pages scattered over the heap, each of which would cost
				// a zeroed 2 MiB page instead: 7 ms more of the 27 ms a
				// Sia-Philly trace of 3,160 rows takes.
				if wantHugeHeap(in.Trace) {
					hugeheap.Reserve()
				}
				for _, w := range in.Warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), "pal: warning:", w)
				}
			},
			Progress:        func(p string) func(sim.Status) { return progress.SimHook[sim.Status](line, p) },
			NoJobRecords:    jobsOut == "",
			NoMoveGains:     jobsOut == "" && roundsOut == "",
			NoRoundStats:    roundsOut == "",
			StreamTrace:     true,
			Pipeline:        pipeline,
			Forecast:        forecastOut != "",
			ForecastAt:      forecastAt,
			WhatIf:          whatIfs,
			ForecastOptions: fo,
		})
		line.Clear()
		if err != nil {
			return err
		}
		if jobsOut != "" {
			if err := writeJobs(jobsOut, runs); err != nil {
				return err
			}
		}
		if roundsOut != "" {
			if err := writeRounds(roundsOut, runs); err != nil {
				return err
			}
		}
		if forecastOut != "" {
			if err := writeForecast(forecastOut, runs, fo.Draws > 0); err != nil {
				return err
			}
		}
		if appsOut != "" {
			if !in.WantFairness() {
				return fmt.Errorf("--apps-out %s: trace %s has no app column and --scheduler %s is neither themis nor an elastic baseline, so no run measured apps", appsOut, o.Trace, o.Scheduler)
			}
			if err := writeApps(appsOut, "placement", simFairRuns(runs)); err != nil {
				return err
			}
		}
		if err := printRuns(cmd.OutOrStdout(), output, in, runs); err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if output != "table" {
			w = cmd.ErrOrStderr() // the results stay machine-readable
		}
		return printWhatIfs(w, runs)
	}
	return cmd
}

// printWhatIfs prints each run's what-ifs beside its forecast.
func printWhatIfs(w io.Writer, runs []*experiment.RunResult) error {
	for _, r := range runs {
		for _, x := range r.WhatIf {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "\n# forecast what-if %s, %s (waiting jobs; themis figures are not forecast)\n", x.Setting, r.Placement)
			if _, err := whatif.Write(tw, "waiting_jobs", x.Now, x.Then); err != nil {
				return err
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func printRuns(w io.Writer, output string, in *experiment.Inputs, runs []*experiment.RunResult) error {
	base := baseline(runs)
	switch output {
	case "json":
		return writeJSON(w, map[string]any{"inputs": in.Describe(), "runs": runs})
	case "csv":
		// The inputs go first as comment lines (csv readers skip them with
		// e.g. pandas' comment="#"), so the file says what produced it.
		for _, kv := range in.Header() {
			fmt.Fprintf(w, "# %s: %s\n", kv.Name, kv.Value)
		}
		cw := csv.NewWriter(w)
		head := []string{"trace", "scheduler", "placement", "jobs", "avg_jct_s"}
		if base != nil {
			head = append(head, "avg_jct_vs_packed_sticky_pct")
		}
		head = append(head, "p50_jct_s", "p99_jct_s", "p99_jct_artifact_s", "makespan_s", "utilization", "preemptions", "migrations", "lost_gpu_s", "extras_generated", "wall_ms")
		fair := in.WantFairness()
		if fair {
			head = append(head, fairCSVHead...)
		}
		cw.Write(head)
		for _, r := range runs {
			row := []string{r.Trace, r.Scheduler, r.Placement, strconv.Itoa(r.Jobs), f2(r.AvgJCT)}
			if base != nil {
				row = append(row, fmt.Sprintf("%.2f", pctVs(r.AvgJCT, base.AvgJCT)))
			}
			row = append(row, f2(r.P50JCT), f2(r.P99JCT), f2(r.P99JCTIndex), f2(r.Makespan), fmt.Sprintf("%.4f", r.Utilization), strconv.Itoa(r.Preemptions), strconv.Itoa(r.Migrations), f2(r.LostGPUSeconds), strconv.Itoa(r.Extras), fmt.Sprintf("%.2f", r.WallMS))
			if fair && r.Fairness != nil {
				row = append(row, fairCSVRow(r.Fairness)...)
			}
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	}
	for _, kv := range in.Header() {
		fmt.Fprintf(w, "%-17s %s\n", strings.ReplaceAll(kv.Name, "_", " ")+":", kv.Value)
	}
	fmt.Fprintln(w)
	t := newTable(w)
	head := table.Row{"placement", "jobs", "avg JCT (s)"}
	if base != nil {
		head = append(head, "vs packed-sticky")
	}
	t.AppendHeader(append(head, "p50 (s)", "p99 (s)", "p99 art. (s)", "makespan (s)", "util", "preempt", "migr", "lost GPU-s", "wall ms"))
	capped := false
	for _, r := range runs {
		row := table.Row{r.Placement, r.Jobs, f2(r.AvgJCT)}
		if base != nil {
			row = append(row, fmt.Sprintf("%+.1f%%", pctVs(r.AvgJCT, base.AvgJCT)))
		}
		t.AppendRow(append(row, f0(r.P50JCT), f0(r.P99JCT), f0(r.P99JCTIndex), f0(r.Makespan), fmt.Sprintf("%.3f", r.Utilization), r.Preemptions, r.Migrations, f0(r.LostGPUSeconds), fmt.Sprintf("%.1f", r.WallMS)))
		capped = capped || r.ExtrasCapped
	}
	t.Render()
	if capped {
		fmt.Fprintln(w, "note: the extra arrivals reached their bound before every tracked job finished; later rounds ran without new extras")
	}
	if fr := simFairRuns(runs); len(fr) > 0 {
		printFairness(w, "placement", fr)
	}
	printVCs(w, runs)
	return nil
}

// printVCs prints, under tenancy, each VC's wait, JCT and delivered
// speed per class beside the cluster's mean speed.
func printVCs(w io.Writer, runs []*experiment.RunResult) {
	any := false
	for _, r := range runs {
		any = any || len(r.VCs) > 0
	}
	if !any {
		return
	}
	fmt.Fprintln(w)
	if runs[0].Draws > 0 {
		fmt.Fprintf(w, "per VC (private clusters: %d draws of each VC's cells from the physical cluster, pooled):\n", runs[0].Draws)
	} else {
		fmt.Fprintln(w, "per VC:")
	}
	t := newTable(w)
	t.AppendHeader(table.Row{"placement", "VC", "jobs", "mean wait (s)", "mean JCT (s)", "speed A", "speed B", "speed C", "speed D"})
	sp := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	for _, r := range runs {
		for _, v := range r.VCs {
			t.AppendRow(table.Row{r.Placement, v.VC, v.Jobs, f0(v.MeanWait), f0(v.MeanJCT), sp(v.Speed[0]), sp(v.Speed[1]), sp(v.Speed[2]), sp(v.Speed[3])})
		}
		if c := r.ClusterSpeed; c != nil {
			t.AppendRow(table.Row{r.Placement, "(cluster)", "", "", "", sp(c[0]), sp(c[1]), sp(c[2]), sp(c[3])})
		}
	}
	t.Render()
	fmt.Fprintln(w, "speed = mean slowdown (1 = a median GPU, higher is slower) of the GPUs a VC's jobs of that class last ran on, one term per GPU a job was given; (cluster) = the mean over all GPUs")
}

// baseline is the packed-sticky run the comparison column is relative
// to, or nil when the list has none (the column is then left out rather
// than measured against something else).
func baseline(runs []*experiment.RunResult) *experiment.RunResult {
	for _, r := range runs {
		if r.Placement == "packed-sticky" && r.AvgJCT > 0 {
			return r
		}
	}
	return nil
}

// pctVs is x relative to base in percent (-10 means 10% lower).
func pctVs(x, base float64) float64 { return 100 * (x/base - 1) }

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f0(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// writeJobs and writeRounds write --jobs-out and --rounds-out; the
// formats live in experiment because pal-kube replay writes the same
// per-job rows.
func writeJobs(path string, runs []*experiment.RunResult) error {
	return experiment.WriteJobsCSV(path, runs)
}

func writeRounds(path string, runs []*experiment.RunResult) error {
	return experiment.WriteRoundsCSV(path, runs)
}

func writeCSV(path string, header []string, rows func(*csv.Writer)) error {
	return experiment.WriteCSV(path, header, rows)
}

func writeForecast(path string, runs []*experiment.RunResult, spread bool) error {
	head := []string{"placement", "forecast_at_s", "job_id", "queue_position", "gpus", "arrival_s", "estimated_start_s", "estimated_finish_s"}
	if spread {
		head = append(head, "estimated_start_p10_s", "estimated_start_p50_s", "estimated_start_p90_s")
	}
	return writeCSV(path, append(head, "reason"),
		func(cw *csv.Writer) {
			for _, r := range runs {
				for _, f := range r.Forecast {
					row := []string{r.Placement, f0(f.At), strconv.Itoa(f.JobID), strconv.Itoa(f.Position), strconv.Itoa(f.GPUs), f2(f.Arrival), f2(f.Start), f2(f.Finish)}
					if spread && f.Spread != nil {
						row = append(row, f2(f.Spread.P10), f2(f.Spread.P50), f2(f.Spread.P90))
					}
					cw.Write(append(row, f.Reason))
				}
			}
		})
}

// hugeheapRows is the trace length from which pal sim backs its heap with
// huge pages (see hugeheap): the 20,000-job Synergy trace gains 5-8% of
// its CPU time, a 3,160-row Sia-Philly trace would lose a quarter.
const hugeheapRows = 10000

func wantHugeHeap(t *workload.Trace) bool { return t != nil && t.Len() >= hugeheapRows }

// hugeheapBytes is the trace file size from which pal sim backs its heap
// with huge pages before it reads the trace: hugeheapRows rows of the
// Synergy trace take about 420 kB. Reading the 20,000-job trace first and
// setting up huge pages after it, a run faulted about 2,000 times; set up
// first, 1,100-1,300, and its wall time fell 3-5% (under LAS in one of
// two series; docs/measurements/sim-scale-20k-hugeheap-first-2026-12-05.txt).
const hugeheapBytes = 400 << 10

func wantHugeHeapFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Size() >= hugeheapBytes
}
