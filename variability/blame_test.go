package variability

import (
	"math"
	"testing"
)

// The blame of a slow set goes to the suspect the most remembered slow
// observations name, and only among equally named ones to the GPU
// believed slowest. Class A alone (PerClassOnly), Alpha 0.5, Tol 0.01,
// prior 1, 1, 1, 1.2 (GPU 3 is slower by its profile).
//   - {1,2} runs at 1.5, above the believed 1: both are suspects, named by
//     no observation yet and believed alike, so the first, GPU 1, takes
//     the blame: 1 -> 1.25. The observation is remembered (it names 1
//     and 2).
//   - {2,3} runs at 1.5, above the believed 1.2: GPU 2 is named once,
//     GPU 3 never, so GPU 2 takes the blame (it also explains the first
//     set): 1 -> 1.25, and GPU 3 keeps 1.2. Blaming the GPU believed
//     slowest first would raise GPU 3 to 1.35 and leave GPU 2 at 1.
func TestLearnerBlamesMostNamedFirst(t *testing.T) {
	l := newTestLearner(t, flatTable(4, 1, 1, 1, 1.2), true)
	l.Observe(ClassA, []int{1, 2}, 1.5)
	l.Observe(ClassA, []int{2, 3}, 1.5)
	for g, want := range []float64{1, 1.25, 1.25, 1.2} {
		if got := l.Belief(ClassA, g); math.Abs(got-want) > 1e-12 {
			t.Errorf("GPU %d believed %v, want %v", g, got, want)
		}
	}
}

// Clusters of at most RefitBelow GPUs are fitted again on every binning
// (boundary included); larger ones re-place moved GPUs in the old bins
// until more than RefitShare of them have moved. Four GPUs, prior class A
// 0.9, 0.9, 1.2, 1.2, RefitShare 0.5; GPU 0 alone at 1.3 twice moves
// 0.9 -> 1.1 -> 1.2: one of four GPUs moved, under the share (2).
// RefitBelow 4 (= the cluster): fitted (Refits 1). RefitBelow 3: placed
// in the old bins (Refits 0).
func TestLearnerRefitBelowBoundary(t *testing.T) {
	for _, tc := range []struct{ below, refits int }{{4, 1}, {3, 0}, {5, 1}} {
		prior := flatTable(4, 0.9, 0.9, 1.2, 1.2)
		sc, err := NewScores(prior, BinOptions{Seed: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLearner(prior, sc, LearnOptions{Bin: BinOptions{Seed: 1}, PerClassOnly: true, RefitBelow: tc.below, RefitShare: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		l.Observe(ClassA, []int{0}, 1.3)
		l.Observe(ClassA, []int{0}, 1.3)
		if got, err := l.Rebin(); err != nil || got == nil {
			t.Fatalf("RefitBelow %d: rebin %v, %v", tc.below, got != nil, err)
		}
		if l.Refits != tc.refits {
			t.Errorf("RefitBelow %d on 4 GPUs: %d refits, want %d", tc.below, l.Refits, tc.refits)
		}
	}
}
