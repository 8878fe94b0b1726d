package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/report"
	"github.com/palsched/pal/report/draw"
	"github.com/palsched/pal/report/page"
	"github.com/palsched/pal/reproduce/migration"
	"github.com/palsched/pal/reproduce/paper"
)

// The quick plan end to end: every figure of the paper's simulation
// section gets its CSV, PNG and SVG, the index shows them all, and the
// summary carries the settings, the swap finding and the headline rows.
func TestQuickEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates ~100 runs (a few seconds); skipped in -short")
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), Options{Quick: true, Out: dir, Drawer: draw.Drawer{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range rep.Figures {
		ids = append(ids, f.ID)
	}
	want := []string{"fig11", "fig12", "fig13", "fig14", "fig15", "fig16", "fig17", "fig18", "fig20", "migration"}
	if !slices.Equal(ids, want) {
		t.Fatalf("figures %v, want %v", ids, want)
	}
	index, err := os.ReadFile(filepath.Join(dir, page.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Figures {
		if len(f.Plots) == 0 {
			t.Errorf("%s has no plot", f.ID)
		}
		nonEmpty(t, filepath.Join(dir, f.CSV), 2)
		if !strings.Contains(string(index), f.Title) {
			t.Errorf("index.html lacks the section %q", f.Title)
		}
		for _, base := range f.Plots {
			nonEmpty(t, filepath.Join(dir, base+".png"), 1)
			nonEmpty(t, filepath.Join(dir, base+".svg"), 1)
			for _, ref := range []string{`src="` + base + `.png"`, `href="` + base + `.svg"`} {
				if !strings.Contains(string(index), ref) {
					t.Errorf("index.html does not reference %s", ref)
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := string(b)
	for _, s := range []string{
		"Settings where the paper and the artifact differ", "`--preset paper`", "`--pmfirst-tiebreak`",
		"Packed-label swap", "packed-nonsticky", "Gandiva (non-sticky) on workloads 1, 2, 4, 5, 6",
		"| 11 | PAL avg JCT vs Tiresias, geomean", "| 11 | PM-First avg JCT vs Tiresias, geomean",
		"| 11 | PAL makespan vs Tiresias, geomean | -47.0%", "| 11 | PM-First makespan vs Tiresias, geomean | -44.0%",
		"| 13 | PAL avg JCT vs Tiresias at L = 1.0", "| 13 | PAL avg JCT vs Tiresias at L = 3.0 | -20.0%",
		"| 14 | Synergy FIFO: PAL avg JCT vs Tiresias at 4 jobs/h | -4.0%", "| 14 | Synergy FIFO: PAL avg JCT vs Tiresias at 12 jobs/h | -9.0%",
		"| 16 | Synergy LAS", "| 17 | Synergy SRTF", "| 20 | Synergy 10 jobs/h: PAL",
		"Placement overhead (Fig 18)", "--quick",
		"Migration cost: does PAL's gain survive", "| PAL, migration-aware |",
		"## Backfill and forecasts", "| sia-philly/3 | fifo |", "exact-no-arrivals",
	} {
		if !strings.Contains(sum, s) {
			t.Errorf("summary.md lacks %q", s)
		}
	}
	// One colour per policy across every figure: each series named after
	// a placement carries that placement's look.
	styled := 0
	for _, f := range rep.Figures {
		for base, c := range f.Charts {
			check := func(name string, l *report.Look) {
				for p := range paper.DisplayNames {
					want := paper.LookOf(p)
					if name == paper.Display(p) || strings.HasPrefix(name, paper.Display(p)+" ") || strings.HasPrefix(name, paper.Display(p)+", ") {
						styled++
						if l == nil || l.Color != want.Color {
							t.Errorf("%s: series %q is not drawn in %s's colour", base, name, p)
						}
					}
				}
			}
			switch c := c.(type) {
			case *report.LineChart:
				for _, s := range c.Series {
					check(s.Name, s.Look)
				}
			case *report.BarChart:
				for _, s := range c.Series {
					check(s.Name, s.Look)
				}
			}
		}
	}
	// The quick Fig 14's JCTs lie in a narrow band: its axis is zoomed.
	for _, f := range rep.Figures {
		if c, ok := f.Charts["fig14_fifo_avg_jct"].(*report.LineChart); ok && c.YFromZero {
			t.Error("quick Fig 14 starts its axis at zero and squashes the lines")
		}
	}
	if styled < 20 {
		t.Errorf("only %d policy series found across the figures", styled)
	}
	// summary.md cites only files that ship: in the checkout or beside it
	// in the output (the artifact's own files are named with its repo).
	cited := regexp.MustCompile(`[A-Za-z0-9_./-]+\.(?:md|go|csv|py|json|yaml|txt|png|svg|html)\b`).FindAllString(sum, -1)
	if len(cited) == 0 {
		t.Fatal("summary.md cites no file at all")
	}
	for _, c := range cited {
		if strings.HasPrefix(c, "hal-uw/blox-pal/") {
			continue
		}
		_, errRepo := os.Stat(filepath.Join("..", c))
		_, errOut := os.Stat(filepath.Join(dir, c))
		if errRepo != nil && errOut != nil {
			t.Errorf("summary.md cites %s, which is neither in the checkout nor in the output", c)
		}
	}
	// The report must open in a real browser with every figure loading,
	// every section present and the figures before the tables.
	checkIndexInBrowser(t, dir, rep)
	checkMigration(t, rep.Migration)
	// The Sia ratios are exact replays of the artifact's inputs: PAL beats
	// Tiresias on both quick traces.
	for _, h := range rep.PAL.Headlines {
		if strings.HasPrefix(h.Claim, "PAL avg JCT vs Tiresias, geomean") && !(h.Ours < -20) {
			t.Errorf("quick PAL vs Tiresias geomean %v%%, want a clear gain", h.Ours)
		}
	}
}

// checkMigration holds the migration section to what the cost model and
// the migration-aware placers promise: free moves change nothing (the
// variants equal their bases, nobody loses GPU time), FIFO Tiresias never
// moves a job, dearer moves lose PAL more, and the migration-aware
// variants move fewer jobs than their bases once moves cost something.
func checkMigration(t *testing.T, m *migration.MigrationResult) {
	t.Helper()
	if m == nil || len(m.Costs) < 2 || m.Costs[0] != 0 {
		t.Fatalf("migration section: %+v", m)
	}
	for _, fam := range []struct {
		name string
		t    migration.Table
	}{{"sia", m.Sia}, {"synergy", m.Synergy}} {
		for _, pair := range [][2]string{{"pal", "pal-ma"}, {"pm-first", "pm-first-ma"}} {
			base, ma := fam.t[pair[0]], fam.t[pair[1]]
			if base[0] != ma[0] || base[0].LostGPUH != 0 {
				t.Errorf("%s free moves: %s %+v, %s %+v; want equal, nothing lost", fam.name, pair[0], base[0], pair[1], ma[0])
			}
			for i := 1; i < len(m.Costs); i++ {
				if !(ma[i].Migrations < base[i].Migrations) || !(base[i].LostGPUH > base[i-1].LostGPUH) {
					t.Errorf("%s at %g s: %s %+v, %s %+v; want fewer moves for -ma and more loss as cost grows", fam.name, m.Costs[i], pair[0], base[i], pair[1], ma[i])
				}
			}
		}
		for i, c := range fam.t["packed-sticky"] {
			if c.Migrations != 0 || c.LostGPUH != 0 || c.Ratio != 1 {
				t.Errorf("%s: Tiresias under FIFO moved jobs at %g s: %+v", fam.name, m.Costs[i], c)
			}
		}
	}
}

func nonEmpty(t *testing.T, path string, lines int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if len(b) == 0 || strings.Count(string(b), "\n") < lines {
		t.Errorf("%s: %d bytes, want at least %d lines", filepath.Base(path), len(b), lines)
	}
}

// A bad --out fails at once, before any simulation.
func TestOutCheckedFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runs := 0
	_, err := Run(context.Background(), Options{Quick: true, Out: filepath.Join(file, "out"), Progress: func(int, int) { runs++ }})
	if err == nil || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("error %v, want one naming --out", err)
	}
	if runs != 0 {
		t.Fatalf("%d runs simulated before --out was checked", runs)
	}
}

// Every grid of the one sweep, PAL's and the migration study's, expands
// on both plans, and PAL's come first in the order pal.Figures reads.
func TestGridsExpand(t *testing.T) {
	for _, p := range []paper.Plan{paper.FullPlan(), paper.QuickPlan()} {
		g, err := gridsOf(p)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		list := g.list()
		if want := len(g.pal.List()) + 2*len(g.migSia); len(list) != want || list[0] != g.pal.Sia {
			t.Fatalf("%s: %d grids, want %d with PAL's Sia grid first", p.Name, len(list), want)
		}
		for _, gr := range list {
			if _, err := gr.Expand(); err != nil {
				t.Errorf("%s: %v", p.Name, err)
			}
		}
	}
}
