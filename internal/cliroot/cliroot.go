// Package cliroot is the root command both of PAL's binaries share: pal
// (the simulator and the paper's experiments) and pal-kube (the
// commands that talk to a Kubernetes cluster). The two are separate
// binaries so that the simulator starts and builds without the cluster
// client; what they have in common — --version naming the commit,
// --cpuprofile and --memprofile, --allow-extra-columns — is written once
// here so the two cannot drift.
package cliroot

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/internal/csvin"
)

// New returns a binary's root command: name is the binary (pal,
// pal-kube), release its -ldflags version ("devel" when not set).
func New(name, short, long, release string) *cobra.Command {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	root := &cobra.Command{
		Use:           name,
		Short:         short,
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       FormatVersion(name, release, bi),
	}
	root.SetVersionTemplate(name + " {{.Version}}\n")
	addProfileFlags(root)
	addInputFlags(root)
	return root
}

// Main runs root and, when it fails, prints "NAME: error" on stderr and
// exits 1: every binary's main.
func Main(root *cobra.Command) {
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, root.Name()+":", err)
		os.Exit(1)
	}
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

// FormatVersion renders --version from the release version (-ldflags),
// the module version and the VCS stamp of the build (go build and go
// install record vcs.revision, vcs.time and vcs.modified when -buildvcs
// is on, its default in a git checkout; GOFLAGS=-buildvcs=false or a
// build outside the checkout leaves them out, and the output says so).
func FormatVersion(name, release string, bi *debug.BuildInfo) string {
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
		v += " (no commit recorded: build with go build -buildvcs=true ./cmd/" + name + " in the checkout)"
	}
	if bi.GoVersion != "" {
		v += ", " + bi.GoVersion
	}
	return v
}
