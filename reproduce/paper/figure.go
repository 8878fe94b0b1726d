package paper

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"github.com/palsched/pal/report"
)

// Figure is one of the paper's figures as reproduced: a CSV of its data,
// one or more plots, and the tables the HTML index shows beside them.
type Figure struct {
	// ID names the figure in file names ("fig11"); Title is the index
	// heading and Text says what the paper shows and how we built it.
	ID, Title, Text string
	// CSV is the data file's name in the output directory.
	CSV string
	// Plots are figure base names, each written as .png and .svg.
	Plots    []string
	Captions map[string]string
	// Tables are shown in the index.
	Tables []*report.Table
	// Data is what the CSV holds; Charts build the plots, by base name.
	Data   *report.Table
	Charts map[string]Chart
}

// Chart is a figure's spec (report's bar and line charts); the command
// that runs the experiments draws it with its report.Drawer.
type Chart = report.Chart

// Add adds a plot with its caption.
func (f *Figure) Add(base, caption string, c Chart) {
	if f.Charts == nil {
		f.Charts, f.Captions = map[string]Chart{}, map[string]string{}
	}
	f.Plots = append(f.Plots, base)
	f.Captions[base] = caption
	f.Charts[base] = c
}

// DisplayNames are the placements as the figures name them: the paper calls packed-sticky Tiresias and
// packed-nonsticky Gandiva.
var DisplayNames = map[string]string{
	"pal":              "PAL",
	"pm-first":         "PM-First",
	"packed-sticky":    "Tiresias (packed-sticky)",
	"packed-nonsticky": "Gandiva (packed-nonsticky)",
	"random-sticky":    "Random-sticky",
	"random-nonsticky": "Random-nonsticky",
}

// policyLooks gives each placement one colour (the Okabe-Ito palette,
// readable with colour-blindness), one line style and one marker for every
// figure of a report. PAL and PM-First often overlap, so they differ in
// all three: PAL solid with circles, PM-First dashed with triangles.
var policyLooks = map[string]report.Look{
	"pal":              {Color: color.RGBA{0, 114, 178, 255}, Dashes: []float64{}, Shape: report.Circle},
	"pm-first":         {Color: color.RGBA{230, 159, 0, 255}, Dashes: []float64{6, 3}, Shape: report.Triangle},
	"packed-sticky":    {Color: color.RGBA{213, 94, 0, 255}, Dashes: []float64{2, 2}, Shape: report.Box},
	"packed-nonsticky": {Color: color.RGBA{0, 158, 115, 255}, Dashes: []float64{8, 2, 2, 2}, Shape: report.Pyramid},
	"random-sticky":    {Color: color.RGBA{204, 121, 167, 255}, Dashes: []float64{1, 3}, Shape: report.Ring},
	"random-nonsticky": {Color: color.RGBA{86, 180, 233, 255}, Dashes: []float64{10, 4}, Shape: report.Cross},
}

// maLooks are PAL's and PM-First's migration-aware variants, whose lines
// often coincide (both keep a running job where it is): PAL's is drawn
// first, wide and long-dashed with large rings, PM-First's on top of it,
// thin and dotted with small crosses, so that where they coincide both
// still show.
var maLooks = map[string]report.Look{
	"pal-ma":      {Color: policyLooks["pal"].Color, Dashes: []float64{7, 3}, Shape: report.Ring, Width: 4, Radius: 5},
	"pm-first-ma": {Color: policyLooks["pm-first"].Color, Dashes: []float64{1.5, 2}, Shape: report.Cross, Width: 1.5, Radius: 3},
}

// LookOf is a placement's look (nil for a name without one). A
// migration-aware variant ("pal-ma") keeps its policy's colour; PAL's and
// PM-First's have looks of their own (maLooks), any other has its
// policy's marker with a dotted line.
func LookOf(p string) *report.Look {
	if l, ok := maLooks[p]; ok {
		return &l
	}
	if base, ok := strings.CutSuffix(p, "-ma"); ok {
		if l := LookOf(base); l != nil {
			l.Dashes = []float64{1, 2}
			return l
		}
	}
	if l, ok := policyLooks[p]; ok {
		return &l
	}
	return nil
}

// Display is a placement's display name (the name itself when it has none).
func Display(p string) string {
	if d, ok := DisplayNames[p]; ok {
		return d
	}
	return p
}

// SeedsText says which seeds a figure combines, and how.
func SeedsText(seeds []uint64) string {
	if len(seeds) == 1 {
		return fmt.Sprintf("seed %d", seeds[0])
	}
	return fmt.Sprintf("combined over seeds %v (mean JCT; geometric mean of the per-seed ratios)", seeds)
}

// Cell is a number for a table cell: NaN and Inf (no value) become "".
func Cell(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return x
}

// PctCell writes a percentage with its sign; NaN is "n/a".
func PctCell(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", x)
}

// Pct is a ratio as a percentage change (1.05 is +5).
func Pct(ratio float64) float64 { return 100 * (ratio - 1) }
