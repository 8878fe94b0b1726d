// Command pal is the PAL GPU-cluster scheduler's command line: the
// round-based simulator (`pal sim`), workload tools, profile inspection and
// the paper's experiments. It is a thin shell over the library packages.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/csvin"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "pal:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "pal",
		Short: "PAL: variability- and locality-aware GPU cluster scheduling",
		Long: `PAL: variability- and locality-aware GPU cluster scheduling.

Build the binary in the checkout with go build -buildvcs=true -o pal ./cmd/pal
(or go install ./cmd/pal); pal --version then names the commit it was built
from.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("pal {{.Version}}\n")
	addProfileFlags(root)
	addInputFlags(root)
	root.AddCommand(newSimCmd())
	addExtraCommands(root)
	return root
}

// addInputFlags gives every command --allow-extra-columns: a CSV input
// (trace, node events, GPU scores, Philly files, ...) with a column its
// format does not have is an error unless this flag is given, when the
// column is ignored with a warning.
func addInputFlags(root *cobra.Command) {
	var allow bool
	root.PersistentFlags().BoolVar(&allow, "allow-extra-columns", false,
		"ignore CSV columns an input format does not have, with a warning (without it they are an error)")
	pre := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if allow {
			w := cmd.ErrOrStderr()
			csvin.SetAllowExtraColumns(func(msg string) { fmt.Fprintln(w, "warning:", msg) })
		} else {
			csvin.SetAllowExtraColumns(nil)
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
}

// version is set at release builds (-ldflags "-X main.version=v1.2.3").
var version = "devel"

// DefaultSeed is every subcommand's default seed, so that two commands
// given no seed draw the same stream.
const DefaultSeed = experiment.DefaultSeed

// versionString is the version plus the commit it was built from, when
// the Go toolchain recorded one.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return formatVersion(version, bi)
}

// formatVersion renders --version from the release version (-ldflags),
// the module version and the VCS stamp of the build (go build and go
// install record vcs.revision, vcs.time and vcs.modified when -buildvcs
// is on, its default in a git checkout; GOFLAGS=-buildvcs=false or a
// build outside the checkout leaves them out, and the output says so).
func formatVersion(release string, bi *debug.BuildInfo) string {
	v := release
	if bi == nil {
		return v
	}
	if release == "devel" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	rev, at, dirty := "", "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (commit " + rev
		if at != "" {
			v += " of " + at
		}
		if dirty {
			v += ", with uncommitted changes"
		}
		v += ")"
	} else {
		v += " (no commit recorded: build with go build -buildvcs=true ./cmd/pal in the checkout)"
	}
	if bi.GoVersion != "" {
		v += ", " + bi.GoVersion
	}
	return v
}
