// Package migration is the migration-cost room of the paper experiments:
// what PAL's and the baselines' migrations cost when each one loses
// progress, on the Sia-Philly traces and on Synergy.
package migration

import (
	"fmt"
	"math"
	"strings"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// The migration-cost section: the paper's simulator, like the
// artifact, moves jobs for free, and PAL and PM-First re-place every job
// every round. Here every move costs a checkpoint and a restart: each
// grid runs one migration cost (the same for a preemption's restart) on
// the Sia-Philly traces of Fig 11 and on one Synergy load of Fig 14, under
// FIFO, for PAL and PM-First, their migration-aware variants (which move a
// running job only when the gain over its remaining work beats the cost)
// and both packed baselines.

// migrationPlacements are the placements of the migration section.
var migrationPlacements = []string{"pal", "pal-ma", "pm-first", "pm-first-ma", "packed-sticky", "packed-nonsticky"}

func init() {
	paper.DisplayNames["pal-ma"] = "PAL, migration-aware"
	paper.DisplayNames["pm-first-ma"] = "PM-First, migration-aware"
}

// migrationGrids makes one Sia-Philly and one Synergy grid per cost.
// Grids are the section's grids: sia and syn (the Fig 11 and Fig 20
// grids) at every migration cost of the plan.
func Grids(p paper.Plan, sia, syn sweep.Grid) (siaG, synG []*sweep.Grid) {
	for _, c := range p.MigrationCosts {
		s := sia
		s.Base.MigrationCost, s.Base.PreemptionCost = c, c
		s.Placements, s.Keep = migrationPlacements, nil
		siaG = append(siaG, &s)
		y := syn
		y.Base.MigrationCost, y.Base.PreemptionCost = c, c
		y.Loads, y.Localities, y.Schedulers = []float64{p.MigrationLoad}, nil, []string{"fifo"}
		y.Placements, y.Keep = migrationPlacements, nil
		synG = append(synG, &y)
	}
	return siaG, synG
}

// Cell is one placement at one cost on one family of traces.
type Cell struct {
	Ratio      float64 // avg JCT / Tiresias at the same cost (geomean)
	LostGPUH   float64 // GPU-hours lost to moves: Sia summed over traces, Synergy mean over seeds
	Migrations float64 // likewise
}

// Table is placement x cost.
type Table map[string][]Cell

// MigrationResult is the section's numbers, for the summary.
type MigrationResult struct {
	Costs           []float64
	Sia, Synergy    Table
	SiaTraces       []int
	SynergyLoad     float64
	SynergySeeds    []uint64
	SynergyCluster  string
	SiaRound, SynRd float64
}

func collect(res []*sweep.Result, one func(r *sweep.Row) bool, summed bool) Table {
	t := Table{}
	for _, rs := range res {
		for _, p := range migrationPlacements {
			var ratios []float64
			var lost, migr float64
			n := 0
			for i := range rs.Rows {
				r := &rs.Rows[i]
				if r.Placement != p || !one(r) {
					continue
				}
				ratios = append(ratios, r.VsPackedSticky)
				lost += r.LostGPUSeconds / 3600
				migr += float64(r.Migrations)
				n++
			}
			c := Cell{Ratio: math.NaN(), LostGPUH: math.NaN(), Migrations: math.NaN()}
			if n > 0 {
				c.Ratio = metrics.GeoMean(ratios)
				c.LostGPUH, c.Migrations = lost, migr
				if !summed {
					c.LostGPUH, c.Migrations = lost/float64(n), migr/float64(n)
				}
			}
			t[p] = append(t[p], c)
		}
	}
	return t
}

// Figure is the section's figure and numbers from the runs of Grids.
func Figure(sia, syn []*sweep.Result, plan paper.Plan) (*paper.Figure, *MigrationResult) {
	m := &MigrationResult{Costs: plan.MigrationCosts, SiaTraces: plan.SiaTraces, SynergyLoad: plan.MigrationLoad,
		SynergySeeds: plan.SynergySeeds, SynergyCluster: plan.SynergyCluster}
	m.Sia = collect(sia, func(*sweep.Row) bool { return true }, true)
	m.Synergy = collect(syn, func(*sweep.Row) bool { return true }, false)
	if len(sia) > 0 {
		m.SiaRound = sia[0].Grid.Base.Round
	}
	if len(syn) > 0 {
		m.SynRd = syn[0].Grid.Base.Round
	}

	f := &paper.Figure{ID: "migration", CSV: "migration.csv",
		Title: "Migration cost: average JCT and GPU time lost when moves are not free (FIFO)",
		Text: fmt.Sprintf(`Not in the paper: its simulator, like the artifact's, moves jobs for free, and PAL and PM-First re-place every
job every round. Here each migration costs a checkpoint and a restart: the job loses that many seconds of progress
while holding its GPUs (the same cost for restarting after a preemption), at %s. Sia-Philly: workloads %v, FIFO,
16x4, round %g s, the artifact's pinned inputs; Synergy: %d jobs at %g jobs/hour, FIFO, %s, round %g s, %s.
Average JCT is normalised to Tiresias (packed-sticky) at the same cost (geometric mean over traces or seeds);
GPU-hours lost are summed over the Sia-Philly traces and averaged over the Synergy seeds. The migration-aware
variants (-ma) keep a running job on its GPUs unless the move's expected gain over its remaining work exceeds
the cost.`, costsText(plan.MigrationCosts), plan.SiaTraces, m.SiaRound, plan.SynergyJobs, plan.MigrationLoad,
			plan.SynergyCluster, m.SynRd, paper.SeedsText(plan.SynergySeeds))}
	mins := make([]float64, len(plan.MigrationCosts))
	for i, c := range plan.MigrationCosts {
		mins[i] = c / 60
	}
	for _, fam := range []struct {
		id, name string
		t        Table
	}{{"sia", "Sia-Philly", m.Sia}, {"synergy", "Synergy", m.Synergy}} {
		ratio := &report.LineChart{Title: "Average JCT vs Tiresias by migration cost, " + fam.name,
			XLabel: "migration cost (minutes)", YLabel: "avg JCT / Tiresias at that cost", Mark: report.LinesPoints}
		lost := &report.LineChart{Title: "GPU-hours lost to moves, " + fam.name,
			XLabel: "migration cost (minutes)", YLabel: "GPU-hours lost", Mark: report.LinesPoints, YFromZero: true}
		for _, p := range migrationPlacements {
			var rs, ls []float64
			for _, c := range fam.t[p] {
				rs, ls = append(rs, c.Ratio), append(ls, c.LostGPUH)
			}
			ratio.Series = append(ratio.Series, report.Series{Name: paper.Display(p), X: mins, Y: rs, Look: paper.LookOf(p)})
			lost.Series = append(lost.Series, report.Series{Name: paper.Display(p), X: mins, Y: ls, Look: paper.LookOf(p)})
		}
		f.Add("migration_jct_"+fam.id, "Average JCT normalised to Tiresias at the same migration cost, "+fam.name, ratio)
		f.Add("migration_lost_"+fam.id, "GPU-hours lost to migrations and restarts, "+fam.name, lost)
		f.Tables = append(f.Tables, m.table(fam.name, fam.t))
	}
	d := report.NewTable("", "family", "migration_cost_s", "trace", "seed", "placement", "avg_jct_s", "avg_jct_vs_packed_sticky",
		"migrations", "preemptions", "lost_gpu_s")
	for _, fam := range []struct {
		name string
		res  []*sweep.Result
	}{{"sia-philly", sia}, {"synergy", syn}} {
		for i, rs := range fam.res {
			for _, r := range rs.Rows {
				d.AddRow(fam.name, plan.MigrationCosts[i], r.Trace, r.Seed, r.Placement, r.AvgJCT, paper.Cell(r.VsPackedSticky),
					r.Migrations, r.Preemptions, r.LostGPUSeconds)
			}
		}
	}
	f.Data = d
	return f, m
}

func costsText(cs []float64) string {
	var s []string
	for _, c := range cs {
		s = append(s, costLabel(c))
	}
	return "costs " + strings.Join(s, ", ")
}

func costLabel(c float64) string {
	switch {
	case c == 0:
		return "0 (free)"
	case c >= 60 && math.Mod(c, 60) == 0:
		return fmt.Sprintf("%g min", c/60)
	}
	return fmt.Sprintf("%g s", c)
}

// table is placement x cost: avg JCT vs Tiresias, GPU-hours lost and
// migrations.
func (m *MigrationResult) table(family string, t Table) *report.Table {
	h := []string{"placement"}
	for _, c := range m.Costs {
		h = append(h, "JCT vs Tiresias @ "+costLabel(c))
	}
	for _, c := range m.Costs {
		h = append(h, "GPU-h lost @ "+costLabel(c))
	}
	for _, c := range m.Costs {
		h = append(h, "migrations @ "+costLabel(c))
	}
	tab := report.NewTable(family+": average JCT vs Tiresias at the same cost, GPU-hours lost and migrations", h...)
	for _, p := range migrationPlacements {
		row := []any{paper.Display(p)}
		for _, c := range t[p] {
			row = append(row, paper.PctCell(paper.Pct(c.Ratio)))
		}
		for _, c := range t[p] {
			row = append(row, fmt.Sprintf("%.1f", c.LostGPUH))
		}
		for _, c := range t[p] {
			row = append(row, fmt.Sprintf("%.0f", c.Migrations))
		}
		tab.AddRow(row...)
	}
	return tab
}

// Markdown is the section of summary.md: the tables and a plain answer to
// whether PAL's gain survives realistic costs.
func (m *MigrationResult) Markdown() string {
	if m == nil || len(m.Costs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Migration cost: does PAL's gain survive when moves are not free?\n\n")
	fmt.Fprintf(&b, "Every migration costs the job that many seconds of progress while it holds its GPUs (%s; a restart after a preemption costs the same). FIFO; Sia-Philly workloads %v (ratios: geomean over traces; GPU-hours lost and migrations: summed) and Synergy at %g jobs/hour on %s (%s; lost and migrations: mean over seeds). Average JCT is against Tiresias (packed-sticky) at the same cost.\n\n",
		costsText(m.Costs), m.SiaTraces, m.SynergyLoad, m.SynergyCluster, paper.SeedsText(m.SynergySeeds))
	for _, fam := range []struct {
		name string
		t    Table
	}{{"Sia-Philly", m.Sia}, {"Synergy", m.Synergy}} {
		m.table(fam.name, fam.t).WriteMarkdown(&b)
		b.WriteString("\n")
	}
	b.WriteString(m.verdict())
	return b.String()
}

// verdict says, from the numbers, whether PAL still beats Tiresias as
// moves get dearer, from which cost it stops, and what the
// migration-aware variant keeps.
func (m *MigrationResult) verdict() string {
	last := len(m.Costs) - 1
	var parts, palLost, maLost []string
	for _, fam := range []struct {
		name string
		t    Table
	}{{"Sia-Philly", m.Sia}, {"Synergy", m.Synergy}} {
		if c := firstLoss(fam.t["pal"]); c >= 0 {
			palLost = append(palLost, fmt.Sprintf("on %s from %s per move", fam.name, costLabel(m.Costs[c])))
		}
		if c := firstLoss(fam.t["pal-ma"]); c >= 0 {
			maLost = append(maLost, fmt.Sprintf("on %s from %s per move", fam.name, costLabel(m.Costs[c])))
		}
		pal, ma := fam.t["pal"], fam.t["pal-ma"]
		parts = append(parts, fmt.Sprintf("on %s, PAL against Tiresias is %s with free moves and %s at %s; migration-aware PAL %s and %s, with %.0f migrations (PAL: %.0f) and %.1f GPU-hours lost (PAL: %.1f) at %s",
			fam.name, paper.PctCell(paper.Pct(pal[0].Ratio)), ratios(pal[1:]), costsList(m.Costs[1:]), paper.PctCell(paper.Pct(ma[0].Ratio)), ratios(ma[1:]),
			ma[last].Migrations, pal[last].Migrations, ma[last].LostGPUH, pal[last].LostGPUH, costLabel(m.Costs[last])))
	}
	var answer string
	switch {
	case len(palLost) == 0 && len(maLost) == 0:
		answer = fmt.Sprintf("**Yes: PAL's gain over Tiresias survives every cost measured, up to %s per move.**", costLabel(m.Costs[last]))
	case len(maLost) == 0:
		answer = fmt.Sprintf("**Only if PAL stops moving jobs for free: PAL as the paper runs it, re-placing every job every round, loses its gain over Tiresias %s; migration-aware PAL keeps it at every cost measured, up to %s per move.**",
			strings.Join(palLost, " and "), costLabel(m.Costs[last]))
	default:
		answer = fmt.Sprintf("**No: PAL loses its gain over Tiresias %s, and migration-aware PAL %s.**", orNever(palLost), strings.Join(maLost, " and "))
	}
	return answer + " " + capitalise(strings.Join(parts, "; ")) + ".\n"
}

// firstLoss is the first cost at which a placement is no better than
// Tiresias, or -1.
func firstLoss(cs []Cell) int {
	for i, c := range cs {
		if !(c.Ratio < 1) {
			return i
		}
	}
	return -1
}

func orNever(s []string) string {
	if len(s) == 0 {
		return "at no cost measured"
	}
	return strings.Join(s, " and ")
}

func ratios(cs []Cell) string {
	var s []string
	for _, c := range cs {
		s = append(s, paper.PctCell(paper.Pct(c.Ratio)))
	}
	return strings.Join(s, " / ")
}

func costsList(cs []float64) string {
	var s []string
	for _, c := range cs {
		s = append(s, costLabel(c))
	}
	return strings.Join(s, " / ")
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
