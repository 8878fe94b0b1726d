// Package stale is the stale-profiles room of the paper
// experiments: PAL believing an old profile after some GPUs slowed down,
// with and without online PM-score learning, against the oracle and
// packed-sticky, as `pal-reproduce stale` writes it.
package stale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The stale-profiles section: the scheduler's profile was right when it
// was taken, but since then StaleFraction of the GPUs (drawn with
// StaleSeed) have degraded by StaleFactor for every class (thermal
// throttling, a power cap, a replaced board). Four runs per trace, all
// FIFO:
//
//	oracle          PAL believing the true (degraded) table
//	oracle+learning the same with online learning (it must change nothing)
//	stale           PAL believing the old profile, GPUs running at the truth
//	stale+learning  the same with online PM-score learning (--learn-scores)
//	packed-sticky   the variability-blind baseline (Tiresias)
//
// on the Sia-Philly traces (16x4, the artifact's pinned table as the old
// profile) and on Synergy (the plan's cluster, load MigrationLoad, the
// table drawn for each seed as the old profile).

// Stale-profile degradation: which GPUs and by how much. StaleSeed is
// the draw of the section's main table; StaleDraws more (seeds
// StaleSeed..StaleSeed+StaleDraws-1) make its spread table, because one
// draw's average JCT is one sample of a queue that a single placement
// can reshuffle: on Sia-Philly 4 the pinned profile beats the oracle
// itself on the main draw.
const (
	StaleFraction = 0.2
	StaleFactor   = 1.5
	StaleSeed     = 1
	StaleDraws    = 11
)

// StaleDir is the section's directory under the output directory.
const StaleDir = "stale"

// staleVariants are the section's runs, in table order. gpu-learning is
// learning from each GPU's own pace (--learn-from gpu): what a learner
// knows once a job has run on a GPU, when workers time their own step.
// Job-pace learning cannot know more, so its distance from gpu-learning
// is the cost of attribution (the max over a job's GPUs), and
// gpu-learning's from the oracle the cost of having to run on a GPU to
// know it.
//
// dcgm adds telemetry's priors to job-pace learning (--gpu-hints): a
// simulated DCGM exporter that sees every other degraded GPU of the draw
// (a clock held down: thermal throttling, a power cap) from the start,
// at its true slowdown, and not the others (a slower replacement board
// runs at a normal clock). Telemetry that saw every degradation would
// give the oracle exactly; half shows what a partial view is worth.
var staleVariants = []string{"oracle", "oracle+learning", "stale", "stale+learning", "stale+learning+dcgm", "stale+gpu-learning", "packed-sticky"}

// StaleRow is one trace's average JCTs, by variant.
type StaleRow struct {
	Family, Trace string
	AvgJCT        map[string]float64
}

// StaleResult is the section's numbers.
type StaleResult struct {
	Dir      string
	Degraded map[string][]int // family -> degraded GPU ids (main draw)
	Rows     []StaleRow       // the main draw
	// Geomean by family and variant; Recovered is (stale - learning) /
	// (stale - oracle) on the geomeans (main draw).
	Geomean   map[string]map[string]float64
	Recovered map[string]float64
	// Draws are the rows of every draw (Draws[0] is Rows), by draw seed
	// in DrawSeeds.
	DrawSeeds []uint64
	Draws     [][]StaleRow
	// Convergence is how fast learning closes the gap, by family, and
	// Figures its charts' base names in Dir.
	Convergence []Convergence
	Figures     []string
	// Patterns are the random patterns' runs (patterns.go).
	Patterns []PatternRun
	// Quarantine is the quarantine variant's runs (quarantine.go).
	Quarantine *QuarantineResult
	Markdown   string
}

// degrade copies t with the GPUs degraded for every class, choosing
// round(frac x N) GPUs with a seeded draw without replacement.
func degrade(t *variability.Table, frac, factor float64, seed uint64) (*variability.Table, []int) {
	n := t.NumGPUs()
	rng := variability.NewRand(seed)
	bad := rng.Perm(n)[:int(math.Round(frac*float64(n)))]
	slices.Sort(bad)
	out := &variability.Table{}
	for c := range out.Values {
		out.Values[c] = slices.Clone(t.Values[c])
		for _, g := range bad {
			out.Values[c][g] *= factor
		}
	}
	return out, bad
}

func writeTable(path string, t *variability.Table, per int, comments []string) error {
	gs := &variability.GPUScores{Table: t, Node: make([]int, t.NumGPUs()), UUID: make([]string, t.NumGPUs())}
	for g := range gs.Node {
		gs.Node[g] = g / per
	}
	var b bytes.Buffer
	if err := variability.WriteGPUScores(&b, gs, comments); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// RunStale runs the stale-profiles section and writes it under
// out/StaleDir (the tables it made, stale.csv, draws.csv and stale.md);
// d draws the convergence charts.
func RunStale(ctx context.Context, plan paper.Plan, out string, workers int, log io.Writer, d report.Drawer) (*StaleResult, error) {
	dir := filepath.Join(out, StaleDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &StaleResult{Dir: dir, Degraded: map[string][]int{}, Geomean: map[string]map[string]float64{}, Recovered: map[string]float64{}}
	for i := range StaleDraws {
		res.DrawSeeds = append(res.DrawSeeds, StaleSeed+uint64(i))
	}
	// truthFile is the degraded table of one draw: the main draw's under
	// the names the section has always used, the others by seed.
	truthFile := func(name string, draw uint64) string {
		if draw == StaleSeed {
			return filepath.Join(dir, name+"-truth.csv")
		}
		return filepath.Join(dir, fmt.Sprintf("%s-truth-draw%d.csv", name, draw))
	}

	// The workloads and their old profiles: the patterns' runs use them
	// as they are, the degradation draws below with their own truths.
	wls, siaW, err := patternWorkloads(plan, dir)
	if err != nil {
		return nil, err
	}
	nSia := len(paper.SiaNames(plan.SiaTraces))
	pinned, siaOld, sia := siaW.table, siaW.old, siaW.grid.Base
	var grids []*sweep.Grid
	var keys []string // draw, family and variant of each grid
	add := func(draw uint64, fam string, g sweep.Grid, old, tru, hints string) {
		for _, v := range staleVariants {
			gg := g
			gg.Base.GPUScores, gg.Base.ActualGPUScores, gg.Base.LearnScores = old, tru, false
			gg.Placements = []string{sectionPlacement}
			gg.Keep = func(sweep.Point) bool { return kept(v) }
			switch v {
			case "oracle":
				gg.Base.GPUScores, gg.Base.ActualGPUScores = tru, ""
			case "oracle+learning":
				gg.Base.GPUScores, gg.Base.ActualGPUScores, gg.Base.LearnScores = tru, "", true
			case "stale+learning":
				gg.Base.LearnScores = true
			case "stale+learning+dcgm":
				gg.Base.LearnScores, gg.Base.GPUHints = true, hints
			case "stale+gpu-learning":
				gg.Base.LearnScores, gg.Base.LearnFrom = true, "gpu"
			case "packed-sticky":
				gg.Base.GPUScores, gg.Base.ActualGPUScores = tru, ""
				gg.Placements = []string{"packed-sticky"}
			}
			grids = append(grids, &gg)
			keys = append(keys, fmt.Sprintf("%d\x00%s\x00%s", draw, fam, v))
		}
	}
	writeTruth := func(path string, t *variability.Table, per int, draw uint64, bad []int) error {
		note := fmt.Sprintf("%.0f%% of GPUs (seed %d) x %g for every class", 100*StaleFraction, draw, StaleFactor)
		return writeTable(path, t, per, []string{"truth: the old profile with " + note, fmt.Sprintf("degraded GPUs: %v", bad)})
	}
	// hintsFile is the truth file's DCGM view: every other degraded GPU.
	hintsFile := func(truth string, bad []int) (string, error) {
		path := strings.TrimSuffix(truth, ".csv") + "-dcgm.csv"
		var b strings.Builder
		b.WriteString("# what a DCGM exporter shows: every other degraded GPU of the draw, held down from the start\ntime_s,gpu,slowdown\n")
		for i := 0; i < len(bad); i += 2 {
			fmt.Fprintf(&b, "0,%d,%g\n", bad[i], StaleFactor)
		}
		return path, os.WriteFile(path, []byte(b.String()), 0o644)
	}
	for _, draw := range res.DrawSeeds {
		truth, bad := degrade(pinned, StaleFraction, StaleFactor, draw)
		if draw == StaleSeed {
			res.Degraded["sia-philly"] = bad
		}
		tru := truthFile("sia", draw)
		if err := writeTruth(tru, truth, 4, draw, bad); err != nil {
			return nil, err
		}
		hints, err := hintsFile(tru, bad)
		if err != nil {
			return nil, err
		}
		add(draw, "sia-philly", sweep.Grid{Base: sia, Traces: paper.SiaNames(plan.SiaTraces), Schedulers: []string{"fifo"}}, siaOld, tru, hints)
	}
	// Synergy: each seed's drawn table is that seed's old profile.
	for i, seed := range plan.SynergySeeds {
		w := wls[nSia+i]
		old, per, synGrid := w.old, w.per, w.grid
		for _, draw := range res.DrawSeeds {
			t, bad := degrade(w.table, StaleFraction, StaleFactor, draw)
			name := fmt.Sprintf("synergy-seed%d", seed)
			if draw == StaleSeed {
				res.Degraded[name] = bad
			}
			tru := truthFile(name, draw)
			if err := writeTruth(tru, t, per, draw, bad); err != nil {
				return nil, err
			}
			hints, err := hintsFile(tru, bad)
			if err != nil {
				return nil, err
			}
			add(draw, "synergy", synGrid, old, tru, hints)
		}
	}
	if log != nil {
		fmt.Fprintf(log, "reproduce: stale profiles, %d runs\n", len(grids))
	}
	results, err := sweep.Run(ctx, grids, sweep.RunOptions{Workers: workers})
	if err != nil {
		return nil, err
	}
	rows := map[string]*StaleRow{}
	jobs := map[string]map[string][]metrics.JobRecord{}
	order := map[uint64][]string{}
	for i, r := range results {
		parts := strings.SplitN(keys[i], "\x00", 3)
		draw, _ := strconv.ParseUint(parts[0], 10, 64)
		fam, v := parts[1], parts[2]
		for _, row := range r.Rows {
			tr := row.Trace
			if row.IsSynergy() {
				tr = fmt.Sprintf("synergy %g jobs/h seed %d", row.Load, row.Seed)
			}
			k := parts[0] + "\x00" + fam + "\x00" + tr
			if rows[k] == nil {
				rows[k] = &StaleRow{Family: fam, Trace: tr, AvgJCT: map[string]float64{}}
				order[draw] = append(order[draw], k)
			}
			rows[k].AvgJCT[v] = row.AvgJCT
			if kept(v) {
				if row.Run == nil {
					return nil, fmt.Errorf("stale: %s %s kept no job records", tr, v)
				}
				if jobs[k] == nil {
					jobs[k] = map[string][]metrics.JobRecord{}
				}
				jobs[k][v] = row.Run.JobRecords
			}
		}
	}
	for _, draw := range res.DrawSeeds {
		var rs []StaleRow
		for _, k := range order[draw] {
			rs = append(rs, *rows[k])
		}
		res.Draws = append(res.Draws, rs)
	}
	res.Rows = res.Draws[0]
	if res.Convergence, err = convergence(jobs, []string{"sia-philly", "synergy"}); err != nil {
		return nil, err
	}
	if res.Figures, err = writeConvergence(dir, res.Convergence, d); err != nil {
		return nil, err
	}
	if res.Patterns, err = runPatterns(ctx, dir, wls, nil, nil, sectionPlacement, workers, log); err != nil {
		return nil, err
	}
	if res.Quarantine, err = runQuarantine(ctx, dir, workers, log); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "quarantine.csv"), []byte(quarantineCSV(res.Quarantine)), 0o644); err != nil {
		return nil, err
	}
	for _, fam := range []string{"sia-philly", "synergy"} {
		gm := geomeans(res.Rows, fam)
		res.Geomean[fam] = gm
		res.Recovered[fam] = recovered(gm)
	}
	res.Markdown = res.markdown(plan)
	if err := os.WriteFile(filepath.Join(dir, "stale.md"), []byte(res.Markdown), 0o644); err != nil {
		return nil, err
	}
	header := "family,trace,oracle_avg_jct_s,oracle_learning_avg_jct_s,stale_avg_jct_s,learning_avg_jct_s,learning_dcgm_avg_jct_s,gpu_learning_avg_jct_s,packed_sticky_avg_jct_s,recovered\n"
	line := func(b *strings.Builder, r StaleRow) {
		fmt.Fprintf(b, "%s,%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f\n", r.Family, r.Trace, r.AvgJCT["oracle"], r.AvgJCT["oracle+learning"], r.AvgJCT["stale"],
			r.AvgJCT["stale+learning"], r.AvgJCT["stale+learning+dcgm"], r.AvgJCT["stale+gpu-learning"], r.AvgJCT["packed-sticky"], recovered(r.AvgJCT))
	}
	var csv, draws strings.Builder
	csv.WriteString(header)
	draws.WriteString("draw," + header)
	for _, r := range res.Rows {
		line(&csv, r)
	}
	for i, rs := range res.Draws {
		for _, r := range rs {
			fmt.Fprintf(&draws, "%d,", res.DrawSeeds[i])
			line(&draws, r)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "stale.csv"), []byte(csv.String()), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "draws.csv"), []byte(draws.String()), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// arrivalSpan is the seconds from a trace's first tracked arrival to its
// last: the background arrivals after a Sia-Philly trace go on for weeks
// after the jobs that are measured have finished, and a change timed
// within them would never meet a measured job.
func arrivalSpan(t *workload.Trace) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, j := range t.Jobs {
		if j.Tracked {
			lo, hi = min(lo, j.Submit), max(hi, j.Submit)
		}
	}
	if !(hi > lo) {
		return 1
	}
	return hi - lo
}

// geomeans is the geometric mean of every variant over fam's rows.
func geomeans(rows []StaleRow, fam string) map[string]float64 {
	gm := map[string]float64{}
	for _, v := range staleVariants {
		var xs []float64
		for _, r := range rows {
			if r.Family == fam {
				xs = append(xs, r.AvgJCT[v])
			}
		}
		gm[v] = metrics.GeoMean(xs)
	}
	return gm
}

// recovered is the share of oracle's gain over stale that learning wins
// back: (stale - learning) / (stale - oracle); NaN without a gain.
func recovered(m map[string]float64) float64 { return recoveredBy(m, "stale+learning") }

// recoveredBy is (stale - m[learner]) / (stale - oracle), NaN when the
// oracle gains nothing over stale.
func recoveredBy(m map[string]float64, learner string) float64 {
	gap := m["stale"] - m["oracle"]
	if !(gap > 0) {
		return math.NaN()
	}
	return (m["stale"] - m[learner]) / gap
}

func (r *StaleResult) markdown(plan paper.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Stale profiles: learning PM-scores online\n\n")
	fmt.Fprintf(&b, "Not in the paper. The profile the scheduler believes was right when taken, but %.0f%% of the GPUs (drawn with seed %d) have since degraded by x%g for every class. FIFO, PAL unless named; oracle believes the truth (oracle+learning adds `--learn-scores` to it), stale the old profile while GPUs run at the truth, stale+learning adds `--learn-scores` (learning from each job's pace, the slowest of its GPUs), stale+learning+dcgm adds `--gpu-hints` to it (a simulated DCGM exporter that shows every other degraded GPU held down from the start, at its slowdown, and not the others, as a slower replacement board would not show), stale+gpu-learning adds `--learn-scores --learn-from gpu` (each GPU's own pace: what a learner can know once a job has run on a GPU), packed-sticky (Tiresias) ignores variability. Sia-Philly: workloads %v on 16x4 with the artifact's pinned table as the old profile; Synergy: %d jobs at %g jobs/hour on %s, seeds %v, each seed's drawn table as its old profile. The tables are in %s/. Recovered = (stale - learning) / (stale - oracle).\n\n",
		100*StaleFraction, StaleSeed, StaleFactor, plan.SiaTraces, plan.SynergyJobs, plan.MigrationLoad, plan.SynergyCluster, plan.SynergySeeds, StaleDir)
	b.WriteString("| trace | oracle | oracle+learning | stale | stale+learning | stale+learning+dcgm | stale+gpu-learning | packed-sticky | recovered |\n|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, m map[string]float64) {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", name, m["oracle"], m["oracle+learning"], m["stale"], m["stale+learning"], m["stale+learning+dcgm"], m["stale+gpu-learning"], m["packed-sticky"], sharePct(recovered(m)))
	}
	for _, rr := range r.Rows {
		row(rr.Trace, rr.AvgJCT)
	}
	for _, fam := range []string{"sia-philly", "synergy"} {
		row("**"+fam+" geomean**", r.Geomean[fam])
	}
	b.WriteString("\n")
	if len(r.Draws) > 1 {
		r.drawsMarkdown(&b)
	}
	if len(r.Convergence) > 0 {
		r.convergenceMarkdown(&b)
	}
	if len(r.Patterns) > 0 {
		patternsMarkdown(&b, r.Patterns)
	}
	if r.Quarantine != nil {
		quarantineMarkdown(&b, r.Quarantine)
	}
	return b.String()
}

// DrawStats is one trace over the degradation draws.
type DrawStats struct {
	Trace string
	// Median average JCT by variant.
	Median map[string]float64
	// LearnVsStale is stale+learning / stale per draw, and Above the
	// draws where it exceeds 1; GPUAbove the same for stale+gpu-learning.
	LearnVsStale    []float64
	Above, GPUAbove []uint64
}

// DrawStats summarises every trace over the draws, in table order.
func (r *StaleResult) DrawStats() []DrawStats {
	var out []DrawStats
	for i, row := range r.Rows {
		d := DrawStats{Trace: row.Trace, Median: map[string]float64{}}
		for _, v := range staleVariants {
			var xs []float64
			for _, rs := range r.Draws {
				xs = append(xs, rs[i].AvgJCT[v])
			}
			d.Median[v] = metrics.Median(xs)
		}
		for k, rs := range r.Draws {
			m := rs[i].AvgJCT
			d.LearnVsStale = append(d.LearnVsStale, m["stale+learning"]/m["stale"])
			if m["stale+learning"] > m["stale"] {
				d.Above = append(d.Above, r.DrawSeeds[k])
			}
			if m["stale+gpu-learning"] > m["stale"] {
				d.GPUAbove = append(d.GPUAbove, r.DrawSeeds[k])
			}
		}
		out = append(out, d)
	}
	return out
}

// DrawRecovered is each draw's recovery on fam's geomean, by draw.
func (r *StaleResult) DrawRecovered(fam string) []float64 {
	var out []float64
	for _, rs := range r.Draws {
		out = append(out, recovered(geomeans(rs, fam)))
	}
	return out
}

func (r *StaleResult) drawsMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "### Over %d degradation draws (seeds %d-%d)\n\n", len(r.Draws), r.DrawSeeds[0], r.DrawSeeds[len(r.DrawSeeds)-1])
	fmt.Fprintf(b, "One draw's average JCT is one sample of a queue that a single placement can reshuffle. The same runs with every draw of the degraded GPUs: medians over the draws, learning against stale per draw, and the draws on which each learner ends above stale. Every run is in %s/draws.csv.\n\n", StaleDir)
	b.WriteString("| trace | oracle | stale | stale+learning | stale+gpu-learning | learning / stale, median [range] | learning above stale | gpu-learning above stale |\n|---|---|---|---|---|---|---|---|\n")
	seeds := func(xs []uint64) string {
		if len(xs) == 0 {
			return "none"
		}
		var ss []string
		for _, x := range xs {
			ss = append(ss, strconv.FormatUint(x, 10))
		}
		return fmt.Sprintf("%d (seed %s)", len(xs), strings.Join(ss, ", "))
	}
	for _, d := range r.DrawStats() {
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f | %.3f [%.3f-%.3f] | %s | %s |\n", d.Trace, d.Median["oracle"], d.Median["stale"], d.Median["stale+learning"], d.Median["stale+gpu-learning"],
			metrics.Median(d.LearnVsStale), slices.Min(d.LearnVsStale), slices.Max(d.LearnVsStale), seeds(d.Above), seeds(d.GPUAbove))
	}
	b.WriteString("\n")
	for _, fam := range []string{"sia-philly", "synergy"} {
		rec := r.DrawRecovered(fam)
		below := 0
		for _, x := range rec {
			if !(x >= 0.8) {
				below++
			}
		}
		fmt.Fprintf(b, "- %s geomean, recovered per draw: median %s, range %s-%s; below 80%% on %d of %d draws.\n", fam, sharePct(metrics.Median(rec)), sharePct(slices.Min(rec)), sharePct(slices.Max(rec)), below, len(rec))
	}
	b.WriteString("\n")
}

func sharePct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}
