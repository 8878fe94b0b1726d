package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/internal/progress"
	"github.com/palsched/pal/report/draw"
	"github.com/palsched/pal/reproduce"
	"github.com/palsched/pal/reproduce/backfill"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/stale"
)

// addReproduce makes root the whole reproduction (its flags and RunE) and
// adds the sections that also run alone.
func addReproduce(root *cobra.Command) {
	var (
		quick   bool
		out     string
		preset  string
		workers int
	)
	root.Long = `Run the PAL paper's simulation experiments from the built-in data and write, into --out:
one CSV, PNG and SVG per figure (Figs 11-18 and 20), index.html showing them all
with their tables, and summary.md, which lists where the paper and the artifact
differ (and the flag for each), the artifact's swapped packed labels, and our
headline numbers beside the paper's.

The default is the full evaluation: Sia-Philly traces 1-8 on 16x4 GPUs, the
locality sweep on every trace, Synergy (4000 jobs, ids 2000-3000 measured) on
64x4 GPUs at 4-14 jobs/hour under FIFO, LAS and SRTF, Fig 20's penalties 1.0-1.7
and placement timing up to 27,648 GPUs. --quick keeps every figure on a reduced
grid for CI; its numbers are not the paper's. The HiveD sharing-anomaly
experiment (pal-reproduce hived) runs too, into OUT/hived, the Themis
experiments (pal-reproduce themis) into OUT/themis, the stale-profiles
section (pal-reproduce stale) into OUT/stale, and the backfill-and-forecast
section (pal-reproduce backfill) into OUT/backfill.

` + root.Long
	root.Args = cobra.NoArgs
	root.Flags().BoolVar(&quick, "quick", false, "reduced grid (seconds, for CI)")
	root.Flags().StringVar(&out, "out", "pal-reproduce", "output directory")
	root.Flags().StringVar(&preset, "preset", "artifact", "artifact (what produced the paper's figures) or paper (the paper's text)")
	root.Flags().IntVar(&workers, "workers", 0, "simulations at once (0: GOMAXPROCS)")
	root.AddCommand(newReproduceHivedCmd(), newReproduceThemisCmd(), newReproduceStaleCmd(), newReproduceBackfillCmd())
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		bar := progress.ForTerminal(cmd.ErrOrStderr(), "simulating", 0) // nil off a terminal: draws nothing
		rep, err := reproduce.Run(ctx, reproduce.Options{
			Quick: quick, Out: out, Preset: preset, Workers: workers, Progress: bar.Runs,
			Log: logWriter{cmd, bar.Clear}, Drawer: draw.Drawer{},
		})
		bar.Clear()
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %d figures, %s and %s to %s\n", len(rep.Figures), reproduce.SummaryFile, "index.html", rep.Dir)
		return nil
	}
}

// logWriter prints reproduce's phase lines on stderr, clearing the
// progress bar first so the two do not share a line.
type logWriter struct {
	cmd   *cobra.Command
	clear func()
}

func (w logWriter) Write(p []byte) (int, error) {
	w.clear()
	return w.cmd.ErrOrStderr().Write(p)
}

func newReproduceStaleCmd() *cobra.Command {
	var quick bool
	var out, preset string
	var workers int
	cmd := &cobra.Command{
		Use:   "stale",
		Short: "Stale profiles: oracle, stale, stale + online learning and packed-sticky on Sia-Philly and Synergy",
		Long: `Run the stale-profiles section alone: 20% of the GPUs (seed 1) degraded by
x1.5 for every class after the profile was taken; FIFO; PAL believing the
truth (oracle), believing the old profile (stale), the same with
--learn-scores (from job paces, and with --learn-from gpu from per-GPU
paces), and packed-sticky; then the same runs for degradation seeds 1-11.
Writes OUT/stale/stale.md, stale.csv (seed 1), draws.csv (every seed) and
the tables it used.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan := paper.FullPlan()
			if quick {
				plan = paper.QuickPlan()
			}
			if preset != "" {
				plan.Preset = preset
			}
			res, err := stale.RunStale(cmd.Context(), plan, out, workers, cmd.ErrOrStderr(), draw.Drawer{})
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), res.Markdown)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "reduced plan (Sia-Philly 1 and 3, Synergy 1000 jobs, one seed)")
	cmd.Flags().StringVar(&out, "out", "pal-reproduce", "output directory (the section goes to OUT/stale)")
	cmd.Flags().StringVar(&preset, "preset", "artifact", "artifact or paper")
	cmd.Flags().IntVar(&workers, "workers", 0, "simulations at once (0: GOMAXPROCS)")
	cmd.AddCommand(newReproduceStalePatternsCmd())
	return cmd
}

func newReproduceStalePatternsCmd() *cobra.Command {
	var out, seeds, workloads, families, placement string
	var band float64
	var workers int
	cmd := &cobra.Command{
		Use:   "patterns",
		Short: "The random stale patterns alone, pooled over as many seeds as asked",
		Long: `Run only the stale section's random patterns (uniform, one-class, faster,
step and drift: which GPUs, classes, factors and times drawn from each seed)
on the chosen workloads, each under the oracle, stale and stale + learning
from job paces and from per-GPU paces, and pool every seed into one table:
each workload and family's median recovered share for both learners, the
cells under 80%, and the runs a learner ends more than --band above stale,
each beside the oracle. Writes OUT/stale-patterns/patterns.md, patterns.csv
(a row a run) and the tables every run read. Seeds 1-20 on every workload
is 1,100 patterns, 4,400 simulations: about two minutes on two cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := stale.ParseSeeds(seeds)
			if err != nil {
				return fmt.Errorf("--seeds: %w", err)
			}
			if !(band >= 0 && band <= 100) {
				return fmt.Errorf("--band %g: want a percent of stale in [0, 100]", band)
			}
			res, err := stale.RunPatternSet(cmd.Context(), paper.FullPlan(), out,
				stale.PatternSet{Workloads: list(workloads), Families: list(families), Seeds: ss, Placement: placement, Band: band / 100}, workers, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), res.Markdown)
			return nil
		},
	}
	cmd.Flags().StringVar(&seeds, "seeds", "1-20", "pattern seeds, a list of seeds and ranges (1-20,1001); 1-4 and 1001 are the section's")
	cmd.Flags().StringVar(&workloads, "workloads", "", "comma-separated workloads (sia-philly-1..8, synergy-seed42, synergy-seed1, synergy-seed2; default every one)")
	cmd.Flags().StringVar(&families, "families", "", "comma-separated pattern families (uniform, one-class, faster, step, drift; default every one)")
	cmd.Flags().StringVar(&placement, "placement", "pal", "the placement of every run (the section's is pal)")
	cmd.Flags().Float64Var(&band, "band", 5.1, "percent above stale a learner may end before a run counts as harmed (stale's own spread on a profile measured again)")
	cmd.Flags().StringVar(&out, "out", "pal-reproduce", "output directory (the runs go to OUT/stale-patterns)")
	cmd.Flags().IntVar(&workers, "workers", 0, "simulations at once (0: GOMAXPROCS)")
	return cmd
}

// list splits a comma-separated flag; nil when it is empty (every one).
func list(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	for _, x := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(x))
	}
	return out
}

func newReproduceBackfillCmd() *cobra.Command {
	var quick, full bool
	var out, preset string
	var workers int
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Backfill and forecasts: strict order vs EASY vs greedy, reservations kept, forecast error, on Sia-Philly, Synergy and Philly",
		Long: `Run the backfill-and-forecast section alone: FIFO and Tiresias (tiresias-las)
under strict order, EASY backfill with exact and with noisy estimates
(lognormal CV 0.5 per job, three noise seeds) and greedy backfill, on the
eight Sia-Philly workloads, Synergy (2,000 jobs at 14 jobs/hour, seeds 42,
1 and 2) and 1,500 jobs of the Philly trace on 64x8 GPUs, placement PAL:
mean JCT, utilisation, big gangs' wait and reserved gangs started late
(an error if, with exact estimates, a gang no job overtook starts after
its first reservation plus a round, or one waits past it for a
backfilled job); then forecasts at 20-80% of each trace against the starts that happen.
--full runs a larger grid (Synergy 4,000 jobs, five noise seeds, a fuller
Philly window, forecasts under EASY). Writes OUT/backfill/backfill.md,
runs.csv and accuracy.csv.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick && full {
				return fmt.Errorf("--quick and --full: choose one")
			}
			pp := paper.FullPlan()
			plan := backfill.DefaultPlan(pp)
			switch {
			case quick:
				plan = backfill.QuickPlan(pp)
			case full:
				plan = backfill.FullPlan(pp)
			}
			pp.Preset = preset
			base, err := pp.Base()
			if err != nil {
				return err
			}
			res, err := backfill.Run(cmd.Context(), plan, base, out, workers, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), res.Markdown)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "reduced plan (Sia-Philly 1 and 3, one Synergy seed of 1,000 jobs, 600 Philly jobs; not meaningful)")
	cmd.Flags().BoolVar(&full, "full", false, "larger plan (Synergy 4,000 jobs, five noise seeds, Philly jobs from the 75,000th on 48x8, forecasts under EASY with nine draws; minutes)")
	cmd.Flags().StringVar(&out, "out", "pal-reproduce", "output directory (the section goes to OUT/backfill)")
	cmd.Flags().StringVar(&preset, "preset", "artifact", "artifact or paper")
	cmd.Flags().IntVar(&workers, "workers", 0, "simulations at once (0: GOMAXPROCS)")
	return cmd
}
