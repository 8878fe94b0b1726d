package sim

import (
	"math"
	"sort"
	"testing"
)

// sums is the oracle: SinceScheduled as the plain loop accumulates it,
// one addition of R a round.
func sums(R float64, m int) []float64 {
	s := make([]float64, m+1)
	for i := 1; i <= m; i++ {
		s[i] = s[i-1] + R
	}
	return s
}

// firstReaching is the oracle's rounds: the first m whose sum reaches w.
func firstReaching(s []float64, w float64) int {
	if m := sort.SearchFloat64s(s, w); m < len(s) {
		return m
	}
	return -1
}

func TestWaitClock(t *testing.T) {
	const rounds = 70000 // past a 1,000-hour guard at 60 s rounds
	for _, tc := range []struct {
		R     float64
		exact bool
	}{
		{300, true}, {60, true}, {1, true}, {7, true}, {86400, true},
		{0.1, false}, {1.0 / 3, false}, {2.5, false},
	} {
		c := newWaitClock(tc.R)
		if got := c.exactTo > 0; got != tc.exact {
			t.Fatalf("R=%v: exact %v, want %v", tc.R, got, tc.exact)
		}
		s := sums(tc.R, rounds)
		for _, m := range []int{0, 1, 2, 3, 17, 1000, 12000, 60000, rounds} {
			if got := c.at(m); got != s[m] {
				t.Errorf("R=%v: at(%d) = %v, the loop's sum is %v", tc.R, m, got, s[m])
			}
		}
		for _, k := range []int{1, 2, 3, 59, 1000, 12000, 60000, rounds - 1} {
			v := s[k]
			for _, w := range []float64{v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)), v - tc.R/2, v + tc.R/3} {
				if !(w > 0) {
					continue
				}
				want := firstReaching(s, w)
				if want < 0 {
					continue
				}
				if got := c.rounds(w); got != want {
					t.Errorf("R=%v: rounds(%v) = %d, want %d", tc.R, w, got, want)
				}
			}
		}
		// The guard's own figure: 1,000 hours.
		if want := firstReaching(s, 3.6e6); want >= 0 {
			if got := c.rounds(3.6e6); got != want {
				t.Errorf("R=%v: rounds(3.6e6) = %d, want %d", tc.R, got, want)
			}
		}
	}
}

// A whole R keeps no table, however far the guard lies: that table was a
// tenth of a short run's page faults.
func TestWaitClockKeepsNoTableForWholeRounds(t *testing.T) {
	c := newWaitClock(60)
	if m := c.rounds(3.6e6); m != 60000 {
		t.Fatalf("rounds(3.6e6) at R=60 = %d, want 60000", m)
	}
	_ = c.at(60000)
	if len(c.acc) != 1 {
		t.Fatalf("the clock kept %d sums, want none past the first", len(c.acc))
	}
}
