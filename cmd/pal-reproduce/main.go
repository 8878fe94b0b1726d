// Command pal-reproduce regenerates the papers' figures: `pal-reproduce`
// runs the whole reproduction (the PAL paper's figures, the HiveD, Themis,
// stale-profiles and backfill sections) into one directory with an
// index.html, and `pal-reproduce hived`, `themis`, `stale` and `backfill`
// run a section alone.
//
// It is apart from pal, the research binary, because it draws: the
// figures' PNG and SVG come from gonum.org/v1/plot, whose package
// initialisation (parsing its fonts, go-latex's tables) and extra code
// were about half of pal's start-up above a bare Go program's, paid by
// every `pal sim` and `pal --version` that draws nothing. The experiments
// build their charts as report's specs and receive a report.Drawer;
// this command hands them report/draw's, the only package that imports
// the plotting library, and cmd/pal's TestResearchBinaryLinksNoPlotting
// keeps pal without it. A command that writes figures belongs here; one
// that prints tables or CSV belongs in pal.
package main

import (
	"github.com/spf13/cobra"

	"github.com/palsched/pal/internal/cliroot"
)

func main() { cliroot.Main(newRootCmd()) }

func newRootCmd() *cobra.Command {
	root := cliroot.New("pal-reproduce", "Regenerate the PAL paper's simulation figures (11-18, 20) with a summary against the paper",
		`Build the binary in the checkout with go build -buildvcs=true -o pal-reproduce
./cmd/pal-reproduce (or go install ./cmd/pal-reproduce). The simulator and
the other experiments are in pal (go install ./cmd/pal).`, version)
	addReproduce(root)
	return root
}

// version is set at release builds (-ldflags "-X main.version=v1.2.3").
var version = "devel"
