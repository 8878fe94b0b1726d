package place

import (
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// scoreIndex answers PM-First and PAL picks without scanning every free
// GPU. The reference picks (reference.go) sort all free GPUs per job, so a
// round costs O(jobs x GPUs log GPUs): a fifth of a second at 4,096 GPUs
// and a quarter of a minute at 27,648. The index exploits three facts:
//
//   - scores take few distinct values per class (K-Means bins), so a GPU
//     is a bin index and every comparison is an integer one;
//   - GPU ids are contiguous per node and ascending with the node id, so
//     "ties by GPU id" is "ties by node id, then by id inside the node";
//   - the artifact's PM-First tie-break inside a bin depends only on the
//     node's count of free GPUs in that bin, |count - n|, so nodes can sit
//     in buckets by count and a pick visits buckets in |count - n| order,
//     merging the two buckets n-d and n+d by node id (bitsets over the
//     bin's nodes make that merge a word-wise OR).
//
// PAL's within-node entries need, per node, the n-th best free score and
// how many free GPUs score no worse; a min-tree per (class, n) over nodes
// keeps the best node on top (see key). Trees are repaired lazily, only
// at the nodes that reach the top when a job of that class and size asks
// (see sync); most (class, n) pairs are never asked in a given round, and
// PAL's usual within pick in the lowest free bin is read off the buckets
// instead (see withinTop).
//
// The index depends only on the cluster's shape and the score table, both
// static for a simulation, so it is built once and reused; each round
// restores the all-free state by copying pristine slabs, which costs a few
// memcpy's instead of a rebuild.
type scoreIndex struct {
	// Inputs the index was built from, compared by identity: a policy.Scores
	// is never mutated once handed to a placer (it is the static profile).
	cl       *cluster.Cluster
	sc       *policy.Scores
	sfData   [variability.NumClasses]*float64
	withinOn bool
	ok       bool // false: the inputs cannot be indexed, use the reference

	size, nodes int
	maxPer      int     // GPUs of the largest node: PAL's "fits in one node"
	nodeStart   []int32 // GPUs of node i are nodeStart[i] .. nodeStart[i+1]-1
	gpuNode     []int32
	nodeBits    uint // bits of a node id inside a within key

	cls [variability.NumClasses]classIndex

	// Mutable state. The count structures live in slabs so that reset is
	// a copy; within trees are restored only if a pick touched them.
	free             []bool
	freeInit         []bool
	total            int
	i32, i32Init     []int32
	words, wordsInit []uint64
	nodeFree         []int32 // view into i32
	// srt (PAL only) holds, per node and class, the bins of the node's
	// free GPUs in ascending order: class c of node i is
	// srt[NumClasses*nodeStart[i]+c*size(i):][:nodeFree[i]], so a node's
	// within key is a read, not a sort. All classes of a node sit
	// together: a take touches one or two cache lines for them.
	srt   []int32       // view into i32
	dirty []*withinTree // trees repaired this round
	mt    minTree       // the layout of every within tree

	ids   []int   // 0..size-1: answers of consecutive GPUs are windows of it
	buf   []int   // the current pick, in pick order until sorted
	ks    []int32 // bucket counts merged by one walk
	idx   []int   // the round's job visiting order
	byCls [variability.NumClasses + 1]int
	// live[c]: a job of class c is still to be picked this round. Only
	// live classes' structures are kept up to date by take (see frame).
	live [variability.NumClasses]bool
}

// binInfo is the static layout of one bin. Its nodes are
// binNodes[off:off+n] (ascending); classIndex.pos indexes that list. Bucket
// k (1..maxCnt) of the bin, the nodes with exactly k free GPUs in it, is
// the bitset words[bitOff+(k-1)*nw:][:nw] over those positions, and
// pop[popOff+k] counts its nodes.
type binInfo struct {
	off, n, bitOff, nw, popOff, maxCnt int32
}

// classIndex is one class's view: bins, the static node lists per bin and
// views into the mutable slabs.
type classIndex struct {
	vals     []float64 // bin values, ascending and distinct
	bins     []binInfo
	binNodes []int32
	// only[off+pos] is the node's one GPU in the bin when it has exactly
	// one there, else -1. A node in a bucket then holds it free, so a
	// pick takes it without scanning the node (with a bin per outlier,
	// most (bin, node) pairs are single GPUs).
	only []int32

	gbin []int32 // bin of each GPU (what walks compare)
	// pos[g] is the position of GPU g's node in its bin's node list (its
	// bit in the bin's buckets). A column per class rather than a record
	// per GPU: a trace of one class keeps one dense column in cache.
	pos []int32
	cnt []int32 // free GPUs of each (bin, node): bins[b].off+pos
	pop []int32
	// hint[popOff+k] is a word before which bucket k of the bin has no
	// node: a walk starts there instead of at the bin's first word. A
	// round fills nodes in id order, so without it every pick re-reads
	// the emptied words at the front of a big bin.
	hint    []int32
	binFree []int32 // free GPUs per bin
	// lo[0] is a bin before which every bin is empty. GPUs are only taken
	// within a round, so it only moves up until reset; it spares each
	// pick the walk over drained bins (class A has a bin per outlier,
	// hundreds on a big cluster).
	lo []int32

	// trees[n] (2 <= n <= maxPer, PAL only) orders nodes for jobs of n
	// GPUs; see key.
	trees []withinTree
	// lvBin[i] is floorBin of the class's i-th L×V entry (PAL only): the
	// score table, and so its L×V order, never changes under an index.
	lvBin []int
	// acrossFrom[b] (withinFrom[b]) is the first across (within) entry of
	// bin >= b, len(lvBin) if none, for b in 0..len(bins); withinBefore[i]
	// is the largest bin of a within entry before entry i, -1 if none. An
	// entry succeeds when its bin reaches a threshold (see PAL.pick), so
	// these find the winning entry without walking the order.
	acrossFrom, withinFrom, withinBefore []int
}

// withinTree is a min-tree (see minTree) over nodes of within keys: leaf
// i is node i.
type withinTree struct {
	t, init []int64
	c, n    int
	dirty   bool // t differs from init (listed in scoreIndex.dirty)
}

// noKey marks a node with fewer than n free GPUs in a within tree.
const noKey = math.MaxInt64

// prepare returns the index for env, building it when the cluster or the
// score table changed, or nil when the inputs cannot be indexed (the caller
// then uses the reference implementation). within asks for PAL's trees.
func (x *scoreIndex) prepare(env *policy.Env, within bool) *scoreIndex {
	if env.Scores == nil || env.Cluster == nil {
		return nil
	}
	same := x.cl == env.Cluster && x.sc == env.Scores && (x.withinOn || !within || !x.ok)
	for c := range x.sfData {
		same = same && len(env.Scores.SF[c]) == x.size && x.sfData[c] == firstOf(env.Scores.SF[c])
	}
	if !same {
		x.build(env.Cluster, env.Scores, within)
	}
	if !x.ok {
		return nil
	}
	return x
}

func firstOf(s []float64) *float64 {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// build indexes a cluster and score table. It declines (ok = false) when
// an assumption the picks rely on does not hold.
func (x *scoreIndex) build(cl *cluster.Cluster, sc *policy.Scores, within bool) {
	*x = scoreIndex{cl: cl, sc: sc, withinOn: within, size: cl.Size(), nodes: cl.NumNodes(),
		buf: x.buf[:0], ks: x.ks[:0], idx: x.idx[:0]}
	for c := range x.sfData {
		x.sfData[c] = firstOf(sc.SF[c])
	}
	if x.size == 0 || x.size > math.MaxInt32/2 {
		return
	}
	// GPU ids must be contiguous per node and ascending with the node id:
	// that is what turns "ties by GPU id" into "by node, then inside it".
	x.nodeStart = make([]int32, x.nodes+1)
	x.gpuNode = make([]int32, x.size)
	g := 0
	for i, nd := range cl.Nodes {
		x.nodeStart[i] = int32(g)
		if len(nd.GPUs) == 0 {
			return
		}
		for _, id := range nd.GPUs {
			if id != g || cl.GPUs[g].Node != i {
				return
			}
			x.gpuNode[g] = int32(i)
			g++
		}
		x.maxPer = max(x.maxPer, len(nd.GPUs))
	}
	if g != x.size {
		return
	}
	x.nodeStart[x.nodes] = int32(g)
	x.nodeBits = uint(bits.Len(uint(x.nodes)))
	for c := range x.cls {
		sf := sc.SF[c]
		if len(sf) != x.size || slices.ContainsFunc(sf, math.IsNaN) {
			return
		}
	}
	if within && !x.withinKeysFit() {
		return
	}
	var n32, nWords int
	for c := range x.cls {
		n32, nWords = x.cls[c].shape(sc.SF[c], x, c, n32, nWords)
	}
	nSrt := 0
	if within {
		nSrt = len(x.cls) * x.size
	}
	x.i32 = make([]int32, n32+x.nodes+nSrt)
	x.words = make([]uint64, nWords)
	o := 0
	for c := range x.cls {
		o = x.cls[c].carve(x.i32, o)
	}
	x.nodeFree = x.i32[o : o+x.nodes : o+x.nodes]
	x.ids = make([]int, x.size)
	for g := range x.ids {
		x.ids[g] = g
	}
	x.srt = x.i32[o+x.nodes:]
	// The all-free state.
	x.free = make([]bool, x.size)
	for i := range x.free {
		x.free[i] = true
	}
	for i := range x.nodeFree {
		x.nodeFree[i] = x.nodeStart[i+1] - x.nodeStart[i]
	}
	x.total = x.size
	for c := range x.cls {
		ci := &x.cls[c]
		cnt := ci.cnt
		for g, b := range ci.gbin {
			cnt[ci.bins[b].off+ci.pos[g]]++
			ci.binFree[b]++
		}
		for _, bi := range ci.bins {
			for pos := range bi.n {
				k := cnt[bi.off+pos]
				x.words[int(bi.bitOff)+int(k-1)*int(bi.nw)+int(pos>>6)] |= 1 << (pos & 63)
				ci.pop[bi.popOff+k]++
			}
		}
		for nd := range x.nodes {
			if !within {
				break
			}
			seg := x.seg(c, nd)
			copy(seg, ci.gbin[x.nodeStart[nd]:x.nodeStart[nd+1]])
			slices.Sort(seg)
		}
	}
	x.freeInit = slices.Clone(x.free)
	x.i32Init = slices.Clone(x.i32)
	x.wordsInit = slices.Clone(x.words)
	if within {
		x.buildTrees()
		for c := range x.cls {
			ci := &x.cls[c]
			ci.lvBin = make([]int, len(sc.LV[c]))
			for i, e := range sc.LV[c] {
				ci.lvBin[i] = ci.floorBin(e.V)
			}
			ci.lvIndex(sc.LV[c])
		}
	}
	x.ok = true
}

// buildTrees makes every class's within trees for the all-free cluster.
// Both copies (live and pristine) share one allocation.
func (x *scoreIndex) buildTrees() {
	var per int
	x.mt, per = newMinTree(x.nodes)
	nt := max(x.maxPer-1, 0)
	slab := make([]int64, 2*len(x.cls)*nt*per)
	o := 0
	cut := func() []int64 {
		s := slab[o : o+per : o+per]
		o += per
		return s
	}
	for c := range x.cls {
		ci := &x.cls[c]
		ci.trees = make([]withinTree, x.maxPer+1)
		for n := 2; n <= x.maxPer; n++ {
			tr := &ci.trees[n]
			tr.c, tr.n, tr.t, tr.init = c, n, cut(), cut()
			for node := range x.nodes {
				tr.t[node] = x.key(c, n, node)
			}
			x.mt.build(tr.t)
			copy(tr.init, tr.t)
		}
	}
}

// withinKeysFit reports whether (bin, count, node) packs into an int64
// below noKey for this cluster (always, short of absurd shapes).
func (x *scoreIndex) withinKeysFit() bool {
	hi := float64(x.size) * float64(x.maxPer+1) * math.Exp2(float64(x.nodeBits))
	return hi < math.Exp2(62)
}

// shape computes class c's bins and static layout, fills its column of
// ci.pos and reserves its room in the slabs: n32 and nWords are the slab
// lengths so far.
func (ci *classIndex) shape(sf []float64, x *scoreIndex, c, n32, nWords int) (int, int) {
	vals := slices.Clone(sf)
	slices.Sort(vals)
	vals = slices.CompactFunc(vals, func(a, b float64) bool { return a == b }) // -0 and +0 are one bin
	ci.vals = vals
	nb := len(vals)
	ci.bins = make([]binInfo, nb)
	bin := make([]int32, len(sf))
	for g, v := range sf {
		bin[g] = int32(sort.SearchFloat64s(vals, v))
	}
	// Node lists per bin: GPUs are visited in id order, hence by node.
	last := make([]int32, nb)
	for b := range last {
		last[b] = -1
	}
	for g, b := range bin {
		if nd := x.gpuNode[g]; last[b] != nd {
			last[b] = nd
			ci.bins[b].n++
		}
	}
	off := int32(0)
	for b := range ci.bins {
		ci.bins[b].off = off
		off += ci.bins[b].n
	}
	ci.binNodes = make([]int32, off)
	ci.only = make([]int32, off)
	ci.pos = make([]int32, len(sf))
	fill := make([]int32, nb) // nodes listed so far per bin
	perNode := make([]int32, nb)
	for b := range last {
		last[b] = -1
	}
	for g, b := range bin {
		bi := &ci.bins[b]
		if nd := x.gpuNode[g]; last[b] != nd {
			last[b] = nd
			ci.binNodes[bi.off+fill[b]] = nd
			ci.only[bi.off+fill[b]] = int32(g)
			fill[b]++
			perNode[b] = 0
		}
		perNode[b]++
		if perNode[b] > 1 {
			ci.only[bi.off+fill[b]-1] = -1
		}
		bi.maxCnt = max(bi.maxCnt, perNode[b])
		ci.pos[g] = fill[b] - 1
	}
	np := 0
	for b := range ci.bins {
		bi := &ci.bins[b]
		bi.nw = (bi.n + 63) >> 6
		bi.bitOff = int32(nWords)
		nWords += int(bi.maxCnt) * int(bi.nw)
		bi.popOff = int32(np)
		np += int(bi.maxCnt) + 1
	}
	ci.gbin = bin
	// cnt, pop, hint, binFree, lo
	return n32 + int(off) + 2*np + nb + 1, nWords
}

// carve points the class's mutable views into the int32 slab at o.
func (ci *classIndex) carve(s []int32, o int) int {
	take := func(n int) []int32 {
		v := s[o : o+n : o+n]
		o += n
		return v
	}
	np := 0
	for _, bi := range ci.bins {
		np += int(bi.maxCnt) + 1
	}
	last := ci.bins[len(ci.bins)-1]
	ci.cnt = take(int(last.off + last.n))
	ci.pop = take(np)
	ci.hint = take(np)
	ci.binFree = take(len(ci.bins))
	ci.lo = take(1)
	return o
}

// lvIndex fills acrossFrom, withinFrom and withinBefore from lvBin.
func (ci *classIndex) lvIndex(lv []policy.LVStep) {
	nb, ne := len(ci.bins), len(ci.lvBin)
	ci.acrossFrom = make([]int, nb+1)
	ci.withinFrom = make([]int, nb+1)
	for b := range nb + 1 {
		ci.acrossFrom[b], ci.withinFrom[b] = ne, ne
		for i := ne - 1; i >= 0; i-- {
			if ci.lvBin[i] >= b {
				if lv[i].Across {
					ci.acrossFrom[b] = i
				} else {
					ci.withinFrom[b] = i
				}
			}
		}
	}
	ci.withinBefore = make([]int, ne+1)
	ci.withinBefore[0] = -1
	for i := range ne {
		ci.withinBefore[i+1] = ci.withinBefore[i]
		if !lv[i].Across {
			ci.withinBefore[i+1] = max(ci.withinBefore[i+1], ci.lvBin[i])
		}
	}
}

// freeUpTo is the number of free GPUs in bins 0..b, given total free; it
// sums from the nearer end (the bins are few, except for class A on big
// clusters, where across entries ask about the first bins).
func (ci *classIndex) freeUpTo(b, total int) int {
	nb := len(ci.binFree)
	if b >= nb-1 {
		return total
	}
	s := 0
	if lo := ci.first(total); b-lo < nb-1-b {
		for _, f := range ci.binFree[lo:max(lo, b+1)] {
			s += int(f)
		}
		return s
	}
	for _, f := range ci.binFree[b+1:] {
		s += int(f)
	}
	return total - s
}

// first is the lowest bin with a free GPU (len(bins) when total is 0).
func (ci *classIndex) first(total int) int {
	if total == 0 {
		return len(ci.binFree)
	}
	lo := ci.lo[0]
	for ci.binFree[lo] == 0 {
		lo++
	}
	ci.lo[0] = lo
	return int(lo)
}

// across is the lowest bin b with n free GPUs in bins 0..b, or
// len(bins) when there are fewer than n free GPUs: an across entry of
// bin b succeeds exactly when b >= across.
func (ci *classIndex) across(n, total int) int {
	if total < n {
		return len(ci.binFree)
	}
	s := 0
	for b := ci.first(total); ; b++ {
		if s += int(ci.binFree[b]); s >= n {
			return b
		}
	}
}

// floorBin is the last bin scoring <= v, or -1: "sf <= v" as a bin range.
func (ci *classIndex) floorBin(v float64) int {
	if math.IsNaN(v) {
		return -1 // nothing compares <= NaN
	}
	return sort.Search(len(ci.vals), func(i int) bool { return ci.vals[i] > v }) - 1
}

// reset restores the all-free state.
func (x *scoreIndex) reset() {
	copy(x.free, x.freeInit)
	copy(x.i32, x.i32Init)
	copy(x.words, x.wordsInit)
	for _, tr := range x.dirty {
		copy(tr.t, tr.init)
		tr.dirty = false
	}
	x.dirty = x.dirty[:0]
	x.total = x.size
	for c := range x.live {
		x.live[c] = true
	}
}

// seg is node's sorted free bins in class c (see scoreIndex.srt).
func (x *scoreIndex) seg(c, node int) []int32 {
	start, end := x.nodeStart[node], x.nodeStart[node+1]
	o := int(start)*len(x.cls) + c*int(end-start)
	return x.srt[o : o+int(x.nodeFree[node])]
}

// take marks gpus busy in the structures of every live class (the frame
// keeps a class live only while it still has jobs to place).
func (x *scoreIndex) take(gpus []int) {
	for _, g := range gpus {
		x.free[g] = false
		nd := x.gpuNode[g]
		start, end := x.nodeStart[nd], x.nodeStart[nd+1]
		base, ln, nf := int(start)*len(x.cls), int(end-start), int(x.nodeFree[nd])
		x.nodeFree[nd]--
		for c := range x.cls {
			if !x.live[c] {
				continue
			}
			ci := &x.cls[c]
			bin, pos := ci.gbin[g], ci.pos[g]
			if x.withinOn {
				// Drop one bin from the node's sorted free bins.
				seg := x.srt[base+c*ln : base+c*ln+nf]
				i := 0
				for seg[i] != bin {
					i++
				}
				for ; i < nf-1; i++ {
					seg[i] = seg[i+1]
				}
			}
			// Move the node from bucket k to bucket k-1 of its bin.
			bi := &ci.bins[bin]
			fi := bi.off + pos
			k := ci.cnt[fi]
			ci.cnt[fi] = k - 1
			w := int(bi.bitOff) + int(pos>>6)
			bit := uint64(1) << (pos & 63)
			x.words[w+int(k-1)*int(bi.nw)] &^= bit
			ci.pop[bi.popOff+k]--
			if k > 1 {
				x.words[w+int(k-2)*int(bi.nw)] |= bit
				ci.pop[bi.popOff+k-1]++
				if h := &ci.hint[bi.popOff+k-1]; *h > pos>>6 {
					*h = pos >> 6
				}
			}
			ci.binFree[bin]--
		}
	}
	x.total -= len(gpus)
}

// key is node's within key for jobs of n GPUs of class c. It orders nodes
// the way the reference's within scan does: the bin of the node's n-th
// best free GPU (smaller first), then how many free GPUs score no worse
// than that bin (more first), then the node id. The reference counts GPUs
// scoring <= the entry's v rather than <= the node's n-th bin; the two
// agree when the winner's n-th bin is the entry's own bin, and within
// checks that before trusting the key.
func (x *scoreIndex) key(c, n, node int) int64 {
	s := x.seg(c, node)
	if len(s) < n {
		return noKey
	}
	bn := s[n-1]
	cum := n
	for cum < len(s) && s[cum] == bn {
		cum++
	}
	return (int64(bn)*int64(x.maxPer+1)+int64(x.maxPer-cum))<<x.nodeBits | int64(node)
}

func (x *scoreIndex) keyBin(k int64) int { return int(k>>x.nodeBits) / (x.maxPer + 1) }

// sync makes the tree's root exact. Within a round GPUs are only taken,
// and taking a GPU never lowers a node's key (its n-th best free bin can
// only get worse, and with the same bin fewer GPUs score no worse), so a
// stored leaf is a lower bound of the node's key and so is every inner
// entry of its subtree's minimum. The root is then exact as soon as its
// own node's stored key is current: every other node's key is at least
// its stored one, which is at least the root's. Until then the root's
// node is re-keyed and its path repaired. A round thus re-keys only the
// nodes that reach the top of some tree, not every node a pick touched,
// and take keeps no log for the trees.
func (x *scoreIndex) sync(tr *withinTree) {
	t := tr.t
	for {
		k := x.mt.root(t)
		if k == noKey {
			return
		}
		node := int(k & (1<<x.nodeBits - 1))
		nk := x.key(tr.c, tr.n, node)
		if nk == k {
			return
		}
		if !tr.dirty {
			tr.dirty = true
			x.dirty = append(x.dirty, tr)
		}
		x.mt.set(t, node, nk)
	}
}

// pmFirst is picker.pmFirst over bins 0..bmax: the n best free GPUs of
// class c, ordered by (bin, tie-break, GPU id). It returns them ascending
// in x.buf, or nil when fewer than n qualify.
func (x *scoreIndex) pmFirst(c, n, bmax int, tb PMFirstTieBreak) []int {
	ci := &x.cls[c]
	if bmax < 0 || x.total < n {
		return nil
	}
	if n == 1 && tb == PMFirstArtifact {
		return x.pmFirstOne(c, bmax)
	}
	if ci.freeUpTo(bmax, x.total) < n {
		return nil
	}
	x.buf = x.buf[:0]
	r := n
	for b := ci.first(x.total); b <= bmax && r > 0; b++ {
		f := int(ci.binFree[b])
		if f == 0 {
			continue
		}
		if f <= r || tb != PMFirstArtifact {
			// The whole bin goes, so order inside it does not matter; or
			// the paper's tie-break, GPU id, i.e. nodes in id order.
			r = x.walk(c, b, x.allBuckets(ci, b), r)
			continue
		}
		// Artifact: nodes by |count - n|, then id. Counts n-d and n+d
		// tie, so their buckets are merged by node id.
		bi := &ci.bins[b]
		top := int(bi.maxCnt)
		for d := max(0, n-top); r > 0 && (n-d >= 1 || n+d <= top); d++ {
			x.ks = x.ks[:0]
			if k := n - d; k >= 1 && k <= top && ci.pop[int(bi.popOff)+k] > 0 {
				x.ks = append(x.ks, int32(k))
			}
			if k := n + d; d > 0 && k <= top && ci.pop[int(bi.popOff)+k] > 0 {
				x.ks = append(x.ks, int32(k))
			}
			if len(x.ks) > 0 {
				r = x.walk(c, b, x.ks, r)
			}
		}
	}
	if r > 0 {
		return nil // unreachable: the free counts said n qualify
	}
	slices.Sort(x.buf)
	return x.buf
}

// pmFirstOne is pmFirst for one GPU under the artifact's tie-break, the
// pick of nine jobs in ten on Synergy traces. |count - 1| ranks the
// buckets 1, 2, 3, ..., so the GPU is the first free one of the lowest
// bin, on the first node of its lowest non-empty bucket.
func (x *scoreIndex) pmFirstOne(c, bmax int) []int {
	ci := &x.cls[c]
	b := ci.first(x.total)
	if b > bmax {
		return nil
	}
	bi := &ci.bins[b]
	for k := int32(1); k <= bi.maxCnt; k++ {
		if ci.pop[bi.popOff+k] == 0 {
			continue
		}
		p := x.firstIn(ci, bi, k)
		if g := ci.only[int(bi.off)+p]; g >= 0 {
			x.buf = append(x.buf[:0], int(g))
			return x.buf
		}
		nd := ci.binNodes[int(bi.off)+p]
		for g := x.nodeStart[nd]; ; g++ {
			if x.free[g] && ci.gbin[g] == int32(b) {
				x.buf = append(x.buf[:0], int(g))
				return x.buf
			}
		}
	}
	return nil // unreachable: bin b has a free GPU, so a bucket has its node
}

// allBuckets lists the non-empty buckets of bin b.
func (x *scoreIndex) allBuckets(ci *classIndex, b int) []int32 {
	x.ks = x.ks[:0]
	bi := &ci.bins[b]
	for k := int32(1); k <= bi.maxCnt; k++ {
		if ci.pop[bi.popOff+k] > 0 {
			x.ks = append(x.ks, k)
		}
	}
	return x.ks
}

// walk visits the nodes in buckets ks of class c's bin b in node-id order
// and appends each one's free bin-b GPUs, lowest ids first, until r more
// are taken. It returns how many are still missing.
func (x *scoreIndex) walk(c, b int, ks []int32, r int) int {
	ci := &x.cls[c]
	bi := &ci.bins[b]
	nw := int(bi.nw)
	base := int(bi.bitOff)
	nodes := ci.binNodes[bi.off : bi.off+bi.n]
	only := ci.only[bi.off : bi.off+bi.n]
	start := int32(nw)
	for _, k := range ks {
		h := &ci.hint[bi.popOff+k]
		for o := base + int(k-1)*nw; *h < int32(nw) && x.words[o+int(*h)] == 0; {
			*h++
		}
		start = min(start, *h)
	}
	for w := int(start); w < nw && r > 0; w++ {
		var m uint64
		for _, k := range ks {
			m |= x.words[base+int(k-1)*nw+w]
		}
		for m != 0 && r > 0 {
			p := w<<6 | bits.TrailingZeros64(m)
			m &= m - 1
			if g := only[p]; g >= 0 {
				x.buf = append(x.buf, int(g))
				r--
				continue
			}
			nd := nodes[p]
			for g := x.nodeStart[nd]; g < x.nodeStart[nd+1] && r > 0; g++ {
				if x.free[g] && ci.gbin[g] == int32(b) {
					x.buf = append(x.buf, int(g))
					r--
				}
			}
		}
	}
	return r
}

// within is refWithin over bins 0..bv: the node whose n-th best free GPU
// has the smallest bin (ties: more free GPUs in bins <= bv, then lower
// id), and there its first n free GPUs in bins <= that bin. The result is
// in x.buf, ascending; nil when no node has n such GPUs.
func (x *scoreIndex) within(c, n, bv int) []int {
	if bv < 0 || n < 2 || n > x.maxPer {
		return nil
	}
	ci := &x.cls[c]
	tr := &ci.trees[n]
	x.sync(tr)
	k := x.mt.root(tr.t)
	if k == noKey {
		return nil
	}
	bn := x.keyBin(k)
	if bn > bv {
		return nil
	}
	node := int(k & (1<<x.nodeBits - 1))
	if bn < bv {
		// The tree's tie-break counted GPUs up to bn, the reference counts
		// them up to bv: re-rank the nodes whose n-th bin is bn. PAL's own
		// L×V orders never get here (the within entry of bn comes first
		// and would have succeeded), hand-built orders may.
		node = x.rerank(c, n, tr.t, bn, bv)
	}
	return x.fromNode(c, node, n, bn)
}

// fromNode puts node's first n free GPUs of class c in bins <= b in
// x.buf, ascending (the node has them).
func (x *scoreIndex) fromNode(c, node, n, b int) []int {
	gbin := x.cls[c].gbin
	x.buf = x.buf[:0]
	for g := x.nodeStart[node]; g < x.nodeStart[node+1] && len(x.buf) < n; g++ {
		if x.free[g] && int(gbin[g]) <= b {
			x.buf = append(x.buf, int(g))
		}
	}
	return x.buf
}

// withinTop finds the within trees' minimum for n GPUs of class c on the
// buckets instead, when it lies in the lowest bin with a free GPU: no
// node has a free GPU below that bin, so a node's n-th best free GPU is
// in it exactly when the node has n free GPUs there, and its count of
// GPUs scoring no worse is that number. The minimum is then the node
// with the most, lowest id first: the first node of the highest
// non-empty bucket k >= n. ok is false when no node has n free GPUs in
// the bin (the minimum, if any, is in a later bin: ask the tree).
// Keeping PAL's usual within pick off the trees means they are repaired
// only for the rare pick that needs them.
func (x *scoreIndex) withinTop(c, n int) (b, node int, ok bool) {
	ci := &x.cls[c]
	b = ci.first(x.total)
	if b >= len(ci.bins) {
		return b, -1, false
	}
	bi := &ci.bins[b]
	for k := bi.maxCnt; k >= int32(n); k-- {
		if ci.pop[bi.popOff+k] == 0 {
			continue
		}
		return b, int(ci.binNodes[int(bi.off)+x.firstIn(ci, bi, k)]), true
	}
	return b, -1, false
}

// firstIn is the position, in bin bi's node list, of the first node of
// its non-empty bucket k, found from the bucket's hint (moved up past the
// empty words on the way).
func (x *scoreIndex) firstIn(ci *classIndex, bi *binInfo, k int32) int {
	h := &ci.hint[bi.popOff+k]
	o := int(bi.bitOff) + int(k-1)*int(bi.nw)
	for x.words[o+int(*h)] == 0 {
		*h++
	}
	return int(*h)<<6 | bits.TrailingZeros64(x.words[o+int(*h)])
}

// rerank finds the best node whose n-th bin is bn, counting its free
// GPUs in bins <= bv (more first, then lower id). Stored entries are
// lower bounds (see sync), none below the exact root, so a subtree whose
// stored minimum is past bn holds no node of bin bn; a leaf's bin is
// checked on its current key.
func (x *scoreIndex) rerank(c, n int, t []int64, bn, bv int) int {
	ci := &x.cls[c]
	best, bestCnt := -1, -1
	x.mt.visit(t, func(k int64) bool { return k != noKey && x.keyBin(k) == bn }, func(node int) {
		if k := x.key(c, n, node); k == noKey || x.keyBin(k) != bn {
			return
		}
		cnt := 0
		for g := x.nodeStart[node]; g < x.nodeStart[node+1]; g++ {
			if x.free[g] && int(ci.gbin[g]) <= bv {
				cnt++
			}
		}
		if cnt > bestCnt { // nodes come in id order: ties keep the first
			best, bestCnt = node, cnt
		}
	})
	return best
}

// frame is the class-first round frame (refClassFirstFrame) on the index:
// the must-schedule prefix ordered by class with a counting sort (stable,
// like the reference's stable sort), the rest in order, greedy until the
// first miss. A job that gets back exactly the GPUs it holds is handed its
// own slice, so steady rounds allocate only for jobs that move. stay, if
// not nil, may keep a running job on its GPUs (see hysteresis).
func (x *scoreIndex) frame(order []*workload.Job, pick func(j *workload.Job) []int, stay stayFunc) [][]int {
	k, sum := 0, 0
	x.byCls = [variability.NumClasses + 1]int{}
	for ; k < len(order); k++ {
		j := order[k]
		if sum+j.GPUs > x.size {
			break
		}
		sum += j.GPUs
		x.byCls[j.Class+1]++
	}
	classes := 0
	for c := 1; c < len(x.byCls); c++ {
		if x.byCls[c] > 0 {
			classes++
		}
		x.byCls[c] += x.byCls[c-1]
	}
	x.idx = slices.Grow(x.idx[:0], len(order))[:len(order)]
	if classes <= 1 {
		// One class: the counting sort is the identity (and each class
		// ends where the next begins).
		for i := range x.idx {
			x.idx[i] = i
		}
		copy(x.byCls[:], x.byCls[1:])
	} else {
		for i, j := range order[:k] {
			x.idx[x.byCls[j.Class]] = i
			x.byCls[j.Class]++
		}
		for i := k; i < len(order); i++ {
			x.idx[i] = i
		}
	}
	x.reset()
	// The prefix runs class by class and a job past it can only fail on
	// the free count (the prefix holds all but fewer GPUs than it needs),
	// so once a class's last job is placed its structures are never read
	// again this round: take stops maintaining them. A trace of one class
	// (Synergy's) then costs a quarter of the updates.
	cur := 0
	for c := range x.live {
		x.live[c] = x.byCls[c] > 0 && (c == 0 || x.byCls[c] > x.byCls[c-1])
	}
	out := make([][]int, len(order))
	for p, i := range x.idx {
		for p < k && cur < len(x.live) && x.byCls[cur] <= p {
			x.live[cur] = false
			cur++
		}
		j := order[i]
		g := pick(j)
		if stays(stay, j, g, x.free) {
			x.take(j.GPUsHeld)
			out[i] = j.GPUsHeld
			continue
		}
		if g == nil {
			break
		}
		x.take(g)
		switch {
		case g[len(g)-1]-g[0] == len(g)-1:
			// Consecutive ids (every one-GPU answer): a window of the
			// read-only id list, no allocation (see policy.Placer). A job
			// that ran on it last round holds this very window, so the
			// driver sees it stay with a pointer compare, and the frame
			// never reads the job's own list.
			out[i] = x.ids[g[0] : g[0]+len(g) : g[0]+len(g)]
		case j.Running() && slices.Equal(j.GPUsHeld, g):
			out[i] = j.GPUsHeld
		default:
			out[i] = slices.Clone(g)
		}
	}
	return out
}

// classesIndexable reports whether every job's class indexes the score
// table; the reference panics on others, and so does the index, but the
// counting sort needs the range checked first.
func classesIndexable(order []*workload.Job) bool {
	for _, j := range order {
		if j.Class < 0 || j.Class >= variability.NumClasses {
			return false
		}
	}
	return true
}

// withinBin is the smallest bin of any node's n-th best free GPU of class
// c (len(bins) when no node has n free GPUs): a within entry of bin b
// succeeds exactly when b >= withinBin.
func (x *scoreIndex) withinBin(c, n int) int {
	ci := &x.cls[c]
	tr := &ci.trees[n]
	x.sync(tr)
	if k := x.mt.root(tr.t); k != noKey {
		return x.keyBin(k)
	}
	return len(ci.bins)
}
