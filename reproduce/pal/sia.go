package pal

import (
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// The artifact's Sia runs use extra load 2 and L 1.7 (the preset's).
func siaLoadL(res *sweep.Result) (load, l float64) {
	return res.Grid.Base.ExtraLoad, res.Grid.Base.LocalityPenalty
}

// fig11 is average JCT and makespan of every placement on the Sia-Philly
// traces normalised to Tiresias, plus the same against Gandiva: the
// artifact's Fig-10 plot script swaps the two packed labels, so the
// figure it drew is normalised to the non-sticky code path while the
// paper's text quotes the sticky one.
func fig11(res *sweep.Result, plan paper.Plan) (*paper.Figure, []Headline, PackedOrder) {
	ix := index(res)
	load, l := siaLoadL(res)
	tr := plan.SiaTraces
	jct := siaRatios(ix, tr, load, l, "packed-sticky", avgJCT)
	mk := siaRatios(ix, tr, load, l, "packed-sticky", makespan)
	p99 := siaRatios(ix, tr, load, l, "packed-sticky", p99JCT)
	ut := siaRatios(ix, tr, load, l, "packed-sticky", util)
	jctNS := siaRatios(ix, tr, load, l, "packed-nonsticky", avgJCT)
	mkNS := siaRatios(ix, tr, load, l, "packed-nonsticky", makespan)

	f := &paper.Figure{ID: "fig11", Title: "Fig 11: Sia-Philly, average JCT and makespan by placement (FIFO, 16x4)", CSV: "fig11.csv",
		Text: `Average JCT of each placement on the Sia-Philly traces (160 jobs each, FIFO, 64 GPUs, L = 1.7), normalised to
Tiresias (packed-sticky) on the same trace, with the geometric mean over traces; makespan the same way. The paper
quotes PAL -43% and PM-First -40% geomean average JCT, and -47% / -44% makespan, against Tiresias.

The artifact's Fig-10 plot script labels Default-Packed-S as "Packed-Non-Sticky" and Default-Packed-NS as
"Packed-Sticky", and normalises to its "Packed-Sticky": the figure it draws is normalised to the non-sticky code
path. The third chart shows that normalisation.`}
	f.Add("fig11_avg_jct", "Average JCT normalised to Tiresias (packed-sticky), per trace and geomean",
		normBars("Fig 11: average JCT vs Tiresias (packed-sticky)", "avg JCT / Tiresias", "packed-sticky", jct))
	f.Add("fig11_makespan", "Makespan normalised to Tiresias (packed-sticky)",
		normBars("Fig 11: makespan vs Tiresias (packed-sticky)", "makespan / Tiresias", "packed-sticky", mk))
	f.Add("fig11_avg_jct_vs_nonsticky", "Average JCT normalised to packed-nonsticky, as the artifact's plot script (with its swapped labels) draws Fig 11",
		normBars("Fig 11 as the artifact plots it: average JCT vs packed-nonsticky", "avg JCT / packed-nonsticky", "packed-nonsticky", jctNS))
	f.Tables = []*report.Table{
		normTable("Average JCT / Tiresias (packed-sticky)", jct),
		normTable("Makespan / Tiresias (packed-sticky)", mk),
		normTable("Average JCT / packed-nonsticky (the artifact plot script's baseline)", jctNS),
	}

	d := report.NewTable("", "trace", "placement", "avg_jct_s", "makespan_s", "p99_jct_s", "utilization",
		"avg_jct_vs_packed_sticky", "makespan_vs_packed_sticky", "avg_jct_vs_packed_nonsticky", "makespan_vs_packed_nonsticky")
	for i, k := range tr {
		name := fmt.Sprintf("sia-philly/%d", k)
		for _, p := range paper.Placements {
			r := ix.get(name, load, l, "fifo", p)
			if r == nil {
				continue
			}
			d.AddRow(name, p, r.AvgJCT, r.Makespan, r.P99JCT, r.Utilization,
				paper.Cell(jct.vs[p][i]), paper.Cell(mk.vs[p][i]), paper.Cell(jctNS.vs[p][i]), paper.Cell(mkNS.vs[p][i]))
		}
	}
	for _, p := range paper.Placements {
		d.AddRow("geomean", p, "", "", "", "", paper.Cell(jct.geo(p)), paper.Cell(mk.geo(p)), paper.Cell(jctNS.geo(p)), paper.Cell(mkNS.geo(p)))
	}
	f.Data = d

	scope := "8 traces"
	if len(tr) != 8 {
		scope = fmt.Sprintf("traces %v only (--quick)", tr)
	}
	art := func(x float64) *float64 { return &x }
	palLo, palHi := jct.minMax("pal")
	pmLo, pmHi := jct.minMax("pm-first")
	hs := []Headline{
		{Figure: "11", Claim: "PAL avg JCT vs Tiresias, geomean (" + scope + ")", Paper: -43, Artifact: art(-42.9), Ours: paper.Pct(jct.geo("pal"))},
		{Figure: "11", Claim: "PM-First avg JCT vs Tiresias, geomean", Paper: -40, Artifact: art(-40.9), Ours: paper.Pct(jct.geo("pm-first"))},
		{Figure: "11", Claim: "PAL makespan vs Tiresias, geomean", Paper: -47, Ours: paper.Pct(mk.geo("pal"))},
		{Figure: "11", Claim: "PM-First makespan vs Tiresias, geomean", Paper: -44, Ours: paper.Pct(mk.geo("pm-first"))},
		{Figure: "11", Claim: "PAL p99 JCT vs Tiresias, geomean (§I)", Paper: -41, Ours: paper.Pct(p99.geo("pal"))},
		{Figure: "11", Claim: "PM-First p99 JCT vs Tiresias, geomean (§I)", Paper: -40, Ours: paper.Pct(p99.geo("pm-first"))},
		{Figure: "11", Claim: "PAL utilization vs Tiresias, geomean (abstract)", Paper: 28, Ours: paper.Pct(ut.geo("pal"))},
		{Figure: "11", Claim: "PM-First utilization vs Tiresias, geomean (§I)", Paper: 26, Ours: paper.Pct(ut.geo("pm-first"))},
		{Figure: "11", Claim: "PAL avg JCT vs Tiresias, smallest gain of a trace", Paper: -21, Ours: paper.Pct(palHi)},
		{Figure: "11", Claim: "PAL avg JCT vs Tiresias, largest gain of a trace", Paper: -59, Ours: paper.Pct(palLo)},
		{Figure: "11", Claim: "PM-First avg JCT vs Tiresias, smallest gain of a trace", Paper: -5, Ours: paper.Pct(pmHi)},
		{Figure: "11", Claim: "PM-First avg JCT vs Tiresias, largest gain of a trace", Paper: -59, Ours: paper.Pct(pmLo)},
		{Figure: "11", Claim: "PAL avg JCT vs packed-nonsticky (the artifact plot's baseline), geomean", Paper: math.NaN(), Artifact: art(-36.2), Ours: paper.Pct(jctNS.geo("pal"))},
		{Figure: "11", Claim: "PM-First avg JCT vs packed-nonsticky, geomean", Paper: math.NaN(), Artifact: art(-34.0), Ours: paper.Pct(jctNS.geo("pm-first"))},
	}
	// Which packed flavour wins where: the text's "Tiresias beats Gandiva
	// on workloads 1, 2, 4, 5, 6 and the geomean" tells which labels it read.
	po := PackedOrder{Geomean: jct.geo("packed-nonsticky")}
	for i, k := range tr {
		switch v := jct.vs["packed-nonsticky"][i]; {
		case v > 1:
			po.StickyBetter = append(po.StickyBetter, k)
		case v < 1:
			po.NonstickyBetter = append(po.NonstickyBetter, k)
		}
	}
	return f, hs, po
}

// PackedOrder records on which traces each packed flavour has the lower
// average JCT; Geomean is packed-nonsticky over packed-sticky.
type PackedOrder struct {
	StickyBetter, NonstickyBetter []int
	Geomean                       float64
}

// fig12 is every tracked job's wait (JCT minus time on GPUs: queueing,
// suspension and round quantisation) on the traces the paper picks, under
// PAL, PM-First and Tiresias.
func fig12(res *sweep.Result, plan paper.Plan) *paper.Figure {
	ix := index(res)
	load, l := siaLoadL(res)
	f := &paper.Figure{ID: "fig12", Title: "Fig 12: wait time per job, Sia-Philly workloads 3 and 5 (FIFO)", CSV: "fig12.csv",
		Text: `Wait time of every job (JCT minus time holding GPUs) under PAL, PM-First and Tiresias on workloads 3 and 5, per job
id and as a CDF. The paper: workload 5 has a 48-GPU job early (id 19) that blocks the queue, so its waits grow and
PAL/PM-First, which drain the queue faster, gain most; workload 3's large jobs arrive late (id 60), so waits stay
low and gains are smaller.`}
	d := report.NewTable("", "trace", "placement", "job_id", "gpus", "arrival_s", "first_start_s", "wait_s", "jct_s")
	sum := report.NewTable("Wait time per job (hours)", "trace", "placement", "jobs", "mean", "median", "p90", "max")
	for _, k := range plan.WaitTraces {
		name := fmt.Sprintf("sia-philly/%d", k)
		perJob := &report.LineChart{Title: fmt.Sprintf("Fig 12: wait time per job, workload %d", k),
			XLabel: "job id", YLabel: "wait (hours)", Mark: report.Points, YFromZero: true}
		cdf := &report.LineChart{Title: fmt.Sprintf("Fig 12: wait time CDF, workload %d", k),
			XLabel: "wait (hours)", YLabel: "fraction of jobs", YFromZero: true}
		for _, p := range fig12Placements {
			r := ix.get(name, load, l, "fifo", p)
			if r == nil || r.Run == nil {
				continue
			}
			recs := tracked(r.Run.JobRecords)
			var ids []int
			var waits []float64
			for _, j := range recs {
				ids = append(ids, j.ID)
				waits = append(waits, hours(j.Wait))
				d.AddRow(name, p, j.ID, j.GPUs, j.Arrival, j.FirstStart, j.Wait, j.JCT)
			}
			pj, cd := report.PerJob(paper.Display(p), ids, waits), report.CDF(paper.Display(p), waits)
			pj.Look, cd.Look = paper.LookOf(p), paper.LookOf(p)
			perJob.Series = append(perJob.Series, pj)
			cdf.Series = append(cdf.Series, cd)
			s := slices.Sorted(slices.Values(waits))
			sum.AddRow(name, paper.Display(p), len(s), metrics.Mean(s), metrics.Quantile(s, 0.5), metrics.Quantile(s, 0.9), s[len(s)-1])
		}
		if len(perJob.Series) == 0 {
			continue
		}
		f.Add(fmt.Sprintf("fig12_wait_w%d", k), fmt.Sprintf("Wait time of each job, workload %d", k), perJob)
		f.Add(fmt.Sprintf("fig12_wait_cdf_w%d", k), fmt.Sprintf("CDF of wait times, workload %d", k), cdf)
	}
	f.Data = d
	f.Tables = []*report.Table{sum}
	return f
}

func tracked(recs []metrics.JobRecord) []metrics.JobRecord {
	var out []metrics.JobRecord
	for _, j := range recs {
		if j.Tracked {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b metrics.JobRecord) int { return a.ID - b.ID })
	return out
}

// fig13 is average JCT against the locality penalty, normalised to
// Tiresias at the same penalty, geomean over the swept traces.
func fig13(res *sweep.Result, plan paper.Plan) (*paper.Figure, []Headline) {
	ix := index(res)
	load := res.Grid.Base.ExtraLoad
	tr := plan.LocalityTraces
	f := &paper.Figure{ID: "fig13", Title: "Fig 13: average JCT vs locality penalty, Sia-Philly (FIFO, 16x4)", CSV: "fig13.csv",
		Text: fmt.Sprintf(`Average JCT of each placement as the inter-node locality penalty goes from 1.0 to 3.0, normalised to Tiresias
at the same penalty; geometric mean over Sia-Philly workloads %v (the artifact's sweep ran workload 6 only). The
paper: packing wins over random as L grows; PM-First's gain over Tiresias falls from 30%% to 9%%, PAL's only from
30%% to 20%%.`, tr)}
	c := &report.LineChart{Title: "Fig 13: average JCT vs locality penalty", XLabel: "locality penalty L",
		YLabel: "avg JCT / Tiresias (geomean)", Mark: report.LinesPoints}
	h := []string{"placement"}
	for _, l := range plan.LocalityPenalties {
		h = append(h, fmt.Sprintf("L=%g", l))
	}
	tab := report.NewTable("Average JCT / Tiresias at the same L (geomean over traces)", h...)
	d := report.NewTable("", "trace", "locality_penalty", "placement", "avg_jct_s", "avg_jct_vs_packed_sticky")
	geo := map[string][]float64{}
	for _, l := range plan.LocalityPenalties {
		g := siaRatios(ix, tr, load, l, "packed-sticky", avgJCT)
		for i, k := range tr {
			name := fmt.Sprintf("sia-philly/%d", k)
			for _, p := range paper.Placements {
				if r := ix.get(name, load, l, "fifo", p); r != nil {
					d.AddRow(name, l, p, r.AvgJCT, paper.Cell(g.vs[p][i]))
				}
			}
		}
		for _, p := range paper.Placements {
			geo[p] = append(geo[p], g.geo(p))
			d.AddRow("geomean", l, p, "", paper.Cell(g.geo(p)))
		}
	}
	for _, p := range paper.Placements {
		c.Series = append(c.Series, report.Series{Name: paper.Display(p), X: plan.LocalityPenalties, Y: geo[p], Look: paper.LookOf(p)})
		row := []any{paper.Display(p)}
		for _, v := range geo[p] {
			row = append(row, paper.Cell(v))
		}
		tab.AddRow(row...)
	}
	f.Add("fig13_locality", "Average JCT normalised to Tiresias at each locality penalty (geomean over traces)", c)
	f.Tables = []*report.Table{tab}
	f.Data = d

	at := func(p string, l float64) float64 {
		i := slices.Index(plan.LocalityPenalties, l)
		if i < 0 {
			return math.NaN()
		}
		return 100 * (geo[p][i] - 1)
	}
	scope := ""
	if len(tr) != 8 {
		scope = fmt.Sprintf(", workload %v only", tr)
	}
	return f, []Headline{
		{Figure: "13", Claim: "PAL avg JCT vs Tiresias at L = 1.0" + scope, Paper: -30, Ours: at("pal", 1.0)},
		{Figure: "13", Claim: "PAL avg JCT vs Tiresias at L = 3.0", Paper: -20, Ours: at("pal", 3.0)},
		{Figure: "13", Claim: "PM-First avg JCT vs Tiresias at L = 1.0", Paper: -30, Ours: at("pm-first", 1.0)},
		{Figure: "13", Claim: "PM-First avg JCT vs Tiresias at L = 3.0", Paper: -9, Ours: at("pm-first", 3.0)},
	}
}
