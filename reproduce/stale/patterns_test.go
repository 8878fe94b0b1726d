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
