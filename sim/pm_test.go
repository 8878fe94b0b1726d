package sim

import (
	"math"
	"testing"

	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// TestPmOf reads a job's slowdown off a table by hand: the slowest of
// its GPUs, with math.Max's rules (a NaN value wins, +0 beats -0), class
// B's column only, 1 without a table.
func TestPmOf(t *testing.T) {
	nan, negz := math.NaN(), math.Copysign(0, -1)
	var tab variability.Table
	tab.Values[variability.ClassA] = []float64{1.2, 0.9, 1.5, nan, negz, 0, 7}
	tab.Values[variability.ClassB] = []float64{2, 3, 1, 1, 1, 1, 1}
	cases := []struct {
		name  string
		raw   *variability.Table
		class variability.Class
		gpus  []int
		want  float64
		neg   bool // want -0
	}{
		{"no table", nil, variability.ClassA, []int{0, 1}, 1, false},
		{"one GPU", &tab, variability.ClassA, []int{1}, 0.9, false},
		{"slowest of three", &tab, variability.ClassA, []int{0, 1, 2}, 1.5, false},
		{"class B's column", &tab, variability.ClassB, []int{0, 1, 2}, 3, false},
		{"a NaN value", &tab, variability.ClassA, []int{0, 3, 6}, nan, false},
		{"-0 then +0", &tab, variability.ClassA, []int{4, 5}, 0, false},
		{"+0 then -0", &tab, variability.ClassA, []int{5, 4}, 0, false},
		{"-0 alone twice", &tab, variability.ClassA, []int{4, 4}, 0, true},
	}
	for _, c := range cases {
		j := &workload.Job{Spec: workload.Spec{Class: c.class}}
		got := pmOf(c.raw, j, c.gpus)
		switch {
		case math.IsNaN(c.want):
			if !math.IsNaN(got) {
				t.Errorf("%s: %v, want NaN", c.name, got)
			}
		case got != c.want || math.Signbit(got) != c.neg:
			t.Errorf("%s: %v (sign bit %v), want %v (sign bit %v)", c.name, got, math.Signbit(got), c.want, c.neg)
		}
	}
}
