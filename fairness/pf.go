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
// (a size whose extra GPUs do not help is not worth asking for).
func bidTable(b *bidder, pl *pool) []option {
	u0 := b.utility(pl.t, 0, nil)
	opts := []option{{0, 0, u0}}
	top := u0
	for p := 1; p < len(b.cum); p++ {
		bundle, u := b.best(pl, p)
		if bundle == nil {
			break
		}
		if u > top*(1+1e-12) && u > 0 {
			opts = append(opts, option{p, b.cum[p], u})
			top = u
		}
	}
	return opts
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
	pre := make([][]welfare, nb+1)
	chP := make([][]int32, nb)
	pre[0] = make([]welfare, B+1)
	for i := range nb {
		pre[i+1], chP[i] = step(pre[i], tables[i], vals[i], B)
	}
	suf := make([][]welfare, nb+1)
	chS := make([][]int32, nb)
	suf[nb] = make([]welfare, B+1)
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
		bestV := pre[x][0].add(suf[x+1][B])
		for b := 1; b <= B; b++ {
			if v := pre[x][b].add(suf[x+1][B-b]); v.better(bestV) {
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
func step(prev []welfare, t []option, v []welfare, B int) ([]welfare, []int32) {
	out := make([]welfare, B+1)
	ch := make([]int32, B+1)
	for b := range out {
		out[b] = prev[b].add(v[0])
	}
	for o := 1; o < len(t); o++ {
		n := t[o].n
		vo := v[o]
		for b := n; b <= B; b++ {
			if c := prev[b-n].add(vo); c.better(out[b]) {
				out[b] = c
				ch[b] = int32(o)
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
