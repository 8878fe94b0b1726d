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
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/cliroot"
)

func main() { cliroot.Main(newRootCmdFor(os.Args[1:])) }

// newRootCmd is pal with every command, as help and completion list them.
func newRootCmd() *cobra.Command {
	root := newRoot()
	for _, c := range commands {
		root.AddCommand(c.build())
	}
	return root
}

// newRootCmdFor is pal for one run of args: building a command declares
// all its flags (sim alone has over a hundred), and the whole tree was
// about a twentieth of a short simulation's process, so a run that
// names a command gets that command alone, and `pal --version` none.
// Anything else (no command, help, completion, a name pal does not
// know) gets the whole tree, so that listings and suggestions are the
// same. TestLazyRootIsTheSame holds each command's help and flags to the
// whole tree's.
func newRootCmdFor(args []string) *cobra.Command {
	root := newRoot()
	name, version := commandArg(root, args)
	for _, c := range commands {
		if c.name == name {
			root.AddCommand(c.build())
			return root
		}
	}
	if name == "" && version {
		return root
	}
	for _, c := range commands {
		root.AddCommand(c.build())
	}
	return root
}

// commandArg is the first argument of args that is not a root flag or
// a root flag's value (cobra's own rule for finding the command), and
// whether --version came before it; "" when there is none or "--" ends
// the flags first.
func commandArg(root *cobra.Command, args []string) (name string, version bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return "", version
		case a == "--version" || a == "-v":
			version = true
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "="):
			if f := root.PersistentFlags().Lookup(a[2:]); f != nil && f.NoOptDefVal == "" {
				i++ // its value is the next argument
			}
		case strings.HasPrefix(a, "-"):
		default:
			return a, version
		}
	}
	return "", version
}

// commands are pal's commands, in the order help lists them, each with
// the name it is called by (TestLazyRootIsTheSame checks the names).
var commands = []struct {
	name  string
	build func() *cobra.Command
}{
	{"sim", newSimCmd},
	{"reproduce", func() *cobra.Command { return newMovedCmd("reproduce", "pal-reproduce") }},
	{"trace", newTraceCmd},
	{"profile", newProfileCmd},
	{"classify", newClassifyCmd},
	{"bench", newBenchCmd},
	{"sweep", newSweepCmd},
	{"cells", newCellsCmd},
	{"themis", newThemisCmd},
}

func newRoot() *cobra.Command {
	return cliroot.New("pal", "PAL: variability- and locality-aware GPU cluster scheduling",
		`PAL: variability- and locality-aware GPU cluster scheduling.

Build the binary in the checkout with go build -buildvcs=true -o pal ./cmd/pal
(or go install ./cmd/pal); pal --version then names the commit it was built
from. The commands that talk to a Kubernetes cluster (the scheduler, the dev
cluster, replay, profile bench/collect/export/dcgm) are in pal-kube
(go install ./cmd/pal-kube); the papers' reproduction, which draws the
figures, is pal-reproduce (go install ./cmd/pal-reproduce).`, version)
}

// version is set at release builds (-ldflags "-X main.version=v1.2.3").
var version = "devel"

// DefaultSeed is every subcommand's default seed, so that two commands
// given no seed draw the same stream.
const DefaultSeed = experiment.DefaultSeed
