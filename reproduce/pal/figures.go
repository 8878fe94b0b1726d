package pal

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// Fig 12 compares the paper's two policies with its best baseline; Fig 15
// PAL with Tiresias.
var (
	fig12Placements = []string{"pal", "pm-first", "packed-sticky"}
	fig15Placements = []string{"packed-sticky", "pal"}
)

// rowIndex finds rows by (seed, trace, load, L, scheduler, placement).
// get reads the grid's first seed (the only one of the Sia grids); agg
// combines every seed of a Synergy grid.
type rowIndex struct {
	rows  map[string]*sweep.Row
	seeds []uint64
}

func key(seed uint64, trace string, load, l float64, sched, placement string) string {
	return fmt.Sprintf("%d|%s|%g|%g|%s|%s", seed, trace, load, l, sched, placement)
}

func index(res *sweep.Result) rowIndex {
	ix := rowIndex{rows: map[string]*sweep.Row{}, seeds: res.Grid.Seeds}
	if len(ix.seeds) == 0 {
		ix.seeds = []uint64{res.Grid.Base.Seed}
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		ix.rows[key(r.Seed, r.Trace, r.Load, r.LocalityPenalty, r.Scheduler, r.Placement)] = r
	}
	return ix
}

func (ix rowIndex) get(trace string, load, l float64, sched, placement string) *sweep.Row {
	return ix.getSeed(ix.seeds[0], trace, load, l, sched, placement)
}

func (ix rowIndex) getSeed(seed uint64, trace string, load, l float64, sched, placement string) *sweep.Row {
	return ix.rows[key(seed, trace, load, l, sched, placement)]
}

// seedAgg is one placement at one setting over every seed: the mean
// average JCT (all tracked jobs and multi-GPU ones) and the geometric mean
// of the per-seed ratios to Tiresias, with their range. Each seed is a
// fresh Synergy draw (trace and GPU values), so the range shows how much
// of a difference is the draw's.
type seedAgg struct {
	AvgJCT, MultiAvgJCT float64
	Ratio, MultiRatio   float64
	Lo, Hi              float64 // range of the per-seed Ratio
	MultiLo, MultiHi    float64 // and of MultiRatio
	N                   int
}

func (ix rowIndex) agg(trace string, load, l float64, sched, placement string) seedAgg {
	a := seedAgg{Lo: math.Inf(1), Hi: math.Inf(-1), MultiLo: math.Inf(1), MultiHi: math.Inf(-1)}
	var rs, ms []float64
	for _, seed := range ix.seeds {
		r := ix.getSeed(seed, trace, load, l, sched, placement)
		b := ix.getSeed(seed, trace, load, l, sched, "packed-sticky")
		if r == nil || b == nil {
			nan := math.NaN()
			return seedAgg{AvgJCT: nan, MultiAvgJCT: nan, Ratio: nan, MultiRatio: nan, Lo: nan, Hi: nan, MultiLo: nan, MultiHi: nan}
		}
		a.AvgJCT += r.AvgJCT
		a.MultiAvgJCT += r.MultiGPUAvgJCT
		x := ratio(r, b, avgJCT)
		rs = append(rs, x)
		m := ratio(r, b, multiJCT)
		ms = append(ms, m)
		a.Lo, a.Hi = math.Min(a.Lo, x), math.Max(a.Hi, x)
		a.MultiLo, a.MultiHi = math.Min(a.MultiLo, m), math.Max(a.MultiHi, m)
		a.N++
	}
	a.AvgJCT /= float64(a.N)
	a.MultiAvgJCT /= float64(a.N)
	a.Ratio, a.MultiRatio = metrics.GeoMean(rs), metrics.GeoMean(ms)
	return a
}

// ratio of a metric against a baseline row; NaN when either is missing.
func ratio(r, base *sweep.Row, metric func(*sweep.Row) float64) float64 {
	if r == nil || base == nil || !(metric(base) > 0) {
		return math.NaN()
	}
	return metric(r) / metric(base)
}

func avgJCT(r *sweep.Row) float64   { return r.AvgJCT }
func makespan(r *sweep.Row) float64 { return r.Makespan }
func p99JCT(r *sweep.Row) float64   { return r.P99JCT }
func util(r *sweep.Row) float64     { return r.Utilization }
func multiJCT(r *sweep.Row) float64 { return r.MultiGPUAvgJCT }

// cell is a number for a table, or an empty cell when it is not known.
func traceLabel(k int) string { return strconv.Itoa(k) }

// siaGeo holds the Fig 11 ratios: per placement, per trace, and geomean.
type siaGeo struct {
	traces []int
	// by placement: ratio per trace (index as traces), then the geomean
	vs map[string][]float64
}

func (s siaGeo) geo(p string) float64 { return metrics.GeoMean(s.vs[p]) }

func (s siaGeo) minMax(p string) (lo, hi float64) {
	return slices.Min(s.vs[p]), slices.Max(s.vs[p])
}

// siaRatios normalises a metric of every placement to a baseline on each
// trace at one locality penalty.
func siaRatios(ix rowIndex, traces []int, load, l float64, baseline string, metric func(*sweep.Row) float64) siaGeo {
	g := siaGeo{traces: traces, vs: map[string][]float64{}}
	for _, p := range paper.Placements {
		for _, k := range traces {
			tr := fmt.Sprintf("sia-philly/%d", k)
			g.vs[p] = append(g.vs[p], ratio(ix.get(tr, load, l, "fifo", p), ix.get(tr, load, l, "fifo", baseline), metric))
		}
	}
	return g
}

// normBars is a grouped bar chart of normalised values per trace plus the
// geomean, one bar per placement.
func normBars(title, ylabel, baseline string, g siaGeo) *report.BarChart {
	c := &report.BarChart{Title: title, XLabel: "Sia-Philly workload", YLabel: ylabel,
		RefLine: 1, RefLabel: paper.Display(baseline) + " = 1"}
	for _, k := range g.traces {
		c.Categories = append(c.Categories, traceLabel(k))
	}
	c.Categories = append(c.Categories, "geomean")
	for _, p := range paper.Placements {
		vals := append(slices.Clone(g.vs[p]), g.geo(p))
		c.Series = append(c.Series, report.BarSeries{Name: paper.Display(p), Values: vals, Look: paper.LookOf(p)})
	}
	return c
}

// normTable is placements × (traces, geomean).
func normTable(title string, g siaGeo) *report.Table {
	h := []string{"placement"}
	for _, k := range g.traces {
		h = append(h, "w"+traceLabel(k))
	}
	t := report.NewTable(title, append(h, "geomean")...)
	for _, p := range paper.Placements {
		row := []any{paper.Display(p)}
		for _, v := range g.vs[p] {
			row = append(row, paper.Cell(v))
		}
		t.AddRow(append(row, paper.Cell(g.geo(p)))...)
	}
	return t
}

func hours(s float64) float64 { return s / 3600 }
