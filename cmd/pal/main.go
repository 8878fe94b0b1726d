// Command pal is the PAL GPU-cluster scheduler's research command line:
// the round-based simulator (`pal sim`), workload tools, profile building
// and inspection, benchmarks and the papers' experiments. It is a thin
// shell over the library packages.
//
// It links no Kubernetes or Prometheus client: answering in milliseconds
// is the simulator's point, and the cluster client's package
// initialisation and build time would dwarf a simulation (a newcomer's
// first go run compiled the client for minutes). A command that talks to
// a cluster, or needs the cluster client's types, goes in cmd/pal-kube
// instead; TestResearchBinaryLinksNoClusterClient keeps this so.
//
// For the same reason it links no plotting library: gonum.org/v1/plot's
// package initialisation (its fonts) and code were about half of pal's
// start-up above a bare Go program's. The commands that draw figures (the
// papers' reproduction) are cmd/pal-reproduce; TestResearchBinaryLinksNoPlotting
// keeps pal without the plotting library. `pal reproduce` is a hidden
// stub that fails with the command to run instead (see moved.go): a
// removed command would answer only "unknown command", and a script or a
// reader following an old page would not learn where it went.
package main

import (
	"github.com/spf13/cobra"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/cliroot"
)

func main() { cliroot.Main(newRootCmd()) }

func newRootCmd() *cobra.Command {
	root := cliroot.New("pal", "PAL: variability- and locality-aware GPU cluster scheduling",
		`PAL: variability- and locality-aware GPU cluster scheduling.

Build the binary in the checkout with go build -buildvcs=true -o pal ./cmd/pal
(or go install ./cmd/pal); pal --version then names the commit it was built
from. The commands that talk to a Kubernetes cluster (the scheduler, the dev
cluster, replay, profile bench/collect/export/dcgm) are in pal-kube
(go install ./cmd/pal-kube); the papers' reproduction, which draws the
figures, is pal-reproduce (go install ./cmd/pal-reproduce).`, version)
	root.AddCommand(newSimCmd(), newMovedCmd("reproduce", "pal-reproduce"))
	addExtraCommands(root)
	return root
}

// version is set at release builds (-ldflags "-X main.version=v1.2.3").
var version = "devel"

// DefaultSeed is every subcommand's default seed, so that two commands
// given no seed draw the same stream.
const DefaultSeed = experiment.DefaultSeed
