package tenancy

import (
	"math"
	"slices"
)

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
//
// Who waits. Dealing every VC its share of fast and slow cells is fair to
// its pace, not to its waits: a VC with a long queue loses more to a slow
// cell than one with a short queue. So a VC whose queue is longer, for the
// devices it holds in the chain, than the chain's VCs' together binds the
// fastest candidate, and leaves the slowest that keep a mean at or below
// the chain's to the VCs that wait less (SetQueues).

// SetBalance turns speed balancing of bindings on or off; it acts on
// requests with Fastest once speeds are set (SetSpeeds).
func (s *Scheduler) SetBalance(on bool) { s.balance = on }

// SetQueues tells each VC's queue, its guaranteed jobs waiting at the
// round's start (a VC not named has none), which balanced bindings read
// until the next call: the scheduler sees only the jobs it is asked to
// place, not those a VC's placer holds back.
func (s *Scheduler) SetQueues(q map[string]int) {
	for _, vc := range s.vcs {
		vc.queued = q[vc.Name]
	}
}

// balance is the state one binding is balanced against, in the measure
// of the request's pods (paced): the VC's bound devices' value sum and
// count in the chain, and the chain's mean. gangDue says the VC holds
// less than its share of the chain's gang cost (gangCost), so a request
// of small pods takes the cells gangs lose most on first. pressed says
// the VC's queue per device is longer than the chain's VCs' (who waits).
type balance struct {
	chain       *Chain
	class, pod  int
	sum, n, avg float64
	gangDue     bool
	pressed     bool
}

// balanceFor is the balance of vcc's VC in its chain for the chain's
// current class and pod size, or nil when the decision balances nothing.
func balanceFor(vcc *vcChain) *balance {
	c := vcc.chain
	k := c.class
	if k < 0 || len(c.tops) == 0 || c.tops[0].speed == nil {
		return nil
	}
	pod := max(c.pod, 1)
	b := &balance{chain: c, class: k, pod: pod, avg: c.pacedAvg(k, pod)}
	small := pod < c.nodeLeaves()
	var gang, vcLeaves float64
	for _, v := range vcc.pre {
		vcLeaves += float64(v.leaves)
		if v.phys != nil {
			b.sum += c.paced(v.phys, k, pod)
			b.n += float64(v.phys.leaves)
			if small {
				gang += c.gangCost(v.phys, k)
			}
		}
	}
	if small && c.leaves > 0 {
		b.gangDue = gang < c.gangTotal(k)*vcLeaves/float64(c.leaves)
	}
	b.pressed = c.pressed(vcc)
	return b
}

// pressed reports whether vcc's VC has more jobs waiting per device it is
// promised in the chain than the chain's VCs have together: q/n > Q/N,
// compared as q·N > Q·n, so no rounding decides it.
func (c *Chain) pressed(vcc *vcChain) bool {
	leaves := func(x *vcChain) int {
		n := 0
		for _, v := range x.pre {
			n += v.leaves
		}
		return n
	}
	var q, n, Q, N int
	for _, o := range c.vccs {
		l := leaves(o)
		Q += o.vc.queued
		N += l
		if o == vcc {
			q, n = o.vc.queued, l
		}
	}
	return q*N > Q*n
}

// mean is the VC's mean device value were it to bind p too.
func (b *balance) mean(p *PCell) float64 {
	return (b.sum + b.chain.paced(p, b.class, b.pod)) / (b.n + float64(p.leaves))
}

// net is what p costs a VC of small pods net of what it spares gangs:
// its value paced for the request's pods less its gang cost.
func (b *balance) net(p *PCell) float64 {
	return b.chain.paced(p, b.class, b.pod) - b.chain.gangCost(p, b.class)
}

// better orders two candidates equal in health and opportunistic load:
// for a VC due gang cost, the lowest net; else, for a pressed VC, the
// fastest; else the slowest that keeps the VC's mean at or below the
// chain's, or the fastest when none does.
func (b *balance) better(x, y *PCell) bool {
	const eps = 1e-9
	if b.gangDue {
		nx, ny := b.net(x), b.net(y)
		if nx < ny-eps || ny < nx-eps {
			return nx < ny
		}
	}
	mx, my := b.mean(x), b.mean(y)
	if b.pressed {
		return mx < my-eps
	}
	okx, oky := mx <= b.avg+eps, my <= b.avg+eps
	if okx != oky {
		return okx
	}
	if okx {
		return mx > my+eps
	}
	return mx < my-eps
}

// A gang runs at the pace of its slowest device. A VC whose pods are
// whole nodes gets, from a node with one slow device, the pace of that
// device on all of them, while a VC of one-device pods loses only that
// device (and, binding the fastest devices first, only once the node is
// full). Balancing on the mean device value alone therefore hands the
// nodes with a straggler to whoever binds last, typically the whole-node
// VC, at a cost far above its share. So values are paced: a cell is
// valued as the sum over its devices of the pace of a pod of the
// request's size there (each node's devices sorted, cut into pods of
// that size, every device at its pod's slowest), which for one-device
// pods is the plain sum; and the cells that whole-node pods lose most on
// go first to the VCs of smaller pods, up to their share.

// paced is p's value for pods of size pod in class k (see above).
func (c *Chain) paced(p *PCell, k, pod int) float64 {
	if pod <= 1 {
		return p.speed[k]
	}
	key := pacedKey{p, k, pod}
	if v, ok := c.pacedMemo[key]; ok {
		return v
	}
	var v float64
	if p.level > c.NodeLevel {
		for _, ch := range p.children {
			v += c.paced(ch, k, pod)
		}
	} else {
		v = pacedSum(pleavesOf(p, nil), k, pod, false)
	}
	if c.pacedMemo == nil {
		c.pacedMemo = map[pacedKey]float64{}
	}
	c.pacedMemo[key] = v
	return v
}

type pacedKey struct {
	p        *PCell
	class, n int
}

// pacedSum sorts the leaves' values, cuts them into pods of size pod and
// sums every device at its pod's slowest value; finiteOnly leaves out
// devices without a finite value (as the chain's mean does).
func pacedSum(ls []*PCell, k, pod int, finiteOnly bool) float64 {
	vals := make([]float64, 0, len(ls))
	for _, l := range ls {
		if v := l.speed[k]; !finiteOnly || !math.IsInf(v, 0) && !math.IsNaN(v) {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	sum := 0.0
	for i := 0; i < len(vals); i += pod {
		j := min(i+pod, len(vals))
		sum += vals[j-1] * float64(j-i)
	}
	return sum
}

// pacedAvg is the chain's mean paced device value for pods of size pod.
func (c *Chain) pacedAvg(k, pod int) float64 {
	if pod <= 1 {
		return c.avg[k]
	}
	key := pacedKey{nil, k, pod}
	if v, ok := c.pacedMemo[key]; ok {
		return v
	}
	tot, n := 0.0, 0
	for _, nd := range c.nodes {
		ls := pleavesOf(nd, nil)
		tot += pacedSum(ls, k, pod, true)
		for _, l := range ls {
			if v := l.speed[k]; !math.IsInf(v, 0) && !math.IsNaN(v) {
				n++
			}
		}
	}
	v := 0.0
	if n > 0 {
		v = tot / float64(n)
	}
	if c.pacedMemo == nil {
		c.pacedMemo = map[pacedKey]float64{}
	}
	c.pacedMemo[key] = v
	return v
}

// gangCost is what whole-node pods lose on p against one-device pods:
// its value paced for a node's worth of devices less its plain value.
func (c *Chain) gangCost(p *PCell, k int) float64 {
	if p.level > c.NodeLevel {
		g := 0.0
		for _, ch := range p.children {
			g += c.gangCost(ch, k)
		}
		return g
	}
	g := c.paced(p, k, c.nodeLeaves()) - p.speed[k]
	if math.IsNaN(g) || math.IsInf(g, 0) {
		return 0
	}
	return g
}

// gangTotal is the chain's gang cost over all its cells.
func (c *Chain) gangTotal(k int) float64 {
	key := pacedKey{nil, k, -1}
	if v, ok := c.pacedMemo[key]; ok {
		return v
	}
	v := 0.0
	for _, t := range c.tops {
		v += c.gangCost(t, k)
	}
	if c.pacedMemo == nil {
		c.pacedMemo = map[pacedKey]float64{}
	}
	c.pacedMemo[key] = v
	return v
}

// nodeLeaves is the number of devices in one of the chain's nodes.
func (c *Chain) nodeLeaves() int { return c.types[c.NodeLevel].leaves }

// setAvg computes the chain's mean device value per class, over the
// devices with a finite value (an absent device may be given +Inf so
// that it is never the fastest; it has no part in a share).
func (c *Chain) setAvg(classes int) {
	c.pacedMemo = nil
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
