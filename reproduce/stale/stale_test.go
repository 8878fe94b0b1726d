package stale

import (
	"context"
	"math"
	"testing"

	"github.com/palsched/pal/reproduce/paper"
)

// The stale-profiles acceptance on the full plan (all eight Sia-Philly
// traces, Synergy 4000 jobs at 10 jobs/hour on seeds 42, 1 and 2):
// learning with beliefs equal to the truth changes no run by 0.5% or
// more; stale + learning recovers at least 80% of oracle's gain over
// stale on both families' geomeans, and is no worse than stale on every
// run where the oracle gains anything. (On Sia-Philly 4 the stale profile
// beats the oracle itself, by 0.7%; learning moves towards the oracle
// there and ends 3.5% above stale. That run is reported, not asserted.)
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
		if m["oracle"] < m["stale"] && m["stale+learning"] > m["stale"] {
			t.Errorf("%s: learning %.0f is worse than stale %.0f (oracle %.0f)", r.Trace, m["stale+learning"], m["stale"], m["oracle"])
		}
	}
	for _, fam := range []string{"sia-philly", "synergy"} {
		if rec := res.Recovered[fam]; !(rec >= 0.8) {
			t.Errorf("%s geomean: learning recovers %.0f%% of oracle's gain over stale, want >= 80%%", fam, 100*rec)
		}
		t.Logf("%s geomean: oracle %.0f stale %.0f stale+learning %.0f: %.0f%% recovered", fam,
			res.Geomean[fam]["oracle"], res.Geomean[fam]["stale"], res.Geomean[fam]["stale+learning"], 100*res.Recovered[fam])
	}
}
