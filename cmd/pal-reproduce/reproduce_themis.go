package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/report/draw"
	fairexp "github.com/palsched/pal/reproduce/themis"
)

func newReproduceThemisCmd() *cobra.Command {
	var (
		quick bool
		out   string
	)
	cmd := &cobra.Command{
		Use:   "themis",
		Short: "The Themis paper's experiments on a Philly-derived app workload",
		Long: `Generate Themis-style app workloads (40 apps of 1-100 Philly jobs on 64 GPUs
for workload seeds 1-5 and 42; --quick: 12 small apps on 16 GPUs, seeds 1-4
and 42) and run, for every seed: Themis with each hidden-payment form
(random rounding, the default; lease time; the old floor; off) against
Tiresias, a Gandiva-like FIFO with packed non-sticky placement, SRTF, Gavel,
the Themis authors' Tiresias (tiresias-blind: per-GPU leases, GPU-by-GPU
to the least attained service, placement-blind) and Gandiva (gandiva-score:
GPU-by-GPU to the largest |G|·S(G)), and the elastic baselines gandiva-fair,
slaq and optimus (600 s leases), reporting the median and range over seeds of
max ρ, p95 ρ, the apps with ρ > 2 and the per-job max ρ, and whether Themis'
max ρ is at least 2.25x better than the best baseline in every seed, both
with and without gandiva-fair (Gandiva_fair, which the paper did not run),
and which app sets each max ρ;
GPU time at equal 300 s rounds on flat GPUs for every policy (and the
PM-aware Themis beside it); GPU time on the paper-like workload (the macro
preset: elastic 1..4-GPU jobs on 2 racks x 2 machines x 2 slots x 4 GPUs,
slowdowns 0.8 / 0.7 / 0.6) for Themis, the authors' Tiresias and Gandiva,
the elastic baselines and packed Tiresias over the same seeds; the
fairness-knob sweep over the seeds; and, on
seed 42, the lease sweep
1-40 min with a 20 s checkpoint per lease change, the contention sweep
(arrival rate x1, x2, x4), the ablations (placement-blind bids, 1/ρ bids,
the other leftover rules, variability-blind bids) and the truthfulness
experiment: a mid-sized, placement-sensitive app that bids often inflates
its slowdown 0-100% (payments on and off), against the band of its truthful
ρ over five other PM-score draws. Writes OUT/themis/themis-*.csv, one plot
per sweep (PNG and SVG), themis.md with the paper's claims beside ours and a
verdict for each, and index.html.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := fairexp.DefaultPlan()
			if quick {
				p = fairexp.QuickPlan()
			}
			dir := filepath.Join(out, "themis")
			o, err := fairexp.Reproduce(p, dir, draw.Drawer{})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote themis.md, index.html, %d CSVs and %d plots to %s\n", len(o.Tables), len(o.Figures), dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small workload (seconds, for CI)")
	cmd.Flags().StringVar(&out, "out", "pal-reproduce", "output directory (results go to OUT/themis)")
	return cmd
}
