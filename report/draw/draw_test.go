package draw

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/palsched/pal/report"
)

// sampleBars is the shape of the paper's Fig. 7: normalised JCT per trace
// and geomean, one bar per placement.
func sampleBars() *report.BarChart {
	cats := []string{"1", "2", "3", "4", "5", "6", "7", "8", "geomean"}
	names := []string{"PAL", "PM-First", "Packed-Sticky", "Packed-NonSticky", "Random-Sticky", "Random-NonSticky"}
	c := &report.BarChart{
		Title: "Average JCT normalised to Packed-Sticky", XLabel: "trace", YLabel: "normalised JCT",
		Categories: cats, RefLine: 1, RefLabel: "baseline",
	}
	for i, n := range names {
		v := make([]float64, len(cats))
		for j := range v {
			v[j] = 0.55 + 0.1*float64(i) + 0.03*float64(j%4)
		}
		c.Series = append(c.Series, report.BarSeries{Name: n, Values: v})
	}
	return c
}

func sampleLines() *report.LineChart {
	c := &report.LineChart{Title: "JCT vs locality penalty", XLabel: "locality penalty", YLabel: "average JCT (h)", Mark: report.LinesPoints}
	for i, n := range []string{"PAL", "PM-First", "Packed-Sticky"} {
		s := report.Series{Name: n}
		for x := 1.0; x <= 3; x += 0.5 {
			s.X = append(s.X, x)
			s.Y = append(s.Y, 10+float64(i)*2+x*x*float64(i+1))
		}
		c.Series = append(c.Series, s)
	}
	return c
}

func TestSavePlotWritesPNGAndSVG(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "figs") // SavePlot creates it
	p, err := Plot(sampleBars())
	if err != nil {
		t.Fatal(err)
	}
	if err := SavePlot(p, dir, "bars"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "bars.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 8*PNGDPI || cfg.Height != 4.5*PNGDPI {
		t.Errorf("PNG is %dx%d, want %dx%d", cfg.Width, cfg.Height, 8*PNGDPI, int(4.5*PNGDPI))
	}
	svg, err := os.ReadFile(filepath.Join(dir, "bars.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Packed-Sticky", "geomean", "normalised JCT"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestSavePlotRejectsBadNames(t *testing.T) {
	p, err := Plot(sampleLines())
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"", "a/b", `a\b`, "fig.png", "fig.SVG", ".."} {
		if err := SavePlot(p, t.TempDir(), base); err == nil {
			t.Errorf("SavePlot accepted %q", base)
		}
	}
}

func TestChartErrors(t *testing.T) {
	cases := map[string]struct {
		plot func() error
		want string
	}{
		"bars without categories": {func() error {
			_, err := Plot(&report.BarChart{Series: []report.BarSeries{{Name: "a", Values: nil}}})
			return err
		}, "needs categories and series"},
		"bars short series": {func() error {
			_, err := Plot(&report.BarChart{Categories: []string{"1", "2"}, Series: []report.BarSeries{{Name: "a", Values: []float64{1}}}})
			return err
		}, `series "a": 1 values for 2 categories`},
		"bars NaN": {func() error {
			_, err := Plot(&report.BarChart{Categories: []string{"1"}, Series: []report.BarSeries{{Name: "a", Values: []float64{math.NaN()}}}})
			return err
		}, `category "1": value NaN`},
		"lines without series": {func() error { _, err := Plot(&report.LineChart{Title: "t"}); return err }, `"t" has no series`},
		"lines length mismatch": {func() error {
			_, err := Plot(&report.LineChart{Series: []report.Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}})
			return err
		}, "2 xs but 1 ys"},
		"lines empty series": {func() error { _, err := Plot(&report.LineChart{Series: []report.Series{{Name: "a"}}}); return err }, "no points"},
		"lines infinite": {func() error {
			_, err := Plot(&report.LineChart{Series: []report.Series{{Name: "a", X: []float64{1}, Y: []float64{math.Inf(1)}}}})
			return err
		}, "not finite"},
		"log x of zero": {func() error {
			_, err := Plot(&report.LineChart{LogX: true, Series: []report.Series{{Name: "a", X: []float64{0, 1}, Y: []float64{1, 2}}}})
			return err
		}, "cannot go on a log axis"},
		"log y from zero": {func() error {
			_, err := Plot(&report.LineChart{LogY: true, YFromZero: true, Series: []report.Series{{Name: "a", X: []float64{1}, Y: []float64{1}}}})
			return err
		}, "log y axis cannot start at zero"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.plot(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Every kind of chart the experiments draw must build and save.
func TestChartsSave(t *testing.T) {
	dir := t.TempDir()
	sizes := []float64{64, 256, 1024, 4096}
	charts := map[string]report.Chart{
		"bars":  sampleBars(),
		"lines": sampleLines(),
		"loglog": &report.LineChart{Title: "placement time", XLabel: "GPUs", YLabel: "ms", LogX: true, LogY: true, Mark: report.LinesPoints,
			Series: []report.Series{{Name: "PAL", X: sizes, Y: []float64{0.2, 1.5, 9, 70}}, {Name: "Packed", X: sizes, Y: []float64{0.05, 0.2, 0.9, 4}}}},
		"gpus per round": &report.LineChart{Title: "GPUs in use", XLabel: "round", YLabel: "GPUs", Step: true, YFromZero: true,
			Series: []report.Series{{Name: "PAL", X: []float64{0, 1, 2, 3}, Y: []float64{200, 256, 256, 100}}}},
		"per job": &report.LineChart{Title: "wait per job", XLabel: "job id", YLabel: "wait (s)", Mark: report.Points,
			Series: []report.Series{report.PerJob("PAL", []int{0, 1, 2}, []float64{0, 360, 720})}},
		"cdf": &report.LineChart{Title: "JCT CDF", XLabel: "JCT (s)", YLabel: "share of jobs",
			Series: []report.Series{report.CDF("PAL", []float64{3, 1, 2, 2})}},
		"flat line, no legend": &report.LineChart{Series: []report.Series{{X: []float64{1, 2}, Y: []float64{5, 5}}}},
	}
	for name, c := range charts {
		t.Run(name, func(t *testing.T) {
			p, err := Plot(c)
			if err != nil {
				t.Fatal(err)
			}
			base := strings.ReplaceAll(name, " ", "-")
			if err := SavePlot(p, dir, base); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The legend must sit above the tallest bar, not over it.
func TestLegendRoom(t *testing.T) {
	c := sampleBars()
	p, err := Plot(c)
	if err != nil {
		t.Fatal(err)
	}
	da := p.DataCanvas(measureCanvas())
	legend := p.Legend.Rectangle(da)
	tallest := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			tallest = math.Max(tallest, v)
		}
	}
	if top := da.Y(p.Y.Norm(tallest)); top >= legend.Min.Y {
		t.Errorf("tallest bar reaches y=%.1f pt, legend starts at %.1f pt", top, legend.Min.Y)
	}
}

// The axis ticks: round steps, a minor mark between labels, and the
// outermost marks labelled (a bare mark at the bottom of an axis reads as
// a value nobody can name).
func TestNiceTicksLabelTheEnds(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		// 0.85 and 1.35 would be minor marks (step 0.1): left out.
		{0.83, 1.37, "0.9 - 1.0 - 1.1 - 1.2 - 1.3"},
		{0, 5.5, "0 - 1 - 2 - 3 - 4 - 5"},
		{-12, 27, "-10 - 0 - 10 - 20"},
	} {
		var parts []string
		for _, tk := range (niceTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label == "" {
				parts = append(parts, "-")
			} else {
				parts = append(parts, tk.Label)
			}
		}
		if got := strings.Join(parts, " "); got != tc.want {
			t.Errorf("[%g, %g]: %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// Every marker report names is one gonum draws, and a look's dashes and
// widths in points reach the plot unchanged (a vg.Length is a point).
func TestResolveLook(t *testing.T) {
	for g := report.Circle; g <= report.Plus; g++ {
		if glyphs[g] == nil {
			t.Errorf("report.Glyph %d has no gonum glyph", g)
		}
	}
	l := resolve(&report.Look{Dashes: []float64{6, 3}, Shape: report.Triangle, Width: 4}, 0)
	if len(l.Dashes) != 2 || l.Dashes[0] != vg.Points(6) || l.Dashes[1] != vg.Points(3) || l.Width != vg.Points(4) || l.Radius != vg.Points(2.5) {
		t.Errorf("resolved look %+v", l)
	}
	if _, ok := l.Shape.(draw.TriangleGlyph); !ok {
		t.Errorf("shape %T, want a triangle", l.Shape)
	}
	if solid := resolve(&report.Look{Dashes: []float64{}}, 1); solid.Dashes == nil || len(solid.Dashes) != 0 {
		t.Errorf("empty dashes resolve to %v, want a solid line (empty, not nil)", solid.Dashes)
	}
	if d := resolve(nil, 1); len(d.Dashes) == 0 || d.Shape == nil {
		t.Errorf("no look: %+v, want position 1's dashes and marker", d)
	}
}

// A nil Drawer is an error that names the figure, not a panic.
func TestSaveWithoutDrawer(t *testing.T) {
	err := report.Save(nil, sampleLines(), t.TempDir(), "fig")
	if err == nil || !strings.Contains(err.Error(), "fig") {
		t.Fatalf("err = %v", err)
	}
	dir := t.TempDir()
	if err := report.Save(Drawer{}, sampleLines(), dir, "fig"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"fig.png", "fig.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
