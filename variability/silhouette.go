package variability

import (
	"math"
	"slices"
	"sort"
)

// Silhouette1D is the mean silhouette coefficient (Rousseeuw 1987) of a
// labelling of 1-D values, with scikit-learn's conventions: a point alone
// in its cluster scores 0, and the score needs 2 ≤ clusters ≤ n-1 (NaN
// otherwise).
//
// The textbook computation is quadratic. Here each cluster's values are
// sorted with prefix sums, so the summed distance from any point to a
// cluster takes one binary search, and points sharing a value and a label
// are scored once. That keeps K sweeps over tens of thousands of GPUs
// cheap, where most GPUs share one of a few thousand profiled values.
func Silhouette1D(x []float64, labels []int) float64 {
	n := len(x)
	if n != len(labels) || n < 3 {
		return math.NaN()
	}
	// Work on a rescaled copy so huge inputs cannot overflow the sums;
	// the silhouette is scale-free.
	lo, hi := slices.Min(x), slices.Max(x)
	half := hi/2 - lo/2
	if math.IsNaN(half) || math.IsInf(half, 0) {
		return math.NaN()
	}
	ids := map[int]int{}
	for _, l := range labels {
		if _, ok := ids[l]; !ok {
			ids[l] = len(ids)
		}
	}
	k := len(ids)
	if k < 2 || k > n-1 {
		return math.NaN()
	}
	type pt struct {
		y float64
		c int
	}
	pts := make([]pt, n)
	members := make([][]float64, k)
	for i, v := range x {
		y := 0.0
		if half > 0 {
			y = (v/2 - lo/2) / half
		}
		c := ids[labels[i]]
		pts[i] = pt{y, c}
		members[c] = append(members[c], y)
	}
	prefix := make([][]float64, k)
	for c, m := range members {
		slices.Sort(m)
		p := make([]float64, len(m)+1)
		for i, v := range m {
			p[i+1] = p[i] + v
		}
		prefix[c] = p
	}
	// sumDist is Σ|y - m| over cluster c.
	sumDist := func(c int, y float64) float64 {
		m, p := members[c], prefix[c]
		i := sort.SearchFloat64s(m, y) // values < y
		below := y*float64(i) - p[i]
		above := (p[len(m)] - p[i]) - y*float64(len(m)-i)
		return max(below+above, 0)
	}
	slices.SortFunc(pts, func(a, b pt) int {
		if a.y != b.y {
			if a.y < b.y {
				return -1
			}
			return 1
		}
		return a.c - b.c
	})
	total := 0.0
	for i := 0; i < n; {
		j := i
		for j < n && pts[j] == pts[i] {
			j++
		}
		y, c := pts[i].y, pts[i].c
		s := 0.0
		if own := len(members[c]); own > 1 {
			a := sumDist(c, y) / float64(own-1)
			b := math.Inf(1)
			for o := range k {
				if o != c {
					b = min(b, sumDist(o, y)/float64(len(members[o])))
				}
			}
			if den := max(a, b); den > 0 {
				s = (b - a) / den
			}
		}
		total += s * float64(j-i)
		i = j
	}
	return total / float64(n)
}
