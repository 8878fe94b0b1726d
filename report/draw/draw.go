// Package draw draws report's charts as PNG and SVG with gonum.org/v1/plot.
// It is the only package of the tree that imports the plotting library:
// its package initialisation parses fonts (several milliseconds of every
// start-up), so report keeps the charts as specs and only the commands
// that draw (pal-reproduce) link this package and hand its Drawer to the
// experiments.
package draw

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/palsched/pal/report"
)

// Figures are 16:9 and wide enough for nine groups of six bars with
// readable category labels; the PNG resolution keeps 10 pt tick labels
// sharp on a laptop screen.
const (
	PlotWidth  = 8 * vg.Inch
	PlotHeight = 4.5 * vg.Inch
	PNGDPI     = 150
)

// Drawer is report's Drawer that writes PNG and SVG.
type Drawer struct{}

// Save builds c (Plot) and writes it with SavePlot.
func (Drawer) Save(c report.Chart, dir, base string) error {
	if err := report.CheckFigureName(base); err != nil {
		return err
	}
	p, err := Plot(c)
	if err != nil {
		return fmt.Errorf("%s: %v", base, err)
	}
	return SavePlot(p, dir, base)
}

// Plot builds c's plot: every series must have as many xs as ys (a bar
// series one value per category), all finite, and positive on a log axis.
func Plot(c report.Chart) (*plot.Plot, error) {
	switch c := c.(type) {
	case *report.LineChart:
		return linePlot(c)
	case *report.BarChart:
		return barPlot(c)
	}
	return nil, fmt.Errorf("report/draw: cannot draw a %T", c)
}

// SavePlot writes p as dir/base.png and dir/base.svg, creating dir. The
// PNG is for the HTML index and quick looks; the SVG is for papers and
// zooming. base must be a plain file name without an extension, since
// page.WriteIndex refers to figures by it.
func SavePlot(p *plot.Plot, dir, base string) (err error) {
	if err := report.CheckFigureName(base); err != nil {
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

// look is a series' look in gonum's terms: what l fixes, the rest from
// position i (colour, dashes, marker) and the chart's defaults.
type look struct {
	Color         color.Color
	Dashes        []vg.Length
	Shape         draw.GlyphDrawer
	Width, Radius vg.Length
}

// glyphs are report's markers as gonum draws them.
var glyphs = map[report.Glyph]draw.GlyphDrawer{
	report.Circle:   draw.CircleGlyph{},
	report.Ring:     draw.RingGlyph{},
	report.Square:   draw.SquareGlyph{},
	report.Box:      draw.BoxGlyph{},
	report.Triangle: draw.TriangleGlyph{},
	report.Pyramid:  draw.PyramidGlyph{},
	report.Cross:    draw.CrossGlyph{},
	report.Plus:     draw.PlusGlyph{},
}

// resolve fills what l leaves open from position i.
func resolve(l *report.Look, i int) look {
	out := look{Color: plotutil.Color(i), Dashes: plotutil.Dashes(i), Shape: plotutil.Shape(i)}
	if l != nil {
		if l.Color != nil {
			out.Color = l.Color
		}
		if l.Dashes != nil {
			out.Dashes = make([]vg.Length, len(l.Dashes))
			for j, d := range l.Dashes {
				out.Dashes[j] = vg.Points(d)
			}
		}
		if g, ok := glyphs[l.Shape]; ok {
			out.Shape = g
		}
		out.Width, out.Radius = vg.Points(l.Width), vg.Points(l.Radius)
	}
	if out.Width == 0 {
		out.Width = vg.Points(1.5)
	}
	if out.Radius == 0 {
		out.Radius = vg.Points(2.5)
	}
	return out
}

func linePlot(c *report.LineChart) (*plot.Plot, error) {
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
		lk := resolve(s.Look, i)
		if c.Mark != report.Points {
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
		if c.Mark != report.Lines {
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

func barPlot(c *report.BarChart) (*plot.Plot, error) {
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
		b.Color = resolve(s.Look, i).Color
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
