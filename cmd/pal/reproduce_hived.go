package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/reproduce"
)

func newReproduceHivedCmd() *cobra.Command {
	var (
		quick bool
		out   string
		round float64
	)
	cmd := &cobra.Command{
		Use:   "hived",
		Short: "The HiveD paper's sharing-anomaly experiment on the Philly trace with its real VCs",
		Long: `Replay the embedded Philly trace (82k jobs of the 11 large VCs, 352 nodes of
8 GPUs) under three intra-VC schedulers (YARN-CS-like FIFO with spread
placement, Tiresias, a Gandiva-like packed non-sticky) and three setups
(quota on the shared cluster, a private cluster per VC, HiveD cells), at the
trace's load and at twice it. Writes hived/anomaly.csv (per VC: mean and p99
queueing delay, mean JCT, anomaly), one bar chart per scheduler and load, and
hived/hived.md with the paper's claims beside ours.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := reproduce.RunHived(reproduce.HivedOptions{Out: out, Quick: quick, Round: round, Log: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote anomaly.csv, hived.md and plots for %d jobs to %s\n", rep.Jobs, rep.Dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, fmt.Sprintf("only the first %d jobs (seconds, for CI)", reproduce.HivedQuickJobs))
	cmd.Flags().StringVar(&out, "out", "pal-reproduce", "output directory (results go to OUT/hived)")
	cmd.Flags().Float64Var(&round, "round", 300, "round length in seconds")
	return cmd
}
