package stale

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/palsched/pal/reproduce/paper"
)

// TestPatternSubset runs a subset of the random patterns, for tuning a
// learner rule on the runs where it fails without the rest of `pal
// reproduce stale`. It runs only when PAL_STALE_PATTERNS names the subset:
// semicolon-separated workloads=, families= and seeds= lists, each
// optional (every workload, family or seed when left out), e.g.
//
//	PAL_STALE_PATTERNS='workloads=sia-philly-4,sia-philly-6;families=step,drift' \
//	  go test -run TestPatternSubset -v ./reproduce/stale
//
// It logs each workload and family's recovered shares (over the runs
// where the oracle gains at least minGain) and harm, for learning from
// job paces and from per-GPU paces, and leaves
// patterns.csv in PAL_STALE_OUT when that is set.
func TestPatternSubset(t *testing.T) {
	spec := os.Getenv("PAL_STALE_PATTERNS")
	if spec == "" {
		t.Skip("set PAL_STALE_PATTERNS to run a subset of the random patterns")
	}
	var workloads, families []string
	var seeds []uint64
	for _, part := range strings.Split(spec, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			t.Fatalf("PAL_STALE_PATTERNS: %q is not key=list", part)
		}
		list := strings.Split(v, ",")
		switch k {
		case "workloads":
			workloads = list
		case "families":
			families = list
		case "seeds":
			for _, x := range list {
				s, err := strconv.ParseUint(x, 10, 64)
				if err != nil {
					t.Fatalf("PAL_STALE_PATTERNS seeds: %v", err)
				}
				seeds = append(seeds, s)
			}
		default:
			t.Fatalf("PAL_STALE_PATTERNS: unknown key %q (workloads, families, seeds)", k)
		}
	}
	dir := os.Getenv("PAL_STALE_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	wls, _, err := patternWorkloads(paper.FullPlan(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if workloads != nil {
		wls = slices.DeleteFunc(wls, func(w patternWorkload) bool { return !slices.Contains(workloads, w.name) })
		if len(wls) != len(workloads) {
			t.Fatalf("PAL_STALE_PATTERNS names %v; %d of them are workloads", workloads, len(wls))
		}
	}
	runs, err := runPatterns(context.Background(), dir, wls, families, seeds, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range patternStats(runs) {
		t.Logf("%s %s held-out=%t: %d runs; job paces: %s; per-GPU paces: %s", s.Trace, s.Family, s.HeldOut, s.Runs,
			shareLine(s.Shares, s.Harmed, s.WorstHarm), shareLine(s.GPUShares, s.GPUHarmed, s.GPUWorstHarm))
	}
}

// shareLine says a learner's recovered shares (the lower median, as the
// table's cells, then each) and its harm.
func shareLine(shares []float64, harmed int, worst float64) string {
	var pct []string
	for _, x := range shares {
		pct = append(pct, fmt.Sprintf("%.0f%%", 100*x))
	}
	med := "n/a"
	if len(shares) > 0 {
		med = fmt.Sprintf("%.0f%%", 100*quantile(shares, 0.5))
	}
	return fmt.Sprintf("median %s %v; above stale %d, worst +%.1f%%", med, pct, harmed, 100*worst)
}
