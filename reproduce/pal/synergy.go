package pal

import (
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// synergyFigure numbers by scheduler.
var synergyFigNo = map[string]string{"fifo": "14", "las": "16", "srtf": "17"}

var schedulerTitle = map[string]string{"fifo": "FIFO", "las": "LAS", "srtf": "SRTF"}

// synergyLoadFigure is Fig 14 (FIFO), 16 (LAS) or 17 (SRTF): average JCT
// of every placement against load, absolute and normalised to Tiresias,
// and the multi-GPU jobs' average alone, each combined over the seeds.
func synergyLoadFigure(res *sweep.Result, sched string, plan paper.Plan) (*paper.Figure, []Headline) {
	ix := index(res)
	no := synergyFigNo[sched]
	l := res.Grid.Base.LocalityPenalty
	loads := res.Grid.Loads
	id := "fig" + no
	f := &paper.Figure{ID: id, CSV: id + ".csv",
		Title: fmt.Sprintf("Fig %s: Synergy, average JCT vs load (%s, %s, L = %g)", no, schedulerTitle[sched], plan.SynergyCluster, l),
		Text: fmt.Sprintf(`Synergy-style traces (%d jobs, ids %s measured, Philly GPU demands, Gavel-like lengths, all class A as in
the artifact) on %s GPUs, round %g s, L = %g, %s scheduling, at %v jobs/hour, %s. Average JCT per placement in hours,
normalised to Tiresias at the same load, and the average over multi-GPU jobs only. %s`,
			plan.SynergyJobs, plan.SynergyTrack, plan.SynergyCluster, plan.SynergyRound, l, schedulerTitle[sched], loads,
			paper.SeedsText(ix.seeds), synergyClaim[sched])}
	abs := &report.LineChart{Title: fmt.Sprintf("Fig %s: average JCT, Synergy, %s", no, schedulerTitle[sched]),
		XLabel: "load (jobs/hour)", YLabel: "average JCT (hours)", Mark: report.LinesPoints}
	norm := &report.LineChart{Title: fmt.Sprintf("Fig %s: average JCT vs Tiresias, Synergy, %s", no, schedulerTitle[sched]),
		XLabel: "load (jobs/hour)", YLabel: "avg JCT / Tiresias", Mark: report.LinesPoints}
	multi := &report.LineChart{Title: fmt.Sprintf("Fig %s: multi-GPU jobs' average JCT vs Tiresias, %s", no, schedulerTitle[sched]),
		XLabel: "load (jobs/hour)", YLabel: "multi-GPU avg JCT / Tiresias", Mark: report.LinesPoints}
	d := report.NewTable("", "scheduler", "load_jobs_per_hour", "seed", "placement", "jobs", "avg_jct_s", "avg_jct_vs_packed_sticky",
		"multi_gpu_jobs", "multi_gpu_avg_jct_s", "multi_gpu_vs_packed_sticky", "p99_jct_s", "makespan_s", "utilization")
	h := []string{"placement"}
	for _, x := range loads {
		h = append(h, fmt.Sprintf("%g/h", x))
	}
	tab := report.NewTable("Average JCT / Tiresias"+seedsNote(ix.seeds), h...)
	tabMulti := report.NewTable("Multi-GPU jobs' average JCT / Tiresias"+seedsNote(ix.seeds), h...)
	aggs := map[string][]seedAgg{}
	for _, p := range paper.Placements {
		var habs, vs, vm []float64
		for _, x := range loads {
			for _, seed := range ix.seeds {
				r := ix.getSeed(seed, sweep.SynergyTrace, x, l, sched, p)
				b := ix.getSeed(seed, sweep.SynergyTrace, x, l, sched, "packed-sticky")
				if r != nil {
					d.AddRow(sched, x, seed, p, r.Jobs, r.AvgJCT, paper.Cell(ratio(r, b, avgJCT)), r.MultiGPUJobs, r.MultiGPUAvgJCT,
						paper.Cell(ratio(r, b, multiJCT)), r.P99JCT, r.Makespan, r.Utilization)
				}
			}
			a := ix.agg(sweep.SynergyTrace, x, l, sched, p)
			aggs[p] = append(aggs[p], a)
			if len(ix.seeds) > 1 {
				d.AddRow(sched, x, "all", p, "", paper.Cell(a.AvgJCT), paper.Cell(a.Ratio), "", paper.Cell(a.MultiAvgJCT), paper.Cell(a.MultiRatio), "", "", "")
			}
			habs, vs, vm = append(habs, hours(a.AvgJCT)), append(vs, a.Ratio), append(vm, a.MultiRatio)
		}
		abs.Series = append(abs.Series, report.Series{Name: paper.Display(p), X: loads, Y: habs, Look: paper.LookOf(p)})
		norm.Series = append(norm.Series, report.Series{Name: paper.Display(p), X: loads, Y: vs, Look: paper.LookOf(p)})
		multi.Series = append(multi.Series, report.Series{Name: paper.Display(p), X: loads, Y: vm, Look: paper.LookOf(p)})
		tab.AddRow(rowOf(paper.Display(p), vs)...)
		tabMulti.AddRow(rowOf(paper.Display(p), vm)...)
	}
	// Start at zero only when the lines span much of it; a narrow band
	// (the quick plan's few short runs) is zoomed to the data instead of
	// being squashed into one line at the top.
	abs.YFromZero = spreadIsWide(abs.Series)
	f.Add(id+"_"+sched+"_avg_jct", "Average JCT (hours) per placement and load"+seedsNote(ix.seeds), abs)
	f.Add(id+"_"+sched+"_avg_jct_norm", "Average JCT normalised to Tiresias at each load"+seedsNote(ix.seeds), norm)
	f.Add(id+"_"+sched+"_multi_gpu_norm", "Multi-GPU jobs' average JCT normalised to Tiresias"+seedsNote(ix.seeds), multi)
	f.Tables = []*report.Table{tab, tabMulti}
	f.Data = d

	pal := aggs["pal"]
	at := func(load float64, multi bool) (float64, *[2]float64) {
		i := slices.Index(loads, load)
		if i < 0 {
			return math.NaN(), nil
		}
		return paper.Pct(pal[i].ratio(multi)), pal[i].spread(multi)
	}
	claim := func(fig, text string, paper, load float64, multi bool) Headline {
		v, sp := at(load, multi)
		return Headline{Figure: fig, Claim: text, Paper: paper, Ours: v, Spread: sp}
	}
	var hs []Headline
	switch sched {
	case "fifo":
		hs = []Headline{
			claim(no, "Synergy FIFO: PAL avg JCT vs Tiresias at 4 jobs/h", -4, 4, false),
			claim(no, "Synergy FIFO: PAL avg JCT vs Tiresias at 12 jobs/h", -9, 12, false),
			claim(no, "Synergy FIFO: PAL avg JCT vs Tiresias at 14 jobs/h (\"stabilises around 8%\")", -8, 14, false),
			claim(no, "Synergy FIFO: PAL multi-GPU avg JCT vs Tiresias at 4 jobs/h", -5, 4, true),
			claim(no, "Synergy FIFO: PAL multi-GPU avg JCT vs Tiresias at 12 jobs/h", -31, 12, true),
			claim(no, "Synergy FIFO: PAL multi-GPU avg JCT vs Tiresias above 12 jobs/h (14)", -22, 14, true),
		}
	case "las", "srtf":
		// PAL's largest gain over the loads the paper's "up to" spans.
		best, bestAt := math.NaN(), math.NaN()
		for i, x := range loads {
			if slices.Contains(plan.HeadlineLoads, x) && (math.IsNaN(best) || pal[i].Ratio < best) {
				best, bestAt = pal[i].Ratio, x
			}
		}
		i := slices.Index(loads, bestAt)
		var sp *[2]float64
		if i >= 0 {
			sp = pal[i].spread(false)
		}
		hs = []Headline{{Figure: no, Claim: fmt.Sprintf("Synergy %s: PAL's best avg JCT gain vs Tiresias over %v jobs/h (ours at %g)",
			schedulerTitle[sched], plan.HeadlineLoads, bestAt), Paper: map[string]float64{"las": -15, "srtf": -10}[sched], Ours: paper.Pct(best), Spread: sp}}
	}
	return f, hs
}

func (a seedAgg) ratio(multi bool) float64 {
	if multi {
		return a.MultiRatio
	}
	return a.Ratio
}

// spread is the per-seed range of a ratio (all jobs, or multi-GPU ones) as
// percent changes, when there is more than one seed.
func (a seedAgg) spread(multi bool) *[2]float64 {
	if a.N < 2 {
		return nil
	}
	if multi {
		return &[2]float64{paper.Pct(a.MultiLo), paper.Pct(a.MultiHi)}
	}
	return &[2]float64{paper.Pct(a.Lo), paper.Pct(a.Hi)}
}

func seedsNote(seeds []uint64) string {
	if len(seeds) == 1 {
		return ""
	}
	return fmt.Sprintf(" (%d seeds)", len(seeds))
}

var synergyClaim = map[string]string{
	"fifo": `The paper: PAL improves average JCT over Tiresias by 4% at 4 jobs/hour to 9% at 12, then about 8%; multi-GPU jobs gain 5% to 31%, and 22% above 12 jobs/hour.`,
	"las":  `The paper (8-14 jobs/hour): PAL up to 15% better than Tiresias.`,
	"srtf": `The paper (8-14 jobs/hour): PAL up to 10% better than Tiresias.`,
}

func rowOf(name string, vals []float64) []any {
	row := []any{name}
	for _, v := range vals {
		row = append(row, paper.Cell(v))
	}
	return row
}

// fig15 is GPUs in use after each round's placement, Tiresias against PAL,
// at the loads the paper shows.
func fig15(res *sweep.Result, plan paper.Plan) *paper.Figure {
	ix := index(res)
	l := res.Grid.Base.LocalityPenalty
	size := clusterGPUs(plan.SynergyCluster)
	f := &paper.Figure{ID: "fig15", Title: "Fig 15: GPUs in use per round, Synergy (FIFO)", CSV: "fig15.csv",
		Text: fmt.Sprintf(`GPUs in use after each round's placement for Tiresias and PAL at %v jobs/hour (FIFO, %s). The paper: below 8
jobs/hour the cluster stays under-used; at 10 it saturates early (around 0.7e6 s) and stays full, and PAL's
utilisation "runs ahead" of Tiresias, freeing GPUs earlier. The simulation stops when the last measured job (id
%d) finishes.`, plan.UtilLoads, plan.SynergyCluster, plan.SynergyTrack.Last)}
	d := report.NewTable("", "load_jobs_per_hour", "placement", "t_s", "gpus_in_use", "running", "queued")
	sum := report.NewTable("GPUs in use", "load", "placement", "rounds", "mean GPUs in use", "first full round (hours)", "share of rounds full", "end (hours)")
	for _, x := range plan.UtilLoads {
		c := &report.LineChart{Title: fmt.Sprintf("Fig 15: GPUs in use, %g jobs/hour", x), XLabel: "time (hours)",
			YLabel: "GPUs in use", Step: true, YFromZero: true}
		for _, p := range fig15Placements {
			r := ix.get(sweep.SynergyTrace, x, l, "fifo", p)
			if r == nil || r.Run == nil || len(r.Run.RoundStats) == 0 {
				continue
			}
			var xs, ys []float64
			busy, full, first := 0.0, 0, math.NaN()
			for _, s := range r.Run.RoundStats {
				xs = append(xs, hours(s.T))
				ys = append(ys, float64(s.GPUsInUse))
				d.AddRow(x, p, s.T, s.GPUsInUse, s.Running, s.Queued)
				busy += float64(s.GPUsInUse)
				if s.GPUsInUse >= size {
					full++
					if math.IsNaN(first) {
						first = hours(s.T)
					}
				}
			}
			n := len(r.Run.RoundStats)
			c.Series = append(c.Series, report.Series{Name: paper.Display(p), X: xs, Y: ys, Look: paper.LookOf(p)})
			sum.AddRow(x, paper.Display(p), n, busy/float64(n), paper.Cell(first), float64(full)/float64(n), xs[n-1])
		}
		if len(c.Series) > 0 {
			f.Add(fmt.Sprintf("fig15_gpus_load%g", x), fmt.Sprintf("GPUs in use per round at %g jobs/hour", x), c)
		}
	}
	f.Data = d
	f.Tables = []*report.Table{sum}
	return f
}

func clusterGPUs(shape string) int {
	var n, g int
	if _, err := fmt.Sscanf(shape, "%dx%d", &n, &g); err != nil {
		return 0
	}
	return n * g
}

// fig20 is average JCT against the locality penalty on Synergy at one
// load, normalised to Tiresias at the same penalty, over the seeds.
func fig20(res *sweep.Result, plan paper.Plan) (*paper.Figure, []Headline) {
	ix := index(res)
	x := plan.Fig20Load
	ls := plan.Fig20Penalties
	f := &paper.Figure{ID: "fig20", Title: fmt.Sprintf("Fig 20: Synergy, average JCT vs locality penalty (FIFO, %g jobs/hour)", x), CSV: "fig20.csv",
		Text: fmt.Sprintf(`Average JCT per placement on the Synergy trace at %g jobs/hour (FIFO, %s) as L goes from %g to %g, normalised to
Tiresias at the same L, %s. The paper: packing catches up as L grows; at 1.7 Tiresias and PM-First are nearly
equal, and PAL's gain over Tiresias falls only from 12%% to 7%%.`, x, plan.SynergyCluster, ls[0], ls[len(ls)-1], paper.SeedsText(ix.seeds))}
	c := &report.LineChart{Title: fmt.Sprintf("Fig 20: average JCT vs locality penalty, Synergy %g jobs/h", x),
		XLabel: "locality penalty L", YLabel: "avg JCT / Tiresias", Mark: report.LinesPoints}
	h := []string{"placement"}
	for _, l := range ls {
		h = append(h, fmt.Sprintf("L=%g", l))
	}
	tab := report.NewTable("Average JCT / Tiresias at the same L"+seedsNote(ix.seeds), h...)
	d := report.NewTable("", "locality_penalty", "seed", "placement", "avg_jct_s", "avg_jct_vs_packed_sticky", "multi_gpu_avg_jct_s", "multi_gpu_vs_packed_sticky")
	aggs := map[string][]seedAgg{}
	for _, p := range paper.Placements {
		var vs []float64
		for _, l := range ls {
			for _, seed := range ix.seeds {
				r := ix.getSeed(seed, sweep.SynergyTrace, x, l, "fifo", p)
				b := ix.getSeed(seed, sweep.SynergyTrace, x, l, "fifo", "packed-sticky")
				if r != nil {
					d.AddRow(l, seed, p, r.AvgJCT, paper.Cell(ratio(r, b, avgJCT)), r.MultiGPUAvgJCT, paper.Cell(ratio(r, b, multiJCT)))
				}
			}
			a := ix.agg(sweep.SynergyTrace, x, l, "fifo", p)
			if len(ix.seeds) > 1 {
				d.AddRow(l, "all", p, paper.Cell(a.AvgJCT), paper.Cell(a.Ratio), paper.Cell(a.MultiAvgJCT), paper.Cell(a.MultiRatio))
			}
			aggs[p] = append(aggs[p], a)
			vs = append(vs, a.Ratio)
		}
		c.Series = append(c.Series, report.Series{Name: paper.Display(p), X: ls, Y: vs, Look: paper.LookOf(p)})
		tab.AddRow(rowOf(paper.Display(p), vs)...)
	}
	f.Add("fig20_locality", "Average JCT normalised to Tiresias at each locality penalty"+seedsNote(ix.seeds), c)
	f.Tables = []*report.Table{tab}
	f.Data = d
	claim := func(text string, paperPct float64, p string, l float64) Headline {
		h := Headline{Figure: "20", Claim: text, Paper: paperPct, Ours: math.NaN()}
		if i := slices.Index(ls, l); i >= 0 {
			h.Ours, h.Spread = paper.Pct(aggs[p][i].Ratio), aggs[p][i].spread(false)
		}
		return h
	}
	return f, []Headline{
		claim(fmt.Sprintf("Synergy %g jobs/h: PAL avg JCT vs Tiresias at L = 1.0", x), -12, "pal", 1.0),
		claim(fmt.Sprintf("Synergy %g jobs/h: PAL avg JCT vs Tiresias at L = 1.7", x), -7, "pal", 1.7),
		claim(fmt.Sprintf("Synergy %g jobs/h: PM-First avg JCT vs Tiresias at L = 1.7 (\"nearly the same\")", x), 0, "pm-first", 1.7),
	}
}

// spreadIsWide says whether the series' values reach below half their
// maximum, so that a zero-based axis still shows their differences.
func spreadIsWide(series []report.Series) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, y := range s.Y {
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	return lo < hi/2
}
