package report

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// sampleBars is the shape of the paper's Fig. 7: normalised JCT per trace
// and geomean, one bar per placement.
func sampleBars() *BarChart {
	cats := []string{"1", "2", "3", "4", "5", "6", "7", "8", "geomean"}
	names := []string{"PAL", "PM-First", "Packed-Sticky", "Packed-NonSticky", "Random-Sticky", "Random-NonSticky"}
	c := &BarChart{
		Title: "Average JCT normalised to Packed-Sticky", XLabel: "trace", YLabel: "normalised JCT",
		Categories: cats, RefLine: 1, RefLabel: "baseline",
	}
	for i, n := range names {
		v := make([]float64, len(cats))
		for j := range v {
			v[j] = 0.55 + 0.1*float64(i) + 0.03*float64(j%4)
		}
		c.Series = append(c.Series, BarSeries{Name: n, Values: v})
	}
	return c
}

func sampleLines() *LineChart {
	c := &LineChart{Title: "JCT vs locality penalty", XLabel: "locality penalty", YLabel: "average JCT (h)", Mark: LinesPoints}
	for i, n := range []string{"PAL", "PM-First", "Packed-Sticky"} {
		s := Series{Name: n}
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
	p, err := sampleBars().Plot()
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
	p, err := sampleLines().Plot()
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
		"bars without categories": {func() error { _, err := (&BarChart{Series: []BarSeries{{Name: "a", Values: nil}}}).Plot(); return err }, "needs categories and series"},
		"bars short series": {func() error {
			_, err := (&BarChart{Categories: []string{"1", "2"}, Series: []BarSeries{{Name: "a", Values: []float64{1}}}}).Plot()
			return err
		}, `series "a": 1 values for 2 categories`},
		"bars NaN": {func() error {
			_, err := (&BarChart{Categories: []string{"1"}, Series: []BarSeries{{Name: "a", Values: []float64{math.NaN()}}}}).Plot()
			return err
		}, `category "1": value NaN`},
		"lines without series": {func() error { _, err := (&LineChart{Title: "t"}).Plot(); return err }, `"t" has no series`},
		"lines length mismatch": {func() error {
			_, err := (&LineChart{Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}}).Plot()
			return err
		}, "2 xs but 1 ys"},
		"lines empty series": {func() error { _, err := (&LineChart{Series: []Series{{Name: "a"}}}).Plot(); return err }, "no points"},
		"lines infinite": {func() error {
			_, err := (&LineChart{Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{math.Inf(1)}}}}).Plot()
			return err
		}, "not finite"},
		"log x of zero": {func() error {
			_, err := (&LineChart{LogX: true, Series: []Series{{Name: "a", X: []float64{0, 1}, Y: []float64{1, 2}}}}).Plot()
			return err
		}, "cannot go on a log axis"},
		"log y from zero": {func() error {
			_, err := (&LineChart{LogY: true, YFromZero: true, Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{1}}}}).Plot()
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
	charts := map[string]func() (*plot.Plot, error){
		"bars":  sampleBars().Plot,
		"lines": sampleLines().Plot,
		"loglog": (&LineChart{Title: "placement time", XLabel: "GPUs", YLabel: "ms", LogX: true, LogY: true, Mark: LinesPoints,
			Series: []Series{{Name: "PAL", X: sizes, Y: []float64{0.2, 1.5, 9, 70}}, {Name: "Packed", X: sizes, Y: []float64{0.05, 0.2, 0.9, 4}}}}).Plot,
		"gpus per round": (&LineChart{Title: "GPUs in use", XLabel: "round", YLabel: "GPUs", Step: true, YFromZero: true,
			Series: []Series{{Name: "PAL", X: []float64{0, 1, 2, 3}, Y: []float64{200, 256, 256, 100}}}}).Plot,
		"per job": (&LineChart{Title: "wait per job", XLabel: "job id", YLabel: "wait (s)", Mark: Points,
			Series: []Series{PerJob("PAL", []int{0, 1, 2}, []float64{0, 360, 720})}}).Plot,
		"cdf": (&LineChart{Title: "JCT CDF", XLabel: "JCT (s)", YLabel: "share of jobs",
			Series: []Series{CDF("PAL", []float64{3, 1, 2, 2})}}).Plot,
		"flat line, no legend": (&LineChart{Series: []Series{{X: []float64{1, 2}, Y: []float64{5, 5}}}}).Plot,
	}
	for name, build := range charts {
		t.Run(name, func(t *testing.T) {
			p, err := build()
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

func TestCDF(t *testing.T) {
	s := CDF("x", []float64{3, 1, math.NaN(), 2, 2})
	// A rise at each value: from the share below it to the share at or
	// below it.
	wantX := []float64{1, 1, 2, 2, 2, 2, 3, 3}
	wantY := []float64{0, 0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 1}
	if !slices.Equal(s.X, wantX) || !slices.Equal(s.Y, wantY) {
		t.Errorf("CDF = %v / %v, want %v / %v", s.X, s.Y, wantX, wantY)
	}
	if empty := CDF("e", nil); len(empty.X) != 0 {
		t.Errorf("CDF of nothing has points %v", empty.X)
	}
}

// The legend must sit above the tallest bar, not over it.
func TestLegendRoom(t *testing.T) {
	c := sampleBars()
	p, err := c.Plot()
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
