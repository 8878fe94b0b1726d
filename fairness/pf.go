package fairness

import "math"

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
	value := func(p int, bundle []int, u float64) float64 {
		if v == ValueSpeedup {
			return b.rate(pl.t, p, bundle)
		}
		return u
	}
	opts := []option{{0, 0, value(0, nil, u0)}}
	top := u0
	for _, p := range bidSizes(b.cum, maxBids) {
		bundle, u := b.best(pl, p)
		if bundle == nil {
			break
		}
		if u > top*(1+1e-12) && u > 0 {
			opts = append(opts, option{p, b.cum[p], value(p, bundle, u)})
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

// proportionalFair picks one option per bidder maximising the product of
// utilities with at most budget GPUs in all, by dynamic programming over
// (bidder, GPUs used). It returns the choice and, for every bidder x, the
// best choice of the others without x (entry x is -1), which the hidden
// payments need; both come from one prefix and one suffix table.
func proportionalFair(tables [][]option, budget int) (choice []int, without [][]int) {
	nb := len(tables)
	choice = make([]int, nb)
	without = make([][]int, nb)
	if nb == 0 {
		return
	}
	total := 0
	for _, t := range tables {
		total += t[len(t)-1].n
	}
	B := min(budget, total)
	if total <= budget {
		// No contention: everyone gets its best bid, with or without x.
		for x := range tables {
			choice[x] = len(tables[x]) - 1
			without[x] = make([]int, nb)
			for y := range tables {
				without[x][y] = len(tables[y]) - 1
			}
			without[x][x] = -1
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
	// pre[i][b]: best for bidders < i within b GPUs; chP[i][b]: bidder i's
	// option in pre[i+1][b]. suf[i][b]: best for bidders >= i; chS[i][b]:
	// bidder i's option in suf[i][b].
	pre := make([]table, nb+1)
	chP := make([][]int32, nb)
	pre[0] = newTable(B + 1)
	for i := range nb {
		pre[i+1], chP[i] = step(pre[i], tables[i], vals[i], B)
	}
	suf := make([]table, nb+1)
	chS := make([][]int32, nb)
	suf[nb] = newTable(B + 1)
	for i := nb - 1; i >= 0; i-- {
		suf[i], chS[i] = step(suf[i+1], tables[i], vals[i], B)
	}
	b := B
	for i := nb - 1; i >= 0; i-- {
		choice[i] = int(chP[i][b])
		b -= tables[i][choice[i]].n
	}
	for x := range nb {
		bestB := 0
		bestV := pre[x].at(0).add(suf[x+1].at(B))
		for b := 1; b <= B; b++ {
			if v := pre[x].at(b).add(suf[x+1].at(B - b)); v.better(bestV) {
				bestB, bestV = b, v
			}
		}
		w := make([]int, nb)
		w[x] = -1
		b := bestB
		for i := x - 1; i >= 0; i-- {
			w[i] = int(chP[i][b])
			b -= tables[i][w[i]].n
		}
		b = B - bestB
		for i := x + 1; i < nb; i++ {
			w[i] = int(chS[i][b])
			b -= tables[i][w[i]].n
		}
		without[x] = w
	}
	return
}

// step adds one bidder to a knapsack table: out[b] = max over options o
// with n_o <= b of prev[b − n_o] + v_o. Options are tried smallest first
// and only a strictly better one replaces the incumbent, so ties keep the
// smaller bundle.
func step(prev table, t []option, v []welfare, B int) (table, []int32) {
	out := newTable(B + 1)
	ch := make([]int32, B+1)
	z0, l0 := v[0].zeros, v[0].log
	for b := range out.zeros {
		out.zeros[b] = prev.zeros[b] + z0
		out.log[b] = prev.log[b] + l0
	}
	for o := 1; o < len(t); o++ {
		n := t[o].n
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
