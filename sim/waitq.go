package sim

// waitq is the ordered set of waiting jobs' items (see item), built for
// how the round loop uses it: the jobs a round launches are taken from
// the front, jobs that arrive or are preempted are filed anywhere, often
// behind everything. It is a sorted list cut into blocks of at most
// qBlock items, each block kept in a fixed array with free room at both
// ends, and a sorted index of the blocks holding each block's last item.
//
// Against a general B-tree (github.com/tidwall/btree, which it replaced)
// it saves what profiles showed as a third of an LAS run on a long queue:
// the comparison is inlined rather than called through a function value,
// taking the smallest item is O(1) (the front of the first block moves),
// and filing behind the last item skips the search. A block search is a
// binary search over the index, which holds no pointer into the blocks.
type waitq struct {
	bs []qblock
	// back is the array bs lies in, from its start: taking the first
	// block out moves bs's start forward, and addBlock moves the blocks
	// back to the front rather than let append copy them to a fresh
	// array (under LAS the first block empties every few rounds, and
	// those copies were a quarter of a run's allocation).
	back []qblock
	n    int
	pool []*[qBlock]item
	// Where the last Set (or SetRun) put its item: block and index.
	// Jobs are often filed in order, each behind the one before (a
	// round's stopped jobs, see SetRun; arrivals). Only a guess: Set
	// checks it against the items before use.
	hb int
	hp int32
}

// A round under LAS files its stopped jobs into the middle of a long
// queue (behind the group of equal service they reach) and takes its
// launched ones off the front, so blocks fill, split and empty all the
// time; what that churn costs goes per block (splits, re-centring,
// merges, the index's moves), what shifting items costs per item. On
// the 20,000-job Synergy trace on 16x4 (3,760 jobs waiting on average)
// the queue's own work fell from 218 million instructions with blocks
// of 128 to 180 million with 256, 162 million with 512 and 158 million
// with 1,024; under FIFO, SRTF and Tiresias-LAS it stayed within a
// million either way (26, 28 and 37 million).
const (
	qBlock = 512            // a block's capacity
	qSplit = qBlock * 3 / 4 // a block this full is split before an insert
	qMerge = qBlock / 8     // a block this small is merged with a neighbour...
	qJoin  = qBlock / 2     // ...when the two hold at most this many
)

// qblock holds the items a[lo:hi], sorted, never empty; last is a[hi-1].
type qblock struct {
	last   item
	a      *[qBlock]item
	lo, hi int32
}

func (b *qblock) items() []item { return b.a[b.lo:b.hi] }

// Len is the number of items.
func (q *waitq) Len() int { return q.n }

// lowerBound is the index of the first item in s not less than x.
func lowerBound(s []item, x item) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if itemLess(s[m], x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// block is the index of the first block whose last item is not less
// than x, or len(q.bs) if there is none.
func (q *waitq) block(x item) int {
	lo, hi := 0, len(q.bs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if itemLess(q.bs[m].last, x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// target is the block x goes to in a queue with at least one block: the
// last when x is behind everything, else the block of the last item
// filed when x still belongs there (a round files its jobs in order, so
// most often it does), else the first block whose last item is not less
// than x.
func (q *waitq) target(x item) int {
	nb := len(q.bs)
	b := nb - 1
	if itemLess(q.bs[b].last, x) {
		return b
	}
	if h := q.hb; h < nb && !itemLess(q.bs[h].last, x) && (h == 0 || itemLess(q.bs[h-1].last, x)) {
		return h
	}
	return q.block(x)
}

// place is x's position in block b: the first item not less than x, or
// the block's end. Most often x goes right behind the last one filed, so
// the search starts there when it can.
func (q *waitq) place(b int, x item) int32 {
	bl := &q.bs[b]
	if b == q.hb && q.hp >= bl.lo && q.hp < bl.hi && itemLess(bl.a[q.hp], x) {
		p := q.hp + 1
		if p < bl.hi && itemLess(bl.a[p], x) {
			p += int32(lowerBound(bl.a[p:bl.hi], x))
		}
		return p
	}
	return bl.lo + int32(lowerBound(bl.items(), x))
}

func (q *waitq) newArray() *[qBlock]item {
	if n := len(q.pool); n > 0 {
		a := q.pool[n-1]
		q.pool = q.pool[:n-1]
		return a
	}
	return new([qBlock]item)
}

// Set adds x, which must not be in the set.
func (q *waitq) Set(x item) {
	q.n++
	nb := len(q.bs)
	if nb == 0 {
		a := q.newArray()
		a[qBlock/2] = x
		q.addBlock()
		q.bs = append(q.bs, qblock{last: x, a: a, lo: qBlock / 2, hi: qBlock/2 + 1})
		return
	}
	b := q.target(x)
	if q.bs[b].hi-q.bs[b].lo >= qSplit {
		if b == nb-1 && itemLess(q.bs[b].last, x) {
			// Behind everything: start a new last block rather than
			// split, so that a queue filled from the back keeps full
			// blocks.
			a := q.newArray()
			a[qBlock/4] = x
			q.addBlock()
			q.bs = append(q.bs, qblock{last: x, a: a, lo: qBlock / 4, hi: qBlock/4 + 1})
			q.hb, q.hp = nb, qBlock/4
			return
		}
		q.split(b)
		if itemLess(q.bs[b].last, x) {
			b++
		}
	}
	bl := &q.bs[b]
	p := q.place(b, x)
	// Shift the shorter side; when that side has no room, re-centre the
	// block first, which leaves room at both ends.
	left := p-bl.lo <= bl.hi-p
	if left && bl.lo == 0 || !left && bl.hi == qBlock {
		p += bl.centre()
	}
	if left {
		copy(bl.a[bl.lo-1:p-1], bl.a[bl.lo:p])
		bl.lo--
		p--
	} else {
		copy(bl.a[p+1:bl.hi+1], bl.a[p:bl.hi])
		bl.hi++
	}
	bl.a[p] = x
	bl.last = bl.a[bl.hi-1]
	q.hb, q.hp = b, p
}

// SetRun adds xs, which must be ascending and none of them in the set:
// what Set does for each in turn, but items that go to the same place
// (none of the set's items between them) move the block's items once.
// A round files its preempted jobs so: in order, and under LAS all of a
// round's go behind the same group of equal service, where one at a time
// shifted the block once per job.
func (q *waitq) SetRun(xs []item) {
	for len(xs) > 0 {
		x := xs[0]
		nb := len(q.bs)
		if nb == 0 {
			q.Set(x)
			xs = xs[1:]
			continue
		}
		b := q.target(x)
		bl := &q.bs[b]
		n := bl.hi - bl.lo
		// At most as many as keep the block below the split size and fit
		// one side of it once centred; a full block is Set's to split.
		most := min(int32(len(xs)), qSplit-n, (qBlock-n)/2)
		if most <= 1 {
			q.Set(x)
			xs = xs[1:]
			continue
		}
		p := q.place(b, x)
		// The items that go at p: all of them when p is the block's end
		// (then b is the last block and x is behind everything).
		m := int32(1)
		if p == bl.hi || itemLess(xs[most-1], bl.a[p]) {
			// xs is ascending: its last candidate going before the
			// item at p, so do all the others (most often all of
			// a round's stopped jobs go to one place).
			m = most
		} else {
			for m < most && itemLess(xs[m], bl.a[p]) {
				m++
			}
		}
		left := p-bl.lo <= bl.hi-p
		if left && bl.lo < m || !left && bl.hi+m > qBlock {
			p += bl.centre()
		}
		if left {
			copy(bl.a[bl.lo-m:p-m], bl.a[bl.lo:p])
			bl.lo -= m
			p -= m
		} else {
			copy(bl.a[p+m:bl.hi+m], bl.a[p:bl.hi])
			bl.hi += m
		}
		copy(bl.a[p:p+m], xs[:m])
		bl.last = bl.a[bl.hi-1]
		q.n += int(m)
		q.hb, q.hp = b, p+m-1
		xs = xs[m:]
	}
}

// centre moves the block's items to the middle of its array and returns
// how far they moved.
func (b *qblock) centre() int32 {
	n := b.hi - b.lo
	lo := (qBlock - n) / 2
	copy(b.a[lo:lo+n], b.a[b.lo:b.hi])
	d := lo - b.lo
	b.lo, b.hi = lo, lo+n
	return d
}

// addBlock makes room for one more block at the end of bs, so that the
// append after it writes into back: when bs ends at back's end, its
// blocks move to back's front if that frees at least a quarter of back,
// else into a fresh array twice as long (at least 8).
func (q *waitq) addBlock() {
	n := len(q.bs)
	if n < cap(q.bs) {
		return
	}
	if 4*n > 3*len(q.back) || len(q.back) == 0 {
		q.back = make([]qblock, max(2*n, 8))
		copy(q.back, q.bs)
	} else {
		copy(q.back, q.bs) // copy is memmove: overlap is safe
		clear(q.back[n:])  // no stale array pointers past the blocks
	}
	q.bs = q.back[:n]
}

// split moves the upper half of block b into a new block after it.
func (q *waitq) split(b int) {
	bl := &q.bs[b]
	n := bl.hi - bl.lo
	mid := bl.lo + n/2
	a := q.newArray()
	m := bl.hi - mid
	lo := (qBlock - m) / 2
	copy(a[lo:lo+m], bl.a[mid:bl.hi])
	bl.hi = mid
	bl.last = bl.a[mid-1]
	bl.centre()
	q.addBlock()
	q.bs = append(q.bs, qblock{})
	copy(q.bs[b+2:], q.bs[b+1:])
	q.bs[b+1] = qblock{last: a[lo+m-1], a: a, lo: lo, hi: lo + m}
}

// Delete removes x, which must be in the set.
func (q *waitq) Delete(x item) {
	b := 0
	var p int32
	if len(q.bs) > 0 && q.bs[0].a[q.bs[0].lo] == x {
		// The smallest, the round loop's common case: a block left with
		// qMerge items or more keeps its last item; only its start moves.
		if bl := &q.bs[0]; bl.hi-bl.lo > qMerge {
			bl.lo++
			q.n--
			return
		}
		p = q.bs[0].lo
	} else {
		b = q.block(x)
		if b == len(q.bs) {
			panic("sim: waitq.Delete of an item not in the set")
		}
		bl := &q.bs[b]
		p = bl.lo + int32(lowerBound(bl.items(), x))
		if p == bl.hi || bl.a[p] != x {
			panic("sim: waitq.Delete of an item not in the set")
		}
	}
	bl := &q.bs[b]
	q.n--
	if p-bl.lo < bl.hi-1-p {
		if p > bl.lo {
			copy(bl.a[bl.lo+1:p+1], bl.a[bl.lo:p])
		}
		bl.lo++
	} else {
		copy(bl.a[p:bl.hi-1], bl.a[p+1:bl.hi])
		bl.hi--
	}
	n := bl.hi - bl.lo
	switch {
	case n == 0:
		q.remove(b)
	case n < qMerge:
		bl.last = bl.a[bl.hi-1]
		q.merge(b)
	default:
		bl.last = bl.a[bl.hi-1]
	}
}

// DeleteRun removes xs, which must be ascending and all in the set: what
// Delete does for each in turn, but a stretch of xs that is the first
// block's first items (a round's launched jobs, most often) moves the
// block's start once.
func (q *waitq) DeleteRun(xs []item) {
	for len(xs) > 0 {
		bl := &q.bs[0]
		a := bl.items()
		// xs's k-th item is never below the set's k-th, a's, so its
		// first m items are a's first m exactly when the m-th ones are
		// equal: most rounds need that one comparison.
		m := min(len(xs), len(a))
		n := m
		if a[m-1] != xs[m-1] {
			n = 0
			for n < m && a[n] == xs[n] {
				n++
			}
		}
		if n == 0 {
			q.Delete(xs[0])
			xs = xs[1:]
			continue
		}
		xs = xs[n:]
		q.n -= n
		switch left := len(a) - n; {
		case left == 0:
			q.remove(0)
		case left < qMerge:
			bl.lo += int32(n)
			q.merge(0)
		default:
			bl.lo += int32(n) // its last item stays
		}
	}
}

// remove drops block b, which is empty.
func (q *waitq) remove(b int) {
	q.pool = append(q.pool, q.bs[b].a)
	if b == 0 {
		q.bs[0] = qblock{}
		q.bs = q.bs[1:]
		return
	}
	copy(q.bs[b:], q.bs[b+1:])
	q.bs[len(q.bs)-1] = qblock{}
	q.bs = q.bs[:len(q.bs)-1]
}

// merge joins the small block b with its next neighbour, else its
// previous one, when the two hold at most qJoin items, so that blocks
// stay mostly full (memory follows the items). The items move into the
// later block, so that a queue drained from the front drops its first
// block.
func (q *waitq) merge(b int) {
	if b+1 < len(q.bs) && q.join(b) {
		return
	}
	if b > 0 {
		q.join(b - 1)
	}
}

// join moves block f's items into block f+1 and drops f, if the two hold
// at most qJoin items.
func (q *waitq) join(f int) bool {
	fb, sb := &q.bs[f], &q.bs[f+1]
	nf, ns := fb.hi-fb.lo, sb.hi-sb.lo
	if nf+ns > qJoin {
		return false
	}
	lo := (qBlock - nf - ns) / 2
	copy(sb.a[lo+nf:lo+nf+ns], sb.a[sb.lo:sb.hi]) // copy is memmove: overlap is safe
	copy(sb.a[lo:lo+nf], fb.a[fb.lo:fb.hi])
	sb.lo, sb.hi = lo, lo+nf+ns
	fb.lo, fb.hi = 0, 0
	q.remove(f)
	return true
}

// Min is the smallest item; ok is false when the set is empty.
func (q *waitq) Min() (it item, ok bool) {
	if q.n == 0 {
		return item{}, false
	}
	return q.bs[0].a[q.bs[0].lo], true
}

// Scan calls f on the items in order until it returns false.
func (q *waitq) Scan(f func(item) bool) {
	for i := range q.bs {
		for _, it := range q.bs[i].items() {
			if !f(it) {
				return
			}
		}
	}
}

// qcursor walks a waitq in order; the set must not change meanwhile.
type qcursor struct {
	q    *waitq
	b, i int32
}

// first is a cursor at the smallest item.
func (q *waitq) first() qcursor {
	c := qcursor{q: q}
	if len(q.bs) > 0 {
		c.i = q.bs[0].lo
	}
	return c
}

// ok reports whether the cursor is at an item.
func (c *qcursor) ok() bool { return int(c.b) < len(c.q.bs) }

func (c *qcursor) item() item { return c.q.bs[c.b].a[c.i] }

func (c *qcursor) next() {
	c.i++
	if c.i == c.q.bs[c.b].hi {
		c.b++
		if int(c.b) < len(c.q.bs) {
			c.i = c.q.bs[c.b].lo
		}
	}
}
