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
	"github.com/palsched/pal/report/page"
	"github.com/palsched/pal/reproduce/backfill"
	"github.com/palsched/pal/reproduce/hived"
	"github.com/palsched/pal/reproduce/migration"
	"github.com/palsched/pal/reproduce/pal"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/stale"
	"github.com/palsched/pal/reproduce/sweep"
	"github.com/palsched/pal/reproduce/themis"
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
	// Drawer draws the figures: report/draw's, which the command that
	// runs this (pal-reproduce) links; nil is an error at the first figure.
	Drawer report.Drawer
}

// Report is what Run wrote.
type Report struct {
	Dir  string
	Plan paper.Plan
	// Figures are every figure written at the top of Dir: PAL's, then
	// the migration study's.
	Figures []*paper.Figure
	// PAL is PAL's figures, headline claims, packed order and overhead.
	PAL *pal.Result
	// Migration is the migration-cost section's numbers.
	Migration *migration.MigrationResult
	// Hived is the HiveD sharing-anomaly experiment (under hived/).
	Hived *hived.HivedReport
	// Stale is the stale-profiles section (under stale/).
	Stale *stale.StaleResult
	// Themis is the finish-time-fairness experiments (under themis/).
	Themis *themis.Outcome
	// Backfill is the backfill-and-forecast section (under backfill/).
	Backfill *backfill.Result
	// Simulations is the number of distinct runs; SimTime and BenchTime
	// are the wall times of the sweep and of Fig 18.
	Simulations int
	SimTime     time.Duration
	BenchTime   time.Duration

	drawer report.Drawer
}

// Files in the output directory besides each figure's.
const (
	SummaryFile = "summary.md"
)

// Run simulates the plan, times Fig 18 and writes every output. A cancelled
// ctx stops it before anything is written: a figure from part of its grid
// would be misleading.
func Run(ctx context.Context, o Options) (*Report, error) {
	plan := paper.FullPlan()
	if o.Quick {
		plan = paper.QuickPlan()
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
	grids := g.list()
	rep := &Report{Dir: o.Out, Plan: plan, drawer: o.Drawer}

	start := time.Now()
	total := 0
	for _, gr := range grids {
		pts, err := gr.Expand()
		if err != nil {
			return nil, err
		}
		total += len(pts)
	}
	logf("reproduce: %s plan, %d simulations", plan.Name, total)
	res, err := sweep.Run(ctx, grids, sweep.RunOptions{Workers: o.Workers, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	rep.SimTime = time.Since(start)
	rep.Simulations = total
	logf("reproduce: simulations took %s", rep.SimTime.Round(time.Millisecond))

	start = time.Now()
	base, _ := plan.Base()
	benches, err := pal.RunBenches(ctx, plan.Bench, base.Seed)
	if err != nil {
		return nil, err
	}
	rep.BenchTime = time.Since(start)
	logf("reproduce: placement timing took %s", rep.BenchTime.Round(time.Millisecond))

	np, nm := len(g.pal.List()), len(g.migSia)
	if rep.PAL, err = pal.Figures(res[:np], benches, plan); err != nil {
		return nil, err
	}
	rep.Figures = append(rep.Figures, rep.PAL.Figures...)
	migSia, migSyn := res[np:][:nm], res[np+nm:]
	fm, mig := migration.Figure(migSia, migSyn, plan)
	rep.Figures = append(rep.Figures, fm)
	rep.Migration = mig
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rep.Hived, err = hived.RunHived(hived.HivedOptions{Out: o.Out, Quick: o.Quick, Workers: o.Workers, Log: o.Log, Drawer: o.Drawer}); err != nil {
		return nil, err
	}
	logf("reproduce: HiveD experiment written to %s", rep.Hived.Dir)
	if rep.Stale, err = stale.RunStale(ctx, plan, o.Out, o.Workers, o.Log, o.Drawer); err != nil {
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
	if rep.Themis, err = themis.Reproduce(tp, themisDir, o.Drawer); err != nil {
		return nil, err
	}
	logf("reproduce: Themis experiments written to %s", themisDir)
	bp := backfill.DefaultPlan(plan)
	if o.Quick {
		bp = backfill.QuickPlan(plan)
	}
	if rep.Backfill, err = backfill.Run(ctx, bp, base, o.Out, o.Workers, o.Log); err != nil {
		return nil, err
	}
	logf("reproduce: backfill section written to %s", rep.Backfill.Dir)

	if err := rep.write(); err != nil {
		return nil, err
	}
	logf("reproduce: wrote %s", filepath.Join(o.Out, page.IndexFile))
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
			if err := report.Save(rep.drawer, f.Charts[base], dir, base); err != nil {
				return err
			}
		}
	}
	notes := append([]string{
		fmt.Sprintf("%d simulations in %s, Fig 18 timing in %s.", rep.Simulations, rep.SimTime.Round(time.Millisecond), rep.BenchTime.Round(time.Millisecond)),
	}, pal.Notes(rep.Plan)...)
	md := rep.PAL.Summary(rep.Plan, notes) + rep.Migration.Markdown()
	claims := md // index.html shows the stale section on its own
	if rep.Stale != nil {
		md += rep.Stale.Markdown
	}
	if rep.Hived != nil {
		md += "\n## Tenancy: HiveD's sharing anomaly\n\nSee hived/hived.md (tables) and hived/anomaly.csv; plots are in hived/.\n"
	}
	if rep.Backfill != nil {
		md += rep.Backfill.Markdown
	}
	if rep.Themis != nil {
		md += "\n## Finish-time fairness: Themis\n\nSee themis/themis.md (the paper's claims beside ours), themis/index.html, the themis-*.csv tables and plots in themis/.\n"
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(md), 0o644); err != nil {
		return err
	}
	sections, err := rep.indexSections(claims)
	if err != nil {
		return err
	}
	return page.WriteIndex(dir, IndexTitle+" ("+rep.Plan.Name+" plan)", sections)
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
	AboutTitle    = "About this report"
	StaleTitle    = "Stale profiles: learning PM-scores online"
	HivedTitle    = "Tenancy: HiveD's sharing anomaly"
	ThemisTitle   = "Finish-time fairness: Themis"
	BackfillTitle = "Backfill and forecasts"
	ClaimsTitle   = "PAL: the paper's claims beside ours"
	staleSubdir   = stale.StaleDir
	hivedSubdir   = "hived"
	themisSubdir  = "themis"
)

// indexSections lays index.html out figures first: a short guide, every
// PAL figure (Figs 11-20, then the migration study), HiveD's and Themis'
// figures each followed by their tables, and last the PAL summary's
// tables with a verdict per claim. The figures of HiveD and Themis are
// shown from their subdirectories.
func (rep *Report) indexSections(summary string) ([]page.Section, error) {
	about := "The sections follow the papers: PAL's simulation figures (Figs 11-20) and the migration-cost study, the stale-profiles study (not in the paper), HiveD's sharing anomaly, Themis' finish-time fairness, backfill and forecasts (not in the papers), and last PAL's headline claims beside ours with a verdict each. Every section shows its figures first and its tables after; each figure links to its SVG, and the CSV named under it holds its numbers. summary.md, hived/hived.md and themis/themis.md hold the same tables as text."
	if rep.Plan.Name == "quick" {
		p, tp := rep.Plan, themis.QuickPlan()
		bq := backfill.QuickPlan(p)
		about += fmt.Sprintf("\n\n**This is the --quick plan, and its numbers are not meaningful**: it shows that every figure and table is produced, on grids far smaller than the papers'. PAL: Sia-Philly traces %s only (geomeans over %d of 8 traces), workload %s alone for the locality sweep, %d Synergy seed(s) of %d jobs at %s jobs/h (the headline claims at other loads are not measured). HiveD: one synthetic load over one day, and the first %d Philly jobs, which load the VCs too lightly for anyone to queue (every Philly anomaly is 0 by lack of load). Themis: %d apps on a %s cluster, where one job sets an app's ρ. Backfill: Sia-Philly %s, one Synergy seed of %d jobs, %d Philly jobs. Run pal-reproduce without --quick for the comparison with the papers.",
			joinNums(p.SiaTraces), len(p.SiaTraces), joinNums(p.LocalityTraces), len(p.SynergySeeds), p.SynergyJobs, joinNums(p.HeadlineLoads), hived.HivedQuickJobs, tp.Gen.Apps, tp.Cluster,
			joinNums(bq.SiaTraces), bq.SynergyJobs, bq.PhillyJobs)
	}
	sections := []page.Section{{Title: AboutTitle, Markdown: about}}
	for _, f := range rep.Figures {
		sections = append(sections, page.Section{Title: f.Title,
			Text:    f.Text + "\n\nData: " + f.CSV + ".",
			Figures: f.Plots, Captions: f.Captions, Tables: f.Tables})
	}
	if rep.Stale != nil {
		body := strings.TrimPrefix(strings.TrimLeft(rep.Stale.Markdown, "\n"), "## "+StaleTitle+"\n")
		s := page.Section{Title: StaleTitle, Markdown: body, Captions: map[string]string{},
			Text: "How fast online learning closes the gap to the oracle when the profile is stale; the tables follow. Data: stale/convergence.csv, stale/stale.csv and stale/draws.csv."}
		for _, base := range rep.Stale.Figures {
			ref := staleSubdir + "/" + base
			s.Figures = append(s.Figures, ref)
			s.Captions[ref] = "Mean JCT by arrival group over the oracle's, " + strings.TrimPrefix(base, "convergence-") + " (stale/" + base + ")"
		}
		sections = append(sections, s)
	}
	if rep.Hived != nil {
		hm, err := os.ReadFile(filepath.Join(rep.Hived.Dir, "hived.md"))
		if err != nil {
			return nil, err
		}
		s := page.Section{Title: HivedTitle, Markdown: string(hm), Captions: map[string]string{},
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
		s := page.Section{Title: ThemisTitle, Markdown: rep.Themis.Summary, Captions: map[string]string{},
			Text: "Themis against the baselines: the knob, lease and contention sweeps first, then the paper's claims beside ours. Every table is in themis/index.html and themis/themis-*.csv."}
		for _, base := range rep.Themis.Figures {
			ref := themisSubdir + "/" + base
			s.Figures = append(s.Figures, ref)
			s.Captions[ref] = strings.ReplaceAll(strings.TrimPrefix(base, "themis-"), "-", " ") + " (themis/" + base + ")"
		}
		sections = append(sections, s)
	}
	if rep.Backfill != nil {
		body := strings.TrimPrefix(strings.TrimLeft(rep.Backfill.Markdown, "\n"), "## "+BackfillTitle+"\n")
		sections = append(sections, page.Section{Title: BackfillTitle, Markdown: body,
			Text: "Strict order against EASY and greedy backfill, reserved gangs started late, and forecast error; the tables follow. Data: backfill/runs.csv and backfill/accuracy.csv."})
	}
	sections = append(sections, page.Section{Title: ClaimsTitle, Markdown: summary})
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
