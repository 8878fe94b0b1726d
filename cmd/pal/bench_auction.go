package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/cluster"
)

type benchAuctionOpts struct {
	cases, output string
	f, held       float64
	reps          int
	seed          uint64
	elastic       bool
}

func newBenchAuctionCmd() *cobra.Command {
	var o benchAuctionOpts
	cmd := &cobra.Command{
		Use:   "auction",
		Short: "Time one Themis partial-allocation auction",
		Long: `Auction builds a synthetic Themis auction per --case (APPS@NODESxGPUS): apps of
1-100 gang jobs of 1, 2, 4 or 8 GPUs (10% single-job), placement factors from
the Themis simulator's models, random PM-scores, --held of the GPUs on
unexpired leases and the rest offered. It then times the whole auction: ρ,
the knob, bids, the proportional-fair allocation with every bidder left out
once (for the hidden payments), packing, payments and leftovers.

Besides the times it reports the memory one auction allocates and the
process's peak resident memory (max RSS), which bounds what one auction
needs at once; run one large case per process to read it alone.

Targets: 100 apps on 256 GPUs <= 5 ms median; 1,000 apps on 4,096 GPUs
<= 200 ms; 10,000 apps on 10,000 GPUs (--case 10000@1250x8 --f 0 --held 0,
every app bidding on every GPU) under 2 GB of peak memory.`,
		Example: `  pal bench auction
  pal bench auction --case 100@32x8 --f 0 --reps 50 --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchAuction(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cases, "case", "100@32x8,1000@512x8", "comma list of APPS@NODESxGPUS")
	f.Float64Var(&o.f, "f", 0.8, "fairness knob f in [0, 1]")
	f.Float64Var(&o.held, "held", 0.5, "share of GPUs held on unexpired leases, in [0, 1]")
	f.IntVar(&o.reps, "reps", 20, "timed auctions per case")
	f.Uint64Var(&o.seed, "seed", DefaultSeed, "seed of the synthetic auction")
	f.BoolVar(&o.elastic, "elastic", false, "elastic jobs (each runs on 1..its GPUs) instead of gangs")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "table, json or csv")
	return cmd
}

type benchAuctionRow struct {
	Apps     int     `json:"apps"`
	Cluster  string  `json:"cluster"`
	GPUs     int     `json:"gpus"`
	Offered  int     `json:"offered"`
	Wanting  int     `json:"wanting"`
	Bidders  int     `json:"bidders"`
	F        float64 `json:"f"`
	Elastic  bool    `json:"elastic"`
	MedianMS float64 `json:"median_ms"`
	P99MS    float64 `json:"p99_ms"`
	MeanMS   float64 `json:"mean_ms"`
	AllocMB  float64 `json:"alloc_mb"`
	MaxRSSMB float64 `json:"max_rss_mb"`
	Reps     int     `json:"reps"`
	Seed     uint64  `json:"seed"`
}

// maxBenchApps keeps a typo from asking for millions of apps.
const maxBenchApps = 100000

func runBenchAuction(w io.Writer, o benchAuctionOpts) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.reps <= 0 {
		return fmt.Errorf("--reps %d: must be positive", o.reps)
	}
	if !(o.held >= 0 && o.held <= 1) {
		return fmt.Errorf("--held %v: want a share in [0, 1]", o.held)
	}
	if !(o.f >= 0 && o.f <= 1) {
		return fmt.Errorf("--f %v: the fairness knob must be in [0, 1]", o.f)
	}
	var rows []benchAuctionRow
	for _, c := range splitList(o.cases) {
		a, shape, ok := strings.Cut(c, "@")
		apps, err := strconv.Atoi(strings.TrimSpace(a))
		if !ok || err != nil || apps <= 0 || apps > maxBenchApps {
			return fmt.Errorf("--case %q: want APPS@NODESxGPUS with 1..%d apps, e.g. 100@32x8", c, maxBenchApps)
		}
		n, g, err := cluster.ParseShape(shape)
		if err != nil {
			return fmt.Errorf("--case %q: %w", c, err)
		}
		st, err := bench.Auction(bench.AuctionOptions{Apps: apps, Machines: n, GPUsPerMachine: g, F: o.f, HeldShare: o.held, Reps: o.reps, Seed: o.seed, Elastic: o.elastic})
		if err != nil {
			return fmt.Errorf("--case %q: %w", c, err)
		}
		rows = append(rows, benchAuctionRow{Apps: apps, Cluster: fmt.Sprintf("%dx%d", n, g), GPUs: st.GPUs, Offered: st.Offered,
			Wanting: st.Wanting, Bidders: st.Bidders, F: o.f, Elastic: o.elastic, MedianMS: round2(st.MedianMS), P99MS: round2(st.P99MS),
			MeanMS: round2(st.MeanMS), AllocMB: round2(st.AllocMB), MaxRSSMB: round2(st.MaxRSSMB), Reps: st.Reps, Seed: o.seed})
	}
	if o.output == "json" {
		return writeJSON(w, map[string]any{"results": rows})
	}
	t := newTable(w)
	t.AppendHeader(table.Row{"apps", "cluster", "GPUs", "offered", "wanting", "bidders", "f", "median (ms)", "p99 (ms)", "mean (ms)", "alloc (MB)", "max RSS (MB)", "reps"})
	for _, r := range rows {
		t.AppendRow(table.Row{r.Apps, r.Cluster, r.GPUs, r.Offered, r.Wanting, r.Bidders, r.F, r.MedianMS, r.P99MS, r.MeanMS, r.AllocMB, r.MaxRSSMB, r.Reps})
	}
	if o.output == "csv" {
		t.ResetHeaders()
		t.AppendHeader(table.Row{"apps", "cluster", "gpus", "offered", "wanting", "bidders", "f", "median_ms", "p99_ms", "mean_ms", "alloc_mb", "max_rss_mb", "reps"})
		t.RenderCSV()
		return nil
	}
	t.Render()
	return nil
}
