package policy

import (
	"slices"
	"testing"
)

// A GPU marked slow takes its class's slowest score in every class that
// has scores; the others keep theirs, and the input is left as it was.
func TestWithSlowest(t *testing.T) {
	sc := &Scores{}
	sc.SF[0] = []float64{1, 0.5, 2, 0.8}
	sc.SF[1] = []float64{0.9, 3, 1, 1}
	got := sc.WithSlowest(func(g int) bool { return g == 1 || g == 3 })
	if want := []float64{1, 2, 2, 2}; !slices.Equal(got.SF[0], want) {
		t.Errorf("class 0: %v, want %v", got.SF[0], want)
	}
	if want := []float64{0.9, 3, 1, 3}; !slices.Equal(got.SF[1], want) {
		t.Errorf("class 1: %v, want %v", got.SF[1], want)
	}
	if len(got.SF[2]) != 0 {
		t.Errorf("class 2 had no scores and got %v", got.SF[2])
	}
	if want := []float64{1, 0.5, 2, 0.8}; !slices.Equal(sc.SF[0], want) {
		t.Errorf("the input changed: %v", sc.SF[0])
	}
}
