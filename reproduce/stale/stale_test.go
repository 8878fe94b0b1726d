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
// stale on both families' geomeans, and is never worse than stale by more
// than learning's own price (staleLearnBand), nor worse at all where the
// oracle gains more than that price, as it does on every trace but
// Sia-Philly 4. (There the stale profile beats the oracle itself, by
// 0.7%, and learning, moving towards the oracle, ends 3.5% above stale.)
func TestStaleAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("full stale-profiles section: about 20 s of simulation")
	}
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
		checkLearningVsStale(t, r.Trace, m["oracle"], m["stale"], m["stale+learning"])
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

// Learning's price on Sia-Philly 4 over 11 degradation draws (seeds 1 to
// 11, the section's draw first): stale + learning is 2.7-6.9% above the
// oracle on every draw (median 4.4%), the rounds jobs spend on degraded
// GPUs before their pace names them, which on a trace of 160 short jobs
// is a visible share of the average JCT. So wherever the oracle gains less
// than that over stale, learning can end above stale by at most the band
// (the section's own draw: the oracle loses 0.8%, learning ends 3.5% above
// stale); wherever the oracle gains more, learning must beat stale.
func TestStaleLearningBand(t *testing.T) {
	if testing.Short() {
		t.Skip("33 simulations of Sia-Philly 4: about a second")
	}
	for s := uint64(1); s <= 11; s++ {
		m := staleRuns(t, "sia-philly/4", s)
		oracle, stale, learn := m[0], m[1], m[2]
		t.Logf("seed %d: oracle %.0f stale %.0f stale+learning %.0f: learning/oracle %.4f learning/stale %.4f", s, oracle, stale, learn, learn/oracle, learn/stale)
		if learn > oracle*(1+staleLearnBand) {
			t.Errorf("seed %d: learning %.0f is %.1f%% above the oracle %.0f, outside the %.0f%% band", s, learn, 100*(learn/oracle-1), oracle, 100*staleLearnBand)
		}
		checkLearningVsStale(t, fmt.Sprintf("sia-philly/4 seed %d", s), oracle, stale, learn)
	}
}

// staleLearnBand is learning's price over the oracle on the shortest
// trace, measured by TestStaleLearningBand (at most 6.9% over 11 draws).
const staleLearnBand = 0.07

// checkLearningVsStale: learning is never worse than stale by more than
// staleLearnBand, and not worse at all where the oracle gains more than
// the band over stale.
func checkLearningVsStale(t *testing.T, name string, oracle, stale, learn float64) {
	t.Helper()
	if learn > stale*(1+staleLearnBand) {
		t.Errorf("%s: learning %.0f is %.1f%% worse than stale %.0f (oracle %.0f), outside the %.0f%% band", name, learn, 100*(learn/stale-1), stale, oracle, 100*staleLearnBand)
	}
	if oracle*(1+staleLearnBand) < stale && learn > stale {
		t.Errorf("%s: learning %.0f is worse than stale %.0f where the oracle %.0f gains %.1f%%", name, learn, stale, oracle, 100*(1-oracle/stale))
	}
}
