package stale

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/report/draw"
	"github.com/palsched/pal/reproduce/paper"
)

// The stale-profiles acceptance on the full plan (all eight Sia-Philly
// traces, Synergy 4000 jobs at 10 jobs/hour on seeds 42, 1 and 2), on
// the main degradation draw and on all StaleDraws:
//
//   - learning with beliefs equal to the truth changes no run by 0.5% or
//     more;
//   - stale + learning recovers at least 80% of the oracle's gain over
//     stale on both families' geomeans, on the main draw and on every
//     draw (measured on Sia-Philly: 93%, and 91-94% over the draws);
//   - on every trace, learning's median over the draws is below stale's;
//   - per run, learning is below stale wherever the oracle gains more
//     over stale than stale's own spread under re-measurement of its
//     profile (remeasuredBand, 5.1%), and within that spread where it
//     does not;
//   - every learner (job paces, each GPU's own pace, job paces with
//     telemetry) ends above stale by more than aboveSlack only where the
//     oracle itself ends above stale: a learner that converges to the
//     truth cannot be held to beating stale where the truth is worse.
//     Measured: learning above stale on 2 of the 121 runs, Sia-Philly 4
//     draw 1 (+3.9%; the oracle +0.8%) and draw 9 (22,501 s against
//     22,434, +0.3%, where the oracle is 3.5% below stale);
//   - on the random patterns (patterns.go), learning ends above both
//     stale and the oracle by more than the band on no run of the
//     families that go stale from the start (uniform, one-class,
//     faster; measured: the worst is +0.8%), and its median recovered
//     share over the uniform family's runs is at least 80% on
//     Sia-Philly and on Synergy. The step and drift families are
//     reported, not asserted: see docs/variability.md;
//   - with telemetry that shows every other degraded GPU
//     (stale+learning+dcgm), learning ends closer to the oracle on
//     Sia-Philly (geomean over every run and draw: measured 1.010 of the
//     oracle against learning's 1.020), is at or below learning alone in
//     every arrival group there, and stays within 0.5% of the oracle on
//     Synergy (measured 0.999; learning alone 0.998).
func TestStaleAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("full stale-profiles section over 11 draws: about 40 s of simulation")
	}
	band := remeasuredBand(t).band
	res, err := RunStale(context.Background(), paper.FullPlan(), t.TempDir(), 0, nil, draw.Drawer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Draws) != StaleDraws {
		t.Fatalf("%d draws, want %d", len(res.Draws), StaleDraws)
	}
	above := 0
	logRatio := map[string]map[string]float64{} // family -> variant -> sum of log(x / oracle)
	runs := map[string]int{}
	for i, rows := range res.Draws {
		if len(rows) != 11 {
			t.Fatalf("draw %d: %d rows, want 8 Sia-Philly and 3 Synergy", res.DrawSeeds[i], len(rows))
		}
		for _, r := range rows {
			m := r.AvgJCT
			name := fmt.Sprintf("%s draw %d", r.Trace, res.DrawSeeds[i])
			if d := math.Abs(m["oracle+learning"]/m["oracle"] - 1); !(d < 0.005) {
				t.Errorf("%s: learning with beliefs = truth moves avg JCT by %.2f%% (%.0f -> %.0f)", name, 100*d, m["oracle"], m["oracle+learning"])
			}
			checkLearningVsStale(t, name, band, m["oracle"], m["stale"], m["stale+learning"])
			if m["stale+learning"] > m["stale"] {
				above++
			}
			for _, v := range []string{"stale+learning", "stale+gpu-learning", "stale+learning+dcgm"} {
				if m[v] > m["stale"]*(1+aboveSlack) && !(m["oracle"] > m["stale"]) {
					t.Errorf("%s: %s %.0f is above stale %.0f although the oracle %.0f is not", name, v, m[v], m["stale"], m["oracle"])
				}
			}
			if logRatio[r.Family] == nil {
				logRatio[r.Family] = map[string]float64{}
			}
			for _, v := range []string{"stale+learning", "stale+learning+dcgm"} {
				logRatio[r.Family][v] += math.Log(m[v] / m["oracle"])
			}
			runs[r.Family]++
		}
	}
	t.Logf("learning above stale on %d of %d runs", above, StaleDraws*len(res.Rows))
	gm := func(fam, v string) float64 { return math.Exp(logRatio[fam][v] / float64(runs[fam])) }
	if l, d := gm("sia-philly", "stale+learning"), gm("sia-philly", "stale+learning+dcgm"); !(d < l) {
		t.Errorf("sia-philly, every run: with telemetry %.4f of the oracle, not closer than learning alone %.4f", d, l)
	}
	if d := gm("synergy", "stale+learning+dcgm"); !(math.Abs(d-1) < 0.005) {
		t.Errorf("synergy, every run: with telemetry %.4f of the oracle, want within 0.5%%", d)
	}
	t.Logf("geomean over every run, of the oracle: sia-philly learning %.4f with telemetry %.4f; synergy %.4f %.4f",
		gm("sia-philly", "stale+learning"), gm("sia-philly", "stale+learning+dcgm"), gm("synergy", "stale+learning"), gm("synergy", "stale+learning+dcgm"))
	for _, d := range res.DrawStats() {
		if !(d.Median["stale+learning"] < d.Median["stale"]) {
			t.Errorf("%s: median over %d draws, learning %.0f is not below stale %.0f", d.Trace, StaleDraws, d.Median["stale+learning"], d.Median["stale"])
		}
	}
	// How fast the gap closes: in every arrival group per-GPU learning is
	// at most job-pace learning, which is below stale, and by the last
	// group job-pace learning's distance from the oracle is under a
	// quarter of stale's. Measured: Sia-Philly, first group stale 1.238,
	// learning 1.058, per-GPU 1.025; last 1.256, 1.009, 1.001. Synergy:
	// learning within 0.3% of the oracle from the first group on.
	if len(res.Convergence) != 2 {
		t.Fatalf("%d convergence curves, want one per family", len(res.Convergence))
	}
	for _, c := range res.Convergence {
		r := c.Ratio
		for g := range convergenceGroups {
			if !(r["stale+gpu-learning"][g] <= r["stale+learning"][g]*1.001 && r["stale+learning"][g] < r["stale"][g]) {
				t.Errorf("%s group %d: stale %.3f learning %.3f per-GPU learning %.3f, want per-GPU <= learning < stale", c.Family, g+1, r["stale"][g], r["stale+learning"][g], r["stale+gpu-learning"][g])
			}
		}
		for g := range convergenceGroups {
			d, l := r["stale+learning+dcgm"][g], r["stale+learning"][g]
			if (c.Family == "sia-philly" && !(d <= l)) || (c.Family == "synergy" && !(math.Abs(d-1) < 0.005)) {
				t.Errorf("%s group %d: with telemetry %.3f, learning alone %.3f of the oracle", c.Family, g+1, d, l)
			}
		}
		last := convergenceGroups - 1
		if !(r["stale+learning"][last]-1 < (r["stale"][last]-1)/4) {
			t.Errorf("%s last group: learning %.3f, stale %.3f of the oracle: the gap is not closed", c.Family, r["stale+learning"][last], r["stale"][last])
		}
	}
	checkPatterns(t, res.Patterns, band)
	for _, fam := range []string{"sia-philly", "synergy"} {
		if rec := res.Recovered[fam]; !(rec >= 0.8) {
			t.Errorf("%s geomean: learning recovers %.0f%% of oracle's gain over stale, want >= 80%%", fam, 100*rec)
		}
		for i, rec := range res.DrawRecovered(fam) {
			if !(rec >= 0.8) {
				t.Errorf("%s geomean, draw %d: learning recovers %.0f%% of oracle's gain over stale, want >= 80%%", fam, res.DrawSeeds[i], 100*rec)
			}
		}
		t.Logf("%s geomean: oracle %.0f stale %.0f stale+learning %.0f: %.0f%% recovered", fam,
			res.Geomean[fam]["oracle"], res.Geomean[fam]["stale"], res.Geomean[fam]["stale+learning"], 100*res.Recovered[fam])
	}
}

// aboveSlack is how far above stale a learner may end where the oracle
// does not: the 0.5% that learning with beliefs equal to the truth may
// move a run (one reshuffle of a 160-job queue).
const aboveSlack = 0.005

// checkPatterns asserts the random patterns' runs (see TestStaleAcceptance).
func checkPatterns(t *testing.T, runs []PatternRun, band float64) {
	t.Helper()
	if want := 11 * len(PatternFamilies) * (PatternDraws + PatternHeldOut); len(runs) != want {
		t.Fatalf("%d pattern runs, want %d", len(runs), want)
	}
	fromStart := map[string]bool{"uniform": true, "one-class": true, "faster": true}
	shares := map[string][]float64{} // uniform's shares by family of workload
	for _, r := range runs {
		m := r.AvgJCT
		if fromStart[r.Family] && m["stale+learning"] > max(m["stale"], m["oracle"])*(1+band) {
			t.Errorf("%s, %s: learning %.0f above stale %.0f and the oracle %.0f by more than the %.1f%% band", r.Trace, r.Pattern, m["stale+learning"], m["stale"], m["oracle"], 100*band)
		}
		if r.Family == "uniform" && m["stale"]-m["oracle"] >= minGain*m["stale"] {
			fam := "sia-philly"
			if strings.HasPrefix(r.Trace, "synergy") {
				fam = "synergy"
			}
			shares[fam] = append(shares[fam], r.Recovered())
		}
	}
	for fam, xs := range shares {
		if med := quantile(xs, 0.5); !(med >= 0.8) {
			t.Errorf("%s, uniform patterns: median recovered %.0f%% over %d runs, want >= 80%%", fam, 100*med, len(xs))
		}
		t.Logf("%s, uniform patterns: median recovered %.0f%%, worst %.0f%% over %d runs", fam, 100*quantile(xs, 0.5), 100*slices.Min(xs), len(xs))
	}
	if len(shares) != 2 {
		t.Errorf("uniform patterns with a gain on %d families, want sia-philly and synergy", len(shares))
	}
	// Learning from each GPU's own pace sees what job paces hide (which
	// GPU of a gang is slow), so on the families that slow GPUs down it
	// recovers most of the gap on every workload, Sia-Philly 4 included,
	// where job paces recover about 60% pooled.
	gpu := map[string][]float64{}
	for _, r := range runs {
		m := r.AvgJCT
		if (r.Family == "uniform" || r.Family == "step" || r.Family == "drift") && m["stale"]-m["oracle"] >= minGain*m["stale"] {
			gpu[r.Trace] = append(gpu[r.Trace], recoveredBy(m, "stale+gpu-learning"))
		}
	}
	for trace, xs := range gpu {
		if med := quantile(xs, 0.5); !(med >= 0.85) {
			t.Errorf("%s, slowing patterns: learning from per-GPU paces recovers a median %.0f%% over %d runs, want >= 85%%", trace, 100*med, len(xs))
		}
	}
	if len(gpu) != 11 {
		t.Errorf("slowing patterns with a gain on %d workloads, want 11", len(gpu))
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
