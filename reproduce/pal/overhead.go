package pal

import (
	"context"
	"fmt"
	"math"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
)

// fig18Placements are the policies whose cost the paper measures.
var fig18Placements = []string{"pal", "pm-first"}

// BenchResult is one timed cluster for one placement.
type BenchResult struct {
	Placement string
	Size      paper.BenchSize
	Stats     bench.Stats
}

// RunBenches times every size in order, alone: the caller runs it after the
// simulations so that no other work shares the cores while it measures.
func RunBenches(ctx context.Context, sizes []paper.BenchSize, seed uint64) ([]BenchResult, error) {
	var out []BenchResult
	for _, s := range sizes {
		for _, p := range fig18Placements {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			st, err := placementRound(bench.RoundOptions{Placement: p, Nodes: s.Nodes, GPUsPerNode: s.GPUsPerNode, Reps: s.Reps, Seed: seed})
			if err != nil {
				return out, fmt.Errorf("fig 18, %s on %dx%d: %v", p, s.Nodes, s.GPUsPerNode, err)
			}
			out = append(out, BenchResult{Placement: p, Size: s, Stats: st})
		}
	}
	return out, nil
}

// fig18 is placement time per round against cluster size, log-log. The
// paper's figure is the distribution over a simulation's epochs; here each
// size is a loaded cluster (a queue of 1.5x its GPUs, half of it running)
// timed over repeated rounds, with the first round, which builds any
// per-cluster index, reported apart as the worst case.
func fig18(results []BenchResult) (*paper.Figure, []OverheadRow) {
	f := &paper.Figure{ID: "fig18", Title: "Fig 18: placement time per round vs cluster size (PAL, PM-First)", CSV: "fig18.csv",
		Text: `Wall time of one placement round against cluster size (4 GPUs per node), for PAL and PM-First: median over
repeated rounds on a loaded cluster, and the first round (the worst case, as the paper's first epoch). The paper's
Python implementation needs 2.8 s (median) and 4 s (first epoch) for PAL and 2 s (worst) for PM-First at 256 GPUs,
well inside a 300 s round.`}
	d := report.NewTable("", "placement", "nodes", "gpus_per_node", "gpus", "jobs", "reps", "median_us", "p99_us", "mean_us", "first_us")
	tab := report.NewTable("Placement time per round (ms)", "placement", "GPUs", "jobs", "median", "p99", "first round")
	c := &report.LineChart{Title: "Fig 18: placement time per round", XLabel: "GPUs in the cluster",
		YLabel: "time per round (ms)", Mark: report.LinesPoints, LogX: true, LogY: true}
	for _, p := range fig18Placements {
		var xs, med, first []float64
		for _, r := range results {
			if r.Placement != p {
				continue
			}
			s := r.Stats
			d.AddRow(p, r.Size.Nodes, r.Size.GPUsPerNode, s.GPUs, s.Jobs, s.Reps, s.MedianUS, s.P99US, s.MeanUS, s.FirstUS)
			tab.AddRow(paper.Display(p), s.GPUs, s.Jobs, s.MedianUS/1e3, s.P99US/1e3, s.FirstUS/1e3)
			xs = append(xs, float64(s.GPUs))
			med = append(med, positive(s.MedianUS/1e3))
			first = append(first, positive(s.FirstUS/1e3))
		}
		if len(xs) == 0 {
			continue
		}
		// The policy's colour for both; the first round is dotted.
		fr := paper.LookOf(p)
		if fr != nil {
			fr.Dashes = []float64{1, 3}
		}
		c.Series = append(c.Series,
			report.Series{Name: paper.Display(p) + " median", X: xs, Y: med, Look: paper.LookOf(p)},
			report.Series{Name: paper.Display(p) + " first round", X: xs, Y: first, Look: fr})
	}
	if len(c.Series) > 0 {
		f.Add("fig18_placement_time", "Placement time per round against cluster size (log-log)", c)
	}
	f.Data = d
	f.Tables = []*report.Table{tab}

	var rows []OverheadRow
	find := func(p string, gpus int) *bench.Stats {
		for i := range results {
			if results[i].Placement == p && results[i].Stats.GPUs == gpus {
				return &results[i].Stats
			}
		}
		return nil
	}
	if s := find("pal", 256); s != nil {
		rows = append(rows,
			OverheadRow{"PAL median placement time per round, 256 GPUs", 2.8, s.MedianUS / 1e6},
			OverheadRow{"PAL worst (first) round, 256 GPUs", 4, s.FirstUS / 1e6})
	}
	if s := find("pm-first", 256); s != nil {
		rows = append(rows, OverheadRow{"PM-First worst (first) round, 256 GPUs", 2, s.FirstUS / 1e6})
	}
	for _, p := range fig18Placements {
		big := 0
		for _, r := range results {
			if r.Placement == p && r.Stats.GPUs > big {
				big = r.Stats.GPUs
			}
		}
		if s := find(p, big); s != nil && big > 256 {
			rows = append(rows, OverheadRow{fmt.Sprintf("%s median per round, %d GPUs (not in the paper's text)", paper.Display(p), big), math.NaN(), s.MedianUS / 1e6})
		}
	}
	return f, rows
}

// positive keeps a log axis drawable when a timer reads zero.
func positive(ms float64) float64 { return math.Max(ms, 1e-4) }

// OverheadRow compares a placement time with the paper's, in seconds.
type OverheadRow struct {
	Claim        string
	PaperS, OurS float64
}
