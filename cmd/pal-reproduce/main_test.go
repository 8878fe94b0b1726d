package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/internal/cliroot/clitest"
)

// pal-reproduce speaks pal's vocabulary (-o is a format, --out a path, one
// seed default) over the whole reproduction and its four sections.
func TestOneVocabulary(t *testing.T) {
	if commands, flags := clitest.CheckFlags(t, newRootCmd(), "table", nil); commands < 5 || flags < 20 {
		t.Fatalf("walked only %d commands, %d flags", commands, flags)
	}
	help, err := clitest.Run(t, newRootCmd(), "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pal-reproduce [command]", "hived", "themis", "stale", "backfill", "--quick", "--out"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
}

// A section run from this binary draws: the quick Themis experiments
// write their CSVs, and each plot as PNG and SVG, where the index says.
func TestThemisQuickDraws(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick Themis experiments")
	}
	out := t.TempDir()
	msg, err := clitest.Run(t, newRootCmd(), "themis", "--quick", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "plots to "+filepath.Join(out, "themis")) {
		t.Errorf("output %q", msg)
	}
	pngs, _ := filepath.Glob(filepath.Join(out, "themis", "*.png"))
	svgs, _ := filepath.Glob(filepath.Join(out, "themis", "*.svg"))
	if len(pngs) < 4 || len(svgs) != len(pngs) {
		t.Fatalf("%d PNGs and %d SVGs in %s/themis", len(pngs), len(svgs), out)
	}
	for _, f := range pngs {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() < 1000 {
			t.Errorf("%s: %d bytes, too few for a drawn figure", f, st.Size())
		}
	}
}

// stale patterns names what it cannot use, before any simulation runs;
// a small set runs and prints its pooled table.
func TestStalePatterns(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "3-1"}, `--seeds: seeds "3-1": "3-1" is not a range`},
		{[]string{"--band", "-1"}, "--band -1: want a percent"},
		{[]string{"--families", "fast"}, `unknown family "fast"`},
		{[]string{"--placement", "pal-fast"}, `unknown placement "pal-fast"`},
		{[]string{"--workloads", "sia-philly-9"}, `unknown workload "sia-philly-9" (known: sia-philly-1,`},
	} {
		args := append([]string{"stale", "patterns", "--out", t.TempDir()}, tc.args...)
		if _, err := clitest.Run(t, newRootCmd(), args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
	if testing.Short() {
		return
	}
	out := t.TempDir()
	msg, err := clitest.Run(t, newRootCmd(), "stale", "patterns", "--seeds", "1,2", "--workloads", "sia-philly-2", "--families", "uniform,faster", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seeds 1-2, 1 workloads x 2 families, 4 patterns, placement pal", "| workload | uniform | faster |", "| sia-philly-2 |"} {
		if !strings.Contains(msg, want) {
			t.Errorf("output lacks %q:\n%s", want, msg)
		}
	}
	csv, err := os.ReadFile(filepath.Join(out, "stale-patterns", "patterns.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(csv), "\nsia-philly-2,"); n != 4 {
		t.Errorf("patterns.csv has %d runs, want 4:\n%s", n, csv)
	}
}
