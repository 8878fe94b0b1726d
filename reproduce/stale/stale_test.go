package stale

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"testing"

	"github.com/palsched/pal/data"
	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/variability"
)

// The stale-profiles acceptance on the full plan (all eight Sia-Philly
// traces, Synergy 4000 jobs at 10 jobs/hour on seeds 42, 1 and 2):
// learning with beliefs equal to the truth changes no run by 0.5% or
// more; stale + learning recovers at least 80% of oracle's gain over
// stale on both families' geomeans, and is never worse than stale: below
// it wherever the oracle gains more over stale than stale's own spread
// under re-measurement of its profile (remeasuredBand, 5.1%), as it does
// on every trace but Sia-Philly 4, and within that spread where it does
// not. (On Sia-Philly 4 the pinned profile beats the oracle itself, by
// 0.8%, and learning ends 2.5% above it.)
func TestStaleAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("full stale-profiles section: about 20 s of simulation")
	}
	band := remeasuredBand(t).band
	res, err := RunStale(context.Background(), paper.FullPlan(), t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 11 {
		t.Fatalf("%d rows, want 8 Sia-Philly and 3 Synergy", len(res.Rows))
	}
	for _, r := range res.Rows {
		m := r.AvgJCT
		if d := math.Abs(m["oracle+learning"]/m["oracle"] - 1); !(d < 0.005) {
			t.Errorf("%s: learning with beliefs = truth moves avg JCT by %.2f%% (%.0f -> %.0f)", r.Trace, 100*d, m["oracle"], m["oracle+learning"])
		}
		checkLearningVsStale(t, r.Trace, band, m["oracle"], m["stale"], m["stale+learning"])
	}
	for _, fam := range []string{"sia-philly", "synergy"} {
		if rec := res.Recovered[fam]; !(rec >= 0.8) {
			t.Errorf("%s geomean: learning recovers %.0f%% of oracle's gain over stale, want >= 80%%", fam, 100*rec)
		}
		t.Logf("%s geomean: oracle %.0f stale %.0f stale+learning %.0f: %.0f%% recovered", fam,
			res.Geomean[fam]["oracle"], res.Geomean[fam]["stale"], res.Geomean[fam]["stale+learning"], 100*res.Recovered[fam])
	}
}

// staleRuns runs one Sia-Philly trace under FIFO and PAL with the pinned
// table as the old profile and a truth degraded with seed: oracle, stale
// and stale + learning, in that order.
func staleRuns(t *testing.T, trace string, seed uint64) [3]float64 {
	t.Helper()
	b, err := fs.ReadFile(data.Reference, "reference/pal-artifact-gpu-pmscores.csv")
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := variability.ReadGPUScores("pal-artifact-gpu-pmscores.csv", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old, tru := filepath.Join(dir, "old.csv"), filepath.Join(dir, "truth.csv")
	truth, _ := degrade(pinned.Table, StaleFraction, StaleFactor, seed)
	if err := writeTable(old, pinned.Table, 4, nil); err != nil {
		t.Fatal(err)
	}
	if err := writeTable(tru, truth, 4, nil); err != nil {
		t.Fatal(err)
	}
	base, err := paper.FullPlan().Base()
	if err != nil {
		t.Fatal(err)
	}
	var out [3]float64
	for i, v := range []struct {
		believed, actual string
		learn            bool
	}{{tru, "", false}, {old, tru, false}, {old, tru, true}} {
		o := base
		o.Trace, o.Scheduler, o.Placements = trace, "fifo", "pal"
		o.GPUScores, o.ActualGPUScores, o.LearnScores = v.believed, v.actual, v.learn
		_, runs, err := experiment.RunAll(o)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = runs[0].AvgJCT
	}
	return out
}

// Sia-Philly 4 over 11 degradation draws (seeds 1 to 11, the section's
// draw first): learning beats stale wherever the oracle gains more than
// stale's spread under re-measurement (remeasuredBand), and stays within
// that spread where it does not. Measured: stale + learning is 1.8-6.5%
// above the oracle (median 5.2%), the rounds jobs spend on degraded GPUs
// before their pace names them, and it ends above stale on three draws,
// by 2.5% (seed 1, where the oracle loses 0.8% to stale), 0.7% (seed 2,
// oracle gains 4.9%) and 1.9% (seed 9, 3.5%).
func TestStaleLearningBand(t *testing.T) {
	if testing.Short() {
		t.Skip("33 simulations of Sia-Philly 4 and the re-measured band: a few seconds")
	}
	band := remeasuredBand(t).band
	for s := uint64(1); s <= 11; s++ {
		m := staleRuns(t, "sia-philly/4", s)
		oracle, stale, learn := m[0], m[1], m[2]
		t.Logf("seed %d: oracle %.0f stale %.0f stale+learning %.0f: learning/oracle %.4f learning/stale %.4f", s, oracle, stale, learn, learn/oracle, learn/stale)
		checkLearningVsStale(t, fmt.Sprintf("sia-philly/4 seed %d", s), band, oracle, stale, learn)
	}
}

// checkLearningVsStale: learning is below stale where the oracle gains
// more than band over stale, and never above stale by more than band.
func checkLearningVsStale(t *testing.T, name string, band, oracle, stale, learn float64) {
	t.Helper()
	if learn > stale*(1+band) {
		t.Errorf("%s: learning %.0f is %.1f%% worse than stale %.0f (oracle %.0f), outside stale's own %.1f%% spread", name, learn, 100*(learn/stale-1), stale, oracle, 100*band)
	}
	if oracle*(1+band) < stale && !(learn < stale) {
		t.Errorf("%s: learning %.0f is not below stale %.0f where the oracle %.0f gains %.1f%%", name, learn, stale, oracle, 100*(1-oracle/stale))
	}
}
