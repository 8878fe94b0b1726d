package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figures are 16:9 and wide enough for nine groups of six bars with
// readable category labels; the PNG resolution keeps 10 pt tick labels
// sharp on a laptop screen.
const (
	PlotWidth  = 8 * vg.Inch
	PlotHeight = 4.5 * vg.Inch
	PNGDPI     = 150
)

// SavePlot writes p as dir/base.png and dir/base.svg, creating dir. The
// PNG is for the HTML index and quick looks; the SVG is for papers and
// zooming. base must be a plain file name without an extension, since
// WriteIndex refers to figures by it.
func SavePlot(p *plot.Plot, dir, base string) (err error) {
	if err := checkBase(base); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// gonum/plot panics on some invalid plots (a log axis over
	// non-positive values); a report should lose that figure, not the run.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("report: drawing figure %s: %v", base, r)
		}
	}()
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(PlotWidth, PlotHeight), vgimg.UseDPI(PNGDPI))}
	p.Draw(framed(png))
	if err := writeFile(filepath.Join(dir, base+".png"), png); err != nil {
		return err
	}
	svg := vgsvg.New(PlotWidth, PlotHeight)
	p.Draw(framed(svg))
	return writeFile(filepath.Join(dir, base+".svg"), svg)
}

// plotMargin keeps the title and the legend off the image's edge.
const plotMargin vg.Length = 8 // points

// framed is the area of c a figure is drawn in: all of it but a margin.
func framed(c vg.CanvasSizer) draw.Canvas {
	return draw.Crop(draw.New(c), plotMargin, -plotMargin, plotMargin, -plotMargin)
}

func checkBase(base string) error {
	ext := strings.ToLower(filepath.Ext(base))
	if base == "" || base == "." || base == ".." || strings.ContainsAny(base, `/\`) || ext == ".png" || ext == ".svg" {
		return fmt.Errorf("report: figure name %q: want a plain file name without directory or extension", base)
	}
	return nil
}

func writeFile(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: writing %s: %v", path, err)
	}
	return f.Close()
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
	Color  color.Color
	Dashes []vg.Length
	Shape  draw.GlyphDrawer
	Width  vg.Length
	Radius vg.Length
}

// look fills what l leaves open from position i.
func (l *Look) resolve(i int) Look {
	out := Look{Color: plotutil.Color(i), Dashes: plotutil.Dashes(i), Shape: plotutil.Shape(i)}
	if l != nil {
		if l.Color != nil {
			out.Color = l.Color
		}
		if l.Dashes != nil {
			out.Dashes = l.Dashes
		}
		if l.Shape != nil {
			out.Shape = l.Shape
		}
		out.Width, out.Radius = l.Width, l.Radius
	}
	if out.Width == 0 {
		out.Width = vg.Points(1.5)
	}
	if out.Radius == 0 {
		out.Radius = vg.Points(2.5)
	}
	return out
}

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

// Plot builds the chart. Every series must have as many xs as ys, all
// finite, and positive on a log axis.
func (c *LineChart) Plot() (*plot.Plot, error) {
	if len(c.Series) == 0 {
		return nil, fmt.Errorf("report: line chart %q has no series", c.Title)
	}
	if c.LogY && c.YFromZero {
		return nil, fmt.Errorf("report: line chart %q: a log y axis cannot start at zero", c.Title)
	}
	p := newPlot(c.Title, c.XLabel, c.YLabel)
	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = gridColor
	p.Add(grid)
	named := 0
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("report: line chart %q, series %q: %d xs but %d ys", c.Title, s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			return nil, fmt.Errorf("report: line chart %q, series %q: no points", c.Title, s.Name)
		}
		xys := make(plotter.XYs, len(s.X))
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if bad(x) || bad(y) {
				return nil, fmt.Errorf("report: line chart %q, series %q, point %d: (%v, %v) is not finite", c.Title, s.Name, j, x, y)
			}
			if (c.LogX && x <= 0) || (c.LogY && y <= 0) {
				return nil, fmt.Errorf("report: line chart %q, series %q, point %d: (%v, %v) cannot go on a log axis", c.Title, s.Name, j, x, y)
			}
			xys[j] = plotter.XY{X: x, Y: y}
		}
		var thumbs []plot.Thumbnailer
		lk := s.Look.resolve(i)
		if c.Mark != Points {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width, l.Dashes = lk.Color, lk.Width, lk.Dashes
			if c.Step {
				l.StepStyle = plotter.PostStep
			}
			p.Add(l)
			thumbs = append(thumbs, l)
		}
		if c.Mark != Lines {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, err
			}
			sc.Color, sc.Shape, sc.Radius = lk.Color, lk.Shape, lk.Radius
			p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		if s.Name != "" {
			p.Legend.Add(s.Name, thumbs...)
			named++
		}
	}
	if c.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if c.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	if c.YFromZero {
		p.Y.Min = math.Min(p.Y.Min, 0)
	} else if !c.LogY && p.Y.Max > p.Y.Min {
		// Zoomed to the data, with a little room so no line lies on
		// the axis.
		pad := (p.Y.Max - p.Y.Min) * 0.05
		p.Y.Min, p.Y.Max = p.Y.Min-pad, p.Y.Max+pad
	}
	if p.Y.Min == p.Y.Max { // a flat line: give it a band to sit in
		p.Y.Min, p.Y.Max = widen(p.Y.Min, c.LogY)
	}
	makeLegendRoom(p, named, c.LogY)
	return p, nil
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

// Plot builds the chart. Every series needs one finite value per category.
func (c *BarChart) Plot() (*plot.Plot, error) {
	nc, ns := len(c.Categories), len(c.Series)
	if nc == 0 || ns == 0 {
		return nil, fmt.Errorf("report: bar chart %q needs categories and series (has %d and %d)", c.Title, nc, ns)
	}
	p := newPlot(c.Title, c.XLabel, c.YLabel)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = gridColor
	p.Add(grid)
	bars := make([]*plotter.BarChart, ns)
	for i, s := range c.Series {
		if len(s.Values) != nc {
			return nil, fmt.Errorf("report: bar chart %q, series %q: %d values for %d categories", c.Title, s.Name, len(s.Values), nc)
		}
		for j, v := range s.Values {
			if bad(v) {
				return nil, fmt.Errorf("report: bar chart %q, series %q, category %q: value %v is not finite", c.Title, s.Name, c.Categories[j], v)
			}
		}
		b, err := plotter.NewBarChart(plotter.Values(s.Values), 1) // width set below
		if err != nil {
			return nil, err
		}
		b.Color = s.Look.resolve(i).Color
		b.LineStyle.Width = 0
		bars[i] = b
		p.Add(b)
		if s.Name != "" {
			p.Legend.Add(s.Name, b)
		}
	}
	p.NominalX(c.Categories...)
	p.X.Min, p.X.Max = -0.5, float64(nc)-0.5
	p.Y.Min = math.Min(p.Y.Min, 0)
	entries := 0
	for _, s := range c.Series {
		if s.Name != "" {
			entries++
		}
	}
	if c.RefLine != 0 {
		ref := plotter.NewFunction(func(float64) float64 { return c.RefLine })
		ref.Color, ref.Width = color.Gray{Y: 80}, vg.Points(1.2)
		ref.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(ref)
		p.Y.Max = math.Max(p.Y.Max, c.RefLine)
		p.Y.Min = math.Min(p.Y.Min, c.RefLine)
		if c.RefLabel != "" {
			p.Legend.Add(c.RefLabel, ref)
			entries++
		}
	}
	// Bars share 80% of each category's width, measured on the canvas
	// SavePlot draws on.
	da := p.DataCanvas(measureCanvas())
	group := float64(da.Max.X-da.Min.X) / float64(nc) * 0.8
	w := vg.Length(group / float64(ns))
	for i, b := range bars {
		b.Width = w
		b.Offset = vg.Length(float64(i)-float64(ns-1)/2) * w
	}
	makeLegendRoom(p, entries, false)
	return p, nil
}

var gridColor = color.Gray{Y: 225}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func newPlot(title, xl, yl string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text, p.Y.Label.Text = xl, yl
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(20)
	return p
}

// measureCanvas is a canvas of the size SavePlot draws, used to lay out
// bars and legend room before the plot is drawn.
func measureCanvas() draw.Canvas {
	return framed(vgimg.New(PlotWidth, PlotHeight))
}

func widen(v float64, log bool) (lo, hi float64) {
	if log {
		return v / 2, v * 2
	}
	if v == 0 {
		return -1, 1
	}
	d := math.Abs(v) / 2
	return v - d, v + d
}

// legendGap is the air between the legend and the highest data.
const legendGap vg.Length = 10 // points

// makeLegendRoom raises the top of the y axis so that the legend, drawn in
// the top-right corner of the data area, sits above the data instead of
// over it. gonum/plot has no outside legend; raising the axis costs a
// little height and works for bars and lines alike.
func makeLegendRoom(p *plot.Plot, entries int, logY bool) {
	if entries == 0 {
		return
	}
	da := p.DataCanvas(measureCanvas())
	h := float64(da.Max.Y - da.Min.Y)
	lh := float64(p.Legend.Rectangle(da).Size().Y + legendGap)
	if h <= 0 {
		return
	}
	frac := math.Min(lh/h, 0.6)
	lo, hi := p.Y.Min, p.Y.Max
	if logY {
		lo, hi = math.Log10(lo), math.Log10(hi)
	}
	top := lo + (hi-lo)/(1-frac)
	if logY {
		top = math.Pow(10, top)
	}
	p.Y.Max = top
}

// niceTicks labels about six round values (steps of 1, 2, 2.5 or 5 times
// a power of ten) with a minor tick between each, the outermost marks
// always labelled. gonum's default labels
// only two or three, too few to read a normalised JCT off a bar chart.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || bad(lo) || bad(hi) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	e := int(math.Floor(math.Log10(raw)))
	var step float64
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = scaled(m, e); step >= raw {
			break
		}
	}
	label := strconv.FormatFloat(step, 'f', -1, 64)
	decimals := 0
	if i := strings.IndexByte(label, '.'); i >= 0 {
		decimals = len(label) - i - 1
	}
	var ticks []plot.Tick
	eps := step * 1e-9
	for k := math.Ceil((lo - eps) / (step / 2)); ; k++ {
		v := k * step / 2
		if v > hi+eps {
			break
		}
		if math.Abs(v) < eps {
			v = 0
		}
		t := plot.Tick{Value: v}
		if math.Mod(k, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		ticks = append(ticks, t)
	}
	// The lowest and highest tick marks carry a label: a bare minor mark
	// at the bottom of the axis reads as an unlabelled value.
	for len(ticks) > 1 && ticks[0].Label == "" {
		ticks = ticks[1:]
	}
	for len(ticks) > 1 && ticks[len(ticks)-1].Label == "" {
		ticks = ticks[:len(ticks)-1]
	}
	return ticks
}

// scaled is m·10^e, divided rather than multiplied for negative e so that
// 2.5·10^-1 comes out as the double nearest 0.25.
func scaled(m float64, e int) float64 {
	if e < 0 {
		return m / math.Pow(10, float64(-e))
	}
	return m * math.Pow(10, float64(e))
}
