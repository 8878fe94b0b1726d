package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/fairexp"
)

func newReproduceThemisCmd() *cobra.Command {
	var (
		quick bool
		out   string
	)
	cmd := &cobra.Command{
		Use:   "themis",
		Short: "The Themis paper's experiments on a Philly-derived app workload",
		Long: `Generate a Themis-style app workload (40 apps of 1-100 Philly jobs on 64 GPUs;
--quick: 12 small apps on 16 GPUs) and run: Themis against Tiresias, a
Gandiva-like FIFO with packed non-sticky placement and SRTF; the fairness-knob
sweep f = 0..1; the lease sweep 1-40 min with a 20 s checkpoint per lease
change; the contention sweep (arrival rate x1, x2, x4); the truthfulness
experiment (one placement-sensitive app inflates its slowdown 0-100%, hidden
payments on and off); and the ablations (placement-blind bids, no leftovers,
no payments, variability-blind bids). Writes OUT/themis/themis-*.csv, one
plot per sweep (PNG and SVG), themis.md with the paper's claims beside ours,
and index.html.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := fairexp.DefaultPlan()
			if quick {
				p = fairexp.QuickPlan()
			}
			dir := filepath.Join(out, "themis")
			o, err := fairexp.Reproduce(p, dir)
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
