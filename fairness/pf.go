package fairness

import (
	"math"
	"slices"
)

// option is one bid: after p water-fill grants the app holds n new GPUs
// and its utility (1/ρ) is u.
type option struct {
	p, n int
	u    float64
}

// bidTable is a bidder's bids: "nothing more" plus one per size at which
// its best bundle from the pool is strictly better than every smaller one
// (a size whose extra GPUs do not help is not worth asking for). With
// ValueSpeedup each bid's value is the app's total effective speed-up
// instead of 1/ρ (the same bundles: both grow with the rate).
//
// An app may ask for at most maxBids sizes (as the authors' simulator
// capped bids per job group): past that, the sizes are the first grant
// counts reaching q/maxBids of its largest bundle, q = 1..maxBids.
func bidTable(b *bidder, pl *pool, maxBids int, v Valuation) []option {
	u0 := b.utility(pl.t, 0, nil)
	value := func(rate, u float64) float64 {
		if v == ValueSpeedup {
			return rate
		}
		return u
	}
	opts := []option{{0, 0, value(b.rate(pl.t, 0, nil), u0)}}
	top := u0
	for _, p := range bidSizes(b.cum, maxBids) {
		bundle, u := b.best(pl, p)
		if bundle == nil {
			break
		}
		if u > top*(1+1e-12) && u > 0 {
			opts = append(opts, option{p, b.cum[p], value(b.bestRate, u)})
			top = u
		}
	}
	return opts
}

// bidSizes are the grant counts an app bids at: all of them, or maxBids
// spread evenly over its GPU range.
func bidSizes(cum []int, maxBids int) []int {
	P := len(cum) - 1
	out := make([]int, 0, min(P, max(maxBids, 1)))
	if maxBids <= 0 || P <= maxBids {
		for p := 1; p <= P; p++ {
			out = append(out, p)
		}
		return out
	}
	top := cum[P]
	p := 1
	for q := 1; q <= maxBids; q++ {
		target := (q*top + maxBids - 1) / maxBids
		for cum[p] < target {
			p++
		}
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// welfare is a Nash-welfare value: fewest zero utilities first, then the
// largest sum of log utilities (the max-product rule when some agent
// cannot be served).
type welfare struct {
	zeros int32
	log   float64
}

const welfareTol = 1e-9

func (w welfare) plus(u float64) welfare {
	if u <= 0 {
		return welfare{w.zeros + 1, w.log}
	}
	return welfare{w.zeros, w.log + math.Log(u)}
}

func (w welfare) add(v welfare) welfare { return welfare{w.zeros + v.zeros, w.log + v.log} }

// better reports whether w beats v by more than rounding noise.
func (w welfare) better(v welfare) bool {
	if w.zeros != v.zeros {
		return w.zeros < v.zeros
	}
	return w.log > v.log+welfareTol
}

// table is a knapsack table of welfare values by budget, stored as two
// plain arrays so that the inner loop stays tight.
type table struct {
	zeros []int32
	log   []float64
}

func newTable(n int) table { return table{make([]int32, n), make([]float64, n)} }

func (t table) at(b int) welfare { return welfare{t.zeros[b], t.log[b]} }

// allRows is how many welfare-table entries (12 bytes each) the suffix
// sweep keeps before it falls back to √n checkpoints.
var allRows = 4 << 20

// choiceRows are each bidder's option per budget in a knapsack sweep,
// one byte per entry when every table has at most 256 options (the usual
// case: DefaultMaxBids + 1), else four.
type choiceRows struct {
	b8  [][]uint8
	b32 [][]int32
}

func newChoiceRows(n, maxOpts int) choiceRows {
	if maxOpts <= 256 {
		return choiceRows{b8: make([][]uint8, n)}
	}
	return choiceRows{b32: make([][]int32, n)}
}

func (c choiceRows) set(i int, ch []int32) {
	if c.b8 != nil {
		r := make([]uint8, len(ch))
		for b, o := range ch {
			r[b] = uint8(o)
		}
		c.b8[i] = r
		return
	}
	c.b32[i] = slices.Clone(ch)
}

func (c choiceRows) at(i, b int) int {
	if c.b8 != nil {
		return int(c.b8[i][b])
	}
	return int(c.b32[i][b])
}

// proportionalFair picks one option per bidder maximising the product of
// utilities with at most budget GPUs in all, by dynamic programming over
// (bidder, GPUs used). It returns the choice and every bidder's kept
// fraction c_x (keepFraction), which needs the best choice of the others
// without x: from a prefix table (bidders < x) and a suffix table
// (bidders > x).
//
// Memory is what bounds large auctions: the option picked per (bidder,
// budget) is kept for every bidder (a byte each), but of the welfare
// tables only the current prefix row and √n checkpoints of the suffix
// rows are kept; the suffix rows between two checkpoints are recomputed
// when the sweep gets there.
//
// Without withKeep (no payments to compute) only the prefix sweep runs and
// keep is nil.
func proportionalFair(tables [][]option, budget int, withKeep bool) (choice []int, keep []float64) {
	nb := len(tables)
	choice = make([]int, nb)
	keep = make([]float64, nb)
	if nb == 0 {
		return
	}
	total, maxOpts := 0, 0
	for _, t := range tables {
		total += t[len(t)-1].n
		maxOpts = max(maxOpts, len(t))
	}
	B := min(budget, total)
	if total <= budget {
		// No contention: everyone gets its best bid, with or without x.
		for x := range tables {
			choice[x] = len(tables[x]) - 1
			keep[x] = 1
		}
		return
	}
	vals := make([][]welfare, nb)
	for i, t := range tables {
		vals[i] = make([]welfare, len(t))
		for o, op := range t {
			vals[i][o] = welfare{}.plus(op.u)
		}
	}
	if !withKeep {
		keep = nil
		chP := newChoiceRows(nb, maxOpts)
		pre, spare := newTable(B+1), newTable(B+1)
		ch := make([]int32, B+1)
		for x := range nb {
			clear(ch)
			stepInto(spare, ch, pre, tables[x], vals[x], B)
			pre, spare = spare, pre
			chP.set(x, ch)
		}
		b := B
		for i := nb - 1; i >= 0; i-- {
			choice[i] = chP.at(i, b)
			b -= tables[i][choice[i]].n
		}
		return
	}
	// Suffix sweep: chS row i is bidder i's option in suf[i] (best for
	// bidders >= i); suf[i] itself is kept at the checkpoints i = k·K and
	// at nb. When every row fits in allRows entries, every row is a
	// checkpoint and nothing is recomputed.
	K := max(1, int(math.Sqrt(float64(nb))))
	if nb*(B+1) <= allRows {
		K = 1
	}
	chS := newChoiceRows(nb, maxOpts)
	ckpt := map[int]table{nb: newTable(B + 1)}
	cur := ckpt[nb]
	for i := nb - 1; i >= 0; i-- {
		var ch []int32
		cur, ch = step(cur, tables[i], vals[i], B)
		chS.set(i, ch)
		if i%K == 0 {
			ckpt[i] = cur
		}
	}
	// Prefix sweep: chP row i is bidder i's option in pre[i+1]. For each
	// x, the best split of the budget between the bidders before x
	// (pre[x]) and after it (suf[x+1]) is the best allocation without x.
	chP := newChoiceRows(nb, maxOpts)
	pre, spare := newTable(B+1), newTable(B+1)
	ch := make([]int32, B+1)
	block := map[int]table{} // suf rows of the current block
	split := make([]int, nb) // GPUs the bidders before x get without x
	for x := range nb {
		s, ok := ckpt[x+1]
		if !ok {
			if s, ok = block[x+1]; !ok {
				// Recompute the rows of x+1's block from its upper
				// checkpoint.
				clear(block)
				hi := min(nb, ((x+1)/K+1)*K)
				row := ckpt[hi]
				for i := hi - 1; i > x; i-- {
					row, _ = step(row, tables[i], vals[i], B)
					block[i] = row
				}
				s = block[x+1]
			}
		}
		bestB := 0
		bestV := pre.at(0).add(s.at(B))
		for b := 1; b <= B; b++ {
			if v := pre.at(b).add(s.at(B - b)); v.better(bestV) {
				bestB, bestV = b, v
			}
		}
		split[x] = bestB
		clear(ch)
		stepInto(spare, ch, pre, tables[x], vals[x], B)
		pre, spare = spare, pre
		chP.set(x, ch)
	}
	clear(block)
	ckpt = nil
	b := B
	for i := nb - 1; i >= 0; i-- {
		choice[i] = chP.at(i, b)
		b -= tables[i][choice[i]].n
	}
	w := make([]int, nb)
	for x := range nb {
		w[x] = -1
		b := split[x]
		for i := x - 1; i >= 0; i-- {
			w[i] = chP.at(i, b)
			b -= tables[i][w[i]].n
		}
		b = B - split[x]
		for i := x + 1; i < nb; i++ {
			w[i] = chS.at(i, b)
			b -= tables[i][w[i]].n
		}
		keep[x] = keepFraction(tables, choice, w, x)
	}
	return
}

// step adds one bidder to a knapsack table: out[b] = max over options o
// with n_o <= b of prev[b − n_o] + v_o. Options are tried smallest first
// and only a strictly better one replaces the incumbent, so ties keep the
// smaller bundle.
func step(prev table, t []option, v []welfare, B int) (table, []int32) {
	return stepInto(newTable(B+1), make([]int32, B+1), prev, t, v, B)
}

// stepInto is step writing into out (B+1 entries, any content) and ch
// (B+1 zeros), which must not be prev's.
func stepInto(out table, ch []int32, prev table, t []option, v []welfare, B int) (table, []int32) {
	z0, l0 := v[0].zeros, v[0].log
	for b := range out.zeros {
		out.zeros[b] = prev.zeros[b] + z0
		out.log[b] = prev.log[b] + l0
	}
	for o := 1; o < len(t); o++ {
		n := t[o].n
		if n > B {
			continue // never fits
		}
		vz, vl := v[o].zeros, v[o].log
		pz, pl := prev.zeros[:B+1-n], prev.log[:B+1-n]
		oz, ol, oc := out.zeros[n:B+1], out.log[n:B+1], ch[n:B+1]
		for b := range pz {
			z, l := pz[b]+vz, pl[b]+vl
			if z < oz[b] || (z == oz[b] && l > ol[b]+welfareTol) {
				oz[b], ol[b], oc[b] = z, l, int32(o)
			}
		}
	}
	return out, ch
}

// keepFraction is c_x = Π_{j≠x} u_j(G*) / Π_{j≠x} u_j(G*₋ₓ), computed as a
// product of per-bidder ratios so that simple cases come out exact (2/4
// is 0.5, not 0.49999…). A bidder served in G*₋ₓ but not in G* makes it 0;
// it is capped at 1 against rounding.
func keepFraction(tables [][]option, choice, without []int, x int) float64 {
	c := 1.0
	var num, den int // unmatched zero factors
	for j := range tables {
		if j == x {
			continue
		}
		a := tables[j][choice[j]].u
		b := tables[j][without[j]].u
		switch {
		case a > 0 && b > 0:
			c *= a / b
		case a > 0:
			c *= a
			den++
		case b > 0:
			c /= b
			num++
		}
	}
	if num > den {
		return 0
	}
	return min(c, 1)
}
