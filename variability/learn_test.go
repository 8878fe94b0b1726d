package variability

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func flatTable(n int, v ...float64) *Table {
	t := &Table{}
	for c := range t.Values {
		t.Values[c] = make([]float64, n)
		for g := range n {
			t.Values[c][g] = 1
		}
	}
	copy(t.Values[ClassA], v)
	return t
}

// newTestLearner carries a class's pin to the others at once
// (Corroborate 1), so that the carry rules can be shown with one pin;
// TestLearnerCorroborate shows the default's wait for a second class.
func newTestLearner(t *testing.T, prior *Table, perClass ...bool) *Learner {
	t.Helper()
	return newTestLearnerOpts(t, prior, LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: len(perClass) > 0 && perClass[0], Corroborate: 1})
}

func newTestLearnerOpts(t *testing.T, prior *Table, o LearnOptions) *Learner {
	t.Helper()
	sc, err := NewScores(prior, BinOptions{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLearner(prior, sc, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Each step's expected beliefs, with Alpha 0.5 and Tol 0.01, one class
// learning alone (PerClassOnly):
func TestLearnerSteps(t *testing.T) {
	type obs struct {
		gpus []int
		y    float64
	}
	for _, tc := range []struct {
		name  string
		prior []float64
		obs   []obs
		want  []float64
	}{
		// Observations equal to the believed max (beliefs = truth) move
		// nothing, whatever the set.
		{"truth", []float64{0.9, 1.0, 1.2, 1.0}, []obs{{[]int{0, 1}, 1.0}, {[]int{0, 1, 2, 3}, 1.2}, {[]int{0}, 0.9}}, []float64{0.9, 1.0, 1.2, 1.0}},
		// Inside the band: 1.0 -> 1.009 is under 1%.
		{"band", []float64{1, 1, 1, 1}, []obs{{[]int{0}, 1.009}}, []float64{1, 1, 1, 1}},
		// One GPU seen slower twice: 1 + 0.5 x 0.2 = 1.1, then 1.1 + 0.5 x 0.1 = 1.15.
		{"alone slower", []float64{1, 1, 1, 1}, []obs{{[]int{0}, 1.2}, {[]int{0}, 1.2}}, []float64{1.15, 1, 1, 1}},
		// Seen faster: every GPU of the set is lowered, 1.2 -> 1.2 + 0.5 x (1.0 - 1.2) = 1.1
		// and 1.1 -> 1.05; GPU 2 (0.9) is under the pace and stays.
		{"set faster", []float64{1.2, 1.1, 0.9, 1}, []obs{{[]int{0, 1, 2}, 1.0}}, []float64{1.1, 1.05, 0.9, 1}},
		// Max-of-G attribution: {0,1} at 1.3, GPU 1 believed slowest takes the
		// blame: 1.05 + 0.5 x 0.25 = 1.175. GPU 1 alone at 1.05 caps it:
		// 1.175 + 0.5 x (1.05 - 1.175) = 1.1125, bound 1.05. {0,1} at 1.3
		// again: GPU 1's bound rules it out, GPU 0 (bound 1.3) is raised:
		// 1 + 0.5 x 0.3 = 1.15.
		{"attribution", []float64{1, 1.05, 1, 1}, []obs{{[]int{0, 1}, 1.3}, {[]int{1}, 1.05}, {[]int{0, 1}, 1.3}}, []float64{1.15, 1.1125, 1, 1}},
		// Drift: GPU 0 seen at 1.0 (bound 1.0), then at 1.5: no GPU's bound
		// allows it, the bound is forgotten and 1 + 0.5 x 0.5 = 1.25.
		{"drift", []float64{1, 1, 1, 1}, []obs{{[]int{0}, 1.0}, {[]int{0}, 1.5}}, []float64{1.25, 1, 1, 1}},
		// Nonsense paces are ignored.
		{"ignored", []float64{1, 1, 1, 1}, []obs{{[]int{0}, math.NaN()}, {[]int{0}, 0}, {nil, 2}}, []float64{1, 1, 1, 1}},
	} {
		l := newTestLearner(t, flatTable(4, tc.prior...), true)
		for _, o := range tc.obs {
			l.Observe(ClassA, o.gpus, o.y)
		}
		for g, w := range tc.want {
			if got := l.Belief(ClassA, g); math.Abs(got-w) > 1e-12 {
				t.Errorf("%s: GPU %d believed %v, want %v", tc.name, g, got, w)
			}
		}
		for g := range 4 {
			if l.Belief(ClassB, g) != 1 {
				t.Errorf("%s: class B GPU %d moved", tc.name, g)
			}
		}
	}
}

// The GPU-wide factor, every prior 1: GPU 0 alone at 1.2 for class A is
// pinned at 1 + 0.5 x 0.2 = 1.1 and, no other class having run on it,
// classes B-D believe 1.1 too. Then GPU 1 runs class B at its profile's
// pace (1.0): its GPU-wide bound is 1.0. A class-A job on {2, 1} at 1.3:
// both class bounds allow 1.3, but only GPU 2 can be GPU-wide that slow,
// so GPU 2 is pinned and raised to 1.15 (and classes B-D with it), while
// GPU 1 stays 1.
func TestLearnerGPUWide(t *testing.T) {
	l := newTestLearner(t, flatTable(4))
	l.Observe(ClassA, []int{0}, 1.2)
	for c := range Class(NumClasses) {
		if got := l.Belief(c, 0); math.Abs(got-1.1) > 1e-12 {
			t.Errorf("class %s GPU 0 believed %v, want 1.1", c, got)
		}
	}
	l.Observe(ClassB, []int{1}, 1.0)
	l.Observe(ClassA, []int{2, 1}, 1.3)
	for _, w := range []struct {
		c    Class
		g    int
		want float64
	}{{ClassA, 2, 1.15}, {ClassD, 2, 1.15}, {ClassA, 1, 1}, {ClassB, 1, 1}, {ClassC, 1, 1}} {
		if got := l.Belief(w.c, w.g); math.Abs(got-w.want) > 1e-12 {
			t.Errorf("class %s GPU %d believed %v, want %v", w.c, w.g, got, w.want)
		}
	}
	// Per class only, the blame falls on the believed slowest of {2, 1}
	// (a tie: the first, GPU 2) with no spreading: class D stays 1.
	p := newTestLearner(t, flatTable(4), true)
	p.Observe(ClassA, []int{2, 1}, 1.3)
	if p.Belief(ClassA, 2) != 1.15 || p.Belief(ClassD, 2) != 1 {
		t.Errorf("per class: A %v D %v", p.Belief(ClassA, 2), p.Belief(ClassD, 2))
	}
}

// Remembered slow observations, one class alone: {0, 1} at 1.3 blames
// GPU 0 (a tie, the first): 1.15. GPU 0 alone at 1.0 caps it to
// 1.15 + 0.5 x (1.0 - 1.15) = 1.075 and bounds it by 1.0. Settling (each
// Rebin) revisits {0, 1} at 1.3: only GPU 1 can explain it, so it is
// raised 1 -> 1.15 -> 1.225 -> 1.2625 -> 1.28125 -> 1.290625, and the
// observation is dropped once 1.290625 >= 1.3 / 1.01 = 1.2871.
func TestLearnerSettle(t *testing.T) {
	l := newTestLearner(t, flatTable(4), true)
	l.Observe(ClassA, []int{0, 1}, 1.3)
	// The same job's next round is kept once; it sees 1.3 against a
	// believed 1.15 and raises GPU 0 again: 1.15 + 0.5 x 0.15 = 1.225.
	l.Observe(ClassA, []int{0, 1}, 1.3)
	if len(l.open) != 1 || math.Abs(l.Belief(ClassA, 0)-1.225) > 1e-12 || l.Belief(ClassA, 1) != 1 {
		t.Fatalf("after {0,1}: open %d, beliefs %v %v", len(l.open), l.Belief(ClassA, 0), l.Belief(ClassA, 1))
	}
	l = newTestLearner(t, flatTable(4), true)
	l.Observe(ClassA, []int{0, 1}, 1.3)
	l.Observe(ClassA, []int{0}, 1.0)
	if got := l.Belief(ClassA, 0); math.Abs(got-1.075) > 1e-12 {
		t.Fatalf("GPU 0 capped to %v, want 1.075", got)
	}
	want := []float64{1.15, 1.225, 1.2625, 1.28125, 1.290625}
	for i, w := range want {
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
		if got := l.Belief(ClassA, 1); math.Abs(got-w) > 1e-12 {
			t.Fatalf("settle %d: GPU 1 believed %v, want %v", i+1, got, w)
		}
	}
	if len(l.open) != 0 {
		t.Errorf("%d observations still open", len(l.open))
	}
}

// Rebinning: nothing moved, nothing to do; a move under 2% is not enough;
// a bigger one re-bins only its class, the others keep their slices.
func TestLearnerRebin(t *testing.T) {
	prior := flatTable(4, 0.9, 0.9, 1.2, 1.2)
	l := newTestLearner(t, prior, true)
	old := l.cur
	if sc, err := l.Rebin(); sc != nil || err != nil {
		t.Fatalf("rebin with nothing moved: %v %v", sc, err)
	}
	l.Observe(ClassA, []int{0}, 0.88) // 0.9 -> 0.89: 1.1%, under 2%
	if sc, _ := l.Rebin(); sc != nil {
		t.Fatal("rebinned for a 1.1% move")
	}
	l.Observe(ClassA, []int{0}, 1.3) // 0.89 -> 1.095: bound 0.88 forgotten
	l.Observe(ClassA, []int{0}, 1.3) // -> 1.1975
	sc, err := l.Rebin()
	if err != nil || sc == nil {
		t.Fatalf("no rebin after a big move: %v", err)
	}
	// Class A is now 1.1975, 0.9, 1.2, 1.2: the fast bin holds GPU 1 only.
	if sc.Bins[ClassA].Bin[0] == sc.Bins[ClassA].Bin[1] || sc.Bins[ClassA].Bin[0] != sc.Bins[ClassA].Bin[2] {
		t.Errorf("class A bins %v", sc.Bins[ClassA].Bin)
	}
	if &sc.SF[ClassB][0] != &old.SF[ClassB][0] || old.Raw.Values[ClassA][0] != 0.9 {
		t.Error("unchanged class re-binned, or the old scores were changed")
	}
	if l.Rebins != 1 {
		t.Errorf("rebins %d", l.Rebins)
	}
}

func TestReadGPUEvents(t *testing.T) {
	evs, err := ReadGPUEvents("e.csv", strings.NewReader("# drift\ntime_s,gpu,class,new_score\n100,3,*,1.5\n50,1,B,0.9\n100,2,a,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by time, file order among equal times.
	got := fmt.Sprint(evs)
	want := "[{50 1 B false 0.9 4} {100 3 A true 1.5 3} {100 2 A false 2 5}]"
	if got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	for _, tc := range []struct{ in, want string }{
		{"time_s,gpu,class,new_score\n-1,0,A,1\n", `e.csv:2: field "time_s": "-1" must not be negative`},
		{"time_s,gpu,class,new_score\n1,0,E,1\n", `e.csv:2: field "class": unknown class "E"`},
		{"time_s,gpu,class,new_score\n1,0,A,0\n", `e.csv:2: field "new_score": "0" must be positive`},
		{"time_s,gpu,class\n", `e.csv:1: field "new_score": missing column`},
		{"time_s,gpu,class,new_score\n", "e.csv: no data rows"},
	} {
		_, err := ReadGPUEvents("e.csv", strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzReadGPUEvents(f *testing.F) {
	for _, s := range []string{"time_s,gpu,class,new_score\n0,0,*,1\n5,1,A,2\n", "time_s,gpu,class,new_score\nNaN,0,A,1\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evs, err := ReadGPUEvents("e.csv", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "e.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error does not name the file, or is over 1 KiB: %.300v", err)
			}
			return
		}
		for i, e := range evs {
			if !(e.T >= 0) || e.GPU < 0 || !(e.Score > 0) || math.IsInf(e.Score, 0) || (i > 0 && e.T < evs[i-1].T) {
				t.Fatalf("event %d: %+v", i, e)
			}
		}
	})
}

func FuzzReadGPUHints(f *testing.F) {
	for _, s := range []string{"time_s,gpu,slowdown\n0,3,1.5\n5,3,1\n", "time_s,gpu,slowdown\n1,-1,2\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		hs, err := ReadGPUHints("h.csv", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "h.csv") || len(err.Error()) > 1024 {
				t.Fatalf("error does not name the file, or is over 1 KiB: %.300v", err)
			}
			return
		}
		for i, h := range hs {
			if !(h.T >= 0) || h.GPU < 0 || !(h.Slowdown > 0) || math.IsInf(h.Slowdown, 0) || (i > 0 && h.T < hs[i-1].T) {
				t.Fatalf("hint %d: %+v", i, h)
			}
		}
	})
}

// Hints come back by time, rows of one time in file order; a bad field
// is named with its line.
func TestReadGPUHints(t *testing.T) {
	hs, err := ReadGPUHints("h.csv", strings.NewReader("gpu,time_s,slowdown\n# DCGM\n3,60,1\n3,0,1.5\n7,0,1.2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(hs); got != "[{0 3 1.5 4} {0 7 1.2 5} {60 3 1 3}]" {
		t.Errorf("hints %s", got)
	}
	for in, want := range map[string]string{
		"time_s,gpu,slowdown\n0,1,0\n":         `h.csv:2: field "slowdown"`,
		"time_s,gpu,slowdown\n-5,1,2\n":        `h.csv:2: field "time_s"`,
		"time_s,gpu\n0,1\n":                    `h.csv`,
		"time_s,gpu,slowdown,class\n0,1,2,A\n": `h.csv`,
	} {
		if _, err := ReadGPUHints("h.csv", strings.NewReader(in)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %s...", in, err, want)
		}
	}
}

// Re-placing in the old bins (RefitBelow 1, RefitShare 0.5 so that up to
// 2 of the 4 GPUs may move before a fit). Prior class A 0.9, 0.9, 1.2,
// 1.2: bins at raw 0.9 and 1.2, Norm (0.9 + 1.2)/2 = 1.05, threshold
// mean + 3 sample std = 1.05 + 3 x 0.17321 = 1.5696. GPU 0 alone at 1.3
// twice: 0.9 -> 1.1 -> 1.2, nearest centroid 1.2, score 1.2/1.05. GPU 1
// alone at 2.0 twice: 0.9 -> 1.45 -> 1.725, above the threshold, so its
// own value 1.725/1.05 = 1.642857. The 0.9 bin has no GPU left, so the
// L×V order (L = 1.7) is 1.142857, 1.642857 within, then across at
// 1.942857 and 2.792857. No fit happened.
func TestLearnerReassign(t *testing.T) {
	prior := flatTable(4, 0.9, 0.9, 1.2, 1.2)
	sc, err := NewScores(prior, BinOptions{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLearner(prior, sc, LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, RefitBelow: 1, RefitShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		g int
		y float64
	}{{0, 1.3}, {0, 1.3}} {
		l.Observe(ClassA, []int{o.g}, o.y)
	}
	if _, err := l.Rebin(); err != nil {
		t.Fatal(err)
	}
	l.Observe(ClassA, []int{1}, 2.0)
	l.Observe(ClassA, []int{1}, 2.0)
	got, err := l.Rebin()
	if err != nil || got == nil {
		t.Fatalf("rebin: %v %v", got, err)
	}
	want := []float64{1.2 / 1.05, 1.725 / 1.05, 1.2 / 1.05, 1.2 / 1.05}
	for g, w := range want {
		if math.Abs(got.SF[ClassA][g]-w) > 1e-9 {
			t.Errorf("GPU %d score %v, want %v", g, got.SF[ClassA][g], w)
		}
	}
	lv := got.LV[ClassA]
	wantLV := []LVEntry{{V: 1.2 / 1.05, Product: 1.2 / 1.05}, {V: 1.725 / 1.05, Product: 1.725 / 1.05},
		{V: 1.2 / 1.05, Across: true, Product: 1.7 * 1.2 / 1.05}, {V: 1.725 / 1.05, Across: true, Product: 1.7 * 1.725 / 1.05}}
	if len(lv) != len(wantLV) {
		t.Fatalf("L×V %v", lv)
	}
	for i, w := range wantLV {
		if lv[i].Across != w.Across || math.Abs(lv[i].V-w.V) > 1e-9 || math.Abs(lv[i].Product-w.Product) > 1e-9 {
			t.Errorf("L×V[%d] = %+v, want %+v", i, lv[i], w)
		}
	}
	if l.Refits != 0 || l.Rebins != 2 {
		t.Errorf("refits %d rebins %d", l.Refits, l.Rebins)
	}
}

// The blame of a slow set goes to the suspect named by the most
// remembered slow observations (the fewest slow GPUs that explain them
// all), one class alone, every prior 1: {0, 1} at 1.5 blames GPU 0 (a
// tie, the first): 1.25, and is remembered. {2, 1} at 1.5: GPU 1 is in
// one remembered observation and GPU 2 in none, so GPU 1 is blamed
// (1.25), not GPU 2 (the first of the tie on beliefs).
func TestLearnerBlameMostNamed(t *testing.T) {
	l := newTestLearner(t, flatTable(4), true)
	l.Observe(ClassA, []int{0, 1}, 1.5)
	l.Observe(ClassA, []int{2, 1}, 1.5)
	for g, w := range []float64{1.25, 1.25, 1, 1} {
		if got := l.Belief(ClassA, g); got != w {
			t.Errorf("GPU %d believed %v, want %v", g, got, w)
		}
	}
}

// GPU-wide exoneration, every prior 1: class A on {0, 1} at 1.5 blames
// GPU 0 on a guess (1.25). Class B then runs GPU 0 alone at its profile's
// pace 1.0, so GPU 0 is not GPU-wide slow and class A's guess goes back
// to 1. A pin is not undone that way: class A alone on GPU 2 at 1.5 pins
// it at 1.25 (and spreads 1.25 to B-D, which never ran on it); class B on
// GPU 2 at 1.0 lowers class B a step (1.125) and bounds GPU 2 GPU-wide at
// 1.0, so C and D, which stood on A's pin, are exonerated to 1 (B's own
// step is not carried past that bound), while class A keeps its own 1.25
// (a GPU may be slow for one class alone).
func TestLearnerExonerate(t *testing.T) {
	l := newTestLearner(t, flatTable(4))
	l.Observe(ClassA, []int{0, 1}, 1.5)
	if got := l.Belief(ClassA, 0); got != 1.25 {
		t.Fatalf("guess: GPU 0 believed %v, want 1.25", got)
	}
	l.Observe(ClassB, []int{0}, 1.0)
	if got := l.Belief(ClassA, 0); got != 1 {
		t.Errorf("exonerated guess: GPU 0 believed %v for class A, want 1", got)
	}
	l.Observe(ClassA, []int{2}, 1.5)
	l.Observe(ClassB, []int{2}, 1.0)
	for _, w := range []struct {
		c    Class
		want float64
	}{{ClassA, 1.25}, {ClassB, 1.125}, {ClassC, 1}, {ClassD, 1}} {
		if got := l.Belief(w.c, 2); got != w.want {
			t.Errorf("class %s GPU 2 believed %v, want %v", w.c, got, w.want)
		}
	}
}

// A pin is carried to a class that ran the GPU, and undone as a guess
// is. Priors 1, except class B GPU 1 = 1.6. B on {0, 1} at 1.6 is
// explained by GPU 1's profile and bounds GPU 0 by 1.6. A alone on GPU 0
// at 1.5 pins it at 1.25: B (its bound allows it) and C and D (never ran
// it) take 1.25. C on GPU 0 at its profile's pace 1.0 then bounds GPU 0
// GPU-wide at 1.0: B's carried 1.25 and D's are undone (1), C steps to
// 1.125 (its own observation, not carried past the bound), and A keeps
// its own pin (a GPU may be slow for one application alone).
func TestLearnerCarry(t *testing.T) {
	prior := flatTable(4)
	prior.Values[ClassB][1] = 1.6
	l := newTestLearner(t, prior)
	l.Observe(ClassB, []int{0, 1}, 1.6)
	l.Observe(ClassA, []int{0}, 1.5)
	check := func(when string, want [NumClasses]float64) {
		t.Helper()
		for c, w := range want {
			if got := l.Belief(Class(c), 0); math.Abs(got-w) > 1e-12 {
				t.Errorf("%s: class %s GPU 0 believed %v, want %v", when, Class(c), got, w)
			}
		}
	}
	check("after A's pin", [NumClasses]float64{1.25, 1.25, 1.25, 1.25})
	l.Observe(ClassC, []int{0}, 1.0)
	check("after C at its profile's pace", [NumClasses]float64{1.25, 1, 1.125, 1})
}

// The blame of a slow set goes to the GPU that most remembered slow
// observations name, of any class. Every prior 1: class A on {0, 1} at
// 1.5 blames GPU 0 (a tie, the first), and on {1, 2} at 1.5 GPU 1, which
// both remembered observations name. Class B on {3, 1} at 1.5 then blames GPU 1, named by
// A's two, not GPU 3 (a tie on belief, first in the set): B's GPU 1 goes
// from its prior 1 to 1.25 (a guess is not carried), and GPU 3 stays 1.
func TestLearnerBlameNamedAcrossClasses(t *testing.T) {
	l := newTestLearner(t, flatTable(4))
	l.Observe(ClassA, []int{0, 1}, 1.5)
	l.Observe(ClassA, []int{1, 2}, 1.5)
	l.Observe(ClassB, []int{3, 1}, 1.5)
	for _, w := range []struct {
		g    int
		want float64
	}{{1, 1.25}, {3, 1}} {
		if got := l.Belief(ClassB, w.g); got != w.want {
			t.Errorf("class B GPU %d believed %v, want %v", w.g, got, w.want)
		}
	}
}

// A guess no remembered observation needs is withdrawn at once (the
// blame is a hitting set, kept free of redundant GPUs), one class alone,
// every prior 1: {0, 1} at 1.5 blames GPU 0 (1.25), {1, 2} at 1.5 blames
// GPU 1 (named by both). The first Rebin ends the round GPU 0 ran in, so
// its guess stands (1.25); settling raises GPU 1 until it explains both
// observations, and at the next Rebin GPU 0, needed by neither, is back
// at its belief before the guess, 1, exactly.
func TestLearnerPruneGuess(t *testing.T) {
	l := newTestLearner(t, flatTable(4), true)
	l.Observe(ClassA, []int{0, 1}, 1.5)
	l.Observe(ClassA, []int{1, 2}, 1.5)
	rebin := func() {
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
	}
	rebin()
	if got := l.Belief(ClassA, 0); got != 1.25 {
		t.Fatalf("after the round it ran in GPU 0 believed %v, want 1.25", got)
	}
	for range 6 {
		rebin()
	}
	if got := l.Belief(ClassA, 0); got != 1 {
		t.Errorf("GPU 0 believed %v, want 1 (its guess withdrawn)", got)
	}
	if l.Pruned != 1 {
		t.Errorf("%d guesses withdrawn, want 1", l.Pruned)
	}
	if got := l.Belief(ClassA, 1); got < 1.5/1.01 || got > 1.5 {
		t.Errorf("GPU 1 believed %v, want it to explain 1.5", got)
	}
	if got := l.Belief(ClassA, 2); got != 1 {
		t.Errorf("GPU 2 believed %v, want 1", got)
	}
}

// Binning waits for its interval, and a move that changes no score hands
// placement nothing. Prior class A 0.9, 0.9, 1.2, 1.2 (bins at raw 0.9
// and 1.2), re-placing in the old bins (RefitBelow 1), Every 3: GPU 0
// alone at 1.3 moves 0.9 -> 1.1 (22%), but rounds 1 and 2 give no scores;
// round 3 does, GPU 0 at the 1.2 bin's score (1.2 / 1.05). Then GPU 1
// alone at 1.0 moves 0.9 -> 0.95 (5.6%, past the 2% threshold), whose
// nearest centroid is still 0.9: round 6 (the next binning) gives nil.
func TestLearnerEvery(t *testing.T) {
	prior := flatTable(4, 0.9, 0.9, 1.2, 1.2)
	sc, err := NewScores(prior, BinOptions{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLearner(prior, sc, LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, RefitBelow: 1, RefitShare: 0.5, Every: 3})
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(ClassA, []int{0}, 1.3)
	for round := 1; round <= 3; round++ {
		got, err := l.Rebin()
		if err != nil {
			t.Fatal(err)
		}
		if (got != nil) != (round == 3) {
			t.Fatalf("round %d: scores %v", round, got != nil)
		}
		if got != nil && math.Abs(got.SF[ClassA][0]-1.2/1.05) > 1e-9 {
			t.Errorf("GPU 0 score %v, want %v", got.SF[ClassA][0], 1.2/1.05)
		}
	}
	l.Observe(ClassA, []int{1}, 1.0)
	if b := l.Belief(ClassA, 1); math.Abs(b-0.95) > 1e-12 {
		t.Fatalf("GPU 1 believed %v, want 0.95", b)
	}
	for round := 4; round <= 6; round++ {
		if got, err := l.Rebin(); err != nil || got != nil {
			t.Errorf("round %d: scores %v, err %v; want none", round, got != nil, err)
		}
	}
	for _, c := range []struct{ gpus, want int }{{1, 1}, {64, 1}, {128, 1}, {129, 2}, {256, 2}, {27648, 216}} {
		if got := RebinEvery(c.gpus); got != c.want {
			t.Errorf("RebinEvery(%d) = %d, want %d", c.gpus, got, c.want)
		}
	}
}

// ObserveJob skips a job that shows again, in the same or the next round,
// the class, GPU list and pace of an observation that changed nothing; a job
// missing for a round is forgotten, a moved job (a new list) and a slow
// one are observed every time. The Observations counter says which calls
// reached the estimator. Ids in the slice (7) and in the map (-3, 2^20)
// behave alike.
func TestLearnerObserveJob(t *testing.T) {
	for _, id := range []int{7, -3, 1 << 20} {
		l := newTestLearner(t, flatTable(4), true)
		gpus := []int{0, 1}
		step := func(what string, want int, calls ...func()) {
			t.Helper()
			for _, c := range calls {
				c()
			}
			if l.Observations != want {
				t.Errorf("id %d, %s: %d observations, want %d", id, what, l.Observations, want)
			}
		}
		obs := func(g []int, y float64) func() { return func() { l.ObserveJob(id, ClassA, g, y) } }
		rebin := func() {
			if _, err := l.Rebin(); err != nil {
				t.Fatal(err)
			}
		}
		// The first observation sets the GPUs' bounds (it changed
		// something), so only from the second on is the job steady.
		step("first", 1, obs(gpus, 1))
		step("second", 2, obs(gpus, 1))
		step("third, same round", 2, obs(gpus, 1))
		step("next round", 2, rebin, obs(gpus, 1))
		step("after a round away", 3, rebin, rebin, obs(gpus, 1))
		step("moved (new list)", 4, obs([]int{0, 1}, 1))
		step("slow", 5, obs(gpus, 1.5))
		step("slow again", 6, obs(gpus, 1.5))
	}
}

// TakeMoved names each GPU whose belief may have changed, once: class A
// on {0, 1} at 1.5 raises GPU 0 on a guess; then nothing moved; then GPU 2
// alone at 1.5 is pinned (and its factor spread to the other classes,
// still GPU 2 alone). A steady observation moves nothing.
func TestLearnerTakeMoved(t *testing.T) {
	l := newTestLearner(t, flatTable(4))
	if got := l.TakeMoved(nil); len(got) != 0 {
		t.Fatalf("a new learner moved %v", got)
	}
	l.Observe(ClassA, []int{0, 1}, 1.5)
	if got := l.TakeMoved(nil); fmt.Sprint(got) != "[0]" {
		t.Errorf("after the guess: moved %v, want [0]", got)
	}
	if got := l.TakeMoved(nil); len(got) != 0 {
		t.Errorf("taken twice: %v", got)
	}
	l.Observe(ClassA, []int{2}, 1.5)
	l.Observe(ClassB, []int{3}, 1.0)
	if got := l.TakeMoved([]int{9}); fmt.Sprint(got) != "[9 2]" {
		t.Errorf("after the pin: moved %v, want [9 2] (appended to dst)", got)
	}
}

// flatTable4B is four GPUs at 1, class B's GPU 2 at b.
func flatTable4B(b float64) *Table {
	t := flatTable(4)
	t.Values[ClassB][2] = b
	return t
}

// A hint is a prior that jobs override. Four GPUs at 1 in every class
// except class B's GPU 2 at 0.8; telemetry says GPU 2 runs 1.4x slow.
// Beliefs after each step, by hand (Alpha 0.5):
func TestLearnerHint(t *testing.T) {
	prior := flatTable(4)
	prior.Values[ClassB][2] = 0.8
	type step struct {
		name  string
		do    func(l *Learner)
		wantA float64 // class A's belief of GPU 2
		wantB float64 // class B's
	}
	hint := func(f float64) func(*Learner) { return func(l *Learner) { l.Hint(2, f) } }
	job := func(c Class, y float64) func(*Learner) { return func(l *Learner) { l.Observe(c, []int{2}, y) } }
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"withdrawn", []step{
			{"hint 1.4", hint(1.4), 1.4, 0.8 * 1.4},
			{"withdrawn", hint(1), 1, 0.8},
		}},
		{"a job shows it fast", []step{
			{"hint 1.4", hint(1.4), 1.4, 0.8 * 1.4},
			// Class A's job runs it at the profile's pace: A steps half way
			// down, and B, which only the hint raised, goes back to its
			// profile (GPU-wide bound 1/1).
			{"class A at 1", job(ClassA, 1), 1.2, 0.8},
			// Withdrawing changes nothing now: the job spoke.
			{"withdrawn", hint(1), 1.2, 0.8},
		}},
		{"a job of another class shows it fast", []step{
			// Class B ran GPU 2 at its profile's 0.8 before the hint: B's own
			// bound does not let an A job's pace lower a belief B measured,
			// but the hinted one it does lower.
			{"class B at 0.8", job(ClassB, 0.8), 1, 0.8},
			{"hint 1.4", hint(1.4), 1.4, 0.8 * 1.4},
			{"class A at 1", job(ClassA, 1), 1.2, 0.8},
		}},
		{"a job confirms it", []step{
			{"hint 1.4", hint(1.4), 1.4, 0.8 * 1.4},
			// A one-GPU class-A job at 1.4 pins GPU 2's factor at 1.4, so B's
			// belief stands on the pin, not on the hint.
			{"class A at 1.4", job(ClassA, 1.4), 1.4, 0.8 * 1.4},
			{"withdrawn", hint(1), 1.4, 0.8 * 1.4},
		}},
		{"a hint after fast jobs", []step{
			// Jobs showed GPU 2 at the profile's pace; then its clock is held
			// down: the old bounds no longer hold and the hint applies.
			{"class A at 1", job(ClassA, 1), 1, 0.8},
			{"hint 1.5", hint(1.5), 1.5, 0.8 * 1.5},
			{"hint 1.2", hint(1.2), 1.2, 0.8 * 1.2},
		}},
		{"relative to the profile", []step{
			// The prior already holds a learned 1.4 in class A (the profile
			// says 1): a 1.4x hint relative to the profile leaves it, and
			// raises B (prior and profile 0.8) to 1.12.
			{"learned", func(l *Learner) {
				l.belief[ClassA][2], l.prior[ClassA][2] = 1.4, 1.4
				if err := l.HintRelativeTo(flatTable4B(0.8)); err != nil {
					t.Fatal(err)
				}
			}, 1.4, 0.8},
			{"hint 1.4", hint(1.4), 1.4, 0.8 * 1.4},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLearner(t, prior)
			for _, s := range c.steps {
				s.do(l)
				a, b := l.Belief(ClassA, 2), l.Belief(ClassB, 2)
				if math.Abs(a-s.wantA) > 1e-12 || math.Abs(b-s.wantB) > 1e-12 {
					t.Fatalf("after %s: A %v, B %v; want %v, %v", s.name, a, b, s.wantA, s.wantB)
				}
				for g := range 4 {
					if g != 2 && (l.Belief(ClassA, g) != 1 || l.Belief(ClassB, g) != 1) {
						t.Fatalf("after %s: GPU %d moved (%v, %v)", s.name, g, l.Belief(ClassA, g), l.Belief(ClassB, g))
					}
				}
			}
		})
	}
}

// A GPU that some class pinned slow takes a slow set's blame before one
// that more remembered observations name. Every prior 1: class C on
// {1, 3} at 1.7 blames GPU 1 on a guess and is remembered (it names GPUs
// 1 and 3). Class B alone on GPU 2 at 1.6, twice, pins it at 1.3 then
// 1.45, and spreads the factor 1.45 to class A, which never ran it. Class
// A on {1, 2} at 1.6 is slow against its believed max 1.45; GPU 1 is
// named once and GPU 2 not at all, but GPU 2 is the one known to be slow:
// 1.45 + 0.5 x (1.6 - 1.45) = 1.525, and GPU 1 stays at 1. With
// PerClassOnly there is no GPU-wide factor: class A believes both at 1
// and, a tie, blames the first, GPU 1 (1 + 0.5 x 0.6 = 1.3).
func TestLearnerBlamePinnedFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perClass bool
		want     [2]float64 // class A's beliefs of GPUs 1 and 2
	}{
		{"GPU-wide", false, [2]float64{1, 1.525}},
		{"per class", true, [2]float64{1.3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLearner(t, flatTable(4), tc.perClass)
			l.Observe(ClassC, []int{1, 3}, 1.7)
			l.Observe(ClassB, []int{2}, 1.6)
			l.Observe(ClassB, []int{2}, 1.6)
			l.Observe(ClassA, []int{1, 2}, 1.6)
			for i, g := range []int{1, 2} {
				if got := l.Belief(ClassA, g); math.Abs(got-tc.want[i]) > 1e-12 {
					t.Errorf("class A GPU %d believed %v, want %v", g, got, tc.want[i])
				}
			}
		})
	}
}

// With the default Corroborate 2, one class's pin moves that class's
// belief and makes the GPU the first suspect, but the other classes keep
// their own until a second class's jobs agree. Every prior 1:
//   - A alone on GPU 0 at 1.5 pins it at 1.25; B, C and D stay at 1 (a
//     slowdown of one application is not the GPU's);
//   - B alone on GPU 0 at 1.5 pins
//     it for B too (1.25), two classes agree, and C and D take 1.25;
//   - A alone on GPU 3 at 0.8 (faster than profiled) moves A's belief
//     half way, 0.9, and nobody else's;
//   - B alone on GPU 3 at 0.8 moves B's to 0.9 too: two classes agree,
//     but a speed-up is never carried, so C and D stay at 1 (carried,
//     they would take the GPU-wide bound, 0.8).
//
// Blame still prefers the GPU one class pinned: B, which never ran GPU 2
// after C pinned it at 1.3 (C alone at 1.6), runs {1, 2} at 1.6 and
// blames GPU 2 (1 + 0.5 x 0.6 = 1.3), not GPU 1, the first of a tie.
func TestLearnerCorroborate(t *testing.T) {
	l := newTestLearnerOpts(t, flatTable(4), LearnOptions{Bin: BinOptions{Seed: 1}})
	check := func(when string, g int, want [NumClasses]float64) {
		t.Helper()
		for c, w := range want {
			if got := l.Belief(Class(c), g); math.Abs(got-w) > 1e-12 {
				t.Errorf("%s: class %s GPU %d believed %v, want %v", when, Class(c), g, got, w)
			}
		}
	}
	l.Observe(ClassA, []int{0}, 1.5)
	check("after A's pin", 0, [NumClasses]float64{1.25, 1, 1, 1})
	l.Observe(ClassB, []int{0}, 1.5)
	check("after B's pin", 0, [NumClasses]float64{1.25, 1.25, 1.25, 1.25})
	l.Observe(ClassA, []int{3}, 0.8)
	check("after A ran GPU 3 fast", 3, [NumClasses]float64{0.9, 1, 1, 1})
	l.Observe(ClassB, []int{3}, 0.8)
	check("after B ran GPU 3 fast", 3, [NumClasses]float64{0.9, 0.9, 1, 1})
	l.Observe(ClassC, []int{2}, 1.6)
	check("after C's pin of GPU 2", 2, [NumClasses]float64{1, 1, 1.3, 1})
	l.Observe(ClassB, []int{1, 2}, 1.6)
	check("after B slow on {1, 2}: GPU 2", 2, [NumClasses]float64{1, 1.3, 1.3, 1})
	check("after B slow on {1, 2}: GPU 1", 1, [NumClasses]float64{1, 1, 1, 1})
}

// A remembered slow observation lasts Expire rounds, and the guess it
// kept then goes. One class, every prior 1, Expire 3: {0, 1} at 1.5
// blames GPU 0 on a guess (1.25), and no job runs after it. While the
// observation is remembered it is settled each round, which raises GPU 0
// further (1.375, 1.4375, 1.46875: the guess explains it, so it is
// neither forgotten nor withdrawn). Rebin 4 drops the observation (it is
// older than 3 rounds); from round 5 nothing needs GPU 0's guess, and it
// is withdrawn to its belief before the guess, 1, exactly. Kept for ever,
// the observation would hold GPU 0 at 1.5 although no job shows it slow.
func TestLearnerExpire(t *testing.T) {
	prior := flatTable(4)
	sc, err := NewScores(prior, BinOptions{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLearner(prior, sc, LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, Expire: 3})
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(ClassA, []int{0, 1}, 1.5)
	for r, w := range []float64{1.25, 1.375, 1.4375, 1.46875, 1.46875, 1, 1} {
		if r > 0 {
			if _, err := l.Rebin(); err != nil {
				t.Fatal(err)
			}
		}
		if got := l.Belief(ClassA, 0); math.Abs(got-w) > 1e-12 {
			t.Errorf("after %d rounds GPU 0 believed %v, want %v", r, got, w)
		}
	}
	if got := l.Belief(ClassA, 1); got != 1 {
		t.Errorf("GPU 1 believed %v, want 1", got)
	}
}

// A slowdown seen as it happens voids older bounds. Class A alone, four
// GPUs profiled at 1. Job 1 runs on GPU 0 and job 2 on GPU 1, both at 1
// (their bounds are 1). Then GPUs 0 and 1 slow to 1.5: job 2, still on
// GPU 1, shows 1.5, a change seen as it happens. Job 3 then runs on GPUs
// 3 and 0 at 1.5 and job 4 on GPUs 0 and 2 at 1.5. GPU 0's bound of 1 is
// older than the change, so both jobs name it. In the first round job 3
// blames GPU 3 (the first of two equal suspects: 1.25), job 4 GPU 0 (the
// one a remembered slow job names: 1.25), and the round's end blames GPU
// 0 for both remembered jobs (1.375, 1.4375) and withdraws GPU 3's guess,
// which GPU 0 now explains. In the second round jobs 3 and 4 and the
// first remembered one step GPU 0 to 1.46875, 1.484375 and 1.4921875,
// within the 1% band of 1.5, where it stays. Without job 2's slowdown
// nothing says the GPUs changed, GPU 0's bound of 1 stands, and each
// job's only suspect, GPUs 3 and 2, is pinned slow: the right answer
// for a profile that was stale from the start. A bound confirmed in the
// round of the change is not older than it: with job 5 showing GPU 3 at
// 1 then, job 3's first observation pins GPU 0 (1.25), its only suspect,
// and leaves GPU 3 at 1.
// A job slower than every one of its GPUs' bounds is a change seen too,
// though no job stayed put to show it. The setting of
// TestLearnerChangeVoidsOldBounds: GPUs 0 and 1 run at 1 (bounds 1), then
// both slow to 1.5, and job 2 is not there to see it. Job 6, new, runs
// on GPU 1 alone at 1.5: its only GPU's bound says at most 1, so the GPU
// changed. Then jobs 3 (GPUs 3, 0) and 4 (GPUs 0, 2) at 1.5 name GPU 0,
// whose bound of 1 is older than that change, and the beliefs follow
// the seen case's exactly: GPU 0 to 1.4375, then 1.4921875, GPUs 2 and 3
// left at 1. Counted as no change (as before this rule), GPU 0's bound
// stands and GPUs 3 and 2 are pinned slow in its place. A contradiction
// in a profile stale from the start cannot arise: bounds are paces seen,
// and a GPU that does not change is never slower than one. OneBlame: the
// slow jobs here would otherwise make the prevalence 1 of 3 one-GPU jobs
// and raise each slow pair's second suspect part of a step too (see
// TestLearnerBlameByPrevalence), which is not this rule.
func TestLearnerContradictionIsAChange(t *testing.T) {
	l := newTestLearnerOpts(t, flatTable(4), LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, Corroborate: 1, OneBlame: true})
	rebin := func() {
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
	}
	g1 := []int{1}
	l.ObserveJob(1, ClassA, []int{0}, 1)
	l.ObserveJob(2, ClassA, g1, 1)
	rebin()
	l.ObserveJob(2, ClassA, g1, 1)
	rebin()
	l.ObserveJob(6, ClassA, []int{1}, 1.5)
	if b1 := l.Belief(ClassA, 1); b1 != 1.25 {
		t.Fatalf("GPU 1 believed %v after a job slower than its bound, want 1.25 (bound forgotten, pinned)", b1)
	}
	rebin()
	var got []float64
	for range 4 {
		l.ObserveJob(3, ClassA, []int{3, 0}, 1.5)
		l.ObserveJob(4, ClassA, []int{0, 2}, 1.5)
		rebin()
		got = append(got, l.Belief(ClassA, 0))
	}
	want := []float64{1.4375, 1.4921875, 1.4921875, 1.4921875}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("GPU 0's belief over four rounds %v, want %v", got, want)
		}
	}
	if b2, b3 := l.Belief(ClassA, 2), l.Belief(ClassA, 3); b2 != 1 || b3 != 1 {
		t.Errorf("GPUs 2 and 3 believed %v and %v, want 1 (healthy)", b2, b3)
	}
}

func TestLearnerChangeVoidsOldBounds(t *testing.T) {
	t.Run("bound after the change", func(t *testing.T) {
		l := newTestLearner(t, flatTable(4), true)
		g1 := []int{1} // the same list: job 2 has not moved
		l.ObserveJob(1, ClassA, []int{0}, 1)
		l.ObserveJob(2, ClassA, g1, 1)
		l.Rebin()
		l.ObserveJob(2, ClassA, g1, 1)
		l.Rebin()
		l.ObserveJob(2, ClassA, g1, 1.5)
		l.ObserveJob(5, ClassA, []int{3}, 1)
		l.Rebin()
		l.ObserveJob(3, ClassA, []int{3, 0}, 1.5)
		if b0, b3 := l.Belief(ClassA, 0), l.Belief(ClassA, 3); b0 != 1.25 || b3 != 1 {
			t.Errorf("GPU 0 believed %v, GPU 3 %v; want 1.25 (pinned) and 1 (its bound is as new as the change)", b0, b3)
		}
	})
	t.Run("bound confirmed after the change", func(t *testing.T) {
		// GPU 3 (prior 1.1) is bounded at 1 before the change and
		// confirmed after it, within Tol (1.005), by a gang that changed
		// something (GPU 2 was new): its bound stands, so the slow gang
		// {3, 0} pins GPU 0, whose bound is from before the change.
		// Unconfirmed, GPU 3 would be a suspect again and, believed the
		// slower, take the blame.
		l := newTestLearner(t, flatTable(4, 1, 1, 1, 1.1), true)
		g1 := []int{1}
		l.ObserveJob(1, ClassA, []int{0}, 1)
		l.ObserveJob(5, ClassA, []int{3}, 1)
		l.ObserveJob(2, ClassA, g1, 1)
		l.Rebin()
		l.ObserveJob(2, ClassA, g1, 1)
		l.Rebin()
		l.ObserveJob(2, ClassA, g1, 1.5)
		l.ObserveJob(6, ClassA, []int{3, 2}, 1.005)
		l.Rebin()
		l.ObserveJob(3, ClassA, []int{3, 0}, 1.5)
		if b0, b3 := l.Belief(ClassA, 0), l.Belief(ClassA, 3); b0 != 1.25 || math.Abs(b3-1.0275) > 1e-12 {
			t.Errorf("GPU 0 believed %v, GPU 3 %v; want 1.25 (pinned) and 1.0275 (its bound confirmed after the change)", b0, b3)
		}
	})
	for _, seen := range []bool{true, false} {
		l := newTestLearner(t, flatTable(4), true)
		rebin := func() {
			if _, err := l.Rebin(); err != nil {
				t.Fatal(err)
			}
		}
		g0, g1 := []int{0}, []int{1}
		l.ObserveJob(1, ClassA, g0, 1)
		l.ObserveJob(2, ClassA, g1, 1)
		rebin()
		l.ObserveJob(2, ClassA, g1, 1)
		rebin()
		if seen {
			l.ObserveJob(2, ClassA, g1, 1.5)
		}
		rebin()
		j3, j4 := []int{3, 0}, []int{0, 2}
		var got []float64
		for range 4 {
			l.ObserveJob(3, ClassA, j3, 1.5)
			l.ObserveJob(4, ClassA, j4, 1.5)
			rebin()
			got = append(got, l.Belief(ClassA, 0))
		}
		b := func(g int) float64 { return l.Belief(ClassA, g) }
		if seen {
			want := []float64{1.4375, 1.4921875, 1.4921875, 1.4921875}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-9 {
					t.Errorf("change seen: GPU 0's belief over four rounds %v, want %v", got, want)
					break
				}
			}
			if b(2) != 1 || b(3) != 1 {
				t.Errorf("change seen: GPUs 2 and 3 believed %v and %v, want 1 (healthy)", b(2), b(3))
			}
			continue
		}
		if b(0) != 1 || !(b(2) > 1.4) || !(b(3) > 1.4) {
			t.Errorf("no change seen: beliefs of GPUs 0, 2, 3 %v, %v, %v; want GPU 0 at 1 (its bound stands), 2 and 3 pinned slow", b(0), b(2), b(3))
		}
	}
}

// The Tol band's edges, one class learning alone: a belief 1.5% above
// what a job on its GPU alone shows is lowered half way (1.0075), one
// 0.5% above is inside the band and stays; a slow gang's suspects
// include a GPU whose bound is below the gang's pace by less than Tol
// (1.49 against 1.5): believed the slowest, it takes the blame
// (1.245 + (1.5 - 1.245) / 2); a pace above a bound by less than Tol
// forgets nothing; and the GPU-wide bound follows any lower pace, even
// one inside the band.
func TestLearnerTolEdges(t *testing.T) {
	l := newTestLearner(t, flatTable(4, 1.015, 1.005), true)
	l.Observe(ClassA, []int{0}, 1)
	l.Observe(ClassA, []int{1}, 1)
	if b0, b1 := l.Belief(ClassA, 0), l.Belief(ClassA, 1); math.Abs(b0-1.0075) > 1e-12 || b1 != 1.005 {
		t.Errorf("beliefs %v and %v, want 1.0075 (lowered) and 1.005 (inside the band)", b0, b1)
	}
	// A pace above a GPU's bound by less than Tol is noise, not a change:
	// the bound stays and nothing is forgotten.
	l.Observe(ClassA, []int{1}, 1.005)
	if l.Forgot != 0 || l.hi[ClassA][1] != 1 {
		t.Errorf("pace 1.005 on a GPU bounded at 1: %d bounds forgotten, bound %v; want none, 1", l.Forgot, l.hi[ClassA][1])
	}
	l.Observe(ClassA, []int{0}, 0.995)
	if got := l.hiH[0]; math.Abs(got-0.995/1.015) > 1e-12 {
		t.Errorf("GPU-wide bound of GPU 0 after a pace of 0.995 on prior 1.015: %v, want %v", got, 0.995/1.015)
	}

	l = newTestLearner(t, flatTable(4), true)
	l.Observe(ClassA, []int{3}, 1.49)
	l.Observe(ClassA, []int{0, 1, 2, 3}, 1.5)
	for g, want := range []float64{1, 1, 1, 1.3725} {
		if got := l.Belief(ClassA, g); math.Abs(got-want) > 1e-12 {
			t.Errorf("after the slow gang: GPU %d believed %v, want %v", g, got, want)
		}
	}
}
