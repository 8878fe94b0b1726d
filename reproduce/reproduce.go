package reproduce

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/hived"
	"github.com/palsched/pal/reproduce/migration"
	"github.com/palsched/pal/reproduce/stale"
	"github.com/palsched/pal/reproduce/themis"
	"github.com/palsched/pal/reproduce/sweep"
)

// Options say what to reproduce and where.
type Options struct {
	// Quick runs QuickPlan instead of FullPlan.
	Quick bool
	// Preset overrides the plan's preset ("" keeps artifact).
	Preset string
	// Out is the output directory (created if needed).
	Out string
	// Workers is the simulations at once (0: GOMAXPROCS).
	Workers int
	// Progress, if set, sees every finished simulation.
	Progress func(done, total int)
	// Log receives one line per phase (nil: none).
	Log io.Writer
}

// Report is what Run wrote.
type Report struct {
	Dir       string
	Plan      Plan
	Figures   []*Figure
	Headlines []Headline
	Overhead  []OverheadRow
	// Packed says where each packed flavour wins on the Fig 11 traces.
	Packed PackedOrder
	// Migration is the migration-cost section's numbers.
	Migration *migration.MigrationResult
	// Hived is the HiveD sharing-anomaly experiment (under hived/).
	Hived *hived.HivedReport
	// Stale is the stale-profiles section (under stale/).
	Stale *stale.StaleResult
	// Themis is the finish-time-fairness experiments (under themis/).
	Themis *themis.Outcome
	// Simulations is the number of distinct runs; SimTime and BenchTime
	// are the wall times of the sweep and of Fig 18.
	Simulations int
	SimTime     time.Duration
	BenchTime   time.Duration
}

// Files in the output directory besides each figure's.
const (
	SummaryFile = "summary.md"
)

// Run simulates the plan, times Fig 18 and writes every output. A cancelled
// ctx stops it before anything is written: a figure from part of its grid
// would be misleading.
func Run(ctx context.Context, o Options) (*Report, error) {
	plan := FullPlan()
	if o.Quick {
		plan = QuickPlan()
	}
	if o.Preset != "" {
		plan.Preset = o.Preset
	}
	if o.Out == "" {
		return nil, fmt.Errorf("reproduce: no output directory")
	}
	// Check --out before minutes of simulation: it must be (or become) a
	// writable directory.
	if err := checkOut(o.Out); err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	g, err := gridsOf(plan)
	if err != nil {
		return nil, err
	}
	rep := &Report{Dir: o.Out, Plan: plan}

	start := time.Now()
	total := 0
	for _, gr := range g.list() {
		pts, err := gr.Expand()
		if err != nil {
			return nil, err
		}
		total += len(pts)
	}
	logf("reproduce: %s plan, %d simulations", plan.Name, total)
	res, err := sweep.Run(ctx, g.list(), sweep.RunOptions{Workers: o.Workers, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	rep.SimTime = time.Since(start)
	rep.Simulations = total
	logf("reproduce: simulations took %s", rep.SimTime.Round(time.Millisecond))

	start = time.Now()
	base, _ := plan.Base()
	benches, err := runBenches(ctx, plan.Bench, base.Seed)
	if err != nil {
		return nil, err
	}
	rep.BenchTime = time.Since(start)
	logf("reproduce: placement timing took %s", rep.BenchTime.Round(time.Millisecond))

	sia, loc, f20 := res[0], res[1], res[2+len(synergySchedulers)]
	nm := len(g.migSia)
	migSia, migSyn := res[3+len(synergySchedulers):][:nm], res[3+len(synergySchedulers)+nm:]
	syn := map[string]*sweep.Result{}
	for i, s := range synergySchedulers {
		syn[s] = res[2+i]
	}
	f11, h11, po := fig11(sia, plan)
	rep.Packed = po
	f13, h13 := fig13(loc, plan)
	rep.Figures = append(rep.Figures, f11, fig12(sia, plan), f13)
	rep.Headlines = append(rep.Headlines, h11...)
	rep.Headlines = append(rep.Headlines, h13...)
	f14, h14 := synergyLoadFigure(syn["fifo"], "fifo", plan)
	rep.Figures = append(rep.Figures, f14, fig15(syn["fifo"], plan))
	rep.Headlines = append(rep.Headlines, h14...)
	for _, s := range []string{"las", "srtf"} {
		f, h := synergyLoadFigure(syn[s], s, plan)
		rep.Figures = append(rep.Figures, f)
		rep.Headlines = append(rep.Headlines, h...)
	}
	f18, over := fig18(benches)
	f20f, h20 := fig20(f20, plan)
	rep.Figures = append(rep.Figures, f18, f20f)
	rep.Headlines = append(rep.Headlines, h20...)
	rep.Overhead = over
	fm, mig := migration.Figure(migSia, migSyn, plan)
	rep.Figures = append(rep.Figures, fm)
	rep.Migration = mig
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rep.Hived, err = hived.RunHived(hived.HivedOptions{Out: o.Out, Quick: o.Quick, Log: o.Log}); err != nil {
		return nil, err
	}
	logf("reproduce: HiveD experiment written to %s", rep.Hived.Dir)
	if rep.Stale, err = stale.RunStale(ctx, plan, o.Out, o.Workers, o.Log); err != nil {
		return nil, err
	}
	logf("reproduce: stale-profiles section written to %s", rep.Stale.Dir)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tp := themis.DefaultPlan()
	if o.Quick {
		tp = themis.QuickPlan()
	}
	themisDir := filepath.Join(o.Out, "themis")
	if rep.Themis, err = themis.Reproduce(tp, themisDir); err != nil {
		return nil, err
	}
	logf("reproduce: Themis experiments written to %s", themisDir)

	if err := rep.write(); err != nil {
		return nil, err
	}
	logf("reproduce: wrote %s", filepath.Join(o.Out, report.IndexFile))
	return rep, nil
}

// checkOut makes the output directory and proves it writable.
func checkOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %v", dir, err)
	}
	f, err := os.CreateTemp(dir, ".pal-write-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: not writable: %v", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// write saves every figure's CSV and plots, summary.md and index.html.
func (rep *Report) write() error {
	dir := rep.Dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range rep.Figures {
		if err := writeCSV(filepath.Join(dir, f.CSV), f.Data); err != nil {
			return err
		}
		for _, base := range f.Plots {
			p, err := f.Charts[base].Plot()
			if err != nil {
				return fmt.Errorf("%s: %v", base, err)
			}
			if err := report.SavePlot(p, dir, base); err != nil {
				return err
			}
		}
	}
	notes := []string{
		fmt.Sprintf("%d simulations in %s, Fig 18 timing in %s.", rep.Simulations, rep.SimTime.Round(time.Millisecond), rep.BenchTime.Round(time.Millisecond)),
		"Synergy traces cannot be the artifact's: its Philly `cluster_job_log` is absent, so GPU demands come from the embedded processed Philly trace, and lengths and Poisson arrivals from our own seeded generator (the artifact builds them from that log; see data/PROVENANCE.md). Synergy numbers are therefore the same experiment on a different draw, not a replay.",
		fmt.Sprintf("On 64x4 the artifact's pinned GPU table does not exist, so Synergy GPU values are drawn from the Longhorn profile (with replacement), per seed %v; each seed also draws its own Synergy trace. Synergy ratios are geometric means over the seeds, and the seed range is shown beside them.", rep.Plan.SynergySeeds),
		"The Sia-Philly runs replay the artifact's pinned inputs (its seed-42 GPU table and extra arrivals), so Figs 11-13 are deterministic replays of the artifact's configuration, not draws.",
		"Fig 12 wait = JCT minus time holding GPUs (queueing, suspension and round quantisation).",
	}
	md := summaryMarkdown(rep.Plan, rep.Headlines, rep.Packed, rep.Overhead, notes) + rep.Migration.Markdown()
	if rep.Stale != nil {
		md += rep.Stale.Markdown
	}
	if rep.Hived != nil {
		md += "\n## Tenancy: HiveD's sharing anomaly\n\nSee hived/hived.md (tables) and hived/anomaly.csv; plots are in hived/.\n"
	}
	if rep.Themis != nil {
		md += "\n## Finish-time fairness: Themis\n\nSee themis/themis.md (the paper's claims beside ours), themis/index.html, the themis-*.csv tables and plots in themis/.\n"
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(md), 0o644); err != nil {
		return err
	}
	sections, err := rep.indexSections(md)
	if err != nil {
		return err
	}
	return report.WriteIndex(dir, IndexTitle+" ("+rep.Plan.Name+" plan)", sections)
}

// joinNums renders a list as "3 and 5" or "8, 10 and 12".
func joinNums[T int | float64](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// IndexTitle heads index.html.
const IndexTitle = "PAL, HiveD and Themis: reproduced figures and claims"

// Section titles of index.html beyond the figures' own.
const (
	AboutTitle   = "About this report"
	HivedTitle   = "Tenancy: HiveD's sharing anomaly"
	ThemisTitle  = "Finish-time fairness: Themis"
	ClaimsTitle  = "PAL: the paper's claims beside ours"
	hivedSubdir  = "hived"
	themisSubdir = "themis"
)

// indexSections lays index.html out figures first: a short guide, every
// PAL figure (Figs 11-20, then the migration study), HiveD's and Themis'
// figures each followed by their tables, and last the PAL summary's
// tables with a verdict per claim. The figures of HiveD and Themis are
// shown from their subdirectories.
func (rep *Report) indexSections(summary string) ([]report.Section, error) {
	about := "The sections follow the papers: PAL's simulation figures (Figs 11-20) and the migration-cost study, HiveD's sharing anomaly, Themis' finish-time fairness, and last PAL's headline claims beside ours with a verdict each. Every section shows its figures first and its tables after; each figure links to its SVG, and the CSV named under it holds its numbers. summary.md, hived/hived.md and themis/themis.md hold the same tables as text."
	if rep.Plan.Name == "quick" {
		p, tp := rep.Plan, themis.QuickPlan()
		about += fmt.Sprintf("\n\n**This is the --quick plan, and its numbers are not meaningful**: it shows that every figure and table is produced, on grids far smaller than the papers'. PAL: Sia-Philly traces %s only (geomeans over %d of 8 traces), workload %s alone for the locality sweep, %d Synergy seed(s) of %d jobs at %s jobs/h (the headline claims at other loads are not measured). HiveD: one synthetic load over one day, and the first %d Philly jobs, which load the VCs too lightly for anyone to queue (every Philly anomaly is 0 by lack of load). Themis: %d apps on a %s cluster, where one job sets an app's ρ. Run pal reproduce without --quick for the comparison with the papers.",
			joinNums(p.SiaTraces), len(p.SiaTraces), joinNums(p.LocalityTraces), len(p.SynergySeeds), p.SynergyJobs, joinNums(p.HeadlineLoads), hived.HivedQuickJobs, tp.Gen.Apps, tp.Cluster)
	}
	sections := []report.Section{{Title: AboutTitle, Markdown: about}}
	for _, f := range rep.Figures {
		sections = append(sections, report.Section{Title: f.Title,
			Text:    f.Text + "\n\nData: " + f.CSV + ".",
			Figures: f.Plots, Captions: f.Captions, Tables: f.Tables})
	}
	if rep.Hived != nil {
		hm, err := os.ReadFile(filepath.Join(rep.Hived.Dir, "hived.md"))
		if err != nil {
			return nil, err
		}
		s := report.Section{Title: HivedTitle, Markdown: string(hm), Captions: map[string]string{},
			Text: "Per-VC sharing anomaly (extra mean queueing over the VC's private cluster) under quota and HiveD, for each workload, intra-VC scheduler and load; the tables follow. Data: hived/anomaly.csv."}
		for _, base := range rep.Hived.Figures {
			ref := hivedSubdir + "/" + base
			s.Figures = append(s.Figures, ref)
			s.Captions[ref] = "Sharing anomaly per VC, " + strings.ReplaceAll(strings.TrimPrefix(base, "anomaly-"), "-", " ") + " (hived/" + base + ")"
			if rep.Hived.Quick && strings.HasPrefix(base, "anomaly-philly") {
				s.Captions[ref] += "; --quick: not meaningful, no VC queues at this size"
			}
		}
		sections = append(sections, s)
	}
	if rep.Themis != nil {
		s := report.Section{Title: ThemisTitle, Markdown: rep.Themis.Summary, Captions: map[string]string{},
			Text: "Themis against the baselines: the knob, lease and contention sweeps first, then the paper's claims beside ours. Every table is in themis/index.html and themis/themis-*.csv."}
		for _, base := range rep.Themis.Figures {
			ref := themisSubdir + "/" + base
			s.Figures = append(s.Figures, ref)
			s.Captions[ref] = strings.ReplaceAll(strings.TrimPrefix(base, "themis-"), "-", " ") + " (themis/" + base + ")"
		}
		sections = append(sections, s)
	}
	sections = append(sections, report.Section{Title: ClaimsTitle, Markdown: summary})
	return sections, nil
}

func writeCSV(path string, t *report.Table) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := t.WriteCSV(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %v", path, err)
	}
	return f.Close()
}
