package variability

import (
	"math"
	"testing"
)

// prevalence is the maximum-likelihood share p of slow GPUs: with q = 1-p,
// sum over gang sizes n of off_n·n·q^n/(1-q^n) = sum of on_n·n.
//   - 10 one-GPU jobs, 2 off: 2q/p = 8, p = 0.2.
//   - 4 two-GPU jobs, 1 off: 2q²/(1-q²) = 3·2, q² = 3/4, p = 1 - √0.75.
//   - one-GPU 1 off of 2, three-GPU 0 off of 1: q/p = 1 + 3, p = 0.2.
//   - none off: 0; every one off: the cap, 0.5.
func TestLearnerPrevalence(t *testing.T) {
	for _, tc := range []struct {
		name        string
		trials, off []int // by gang size
		want        float64
	}{
		{"one-GPU jobs", []int{0, 10}, []int{0, 2}, 0.2},
		{"two-GPU jobs", []int{0, 0, 4}, []int{0, 0, 1}, 1 - math.Sqrt(0.75)},
		{"mixed sizes", []int{0, 2, 0, 1}, []int{0, 1, 0, 0}, 0.2},
		{"none off", []int{0, 5}, []int{0, 0}, 0},
		{"every one off", []int{0, 0, 0, 0, 3}, []int{0, 0, 0, 0, 3}, maxPrevalence},
	} {
		l := newTestLearner(t, flatTable(4), true)
		l.trials, l.offProf = tc.trials, tc.off
		if got := l.prevalence(); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: prevalence %v, want %v", tc.name, got, tc.want)
		}
	}
}

// ObserveJob counts a job once per GPU list it runs on (a job seen
// again where it ran is no new evidence), off its profile when slower
// than every GPU's prior: four one-GPU jobs, prior 1, one at 1.5, then
// the slow one seen again on the same list, and a 9-GPU gang at 1.5
// (above maxTrialGang, not counted): 1 off of 4, q/p = 3, p = 0.25 at
// the round's end (counting the gang, about 0.28). With OneBlame nothing is
// counted.
func TestLearnerPrevalenceCountsPlacements(t *testing.T) {
	for _, one := range []bool{false, true} {
		l := newTestLearnerOpts(t, flatTable(9), LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, OneBlame: one})
		lists := [][]int{{0}, {1}, {2}, {3}}
		for id, y := range []float64{1, 1, 1, 1.5} {
			l.ObserveJob(id, ClassA, lists[id], y)
		}
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
		l.ObserveJob(3, ClassA, lists[3], 1.5)
		l.ObserveJob(4, ClassA, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, 1.5)
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
		want := 0.25
		if one {
			want = 0
		}
		if math.Abs(l.prev-want) > 1e-9 {
			t.Errorf("OneBlame %v: prevalence %v, want %v", one, l.prev, want)
		}
	}
}

// A slow set's first suspect takes a whole step (Alpha 0.5) and the
// others the posterior weight w = p/(1-(1-p)^m) of one. Class A alone,
// prior 1, the gang {0,1,2,3} at 1.5:
//   - p = 0: GPU 0 (first of equals) 1 -> 1.25, the others stay at 1.
//   - p = 0.5, m = 4: w = 0.5/0.9375 = 8/15, the others 1 + 8/15·0.25 =
//     1 + 2/15.
//   - p = 0.2, m = 4: w = 0.2/0.5904, the others 1 + 0.05/0.5904.
//   - p = 0.5, GPU 3 seen alone at 1 first (its bound rules it out): m =
//     3, w = 0.5/0.875 = 4/7, GPUs 1 and 2 at 1 + 1/7, GPU 3 at 1.
func TestLearnerBlameByPrevalence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prev   float64
		before [][]int // GPU lists seen at 1 first
		want   []float64
	}{
		{"rare", 0, nil, []float64{1.25, 1, 1, 1}},
		{"half slow", 0.5, nil, []float64{1.25, 1 + 2.0/15, 1 + 2.0/15, 1 + 2.0/15}},
		{"a fifth slow", 0.2, nil, []float64{1.25, 1 + 0.05/0.5904, 1 + 0.05/0.5904, 1 + 0.05/0.5904}},
		{"a bound rules one out", 0.5, [][]int{{3}}, []float64{1.25, 1 + 1.0/7, 1 + 1.0/7, 1}},
		// Two suspects left: w = 0.5 / (1 - 0.5^2) = 2/3 of a step.
		{"two suspects", 0.5, [][]int{{2}, {3}}, []float64{1.25, 1 + 1.0/6, 1, 1}},
	} {
		l := newTestLearner(t, flatTable(4), true)
		for _, g := range tc.before {
			l.Observe(ClassA, g, 1)
		}
		l.prev = tc.prev
		l.Observe(ClassA, []int{0, 1, 2, 3}, 1.5)
		for g, want := range tc.want {
			if got := l.Belief(ClassA, g); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s: GPU %d believed %v, want %v", tc.name, g, got, want)
			}
		}
	}
}

// ObserveTrial counts each call as a job on a new GPU list (the driver
// calls it once per run) and Prevalence reads the estimate the last Rebin
// took: four one-GPU runs at prior 1, one of them at 1.5, then Observe of
// the slow run's later report (not counted): 1 off of 4, q/p = 3, p = 0.25.
// Before the Rebin the estimate is still 0. With OneBlame nothing is
// counted, and the beliefs step either way.
func TestLearnerObserveTrial(t *testing.T) {
	for _, one := range []bool{false, true} {
		l := newTestLearnerOpts(t, flatTable(4), LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, OneBlame: one})
		for g, y := range []float64{1, 1, 1, 1.5} {
			l.ObserveTrial(ClassA, []int{g}, y)
		}
		l.Observe(ClassA, []int{3}, 1.5)
		if got := l.Prevalence(); got != 0 {
			t.Errorf("OneBlame %v: prevalence before the round's end %v, want 0", one, got)
		}
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
		want := 0.25
		if one {
			want = 0
		}
		if got := l.Prevalence(); math.Abs(got-want) > 1e-9 {
			t.Errorf("OneBlame %v: prevalence %v, want %v", one, got, want)
		}
		if b := l.Belief(ClassA, 3); !(b > 1.25) {
			t.Errorf("OneBlame %v: the slow GPU's belief %v, want above 1.25 after two steps towards 1.5", one, b)
		}
	}
}

// RecountTrial moves a run's count to its latest pace and keeps it one
// run: four one-GPU runs at prior 1, GPU 3's at 1.5 (1 off of 4, p =
// 0.25); its later report at 1.005, inside the 1% band, makes it on its
// profile (0 off, p = 0); GPU 0's run then at 1.5 makes 1 off of 4 again
// (p = 0.25), not 1 off of 5 (q/p = 4, p = 0.2) as a fresh count would.
func TestLearnerRecountTrial(t *testing.T) {
	l := newTestLearnerOpts(t, flatTable(4), LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true})
	for g, y := range []float64{1, 1, 1, 1.5} {
		l.ObserveTrial(ClassA, []int{g}, y)
	}
	for _, step := range []struct {
		name           string
		gpu            int
		was, now, want float64
	}{
		{"as first counted", 0, 1, 1, 0.25},
		{"GPU 3's run back within the band", 3, 1.5, 1.005, 0},
		{"GPU 0's run off its profile", 0, 1, 1.5, 0.25},
	} {
		l.RecountTrial(ClassA, []int{step.gpu}, step.was, step.now)
		if _, err := l.Rebin(); err != nil {
			t.Fatal(err)
		}
		if got := l.Prevalence(); math.Abs(got-step.want) > 1e-9 {
			t.Errorf("%s: prevalence %v, want %v", step.name, got, step.want)
		}
	}
}
