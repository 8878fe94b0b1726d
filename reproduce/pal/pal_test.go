package pal

import (
	"math"
	"slices"
	"testing"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/reproduce/paper"
)

func TestPlans(t *testing.T) {
	for _, p := range []paper.Plan{paper.FullPlan(), paper.QuickPlan()} {
		t.Run(p.Name, func(t *testing.T) {
			// Fig 20's 1.7 must be the very double of the Synergy L, or
			// its runs would not be shared with Fig 14's.
			if !slices.Contains(p.Fig20Penalties, p.SynergyL) {
				t.Errorf("Fig 20 penalties %v lack the Synergy L %v", p.Fig20Penalties, p.SynergyL)
			}
			if !slices.Contains(p.Fig20Penalties, 1.0) {
				t.Errorf("Fig 20 penalties %v lack 1.0", p.Fig20Penalties)
			}
			for _, x := range append(p.UtilLoads, p.Fig20Load) {
				if !slices.Contains(p.Loads["fifo"], x) {
					t.Errorf("load %v is not among the FIFO loads %v", x, p.Loads["fifo"])
				}
			}
			g, err := GridsOf(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, gr := range g.List() {
				if _, err := gr.Expand(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	full := paper.FullPlan()
	if full.SynergyTrack.First != 2000 || full.SynergyTrack.Last != 3000 || full.SynergyJobs <= 3000 {
		t.Errorf("full plan tracks %v of %d jobs, want the paper's 2000-3000 with load after it", full.SynergyTrack, full.SynergyJobs)
	}
	if got := full.Bench[len(full.Bench)-1].GPUs(); got != 27648 {
		t.Errorf("largest Fig 18 cluster %d GPUs, want 27,648", got)
	}
}

func TestFig18FromStub(t *testing.T) {
	res := []BenchResult{
		{"pal", paper.BenchSize{Nodes: 64, GPUsPerNode: 4, Reps: 1}, bench.Stats{MedianUS: 100, P99US: 120, FirstUS: 400, GPUs: 256, Jobs: 100, Reps: 1}},
		{"pm-first", paper.BenchSize{Nodes: 64, GPUsPerNode: 4, Reps: 1}, bench.Stats{MedianUS: 50, P99US: 60, FirstUS: 200, GPUs: 256, Jobs: 100, Reps: 1}},
	}
	f, rows := fig18(res)
	if len(f.Plots) != 1 || len(rows) != 3 {
		t.Fatalf("plots %v, overhead rows %+v", f.Plots, rows)
	}
	if rows[0].OurS != 100e-6 || rows[0].PaperS != 2.8 {
		t.Errorf("PAL median row %+v, want ours 1e-4 s against the paper's 2.8 s", rows[0])
	}
}

func TestDeviationAndCells(t *testing.T) {
	h := Headline{Paper: -43, Ours: -41.5}
	if d := h.Deviation(); math.Abs(d-1.5) > 1e-9 {
		t.Errorf("deviation %v, want +1.5 points", d)
	}
	if paper.PctCell(math.NaN()) != "n/a" || paper.PctCell(-4) != "-4.0%" || ptsCell(1.5) != "+1.5" || ptsCell(math.NaN()) != "" {
		t.Error("cell formatting")
	}
}
