package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/report/draw"
	"github.com/palsched/pal/reproduce/hived"
)

func newReproduceHivedCmd() *cobra.Command {
	var (
		quick   bool
		out     string
		round   float64
		seed    uint64
		days    float64
		workers int
	)
	cmd := &cobra.Command{
		Use:   "hived",
		Short: "The HiveD paper's sharing-anomaly experiment: a synthetic 96-GPU cluster and the Philly trace",
		Long: `Run two workloads under three intra-VC schedulers (YARN-CS: FIFO with spread
placement; Tiresias: tiresias-las with packed-sticky; Gandiva-like: FIFO with
packed-nonsticky, 60 s per migration), each VC running the scheduler on its
own queue with its own placer, in four setups: quota on the shared cluster,
a private cluster per VC, HiveD cells, and each VC alone under HiveD.

(a) Synthetic: 12 nodes x 8 GPUs; a tenant of 4 nodes running whole-node
8-GPU jobs (exponential run times, mean 2 h) and two tenants of 4 nodes
running 1-GPU jobs (mean 1 h); Poisson arrivals at load L = 0.70, 0.85, 0.95
of each quota for --days days, drawn from --seed. (b) The embedded Philly
trace (82k jobs of the 11 large VCs, 352 nodes of 8 GPUs) at 1x, 2x and 4x
arrivals. (c) Dynamic against static binding with opportunistic load, and
fragmentation.

Writes hived/anomaly.csv (per VC: mean and p99 queueing, the same for
whole-node jobs, anomaly against the private cluster, preemptions, share of
jobs waiting more than one round, utilisation over the arrival window), one
bar chart per workload, scheduler and load, and hived/hived.md with the
paper's claims and a verdict beside ours.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := hived.RunHived(hived.HivedOptions{Out: out, Quick: quick, Round: round, Seed: seed, Days: days, Workers: workers, Log: cmd.ErrOrStderr(), Drawer: draw.Drawer{}})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote anomaly.csv, hived.md and plots for %d jobs to %s\n", rep.Jobs, rep.Dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, fmt.Sprintf("one synthetic day at L = 0.85 and the first %d Philly jobs at 1x (for CI)", hived.HivedQuickJobs))
	cmd.Flags().StringVar(&out, "out", "pal-reproduce", "output directory (results go to OUT/hived)")
	cmd.Flags().Float64Var(&round, "round", hived.HivedRound, "round length in seconds")
	cmd.Flags().Uint64Var(&seed, "seed", experiment.DefaultSeed, "seed of the synthetic workload")
	cmd.Flags().IntVar(&workers, "workers", 0, "settings (workload, load, scheduler) run at once (0: GOMAXPROCS); the results do not depend on it")
	cmd.Flags().Float64Var(&days, "days", 0, "synthetic arrival window in days (0: 7, or 1 with --quick)")
	return cmd
}
