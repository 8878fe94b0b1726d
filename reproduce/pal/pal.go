package pal

import (
	"fmt"

	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// Result is PAL's part of a reproduction: its figures in the paper's
// order (11 to 18, then 20), the headline claims, where each packed
// flavour wins on the Fig 11 traces, and the placement overhead rows.
type Result struct {
	Figures   []*paper.Figure
	Headlines []Headline
	Packed    PackedOrder
	Overhead  []OverheadRow
}

// Figures builds every PAL figure from the sweep's results of
// GridsOf(plan).List(), in that order, and Fig 18 from RunBenches' timings.
func Figures(res []*sweep.Result, benches []BenchResult, plan paper.Plan) (*Result, error) {
	ns := len(paper.SynergySchedulers)
	if len(res) != 3+ns {
		return nil, fmt.Errorf("reproduce: %d PAL grid results, want %d (Sia, locality, %d Synergy, Fig 20)", len(res), 3+ns, ns)
	}
	sia, loc, f20 := res[0], res[1], res[2+ns]
	syn := map[string]*sweep.Result{}
	for i, s := range paper.SynergySchedulers {
		syn[s] = res[2+i]
	}
	r := &Result{}
	f11, h11, po := fig11(sia, plan)
	r.Packed = po
	f13, h13 := fig13(loc, plan)
	r.Figures = append(r.Figures, f11, fig12(sia, plan), f13)
	r.Headlines = append(r.Headlines, h11...)
	r.Headlines = append(r.Headlines, h13...)
	f14, h14 := synergyLoadFigure(syn["fifo"], "fifo", plan)
	r.Figures = append(r.Figures, f14, fig15(syn["fifo"], plan))
	r.Headlines = append(r.Headlines, h14...)
	for _, s := range []string{"las", "srtf"} {
		f, h := synergyLoadFigure(syn[s], s, plan)
		r.Figures = append(r.Figures, f)
		r.Headlines = append(r.Headlines, h...)
	}
	f18, over := fig18(benches)
	f20f, h20 := fig20(f20, plan)
	r.Figures = append(r.Figures, f18, f20f)
	r.Headlines = append(r.Headlines, h20...)
	r.Overhead = over
	return r, nil
}

// Summary is PAL's summary.md: settings, the packed-label swap, the
// headline table, deviations (full plan only), the overhead comparison
// and the notes given, one bullet each.
func (r *Result) Summary(plan paper.Plan, notes []string) string {
	return summaryMarkdown(plan, r.Headlines, r.Packed, r.Overhead, notes)
}

// Notes are what a reader of PAL's summary must know about its inputs:
// where the Synergy traces and GPU values come from, and that the
// Sia-Philly runs replay the artifact's pinned inputs.
func Notes(plan paper.Plan) []string {
	return []string{
		"Synergy traces cannot be the artifact's: its Philly `cluster_job_log` is absent, so GPU demands come from the embedded processed Philly trace, and lengths and Poisson arrivals from our own seeded generator (the artifact builds them from that log; see data/PROVENANCE.md). Synergy numbers are therefore the same experiment on a different draw, not a replay.",
		fmt.Sprintf("On 64x4 the artifact's pinned GPU table does not exist, so Synergy GPU values are drawn from the Longhorn profile (with replacement), per seed %v; each seed also draws its own Synergy trace. Synergy ratios are geometric means over the seeds, and the seed range is shown beside them.", plan.SynergySeeds),
		"The Sia-Philly runs replay the artifact's pinned inputs (its seed-42 GPU table and extra arrivals), so Figs 11-13 are deterministic replays of the artifact's configuration, not draws.",
		"Fig 12 wait = JCT minus time holding GPUs (queueing, suspension and round quantisation).",
	}
}
