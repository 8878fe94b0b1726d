package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/workload"
)

// themisGenFlags are the generator's flags, shared by `pal trace themis`
// and `pal themis sim` (which generates when no --trace is given).
type themisGenFlags struct {
	opt     workload.ThemisOptions
	models  string
	philly  string
	maxHour float64
	preset  string
}

// themisPresets are named generator settings. hyperparam aims at the Themis
// authors' Philly hyper-parameter trace: 84 apps, 5 of them single-job
// (6%), a median of 78.5 jobs per app (U{2..155} has that median), arrivals
// over 63.5 days (84 apps at 84 / (63.5 × 24) per hour). Its GPU mix (99.5%
// 1-GPU) and median run time (13,497 s) are not settable here: jobs take
// Philly's sizes and durations, and the trace command prints how far off
// they are.
//
// macro is the shape of the authors' macro workload: every job elastic
// from 1 to 4 GPUs (their max_parallelism), meant for their 32-GPU cluster
// of 2 racks x 2 machines x 2 slots x 4 GPUs with their macro slowdowns
// (0.8 / 0.7 / 0.6 across slots / machines / racks), which pal themis sim
// --preset macro sets unless --topology or --slowdowns are given. The
// app count, sizes and arrival rate are ours ([D]: 30 apps of up to 20
// jobs at 1 an hour, jobs capped at 24 h), sized to keep 32 GPUs busy.
var themisPresets = map[string]func(o *workload.ThemisOptions){
	"hyperparam": func(o *workload.ThemisOptions) {
		o.Apps, o.SingleShare, o.MaxJobs, o.Rate = 84, 5.0/84, 155, 84/(63.5*24)
	},
	"macro": func(o *workload.ThemisOptions) {
		o.Apps, o.SingleShare, o.MaxJobs, o.Rate, o.Elastic, o.MaxSeconds = 30, 0.1, 20, 1, 4, 24*3600
	},
}

// MacroTopology and MacroSlowdowns are what --preset macro runs on.
const (
	MacroTopology  = "2x2x2x4"
	MacroSlowdowns = "macro"
)

// applyPreset sets the preset's values for every flag not given.
func (g *themisGenFlags) applyPreset(cmd *cobra.Command) error {
	if g.preset == "" {
		return nil
	}
	set, ok := themisPresets[g.preset]
	if !ok {
		return fmt.Errorf("--preset %q: want hyperparam or macro", g.preset)
	}
	var p workload.ThemisOptions
	set(&p)
	fs := cmd.Flags()
	if !fs.Changed("elastic") {
		g.opt.Elastic = p.Elastic
	}
	if !fs.Changed("max-hours") && p.MaxSeconds > 0 {
		g.maxHour = p.MaxSeconds / 3600
	}
	if !fs.Changed("apps") {
		g.opt.Apps = p.Apps
	}
	if !fs.Changed("single-share") {
		g.opt.SingleShare = p.SingleShare
	}
	if !fs.Changed("max-jobs") {
		g.opt.MaxJobs = p.MaxJobs
	}
	if !fs.Changed("rate") {
		g.opt.Rate = p.Rate
	}
	return nil
}

// themisTraceStats are the statistics the hyperparam preset aims at, for
// a generated trace, beside the authors' values.
func themisTraceStats(jobs []workload.Spec) string {
	perApp := map[string]int{}
	var order []string
	one := 0
	var run []float64
	for i := range jobs {
		j := &jobs[i]
		if perApp[j.App] == 0 {
			order = append(order, j.App)
		}
		perApp[j.App]++
		if j.GPUs == 1 {
			one++
		}
		run = append(run, j.Iterations*j.IterTime)
	}
	var counts []float64
	single := 0
	for _, a := range order {
		counts = append(counts, float64(perApp[a]))
		if perApp[a] == 1 {
			single++
		}
	}
	med := func(v []float64) float64 {
		slices.Sort(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return v[len(v)/2]
	}
	span := 0.0
	if len(jobs) > 0 {
		span = jobs[len(jobs)-1].Submit / 86400
	}
	return fmt.Sprintf("apps %d (authors 84), jobs %d (4,697), median jobs per app %g (78.5), single-job apps %d (5), 1-GPU jobs %.1f%% (99.5%%), median run time %.0f s (13,497), arrivals over %.1f days (63.5)",
		len(order), len(jobs), med(counts), single, 100*float64(one)/float64(max(1, len(jobs))), med(run), span)
}

func (g *themisGenFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&g.opt.Apps, "apps", 50, "number of apps (hyper-parameter searches)")
	fs.Float64Var(&g.opt.Rate, "rate", 2, "mean app arrivals per hour (Poisson; the first at 0)")
	fs.Uint64Var(&g.opt.Seed, "seed", DefaultSeed, "seed of the arrivals and the app draws")
	fs.IntVar(&g.opt.MaxJobs, "max-jobs", 100, "most jobs in an app (Themis: up to 100)")
	fs.Float64Var(&g.opt.SingleShare, "single-share", 0.1, "share of single-job apps (Themis: about 10%)")
	fs.Float64Var(&g.opt.Kill, "kill", 0, "share of jobs in multi-job apps the optimiser stops after 10-50% of their length")
	fs.Float64Var(&g.maxHour, "max-hours", 0, "cap each job's Philly run time at this many hours (0: no cap beyond the filter's 166.7 h)")
	fs.StringVar(&g.models, "models", "", "comma list of models apps train (default: every model in the table except synergy)")
	fs.StringVar(&g.philly, "philly", "", "processed Philly CSV with duration (s) and num_gpus (default: the embedded philly/philly.csv)")
	fs.IntVar(&g.opt.Elastic, "elastic", 0, "make every job elastic from 1 to this many GPUs, keeping its GPU-seconds (0: rigid gangs of Philly sizes)")
	fs.StringVar(&g.preset, "preset", "", "hyperparam: the Themis authors' hyper-parameter trace's apps, jobs per app, single-job apps and arrival span; macro: their macro workload's elastic 1..4-GPU jobs (pal themis sim then runs on "+MacroTopology+" with the macro slowdowns); flags given explicitly win")
}

func (g *themisGenFlags) generate() ([]workload.Spec, error) {
	o := g.opt
	o.MaxSeconds = g.maxHour * 3600
	if g.models != "" {
		o.ModelNames = splitList(g.models)
	}
	if g.philly == "" {
		return workload.GenerateThemisEmbedded(o)
	}
	f, err := os.Open(g.philly)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jobs, err := workload.ReadPhillyJobs(g.philly, f)
	if err != nil {
		return nil, err
	}
	return workload.GenerateThemis(jobs, o)
}

// describe states every setting that shaped the workload.
func (g *themisGenFlags) describe() string {
	src := g.philly
	if src == "" {
		src = workload.EmbeddedPhillyName
	}
	models := g.models
	if models == "" {
		models = "all but synergy"
	}
	el := ""
	if g.opt.Elastic > 0 {
		el = fmt.Sprintf(" --elastic %d", g.opt.Elastic)
	}
	return fmt.Sprintf("pal trace themis --apps %d --rate %g --seed %d --max-jobs %d --single-share %g --kill %g --max-hours %g%s --models %q (Philly: %s)",
		g.opt.Apps, g.opt.Rate, g.opt.Seed, g.opt.MaxJobs, g.opt.SingleShare, g.opt.Kill, g.maxHour, el, models, src)
}

func newTraceThemisCmd() *cobra.Command {
	var (
		g   themisGenFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "themis",
		Short: "Themis-style app workload: hyper-parameter searches from Philly durations and sizes",
		Long: `Generate a Themis-style workload: --apps apps arrive as a Poisson process at
--rate apps per hour (the first at 0). An app is one hyper-parameter search:
it has one job with probability --single-share, else U{2..--max-jobs} jobs,
all arriving with the app and training one model drawn from the model table.
The app's jobs share the GPU count of one job drawn from the Philly trace (a
search's trials get equal resources); each job runs for the duration of its
own Philly draw (jobs between 31.6 min and 166.7 h on at most 16 GPUs, as the
Synergy generator keeps them), written as iterations of the model's iteration
time. With --kill, that share of jobs in multi-job apps is stopped by the
app's optimiser after U(10%, 50%) of its length.

The trace has the PAL columns plus app; simulate it with
pal themis sim --trace FILE.`,
		Example: "  pal trace themis --apps 100 --rate 0.5 --kill 0.5 --out apps.csv",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.applyPreset(cmd); err != nil {
				return err
			}
			jobs, err := g.generate()
			if err != nil {
				return err
			}
			if g.preset == "hyperparam" {
				fmt.Fprintf(cmd.ErrOrStderr(), "pal: preset %s: %s\n", g.preset, themisTraceStats(jobs))
			}
			if toStdout, err := writeTraceOut(cmd, out, jobs); err != nil || toStdout {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "pal: wrote %d jobs in %d apps, last arrival at %.1f h, to %s\n  %s\n",
				len(jobs), g.opt.Apps, jobs[len(jobs)-1].Submit/3600, out, strings.TrimSpace(g.describe()))
			return nil
		},
	}
	g.add(cmd)
	cmd.Flags().StringVar(&out, "out", "", "write the trace to this file instead of stdout")
	return cmd
}
