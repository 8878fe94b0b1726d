package place

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMinTreeMatchesScan drives trees of many sizes (the fan-out's edges
// included) with random leaf changes and checks the root, and a pruned
// visit, against a scan of the leaves.
func TestMinTreeMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 7, 8, 9, 63, 64, 65, 100, 511, 512, 513, 4608} {
		m, size := newMinTree(n)
		tr := make([]int64, size)
		leaves := make([]int64, n)
		for i := range leaves {
			leaves[i] = rng.Int64N(1000)
			tr[i] = leaves[i]
		}
		m.build(tr)
		for step := range 3 * n {
			if got, want := m.root(tr), slices.Min(leaves); got != want {
				t.Fatalf("n %d step %d: root %d, leaves' minimum %d", n, step, got, want)
			}
			i := rng.IntN(n)
			v := rng.Int64N(1000)
			if rng.IntN(10) == 0 {
				v = noKey
			}
			leaves[i] = v
			m.set(tr, i, v)
		}
		limit := int64(500)
		var got, want []int
		m.visit(tr, func(k int64) bool { return k < limit }, func(i int) { got = append(got, i) })
		for i, v := range leaves {
			if v < limit {
				want = append(want, i)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n %d: visit found %v, want %v", n, got, want)
		}
	}
}
