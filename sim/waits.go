package sim

import (
	"math"
	"slices"
)

// waitClock turns a number of waiting rounds into the SinceScheduled a
// job has then, which the plain loop accumulates by adding R once a
// round: m rounds read the m-th such sum, not m×R, because floating
// addition rounds. When R is a whole number of seconds every sum up to
// 2^53 is an integer and exact, so the m-th sum is m×R and no table is
// kept; any other R keeps the table of sums.
//
// The table was the whole story before: a starvation guard of 1,000
// hours at the artifact's 360 s rounds made it 10,000 sums, grown by
// doubling, 89 of the 930 page faults of a Sia-Philly run (on a virtual
// machine a first touch of a page costs 15-25 us), for a guard no job
// reached.
type waitClock struct {
	R   float64
	acc []float64 // acc[m]: the m-th sum (only when R is not whole)
	// exactTo is the most rounds whose sums are exact as m×R (0: none,
	// use acc).
	exactTo int
}

func newWaitClock(R float64) waitClock {
	c := waitClock{R: R, acc: []float64{0}}
	if R > 0 && R == math.Trunc(R) && R < 1<<31 {
		c.exactTo = int((1 << 53) / R)
	}
	return c
}

// at is SinceScheduled after m waiting rounds.
func (c *waitClock) at(m int) float64 {
	if m <= c.exactTo {
		return float64(m) * c.R
	}
	for len(c.acc) <= m {
		c.acc = append(c.acc, c.acc[len(c.acc)-1]+c.R)
	}
	return c.acc[m]
}

// rounds is the first number of waiting rounds whose SinceScheduled
// reaches w (w > 0 and finite).
func (c *waitClock) rounds(w float64) int {
	if c.exactTo > 0 {
		// With m the answer, (m-1)×R < w <= m×R, all exact. The rounded
		// quotient of w by R is at most m, and above m-1: w exceeds
		// (m-1)×R by at least an ulp of it, more than half an ulp of m-1
		// once multiplied out by R. So its ceiling is m.
		if m := int(math.Ceil(w / c.R)); m <= c.exactTo {
			return m
		}
	}
	if c.acc[len(c.acc)-1] >= w {
		i, _ := slices.BinarySearch(c.acc, w)
		return i
	}
	for c.acc[len(c.acc)-1] < w {
		c.acc = append(c.acc, c.acc[len(c.acc)-1]+c.R)
	}
	return len(c.acc) - 1
}
