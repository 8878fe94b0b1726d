package reproduce

import (
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/reproduce/paper"
)

// The shared convention lives in package paper, below every room; these
// names keep PAL's figures and the command's API reading as they did.
type (
	Plan      = paper.Plan
	BenchSize = paper.BenchSize
	Figure    = paper.Figure
)

// FullPlan is the paper's evaluation (paper.FullPlan).
func FullPlan() Plan { return paper.FullPlan() }

// QuickPlan is every figure on a reduced grid (paper.QuickPlan).
func QuickPlan() Plan { return paper.QuickPlan() }

var (
	placements        = paper.Placements
	synergySchedulers = paper.SynergySchedulers
	displayNames      = paper.DisplayNames
)

func display(p string) string         { return paper.Display(p) }
func lookOf(p string) *report.Look    { return paper.LookOf(p) }
func seedsText(seeds []uint64) string { return paper.SeedsText(seeds) }
func siaNames(ks []int) []string      { return paper.SiaNames(ks) }

func cell(x float64) any        { return paper.Cell(x) }
func pctCell(x float64) string  { return paper.PctCell(x) }
func pct(ratio float64) float64 { return paper.Pct(ratio) }
