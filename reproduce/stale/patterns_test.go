package stale

import (
	"math"
	"slices"
	"testing"

	"github.com/palsched/pal/variability"
)

// Apply on a hand-built pattern: 2 GPUs, profile A = 1, 2 and B = 3, 4
// (C, D = 1). A drift of GPU 1 on class B to x1.5 in 5 steps from 100 s
// to 500 s: events at 100, 200, 300, 400, 500 s setting B's GPU 1 to
// 4 x 1.1, 1.2, 1.3, 1.4, 1.5; nothing else changes and the truth at 0
// is the profile. The same change from the start (Start 0, one step)
// puts 4 x 1.5 = 6 in the truth table and makes no event.
func TestPatternApply(t *testing.T) {
	old := &variability.Table{}
	old.Values[0] = []float64{1, 2}
	old.Values[1] = []float64{3, 4}
	old.Values[2] = []float64{1, 1}
	old.Values[3] = []float64{1, 1}
	p := Pattern{Family: "drift", GPUs: []int{1}, Classes: []variability.Class{1}, Factor: 1.5, Start: 100, End: 500, Steps: 5}
	truth, events := p.Apply(old)
	for c := range old.Values {
		if !slices.Equal(truth.Values[c], old.Values[c]) {
			t.Errorf("class %d truth at 0 %v, want the profile %v", c, truth.Values[c], old.Values[c])
		}
	}
	if len(events) != 5 {
		t.Fatalf("%d events, want 5: %+v", len(events), events)
	}
	for i, e := range events {
		wantT, wantV := 100*float64(i+1), 4*(1+0.1*float64(i+1))
		if e.T != wantT || e.GPU != 1 || e.Class != 1 || e.All || math.Abs(e.Score-wantV) > 1e-12 {
			t.Errorf("event %d: %+v, want t %v GPU 1 class B score %v", i, e, wantT, wantV)
		}
	}
	p = Pattern{Family: "one-class", GPUs: []int{1}, Classes: []variability.Class{1}, Factor: 1.5, Steps: 1}
	truth, events = p.Apply(old)
	if len(events) != 0 || truth.Values[1][1] != 6 || truth.Values[1][0] != 3 || truth.Values[0][1] != 2 {
		t.Errorf("from the start: truth %v, events %v; want B's GPU 1 at 6, nothing else moved, no events", truth.Values, events)
	}
	if old.Values[1][1] != 4 {
		t.Errorf("Apply changed the profile: %v", old.Values[1])
	}
	// A step one second in is an event, not the truth at 0.
	p = Pattern{Family: "step", GPUs: []int{0}, Classes: []variability.Class{0}, Factor: 2, Start: 1, End: 1, Steps: 1}
	truth, events = p.Apply(old)
	if len(events) != 1 || events[0].T != 1 || events[0].Score != 2 || truth.Values[0][0] != 1 {
		t.Errorf("step at 1 s: truth %v, events %+v; want A's GPU 0 still 1 at 0 and one event at 1 s to 2", truth.Values[0], events)
	}
}

// Every family draws within its stated ranges, the same seed draws the
// same pattern, and an unknown family is an error naming it.
func TestDrawPattern(t *testing.T) {
	const n, span = 64, 18000.0
	for _, fam := range PatternFamilies {
		for seed := uint64(1); seed <= 50; seed++ {
			p, err := DrawPattern(fam, seed, n, span)
			if err != nil {
				t.Fatal(err)
			}
			q, _ := DrawPattern(fam, seed, n, span)
			if p.String() != q.String() || !slices.Equal(p.GPUs, q.GPUs) {
				t.Fatalf("%s seed %d drew %v then %v", fam, seed, p, q)
			}
			if len(p.GPUs) < 1 || len(p.GPUs) > 19 || !slices.IsSorted(p.GPUs) || len(slices.Compact(slices.Clone(p.GPUs))) != len(p.GPUs) {
				t.Errorf("%v: GPUs %v, want 1-19 distinct, sorted", p, p.GPUs)
			}
			slow := p.Factor >= 1.1 && p.Factor <= 2.0
			if fam == "faster" {
				slow = p.Factor >= 0.6 && p.Factor <= 0.9
			}
			if !slow || len(p.Classes) == 0 {
				t.Errorf("%v: factor %v classes %v out of range", p, p.Factor, p.Classes)
			}
			switch fam {
			case "one-class":
				if len(p.Classes) != 1 {
					t.Errorf("%v: classes %v, want one", p, p.Classes)
				}
			case "step":
				if p.Start < 0.1*span || p.Start > 0.6*span || p.End != p.Start || p.Steps != 1 {
					t.Errorf("%v: step at %v-%v in %d steps", p, p.Start, p.End, p.Steps)
				}
			case "drift":
				if p.Start < 0 || p.Start > 0.3*span || p.End-p.Start < 0.2*span || p.End-p.Start > 0.5*span || p.Steps != 5 {
					t.Errorf("%v: drift %v-%v in %d steps", p, p.Start, p.End, p.Steps)
				}
			default:
				if p.Start != 0 || p.Steps != 1 {
					t.Errorf("%v: not from the start", p)
				}
			}
		}
	}
	if _, err := DrawPattern("sideways", 1, n, span); err == nil {
		t.Error("unknown family drew a pattern")
	}
}

// patternStats on hand-made runs: runs group by workload, family and
// held-out in first-seen order; a run's share counts only where the
// oracle gains at least 2% over stale (1% does not), while any run that
// ends above stale, however little, counts as harmed, with the worst.
func TestPatternStats(t *testing.T) {
	run := func(wl, fam string, held bool, oracle, stale, job, gpu float64) PatternRun {
		return PatternRun{Trace: wl, Family: fam, HeldOut: held,
			AvgJCT: map[string]float64{"oracle": oracle, "stale": stale, "stale+learning": job, "stale+gpu-learning": gpu}}
	}
	got := patternStats([]PatternRun{
		run("w1", "step", false, 80, 100, 90, 80),    // shares 0.5, 1
		run("w1", "step", false, 99, 100, 100.5, 99), // 1% gain: no share; job paces 0.5% above stale
		run("w1", "step", true, 90, 100, 102, 95),    // held out: its own group
		run("w2", "step", false, 90, 100, 100, 104),  // job at stale is no harm; per-GPU 4% above
		run("w1", "step", false, 98, 100, 99, 103),   // 2% gain: shares 0.5, -1.5; per-GPU 3% above
	})
	want := []PatternStats{
		{Trace: "w1", Family: "step", Runs: 3, Shares: []float64{0.5, 0.5}, GPUShares: []float64{1, -1.5},
			Harmed: 1, WorstHarm: 0.005, GPUHarmed: 1, GPUWorstHarm: 0.03},
		{Trace: "w1", Family: "step", HeldOut: true, Runs: 1, Shares: []float64{-0.2}, GPUShares: []float64{0.5},
			Harmed: 1, WorstHarm: 0.02},
		{Trace: "w2", Family: "step", Runs: 1, Shares: []float64{0}, GPUShares: []float64{-0.4},
			GPUHarmed: 1, GPUWorstHarm: 0.04},
	}
	near := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-9 {
				return false
			}
		}
		return true
	}
	if len(got) != len(want) {
		t.Fatalf("%d groups, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Trace != w.Trace || g.Family != w.Family || g.HeldOut != w.HeldOut || g.Runs != w.Runs ||
			!near(g.Shares, w.Shares) || !near(g.GPUShares, w.GPUShares) ||
			g.Harmed != w.Harmed || math.Abs(g.WorstHarm-w.WorstHarm) > 1e-9 ||
			g.GPUHarmed != w.GPUHarmed || math.Abs(g.GPUWorstHarm-w.GPUWorstHarm) > 1e-9 {
			t.Errorf("group %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// recoveredBy is NaN when the oracle gains nothing (or loses) over
// stale, whatever the learner did, instead of an infinite share.
func TestRecoveredBy(t *testing.T) {
	for _, tc := range []struct {
		oracle, stale, learner float64
		want                   float64 // NaN: none
	}{
		{80, 100, 90, 0.5},
		{80, 100, 110, -0.5},
		{100, 100, 90, math.NaN()},
		{100, 100, 100, math.NaN()},
		{105, 100, 90, math.NaN()},
	} {
		got := recoveredBy(map[string]float64{"oracle": tc.oracle, "stale": tc.stale, "l": tc.learner}, "l")
		if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("oracle %v stale %v learner %v: %v, want %v", tc.oracle, tc.stale, tc.learner, got, tc.want)
		}
	}
}
