package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// A report's figures are specs here: the data of a line or bar chart and
// how each series should look. Drawing them (PNG and SVG through
// gonum.org/v1/plot) is a Drawer's job, which package report/draw does;
// report imports no plotting library, so that a command that writes
// tables but draws nothing (pal sim, pal sweep) does not pay for the
// plotting library's start-up (its fonts are parsed at package init).

// Chart is a figure's spec: a *LineChart or a *BarChart.
type Chart interface {
	chartTitle() string
}

func (c *LineChart) chartTitle() string { return c.Title }
func (c *BarChart) chartTitle() string  { return c.Title }

// Drawer draws charts. report/draw's Drawer is the one that writes PNG and
// SVG; the experiments receive a Drawer from the command that runs them,
// so that only a command that draws links the plotting library.
type Drawer interface {
	// Save writes c as dir/base.png and dir/base.svg, creating dir. base
	// must pass CheckFigureName, since page.WriteIndex refers to figures by it.
	Save(c Chart, dir, base string) error
}

// Save draws c with d; a nil d is an error that names the figure.
func Save(d Drawer, c Chart, dir, base string) error {
	if d == nil {
		return fmt.Errorf("report: figure %s (%q): no Drawer to draw it with", base, c.chartTitle())
	}
	return d.Save(c, dir, base)
}

// CheckFigureName says whether base can name a figure's files: a plain
// file name without directory or extension (.png and .svg are added).
func CheckFigureName(base string) error {
	ext := strings.ToLower(filepath.Ext(base))
	if base == "" || base == "." || base == ".." || strings.ContainsAny(base, `/\`) || ext == ".png" || ext == ".svg" {
		return fmt.Errorf("report: figure name %q: want a plain file name without directory or extension", base)
	}
	return nil
}

// Series is one named line or set of points.
type Series struct {
	Name string
	X, Y []float64
	// Look, if set, fixes how the series is drawn, so that one thing (a
	// placement policy, say) looks the same in every figure of a report;
	// nil draws by position in the chart.
	Look *Look
}

// Look is a series' colour, line dashes and marker. Zero fields fall back
// to the series' position (colour, dashes, marker) or to the chart's
// defaults (line width 1.5 pt, marker radius 2.5 pt). Two series that may
// coincide stay visible when the first drawn has the wider line and the
// larger hollow marker.
type Look struct {
	Color color.Color
	// Dashes are the lengths of the line's dashes and gaps in points;
	// nil falls back to the position, empty (not nil) is a solid line.
	Dashes []float64
	Shape  Glyph
	// Width is the line's and Radius the marker's, in points.
	Width, Radius float64
}

// Glyph is a marker's shape.
type Glyph int

// The markers; ByPosition (the zero Glyph) falls back to the series'
// position in the chart.
const (
	ByPosition Glyph = iota
	Circle           // filled
	Ring             // hollow circle
	Square           // hollow
	Box              // filled square
	Triangle         // hollow
	Pyramid          // filled triangle
	Cross
	Plus
)

// PerJob is a series over job ids, for per-job quantities such as the
// wait time of each job.
func PerJob(name string, ids []int, values []float64) Series {
	x := make([]float64, len(ids))
	for i, id := range ids {
		x[i] = float64(id)
	}
	return Series{Name: name, X: x, Y: slices.Clone(values)}
}

// CDF is the empirical distribution of values as a step line: y is the
// share of values ≤ x. NaNs are dropped. The steps are explicit points,
// so the series draws correctly on any LineChart, log axes included.
func CDF(name string, values []float64) Series {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	slices.Sort(v)
	s := Series{Name: name}
	n := float64(len(v))
	for i, x := range v {
		if i == 0 {
			s.X, s.Y = append(s.X, x), append(s.Y, 0)
		} else {
			s.X, s.Y = append(s.X, x), append(s.Y, float64(i)/n)
		}
		s.X, s.Y = append(s.X, x), append(s.Y, float64(i+1)/n)
	}
	return s
}

// Mark says how a LineChart draws its series.
type Mark int

// The marks: lines for trends, points for per-job scatter, both for
// sparse sweeps where each measured point matters.
const (
	Lines Mark = iota
	Points
	LinesPoints
)

// LineChart is an x/y chart of one or more series with a legend: JCT
// against locality penalty or load, GPUs in use per round, a CDF,
// placement time against cluster size on log axes.
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	Mark                  Mark
	LogX, LogY            bool
	// YFromZero starts the y axis at 0, so that small differences are not
	// blown up; it cannot be combined with LogY.
	YFromZero bool
	// Step draws each line as a staircase that holds a value until the
	// next x, which is what a per-round quantity does.
	Step bool
}

// BarSeries is one bar per category, such as one placement's normalised
// JCT on each trace.
type BarSeries struct {
	Name   string
	Values []float64
	// Look fixes the bar colour (only Color is used); nil: by position.
	Look *Look
}

// BarChart is a grouped bar chart: categories along x (traces "1".."8",
// "geomean"), one bar per series in each group (placements).
type BarChart struct {
	Title, XLabel, YLabel string
	Categories            []string
	Series                []BarSeries
	// RefLine, when not 0, draws a dashed horizontal line at that value,
	// e.g. 1.0 for the baseline of a normalised metric.
	RefLine float64
	// RefLabel names the reference line in the legend; empty leaves it out.
	RefLabel string
}
