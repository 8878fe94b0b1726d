package fairness

import (
	"slices"
	"testing"
)

// An elastic job with a minimum starts on its minimum, then grows one GPU
// a grant up to its most; a budget below the minimum grants nothing.
func TestWaterFillElasticMinimum(t *testing.T) {
	a := &App{Name: "a", TotalWork: 100, Demand: 6, Sens: Insensitive, Jobs: []Job{
		{Remaining: 100, MaxGPUs: 4, MinGPUs: 2},
		{Remaining: 10, MaxGPUs: 2, MinGPUs: 2},
	}}
	for _, c := range []struct {
		n    int
		want []int
	}{{1, []int{0, 0}}, {2, []int{2, 0}}, {3, []int{3, 0}}, {4, []int{2, 2}}, {5, []int{3, 2}}, {6, []int{4, 2}}} {
		if got := WaterFill(a, c.n); !slices.Equal(got, c.want) {
			t.Errorf("n = %d: %v, want %v", c.n, got, c.want)
		}
	}
	if wantsMore(a, 1) {
		t.Error("wants 1 GPU although every job needs 2 to start")
	}
	a.Jobs[1].MinGPUs = 3
	if err := a.Validate(); err == nil {
		t.Error("min GPUs above max accepted")
	}
}
