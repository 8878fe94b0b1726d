package fairness

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The checkpointed dynamic program agrees with brute force: random bid
// tables (2-9 bidders, up to 4 sizes each, random utilities, so no ties)
// and budgets; brute force enumerates every choice, takes the best
// welfare (fewest zeros, then the largest Σ log u) within the budget for
// G* and for every G*₋ₓ, and c_x is the ratio of the others' utility
// products between the two, taken from those welfare values (0 when G*
// leaves more of the others unserved). Odd trials keep only √n suffix checkpoints (with 9
// bidders, every 3 rows), so block recomputation is exercised; even trials
// keep every row. The choice without payments (the prefix sweep alone) is
// the same.
func TestProportionalFairMatchesBruteForce(t *testing.T) {
	defer func(n int) { allRows = n }(allRows)
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 300 {
		nb := 2 + rng.IntN(8)
		tables := make([][]option, nb)
		for i := range tables {
			u0 := 0.0
			if rng.IntN(2) == 0 {
				u0 = 0.1 + rng.Float64()
			}
			tables[i] = []option{{0, 0, u0}}
			n, u := 0, u0
			for range 1 + rng.IntN(3) {
				n += 1 + rng.IntN(3)
				u += 0.1 + rng.Float64()
				tables[i] = append(tables[i], option{len(tables[i]), n, u})
			}
		}
		budget := 1 + rng.IntN(3*nb)
		if nb > 6 {
			budget = 2 + rng.IntN(2*nb)
		}
		// Alternate between keeping every suffix row and √n checkpoints.
		allRows = map[bool]int{true: 4 << 20, false: 0}[trial%2 == 0]
		choice, keep := proportionalFair(tables, budget, true)
		if c2, k2 := proportionalFair(tables, budget, false); !slices.Equal(c2, choice) || (k2 != nil && len(k2) != len(choice)) {
			t.Fatalf("trial %d: without payments the choice is %v, with them %v", trial, c2, choice)
		}
		best := func(skip int) ([]int, welfare) {
			var bc []int
			var bw welfare
			cur := make([]int, nb)
			var rec func(i, used int, w welfare)
			rec = func(i, used int, w welfare) {
				if i == nb {
					if bc == nil || w.better(bw) {
						bc, bw = append([]int(nil), cur...), w
					}
					return
				}
				if i == skip {
					cur[i] = -1
					rec(i+1, used, w)
					return
				}
				for o, op := range tables[i] {
					if used+op.n <= budget {
						cur[i] = o
						rec(i+1, used+op.n, w.plus(op.u))
					}
				}
			}
			rec(0, 0, welfare{})
			return bc, bw
		}
		bc, bw := best(-1)
		var got welfare
		used := 0
		for i, o := range choice {
			got = got.plus(tables[i][o].u)
			used += tables[i][o].n
		}
		if used > budget || got.zeros != bw.zeros || math.Abs(got.log-bw.log) > 1e-9 {
			t.Fatalf("trial %d: choice %v (welfare %v, %d GPUs) vs brute force %v (%v), budget %d", trial, choice, got, used, bc, bw, budget)
		}
		for x := range nb {
			// c_x from the two welfare values, not from keepFraction:
			// the others' welfare in G* against their best without x
			// (wbx). More unserved others in G* gives 0; else the ratio
			// of the products, exp(Σ log u − Σ log u'), at most 1.
			_, wbx := best(x)
			var others welfare
			for j, o := range bc {
				if j != x {
					others = others.plus(tables[j][o].u)
				}
			}
			want := 0.0
			if others.zeros <= wbx.zeros {
				want = min(1, math.Exp(others.log-wbx.log))
			}
			if math.Abs(keep[x]-want) > 1e-9 {
				t.Fatalf("trial %d: c_%d = %v, brute force %v", trial, x, keep[x], want)
			}
		}
	}
}
