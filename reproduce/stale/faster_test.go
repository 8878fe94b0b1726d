package stale

import (
	"context"
	"slices"
	"testing"

	"github.com/palsched/pal/reproduce/paper"
)

// A GPU pinned faster than its profile stays faster for the classes that
// pinned it (variability's spread). On the two faster patterns that
// showed why, per-GPU learning carried a class's speed-up to classes the
// GPU is not faster for, whose jobs then took it: Sia-Philly 1 seed 2
// (13 GPUs x0.66 on classes B and D) recovered 69% of the oracle's gain
// and Sia-Philly 3 seed 2 ended above stale (-35%). Kept class-own, they
// recover 95% and 100% (docs/measurements/learner-no-fast-carry-2026-12-05.txt
// has every pattern); the test holds them to 80%, the bar the pattern table is read against.
func TestFasterPatternsKeptClassOwn(t *testing.T) {
	dir := t.TempDir()
	wls, _, err := patternWorkloads(paper.FullPlan(), dir)
	if err != nil {
		t.Fatal(err)
	}
	wls = slices.DeleteFunc(wls, func(w patternWorkload) bool { return w.name != "sia-philly-1" && w.name != "sia-philly-3" })
	if len(wls) != 2 {
		t.Fatalf("%d of Sia-Philly 1 and 3 among the pattern workloads", len(wls))
	}
	runs, err := runPatterns(context.Background(), dir, wls, []string{"faster"}, []uint64{2}, sectionPlacement, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if got := recoveredBy(r.AvgJCT, "stale+gpu-learning"); !(got >= 0.8) {
			t.Errorf("%s %s: per-GPU learning recovers %.0f%% of the oracle's gain (avg JCT oracle %.0f s, stale %.0f s, learning %.0f s), want at least 80%%",
				r.Trace, r.Pattern, 100*got, r.AvgJCT["oracle"], r.AvgJCT["stale"], r.AvgJCT["stale+gpu-learning"])
		}
	}
}
