package tenancy

import "math"

// Speed balancing (hived-speed). HiveD binds a VC cell to whichever free
// physical cell buddy allocation offers; with GPUs of one type that differ
// in speed, a VC can then be dealt slow cells again and again while its
// private cluster (a fair draw of the cluster's cells) would not have
// been. With balancing on, binding a preassigned cell for a request of a
// speed class picks, among candidates equally good for health and
// opportunistic load, one that keeps the mean value of the VC's bound
// devices in the chain (lower is faster) at or below the chain's mean:
// the slowest such candidate, which leaves the fast cells to VCs that
// need them to reach their share; when none does, the fastest. It only
// chooses among the cells buddy allocation may hand out, so the safety
// invariant and every VC's cell guarantee are what plain HiveD keeps.

// SetBalance turns speed balancing of bindings on or off; it acts on
// requests with Fastest once speeds are set (SetSpeeds).
func (s *Scheduler) SetBalance(on bool) { s.balance = on }

// balance is the state one binding is balanced against: the VC's bound
// devices' value sum and count in the chain, and the chain's mean.
type balance struct {
	class       int
	sum, n, avg float64
}

// balanceFor is the balance of vcc's VC in its chain for the chain's
// current class, or nil when the decision balances nothing.
func balanceFor(vcc *vcChain) *balance {
	c := vcc.chain
	k := c.class
	if k < 0 || len(c.tops) == 0 || c.tops[0].speed == nil {
		return nil
	}
	b := &balance{class: k, avg: c.avg[k]}
	for _, v := range vcc.pre {
		if v.phys != nil {
			b.sum += v.phys.speed[k]
			b.n += float64(v.phys.leaves)
		}
	}
	return b
}

// mean is the VC's mean device value were it to bind p too.
func (b *balance) mean(p *PCell) float64 {
	return (b.sum + p.speed[b.class]) / (b.n + float64(p.leaves))
}

// better orders two candidates equal in health and opportunistic load.
func (b *balance) better(x, y *PCell) bool {
	mx, my := b.mean(x), b.mean(y)
	const eps = 1e-9
	okx, oky := mx <= b.avg+eps, my <= b.avg+eps
	if okx != oky {
		return okx
	}
	if okx {
		return mx > my+eps
	}
	return mx < my-eps
}

// setAvg computes the chain's mean device value per class, over the
// devices with a finite value (an absent device may be given +Inf so
// that it is never the fastest; it has no part in a share).
func (c *Chain) setAvg(classes int) {
	c.avg = make([]float64, classes)
	for k := range c.avg {
		tot, n := 0.0, 0
		for _, t := range c.tops {
			for _, l := range pleavesOf(t, nil) {
				if v := l.speed[k]; !math.IsInf(v, 0) && !math.IsNaN(v) {
					tot += v
					n++
				}
			}
		}
		if n > 0 {
			c.avg[k] = tot / float64(n)
		}
	}
}
