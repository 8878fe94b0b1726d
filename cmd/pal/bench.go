package main

import (
	"encoding/csv"
	"fmt"
	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/jsonround"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/variability"
)

// newBenchCmd groups the micro-benchmarks of scheduling decisions. They
// live in the binary, not only in `go test -bench`, so that an operator can
// check on the target machine whether a cluster size is servable.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Time scheduling decisions on synthetic loaded clusters",
	}
	cmd.AddCommand(newBenchPlacementCmd(), newBenchTenancyCmd(), newBenchAuctionCmd())
	return cmd
}

// benchPlacementOpts are the flags of `pal bench placement`.
type benchPlacementOpts struct {
	placements, clusters, profile, output string
	queue, reps                           int
	seed                                  uint64
	migrationCost                         float64
	heldFrom                              string
}

func newBenchPlacementCmd() *cobra.Command {
	var o benchPlacementOpts
	cmd := &cobra.Command{
		Use:   "placement",
		Short: "Time one placement round with a full queue",
		Long: `Placement builds a cluster whose GPUs draw their values from a variability
profile, a queue of jobs with a Sia-like size mix worth about 1.5x the
cluster (about half of the jobs that fit are running), and times the
placer's Place call, which the simulator makes once per round.

Every combination of --placement and --cluster is one result. Times are
microseconds per round; first_us is the untimed set-up round, which also
builds any per-cluster index the placer keeps between rounds.`,
		Example: `  pal bench placement --placement pal --cluster 64x4
  pal bench placement --placement pal,pm-first --cluster 64x4,1024x4,4608x6 --reps 20 --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchPlacement(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.placements, "placement", "pal", "comma list of placements: pal, pm-first, packed-sticky, packed-nonsticky, random-sticky, random-nonsticky, or a migration-aware pal-ma, pm-first-ma, ...")
	f.StringVar(&o.clusters, "cluster", "64x4", "comma list of cluster shapes NODESxGPUS")
	f.IntVar(&o.queue, "queue", 0, "jobs in the queue (0: enough for 1.5x the cluster's GPUs)")
	f.IntVar(&o.reps, "reps", 200, "timed rounds per result")
	f.Uint64Var(&o.seed, "seed", DefaultSeed, "seed of the GPU values, the queue and the running set")
	f.StringVar(&o.profile, "profile", variability.DefaultProfile, "variability profile set: "+strings.Join(variability.KnownProfiles(), ", ")+", or a path")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "table, json or csv")
	f.Float64Var(&o.migrationCost, "migration-cost", 0, "every job's migration cost in seconds, weighed by the migration-aware placements (pal-ma, ...)")
	f.StringVar(&o.heldFrom, "held-from", "", "placement whose first round decides where running jobs sit (default: the one timed); e.g. packed-nonsticky makes PAL move jobs")
	return cmd
}

// benchPlacementRow is one result as printed; the JSON keys are part of
// the command's interface.
type benchPlacementRow struct {
	Placement string  `json:"placement"`
	Cluster   string  `json:"cluster"`
	GPUs      int     `json:"gpus"`
	Jobs      int     `json:"jobs"`
	MedianUS  float64 `json:"median_us"`
	P99US     float64 `json:"p99_us"`
	MeanUS    float64 `json:"mean_us"`
	FirstUS   float64 `json:"first_us"`
	Reps      int     `json:"reps"`
}

func runBenchPlacement(w io.Writer, o benchPlacementOpts) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.reps <= 0 {
		return fmt.Errorf("--reps %d: must be positive", o.reps)
	}
	if !(o.migrationCost >= 0) || math.IsInf(o.migrationCost, 0) {
		return fmt.Errorf("--migration-cost %v: must be finite seconds >= 0", o.migrationCost)
	}
	if o.queue < 0 || o.queue > bench.MaxQueue {
		return fmt.Errorf("--queue %d: want 0..%d jobs", o.queue, bench.MaxQueue)
	}
	placements := splitList(o.placements)
	clusters := splitList(o.clusters)
	if len(placements) == 0 || len(clusters) == 0 {
		return fmt.Errorf("need at least one --placement and one --cluster")
	}
	type shape struct {
		spec        string
		nodes, gpus int
	}
	var shapes []shape
	for _, c := range clusters {
		n, g, err := cluster.ParseShape(c)
		if err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
		shapes = append(shapes, shape{fmt.Sprintf("%dx%d", n, g), n, g})
	}
	var rows []benchPlacementRow
	for _, p := range placements {
		for _, s := range shapes {
			st, err := bench.PlacementRound(bench.RoundOptions{
				Placement: p, Nodes: s.nodes, GPUsPerNode: s.gpus,
				Queue: o.queue, Reps: o.reps, Seed: o.seed, Profile: o.profile,
				MigrationCost: o.migrationCost, HeldFrom: o.heldFrom,
			})
			if err != nil {
				return fmt.Errorf("%s on %s: %w", p, s.spec, err)
			}
			rows = append(rows, benchPlacementRow{
				Placement: p, Cluster: s.spec, GPUs: st.GPUs, Jobs: st.Jobs,
				MedianUS: round2(st.MedianUS), P99US: round2(st.P99US), MeanUS: round2(st.MeanUS),
				FirstUS: round2(st.FirstUS), Reps: st.Reps,
			})
		}
	}
	if o.output == "json" {
		if len(rows) == 1 {
			return jsonround.Encode(w, rows[0], "")
		}
		return writeJSON(w, map[string]any{"results": rows})
	}
	if o.output == "csv" {
		cw := csv.NewWriter(w)
		cw.Write([]string{"placement", "cluster", "gpus", "jobs", "median_us", "p99_us", "mean_us", "first_us", "reps"})
		for _, r := range rows {
			cw.Write([]string{r.Placement, r.Cluster, strconv.Itoa(r.GPUs), strconv.Itoa(r.Jobs), usStr(r.MedianUS), usStr(r.P99US), usStr(r.MeanUS), usStr(r.FirstUS), strconv.Itoa(r.Reps)})
		}
		cw.Flush()
		return cw.Error()
	}
	t := newTable(w)
	t.AppendHeader(table.Row{"placement", "cluster", "GPUs", "jobs", "median (µs)", "p99 (µs)", "mean (µs)", "first (µs)", "reps"})
	for _, r := range rows {
		t.AppendRow(table.Row{r.Placement, r.Cluster, r.GPUs, r.Jobs, usStr(r.MedianUS), usStr(r.P99US), usStr(r.MeanUS), usStr(r.FirstUS), r.Reps})
	}
	t.Render()
	return nil
}

// splitList splits a comma list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// round2 keeps two decimals (10 ns): finer digits are timer noise.
func round2(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return v
}

func usStr(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
