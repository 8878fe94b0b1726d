package fairness

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Knob is the fairness knob f in integer millionths, so that the bidder
// count is exact: in float64, (1 − 0.8)·10 = 1.9999999999999996, whose
// floor is 1, not 2.
type Knob struct {
	micro int64 // f × 10⁶
	// Ceil rounds (1 − f)·n up instead of down (one reading of the
	// paper's ⌊(1−f)·n⌋ worst-off apps; the authors' simulator floors).
	Ceil bool
}

// DefaultKnob is f = 0.8, the paper's choice.
var DefaultKnob = Knob{micro: 800000}

// NewKnob validates f ∈ [0, 1] with at most six decimals.
func NewKnob(f float64) (Knob, error) {
	if math.IsNaN(f) || f < 0 || f > 1 {
		return Knob{}, fmt.Errorf("fairness knob must be in [0, 1], got %v", f)
	}
	m := math.Round(f * 1e6)
	if math.Abs(f*1e6-m) > 1e-6 {
		return Knob{}, fmt.Errorf("fairness knob %v: use at most six decimals", f)
	}
	return Knob{micro: int64(m)}, nil
}

// F is the knob's value.
func (k Knob) F() float64 { return float64(k.micro) / 1e6 }

// Bidders is how many of n wanting apps see the offer:
// max(1, ⌊(1 − f)·n⌋), or the ceiling with Ceil; 0 when n is 0.
func (k Knob) Bidders(n int) int {
	if n <= 0 {
		return 0
	}
	num := (1e6 - k.micro) * int64(n)
	b := num / 1e6
	if k.Ceil && num%1e6 != 0 {
		b++
	}
	return int(max(1, min(b, int64(n))))
}

// rankKey orders apps worst-off first: ρ descending (+Inf first), then
// the longer wait (earlier arrival, or earlier last allocation), then
// lower index.
type rankKey struct {
	rho     float64
	arrival float64
	index   int
}

func compareRank(a, b rankKey) int {
	if c := cmp.Compare(b.rho, a.rho); c != 0 {
		return c
	}
	if c := cmp.Compare(a.arrival, b.arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
}

// WorstOff returns the indices of the k worst-off apps, given each app's
// ρ and arrival; the order is deterministic on ties.
func WorstOff(rho, arrival []float64, k int) []int {
	keys := make([]rankKey, len(rho))
	for i := range rho {
		keys[i] = rankKey{rho[i], arrival[i], i}
	}
	slices.SortFunc(keys, compareRank)
	out := make([]int, 0, min(k, len(keys)))
	for _, key := range keys[:min(k, len(keys))] {
		out = append(out, key.index)
	}
	return out
}
