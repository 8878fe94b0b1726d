package tenancy

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestSortViewMatchesSliceStable: sortView (slices.SortStableFunc) puts
// views in the order sort.SliceStable with HiveD's comparison gave, ties
// included (a stable sort's order is fixed by its comparison alone).
func TestSortViewMatchesSliceStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := rng.IntN(300)
		nodes := make([]viewNode, n)
		for i := range nodes {
			// Few distinct values, so that most nodes tie with others; p
			// tells the nodes apart.
			nodes[i] = viewNode{p: &PCell{used: i}, free: rng.IntN(9), used: rng.IntN(4), higher: rng.IntN(3),
				healthy: rng.IntN(5) > 0, allowed: rng.IntN(3) > 0}
		}
		want := slices.Clone(nodes)
		sort.SliceStable(want, func(i, j int) bool {
			a, b := &want[i], &want[j]
			if a.healthy != b.healthy {
				return a.healthy
			}
			if a.allowed != b.allowed {
				return a.allowed
			}
			if a.used != b.used {
				return a.used > b.used
			}
			return a.higher < b.higher
		})
		sortView(nodes)
		for i := range nodes {
			if nodes[i] != want[i] {
				t.Fatalf("trial %d: position %d: sortView has node %d (%+v), sort.SliceStable node %d (%+v)", trial, i, nodes[i].p.used, nodes[i], want[i].p.used, want[i])
			}
		}
	}
}
