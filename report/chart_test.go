package report

import (
	"math"
	"slices"
	"testing"
)

func TestCDF(t *testing.T) {
	s := CDF("x", []float64{3, 1, math.NaN(), 2, 2})
	// A rise at each value: from the share below it to the share at or
	// below it.
	wantX := []float64{1, 1, 2, 2, 2, 2, 3, 3}
	wantY := []float64{0, 0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 1}
	if !slices.Equal(s.X, wantX) || !slices.Equal(s.Y, wantY) {
		t.Errorf("CDF = %v / %v, want %v / %v", s.X, s.Y, wantX, wantY)
	}
	if empty := CDF("e", nil); len(empty.X) != 0 {
		t.Errorf("CDF of nothing has points %v", empty.X)
	}
}
