// Package stale is the stale-profiles room of the paper
// experiments: PAL believing an old profile after some GPUs slowed down,
// with and without online PM-score learning, against the oracle and
// packed-sticky, as `pal reproduce stale` writes it.
package stale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/data"
	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
	"github.com/palsched/pal/variability"
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

// Stale-profile degradation: which GPUs and by how much.
const (
	StaleFraction = 0.2
	StaleFactor   = 1.5
	StaleSeed     = 1
)

// StaleDir is the section's directory under the output directory.
const StaleDir = "stale"

// staleVariants are the section's runs, in table order.
var staleVariants = []string{"oracle", "oracle+learning", "stale", "stale+learning", "packed-sticky"}

// StaleRow is one trace's average JCTs, by variant.
type StaleRow struct {
	Family, Trace string
	AvgJCT        map[string]float64
}

// StaleResult is the section's numbers.
type StaleResult struct {
	Dir      string
	Degraded map[string][]int // family -> degraded GPU ids
	Rows     []StaleRow
	// Geomean by family and variant; Recovered is (stale - learning) /
	// (stale - oracle) on the geomeans.
	Geomean   map[string]map[string]float64
	Recovered map[string]float64
	Markdown  string
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
// out/StaleDir (the tables it made, stale.csv and stale.md).
func RunStale(ctx context.Context, plan paper.Plan, out string, workers int, log io.Writer) (*StaleResult, error) {
	dir := filepath.Join(out, StaleDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base, err := plan.Base()
	if err != nil {
		return nil, err
	}
	res := &StaleResult{Dir: dir, Degraded: map[string][]int{}, Geomean: map[string]map[string]float64{}, Recovered: map[string]float64{}}
	note := fmt.Sprintf("%.0f%% of GPUs (seed %d) x %g for every class", 100*StaleFraction, StaleSeed, StaleFactor)

	// Sia-Philly: the pinned 16x4 table is the old profile.
	b, err := fs.ReadFile(data.Reference, "reference/pal-artifact-gpu-pmscores.csv")
	if err != nil {
		return nil, err
	}
	pinned, err := variability.ReadGPUScores("pal-artifact-gpu-pmscores.csv", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	siaOld := filepath.Join(dir, "sia-profile.csv")
	siaTrue := filepath.Join(dir, "sia-truth.csv")
	truth, bad := degrade(pinned.Table, StaleFraction, StaleFactor, StaleSeed)
	res.Degraded["sia-philly"] = bad
	if err := writeTable(siaOld, pinned.Table, 4, []string{"old profile: the artifact's pinned seed-42 table"}); err != nil {
		return nil, err
	}
	if err := writeTable(siaTrue, truth, 4, []string{"truth: the old profile with " + note, fmt.Sprintf("degraded GPUs: %v", bad)}); err != nil {
		return nil, err
	}
	sia := base
	sia.Scheduler = "fifo"
	var grids []*sweep.Grid
	var fams []string
	add := func(fam string, g sweep.Grid, old, tru string) {
		for _, v := range staleVariants {
			gg := g
			gg.Base.GPUScores, gg.Base.ActualGPUScores, gg.Base.LearnScores = old, tru, false
			gg.Placements = []string{"pal"}
			switch v {
			case "oracle":
				gg.Base.GPUScores, gg.Base.ActualGPUScores = tru, ""
			case "oracle+learning":
				gg.Base.GPUScores, gg.Base.ActualGPUScores, gg.Base.LearnScores = tru, "", true
			case "stale+learning":
				gg.Base.LearnScores = true
			case "packed-sticky":
				gg.Base.GPUScores, gg.Base.ActualGPUScores = tru, ""
				gg.Placements = []string{"packed-sticky"}
			}
			grids = append(grids, &gg)
			fams = append(fams, fam+"\x00"+v)
		}
	}
	add("sia-philly", sweep.Grid{Base: sia, Traces: paper.SiaNames(plan.SiaTraces), Schedulers: []string{"fifo"}}, siaOld, siaTrue)

	// Synergy: each seed's drawn table is that seed's old profile.
	syn := base
	syn.Cluster, syn.Round, syn.LocalityPenalty, syn.Pinned = plan.SynergyCluster, plan.SynergyRound, plan.SynergyL, false
	_, per, err := cluster.ParseShape(plan.SynergyCluster)
	if err != nil {
		return nil, err
	}
	track := plan.SynergyTrack
	for _, seed := range plan.SynergySeeds {
		o := syn
		o.Seed = seed
		o.Trace = "sia-philly/1" // only its GPU draw is used here
		in, err := experiment.Prepare(o)
		if err != nil {
			return nil, err
		}
		old := filepath.Join(dir, fmt.Sprintf("synergy-seed%d-profile.csv", seed))
		tru := filepath.Join(dir, fmt.Sprintf("synergy-seed%d-truth.csv", seed))
		t, bad := degrade(in.Raw, StaleFraction, StaleFactor, StaleSeed)
		res.Degraded[fmt.Sprintf("synergy-seed%d", seed)] = bad
		if err := writeTable(old, in.Raw, per, []string{"old profile: " + in.RawFrom}); err != nil {
			return nil, err
		}
		if err := writeTable(tru, t, per, []string{"truth: the old profile with " + note, fmt.Sprintf("degraded GPUs: %v", bad)}); err != nil {
			return nil, err
		}
		add("synergy", sweep.Grid{Base: syn, Traces: []string{sweep.SynergyTrace}, Loads: []float64{plan.MigrationLoad},
			Seeds: []uint64{seed}, Schedulers: []string{"fifo"}, Synergy: sweep.SynergySpec{Jobs: plan.SynergyJobs, Track: &track}}, old, tru)
	}
	if log != nil {
		fmt.Fprintf(log, "reproduce: stale profiles, %d runs\n", len(grids))
	}
	results, err := sweep.Run(ctx, grids, sweep.RunOptions{Workers: workers})
	if err != nil {
		return nil, err
	}
	rows := map[string]*StaleRow{}
	var order []string
	for i, r := range results {
		fam, v, _ := strings.Cut(fams[i], "\x00")
		for _, row := range r.Rows {
			tr := row.Trace
			if row.IsSynergy() {
				tr = fmt.Sprintf("synergy %g jobs/h seed %d", row.Load, row.Seed)
			}
			k := fam + "\x00" + tr
			if rows[k] == nil {
				rows[k] = &StaleRow{Family: fam, Trace: tr, AvgJCT: map[string]float64{}}
				order = append(order, k)
			}
			rows[k].AvgJCT[v] = row.AvgJCT
		}
	}
	for _, k := range order {
		res.Rows = append(res.Rows, *rows[k])
	}
	for _, fam := range []string{"sia-philly", "synergy"} {
		gm := map[string]float64{}
		for _, v := range staleVariants {
			var xs []float64
			for _, r := range res.Rows {
				if r.Family == fam {
					xs = append(xs, r.AvgJCT[v])
				}
			}
			gm[v] = metrics.GeoMean(xs)
		}
		res.Geomean[fam] = gm
		res.Recovered[fam] = recovered(gm)
	}
	res.Markdown = res.markdown(plan)
	if err := os.WriteFile(filepath.Join(dir, "stale.md"), []byte(res.Markdown), 0o644); err != nil {
		return nil, err
	}
	var csv strings.Builder
	csv.WriteString("family,trace,oracle_avg_jct_s,oracle_learning_avg_jct_s,stale_avg_jct_s,learning_avg_jct_s,packed_sticky_avg_jct_s,recovered\n")
	for _, r := range res.Rows {
		fmt.Fprintf(&csv, "%s,%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f\n", r.Family, r.Trace, r.AvgJCT["oracle"], r.AvgJCT["oracle+learning"], r.AvgJCT["stale"],
			r.AvgJCT["stale+learning"], r.AvgJCT["packed-sticky"], recovered(r.AvgJCT))
	}
	if err := os.WriteFile(filepath.Join(dir, "stale.csv"), []byte(csv.String()), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// recovered is the share of oracle's gain over stale that learning wins
// back: (stale - learning) / (stale - oracle); NaN without a gain.
func recovered(m map[string]float64) float64 {
	gap := m["stale"] - m["oracle"]
	if !(gap > 0) {
		return math.NaN()
	}
	return (m["stale"] - m["stale+learning"]) / gap
}

func (r *StaleResult) markdown(plan paper.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Stale profiles: learning PM-scores online\n\n")
	fmt.Fprintf(&b, "Not in the paper. The profile the scheduler believes was right when taken, but %.0f%% of the GPUs (drawn with seed %d) have since degraded by x%g for every class. FIFO, PAL unless named; oracle believes the truth (oracle+learning adds `--learn-scores` to it), stale the old profile while GPUs run at the truth, stale+learning adds `--learn-scores`, packed-sticky (Tiresias) ignores variability. Sia-Philly: workloads %v on 16x4 with the artifact's pinned table as the old profile; Synergy: %d jobs at %g jobs/hour on %s, seeds %v, each seed's drawn table as its old profile. The tables are in %s/. Recovered = (stale - learning) / (stale - oracle).\n\n",
		100*StaleFraction, StaleSeed, StaleFactor, plan.SiaTraces, plan.SynergyJobs, plan.MigrationLoad, plan.SynergyCluster, plan.SynergySeeds, StaleDir)
	b.WriteString("| trace | oracle | oracle+learning | stale | stale+learning | packed-sticky | recovered |\n|---|---|---|---|---|---|---|\n")
	row := func(name string, m map[string]float64) {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", name, m["oracle"], m["oracle+learning"], m["stale"], m["stale+learning"], m["packed-sticky"], sharePct(recovered(m)))
	}
	for _, rr := range r.Rows {
		row(rr.Trace, rr.AvgJCT)
	}
	for _, fam := range []string{"sia-philly", "synergy"} {
		row("**"+fam+" geomean**", r.Geomean[fam])
	}
	b.WriteString("\n")
	return b.String()
}

func sharePct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}
