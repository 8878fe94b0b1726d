package main

import (
	"encoding/csv"
	"fmt"
	"github.com/palsched/pal/internal/jsonround"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/bench"
)

type benchTenancyOpts struct {
	nodes, perRack, vcs, reps int
	seed                      uint64
	output                    string
}

func newBenchTenancyCmd() *cobra.Command {
	var o benchTenancyOpts
	cmd := &cobra.Command{
		Use:   "tenancy",
		Short: "Time one gang's HiveD tenancy decision on a large shared cluster",
		Long: `Tenancy builds a cluster of 8-GPU nodes (PCIe pairs and sockets inside,
racks of --rack nodes) shared by --vcs VCs, each holding an equal share of
racks, then nodes, then GPUs. It loads the cluster to half its GPUs with
random gangs (1, 2, 4 or 8 GPUs, or 2 or 4 whole nodes) and times --reps
decisions through both layers of the HiveD stage: the VC's own placer
(packed-sticky, Tiresias' placement) on the VC's view with its running
gangs, then binding by buddy allocation and commit. After each decision one
random group ends, untimed, to keep the load.`,
		Example: "  pal bench tenancy\n  pal bench tenancy --nodes 432 --vcs 11 --output json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchTenancy(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 3456, "8-GPU nodes (a multiple of --rack)")
	f.IntVar(&o.perRack, "rack", 8, "nodes per rack")
	f.IntVar(&o.vcs, "vcs", 100, "virtual clusters")
	f.IntVar(&o.reps, "reps", 5000, "timed decisions")
	f.Uint64Var(&o.seed, "seed", DefaultSeed, "seed of the gang mix and the load")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "table, json or csv")
	return cmd
}

func runBenchTenancy(w io.Writer, o benchTenancyOpts) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.reps <= 0 || o.reps > 10_000_000 {
		return fmt.Errorf("--reps %d: want 1..10000000", o.reps)
	}
	st, err := bench.TenancyDecision(bench.TenancyOptions{Nodes: o.nodes, NodesPerRack: o.perRack, VCs: o.vcs, Reps: o.reps, Seed: o.seed})
	if err != nil {
		return err
	}
	row := map[string]any{
		"nodes": o.nodes, "gpus": st.GPUs, "rack_nodes": o.perRack, "vcs": st.VCs, "seed": o.seed,
		"reps": st.Reps, "placed": st.Placed, "live_groups": st.Live,
		"median_us": round2(st.MedianUS), "p99_us": round2(st.P99US), "mean_us": round2(st.MeanUS),
	}
	if o.output == "json" {
		return jsonround.Encode(w, row, "")
	}
	if o.output == "csv" {
		cw := csv.NewWriter(w)
		cw.Write([]string{"nodes", "gpus", "rack_nodes", "vcs", "seed", "reps", "placed", "live_groups", "median_us", "p99_us", "mean_us"})
		cw.Write([]string{strconv.Itoa(o.nodes), strconv.Itoa(st.GPUs), strconv.Itoa(o.perRack), strconv.Itoa(st.VCs), strconv.FormatUint(o.seed, 10),
			strconv.Itoa(st.Reps), strconv.Itoa(st.Placed), strconv.Itoa(st.Live), usStr(st.MedianUS), usStr(st.P99US), usStr(st.MeanUS)})
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintf(w, "cluster: %d nodes x 8 GPUs = %d GPUs, racks of %d nodes, %d VCs, seed %d\n", o.nodes, st.GPUs, o.perRack, st.VCs, o.seed)
	fmt.Fprintf(w, "load: %d groups running; %d of %d decisions placed a gang\n", st.Live, st.Placed, st.Reps)
	fmt.Fprintf(w, "tenancy decision: median %s µs, p99 %s µs, mean %s µs\n", usStr(st.MedianUS), usStr(st.P99US), usStr(st.MeanUS))
	return nil
}
