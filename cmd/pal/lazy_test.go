package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/palsched/pal/internal/cliroot/clitest"
)

// TestLazyRootIsTheSame holds a run's root (newRootCmdFor: only the
// command it names) to the whole tree: the registry names every command
// the tree has, under the name it is called by, and each command built
// alone has the same help, subcommands and flags.
func TestLazyRootIsTheSame(t *testing.T) {
	full := newRootCmd()
	var names []string
	for _, c := range full.Commands() {
		names = append(names, c.Name())
	}
	var reg []string
	for _, c := range commands {
		reg = append(reg, c.name)
	}
	slices.Sort(reg)
	if !slices.Equal(names, reg) {
		t.Fatalf("the whole tree has commands %v, the registry %v", names, reg)
	}
	for _, c := range commands {
		lazy := newRootCmdFor([]string{c.name, "--help"})
		if got := lazy.Commands(); len(got) != 1 || got[0].Name() != c.name {
			t.Errorf("pal %s: the run's root has %d commands, want %s alone", c.name, len(got), c.name)
			continue
		}
		var flags []string
		for _, f := range flagTree(newRootCmd()) {
			if strings.HasPrefix(f, "pal --") || strings.HasPrefix(f, "pal "+c.name+" ") {
				flags = append(flags, f)
			}
		}
		if got := flagTree(lazy); !slices.Equal(got, flags) {
			t.Errorf("pal %s: flags built alone differ from the whole tree's:\n%q\n%q", c.name, got, flags)
		}
		want, _ := clitest.Run(t, newRootCmd(), c.name, "--help")
		got, _ := clitest.Run(t, newRootCmdFor([]string{c.name, "--help"}), c.name, "--help")
		if got != want {
			t.Errorf("pal %s --help differs built alone:\n%s\nwhole tree:\n%s", c.name, got, want)
		}
	}
	want, _ := clitest.Run(t, newRootCmd(), "--version")
	got, _ := clitest.Run(t, newRootCmdFor([]string{"--version"}), "--version")
	if got != want || got == "" {
		t.Errorf("pal --version: %q built alone, %q with the whole tree", got, want)
	}
}

// flagTree lists every command's path and flags (name, default, usage)
// under root.
func flagTree(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			out = append(out, c.CommandPath()+" --"+f.Name+"="+f.DefValue+" "+f.Usage)
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

func TestCommandArg(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		name    string
		version bool
	}{
		{nil, "", false},
		{[]string{"sim", "--trace", "x"}, "sim", false},
		{[]string{"--cpuprofile", "out.prof", "sim"}, "sim", false},
		{[]string{"--cpuprofile=out.prof", "trace"}, "trace", false},
		{[]string{"--allow-extra-columns", "sim"}, "sim", false},
		{[]string{"--version"}, "", true},
		{[]string{"-v"}, "", true},
		{[]string{"--", "sim"}, "", false},
		{[]string{"help", "sim"}, "help", false},
		{[]string{"-h"}, "", false},
	} {
		name, version := commandArg(newRoot(), tc.args)
		if name != tc.name || version != tc.version {
			t.Errorf("commandArg(%q) = %q, %t; want %q, %t", tc.args, name, version, tc.name, tc.version)
		}
	}
}
