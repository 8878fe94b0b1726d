package tenancy

// The buddy system of one chain. A free list per level holds the free
// physical cells at the highest level they are free at: buddies that are
// all free are merged back into their parent. "Free" means bound to no VC
// cell; an opportunistic job may still be running on a free cell, which is
// why allocation prefers free cells with the fewest opportunistic devices.
//
// List order: a split appends the parent's children in order, a released
// (or merged) cell is appended, and a removal keeps the order of the rest.
// HiveD instead moves the last element into the hole; keeping the order
// makes allocation take the oldest free cell first, which is the order
// the hand-computed scenarios H1–H5 of TESTDATA.md assume.

func (c *Chain) pushFree(p *PCell) {
	p.inFree = true
	p.freeIdx = len(c.free[p.level])
	c.free[p.level] = append(c.free[p.level], p)
}

func (c *Chain) removeFree(p *PCell) {
	lst := c.free[p.level]
	i := p.freeIdx
	copy(lst[i:], lst[i+1:])
	lst[len(lst)-1] = nil
	lst = lst[:len(lst)-1]
	for j := i; j < len(lst); j++ {
		lst[j].freeIdx = j
	}
	c.free[p.level] = lst
	p.inFree = false
	p.freeIdx = -1
}

// available reports whether p can be taken out of the buddy system: p is
// free, or it lies inside a free cell that can be split down to it.
func (c *Chain) available(p *PCell) bool {
	for x := p; !x.inFree; x = x.parent {
		if x.parent == nil || x.parent.split {
			return false
		}
	}
	return true
}

// takeSpecific removes p from the buddy system, splitting the free cell
// that holds it: every split pushes the parent's children onto the lower
// list and takes the one on the path back off.
func (c *Chain) takeSpecific(p *PCell) {
	for x := p; ; x = x.parent {
		par := x.parent
		stop := par == nil || par.split
		if !stop {
			for _, ch := range par.children {
				c.pushFree(ch)
			}
			par.split = true
		}
		c.removeFree(x)
		if stop {
			return
		}
	}
}

// releaseFree returns p to the buddy system, merging it with its buddies
// for as long as they are all free.
func (c *Chain) releaseFree(p *PCell) {
	for {
		par := p.parent
		if par == nil {
			break
		}
		all := true
		for _, b := range par.children {
			if b != p && !b.inFree {
				all = false
				break
			}
		}
		if !all {
			break
		}
		for _, b := range par.children {
			if b != p {
				c.removeFree(b)
			}
		}
		par.split = false
		p = par
	}
	c.pushFree(p)
}

// allocMode says which free cells an allocation may take.
type allocMode int

const (
	// healthyAlloc takes cells a VC can run on: single-node cells must be
	// healthy, multi-node cells must not be entirely bad.
	healthyAlloc allocMode = iota
	// doomAlloc takes cells with bad hardware, to bind to a VC cell that
	// cannot be served healthily anyway (HiveD's doomed-bad cells).
	doomAlloc
)

func (c *Chain) usable(p *PCell, mode allocMode) bool {
	if mode == doomAlloc {
		return p.bad > 0
	}
	if p.level <= c.NodeLevel {
		return p.bad == 0
	}
	return p.bad < p.leaves
}

// better orders usable candidates: healthy before partly bad, then fewest
// devices in use by opportunistic jobs (fewer preemptions), then, when the
// decision balances speeds, the VC's balance (balance.better), else when
// it prefers a speed class, the fastest devices, then position.
func better(a, b *PCell) bool {
	if (a.bad == 0) != (b.bad == 0) {
		return a.bad == 0
	}
	if a.opp != b.opp {
		return a.opp < b.opp
	}
	if bal := a.chain.bal; bal != nil {
		return bal.better(a, b)
	}
	if k := a.chain.class; k >= 0 && a.speed != nil {
		return a.speed[k] < b.speed[k]
	}
	return false
}

// gives reports whether taking p, or splitting it, can yield a level-k
// cell usable in mode: p itself at level k, else p healthy, else some
// child that gives one (a node with a quarantined device still holds
// healthy smaller cells).
func (c *Chain) gives(p *PCell, mode allocMode, k int) bool {
	if p.level <= k || mode == doomAlloc || p.bad == 0 {
		return c.usable(p, mode)
	}
	for _, ch := range p.children {
		if c.gives(ch, mode, k) {
			return true
		}
	}
	return false
}

func (c *Chain) pick(list []*PCell, mode allocMode, bound bool, k int) *PCell {
	var best *PCell
	for _, p := range list {
		if (bound && p.vcell != nil) || !c.gives(p, mode, k) {
			continue
		}
		if best == nil || better(p, best) {
			best = p
			if best.bad == 0 && best.opp == 0 && mode == healthyAlloc && c.class < 0 {
				break
			}
		}
	}
	return best
}

// buddyAlloc takes a free level-k cell for a VC cell, splitting a larger
// free cell when level k has none that is usable. A split below a level
// that still has free (but unusable, bad) cells is HiveD's "safe relaxed"
// split: it is done only when the full safety invariant still holds
// afterwards. It returns nil when nothing can be taken.
func (c *Chain) buddyAlloc(k int, mode allocMode) *PCell {
	if c.balVC != nil && mode == healthyAlloc {
		c.bal = balanceFor(c.balVC)
		defer func() { c.bal = nil }()
	}
	for j := k; j <= c.Top(); j++ {
		cand := c.pick(c.free[j], mode, false, k)
		if cand == nil {
			continue
		}
		if j > k && !c.safeSplit(k, j) {
			return nil
		}
		t := cand
		for t.level > k {
			t = c.pick(t.children, mode, false, k)
		}
		c.takeSpecific(t)
		return t
	}
	return nil
}

// splittable computes HiveD's safety margins: with num_free[l] free cells
// and vc_unused[l] unbound VC cells at level l,
//
//	splittable[top] = num_free[top] − vc_unused[top]
//	splittable[l]   = splittable[l+1]·children(l+1) + num_free[l] − vc_unused[l]
//
// and sharing safety holds iff every entry is ≥ 0 (the recursive form of HiveD's safety condition).
func (c *Chain) splittable() []int {
	return c.splittableOf(func(l int) int { return len(c.free[l]) }, func(l int) int { return c.vcUnused[l] })
}

func (c *Chain) splittableOf(free, unused func(l int) int) []int {
	top := c.Top()
	sp := make([]int, top+1)
	for l := top; l >= 1; l-- {
		v := free(l) - unused(l)
		if l < top {
			v += sp[l+1] * c.childNum(l+1)
		}
		sp[l] = v
	}
	return sp
}

// safeSplit reports whether binding a VC cell at level k by splitting a
// free level-j cell keeps every splittable[l] ≥ 0.
func (c *Chain) safeSplit(k, j int) bool {
	var buf [16]int
	var nf []int
	if len(c.free) <= len(buf) {
		nf = buf[:len(c.free)]
	} else {
		nf = make([]int, len(c.free))
	}
	for l := range c.free {
		nf[l] = len(c.free[l])
	}
	nf[j]--
	for i := j - 1; i >= k; i-- {
		nf[i] += c.childNum(i+1) - 1
	}
	top := c.Top()
	run := 0
	for l := top; l >= 1; l-- {
		u := c.vcUnused[l]
		if l == k {
			u--
		}
		v := nf[l] - u
		if l < top {
			v += run * c.childNum(l+1)
		}
		if v < 0 {
			return false
		}
		run = v
	}
	return true
}

// obtainable is HiveD's totalLeftCellNum: level-l cells that buddy
// allocation can hand out, from the free lists at l and above.
func (c *Chain) obtainable(l int) int {
	n := 0
	for x := l; x <= c.Top(); x++ {
		n += len(c.free[x]) * c.within(x, l)
	}
	return n
}

// healthyObtainable counts the level-l cells without bad hardware that
// the free lists can hand out.
func (c *Chain) healthyObtainable(l int) int {
	n := 0
	var count func(p *PCell) int
	count = func(p *PCell) int {
		if p.bad == 0 {
			return c.within(p.level, l)
		}
		if p.level == l {
			return 0
		}
		s := 0
		for _, ch := range p.children {
			s += count(ch)
		}
		return s
	}
	for x := l; x <= c.Top(); x++ {
		if c.bad == 0 {
			n += len(c.free[x]) * c.within(x, l)
			continue
		}
		for _, p := range c.free[x] {
			n += count(p)
		}
	}
	return n
}
