package place

import (
	"math/bits"

	"github.com/palsched/pal/workload"

	"github.com/palsched/pal/cluster"
)

func bits64(m uint64) int { return bits.TrailingZeros64(m) }

// freeSet is a placer's scratch copy of which GPUs are free this round.
// GPU ids are contiguous per node, so a node's GPUs are a range and "the
// first n free GPUs of a node" is a scan of that range.
type freeSet struct {
	c        *cluster.Cluster
	free     []bool
	nodeFree []int
	total    int
	maxPer   int
	// byFree files every node with k >= 1 free GPUs under k, so that
	// "the first node with exactly k free" and "nodes by free count" are
	// bitset reads instead of scans of every node (packed placement asks
	// them for every job).
	byFree nodeBuckets
	// gen changes whenever GPUs are freed (a reset or a give), so a placer
	// caching a list of free GPUs knows when taking alone no longer
	// explains the difference.
	gen int
	// Scratch of the migration-aware frames that place on this set.
	ms  moveScratch
	idx []int
}

func (f *freeSet) reset(c *cluster.Cluster) {
	f.gen++
	f.c = c
	n := c.Size()
	if cap(f.free) < n {
		f.free = make([]bool, n)
	}
	f.free = f.free[:n]
	if cap(f.nodeFree) < c.NumNodes() {
		f.nodeFree = make([]int, c.NumNodes())
	}
	f.nodeFree = f.nodeFree[:c.NumNodes()]
	for g := range f.free {
		f.free[g] = true
	}
	f.maxPer = c.MaxGPUsPerNode()
	f.byFree.reset(c.NumNodes(), f.maxPer)
	for i, nd := range c.Nodes {
		f.nodeFree[i] = len(nd.GPUs)
		f.byFree.add(len(nd.GPUs), i)
	}
	f.total = n
}

// setFree moves node from its bucket to the one for k free GPUs.
func (f *freeSet) setFree(node, k int) {
	f.byFree.del(f.nodeFree[node], node)
	f.nodeFree[node] = k
	f.byFree.add(k, node)
}

func (f *freeSet) take(gpus []int) {
	for _, g := range gpus {
		f.free[g] = false
		nd := f.c.GPUs[g].Node
		f.setFree(nd, f.nodeFree[nd]-1)
	}
	f.total -= len(gpus)
}

func (f *freeSet) give(gpus []int) {
	f.gen++
	for _, g := range gpus {
		f.free[g] = true
		nd := f.c.GPUs[g].Node
		f.setFree(nd, f.nodeFree[nd]+1)
	}
	f.total += len(gpus)
}

// room reports whether some node has n GPUs free, counting held (a
// job's own).
func (f *freeSet) room(n int, held []int) bool {
	for k := n; k <= f.maxPer; k++ {
		if f.byFree.next(k, 0) >= 0 {
			return true
		}
	}
	own := map[int]int{}
	for _, g := range held {
		own[f.c.GPUs[g].Node]++
	}
	for nd, k := range own {
		if f.nodeFree[nd]+k >= n {
			return true
		}
	}
	return false
}

// reserve implements moveSpace.
func (f *freeSet) reserve(order []*workload.Job, m *mover, st *moveScratch, out [][]int) {
	st.size(len(order))
	for i, j := range order {
		if st.mark(m, i, j) {
			out[i] = j.GPUsHeld
			f.take(j.GPUsHeld)
		}
	}
}

// lend, unlend and settle implement moveSpace: picks read the one free
// set.
func (f *freeSet) lend(j *workload.Job)   { f.give(j.GPUsHeld) }
func (f *freeSet) unlend(j *workload.Job) { f.take(j.GPUsHeld) }
func (f *freeSet) settle(*workload.Job)   {}

// freeCount implements moveSpace.
func (f *freeSet) freeCount() int { return f.total }

// takePick implements moveSpace: a pick only reads the set.
func (f *freeSet) takePick(gpus []int) { f.take(gpus) }

// discard implements moveSpace: a pick that was not taken leaves a
// placer's cached pool stale.
func (f *freeSet) discard() { f.gen++ }

// firstFree appends up to n free GPUs of node, lowest ids first.
func (f *freeSet) firstFree(dst []int, node, n int) []int {
	for _, g := range f.c.Nodes[node].GPUs {
		if n == 0 {
			break
		}
		if f.free[g] {
			dst = append(dst, g)
			n--
		}
	}
	return dst
}

// list appends every free GPU in id order.
func (f *freeSet) list(dst []int) []int {
	for g, ok := range f.free {
		if ok {
			dst = append(dst, g)
		}
	}
	return dst
}

// nodeBuckets is one bitset over nodes per free count k (1..max), with a
// summary bitset of its non-empty words, so the lowest node of a bucket is
// found in a couple of word reads even on thousands of nodes.
type nodeBuckets struct {
	nw, sw int
	bits   []uint64 // bucket k: bits[(k-1)*nw:][:nw]
	sum    []uint64 // bucket k: sum[(k-1)*sw:][:sw]
}

func (b *nodeBuckets) reset(nodes, max int) {
	b.nw = (nodes + 63) >> 6
	b.sw = (b.nw + 63) >> 6
	b.bits = resize(b.bits, max*b.nw)
	b.sum = resize(b.sum, max*b.sw)
}

func resize(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (b *nodeBuckets) add(k, node int) {
	if k <= 0 {
		return
	}
	w := (k-1)*b.nw + node>>6
	b.bits[w] |= 1 << (node & 63)
	b.sum[(k-1)*b.sw+node>>12] |= 1 << ((node >> 6) & 63)
}

func (b *nodeBuckets) del(k, node int) {
	if k <= 0 {
		return
	}
	w := (k-1)*b.nw + node>>6
	b.bits[w] &^= 1 << (node & 63)
	if b.bits[w] == 0 {
		b.sum[(k-1)*b.sw+node>>12] &^= 1 << ((node >> 6) & 63)
	}
}

// next is the lowest node >= from with exactly k free GPUs, or -1.
func (b *nodeBuckets) next(k, from int) int {
	if k <= 0 || (k-1)*b.nw >= len(b.bits) {
		return -1
	}
	bits := b.bits[(k-1)*b.nw : k*b.nw]
	sum := b.sum[(k-1)*b.sw : k*b.sw]
	w := from >> 6
	if w >= len(bits) {
		return -1
	}
	if m := bits[w] &^ (1<<(from&63) - 1); m != 0 {
		return w<<6 | bits64(m)
	}
	// Later words, through the summary.
	for sw := (w + 1) >> 6; sw < len(sum); sw++ {
		m := sum[sw]
		if sw == (w+1)>>6 {
			m &^= 1<<((w+1)&63) - 1
		}
		if m != 0 {
			ww := sw<<6 | bits64(m)
			return ww<<6 | bits64(bits[ww])
		}
	}
	return -1
}
