package place

import (
	"encoding/binary"
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
// how many free GPUs score no worse. A bucket queue per (class, n) keeps
// nodes by that key: buckets by (bin, count), each a bitset over the
// bin's nodes, so the best node is the first one of the first non-empty
// bucket. Entries are repaired lazily, only for the nodes that reach the
// front when a job of that class and size asks (see wmin); most (class, n)
// pairs are never asked in a given round, and PAL's usual within pick in
// the lowest free bin is read off the count buckets instead (see
// withinTop).
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
	// divM and divS turn "GPU g's node" into a multiply and a shift when
	// every node has the same number of GPUs (divM is 0 otherwise): take
	// then needs no table that a round's other work evicts from cache.
	divM uint64
	divS uint

	cls [variability.NumClasses]classIndex

	// Mutable state. The count structures live in slabs so that reset is
	// a copy.
	// fbits is the free mask, GPU g at bit g&63 of word g>>6 (see
	// isFree), with a word of padding past the last GPU whose bits are
	// never set (see sole and nodeMask). When no node has more than 64
	// GPUs (narrow), a node's GPUs are a run of bits in one word or
	// two, so its free GPUs are one word (nodeMask), and with a class's
	// pmask a (bin, node) pair's free GPUs in id order are one AND (see
	// walk).
	fbits, fbitsInit []uint64
	narrow           bool
	qbase            []int32 // scratch for buildQueue
	// permTab, with within queues on nodes of at most permMaxPer GPUs:
	// row k (64 bytes) maps a node's free GPUs in id order (nodeMask)
	// to its free mask in a class's bin order (smask) for the nodes
	// whose GPUs have the k-th distinct rank order (see
	// classIndex.permIdx): load reads a node's mask off one byte instead
	// of shifting each GPU's free flag to its rank.
	permTab []uint8
	// flags is scratch for load: the free mask a byte a GPU (1: free),
	// with a padding byte past the last GPU that stays 0 (see sole).
	// Spread from fbits once a load, so that the load's gathers read a
	// byte each instead of shifting a word.
	flags            []byte
	total            int
	i32, i32Init     []int32
	words, wordsInit []uint64
	nodeFree         []int32 // view into i32
	ids              []int   // 0..size-1: answers of consecutive GPUs are windows of it
	keepBuf          []int   // the unused rest of keep's current block
	sets             answerSet
	lastRef          uint32  // the set keep last handed out (see frameMemo.ref), 0: none
	buf              []int   // the current pick, in pick order until sorted
	ks               []int32 // bucket counts merged by one walk
	// runs are where each walk's ascending run of buf starts (pmFirst),
	// and mbuf is sortRuns's scratch
	runs []int
	mbuf []int
	idx  []int // the round's job visiting order
	// dem is each ordered job's demand and class, read from the jobs in
	// one pass (see gather) so that the picks never wait on a job's
	// memory.
	dem   []demand
	byCls [variability.NumClasses + 1]int
	// live[c]: a job of class c is still to be picked this round. Only
	// live classes' structures are kept up to date by take (see frame).
	live [variability.NumClasses]bool
	// dirty[c]: class c's structures may differ from the all-free state
	// (it was live since the last reset), so reset restores only those.
	dirty [variability.NumClasses]bool
	nfOff int // nodeFree's offset in i32
	// prefix is the round's prefix of the order whose demand fits the
	// cluster (see frame), which the frame visits class by class.
	prefix int
	// given counts the GPUs give has freed (ever); givenAt[c] is its
	// value when class c retired (see freeBelow).
	given   int
	givenAt [variability.NumClasses]int
	ms      moveScratch
	pins    int // jobs gatherPinned found pinned
	// resv has the bits of the GPUs of the jobs gatherPinned found
	// pinned, laid out like fbits: reserve takes them off the free mask
	// a word at a time.
	resv []uint64
	// fuse asks pmFirst to take the GPUs it picks as it walks them (see
	// walkTake), and took says it did: set by the base frame, whose
	// every successful pick of the prefix is taken at once, and by the
	// migration-aware one for a job not pinned while its class alone is
	// live (see takePick). lent: a pinned job's GPUs are lent (see
	// lend), so the pick is its own and may be handed back.
	fuse, took, lent bool
	// bp[g][c] is {gbin[g], pos[g]} of class c: take and give read both
	// for every GPU and every live class. Takes visit GPUs in score
	// order, not id order, so a column per class would cost each class a
	// cache miss; a GPU's fields for all classes share one line. The bin
	// carries multiPair when GPU g's (bin, node) pair holds more than one
	// GPU; for the others (most) the pair's count is its free flag, so
	// take and give know it without reading cnt (another miss).
	bp [][variability.NumClasses]binPos
	// col[c] is class c's column of bp. While a single class is live (a
	// trace of one class, as Synergy's, or a frame's last class), take
	// reads it instead: a quarter of bp's lines, so on a large cluster
	// more of them stay in the cache from one take to the next.
	col [variability.NumClasses][]binPos
	// col32[c], when the class's bins and node lists are small enough, is
	// col packed in 4 bytes instead (and col[c] nil): the multiPair flag
	// in bit 31, the bin above the low prBits[c] bits, which hold pos.
	// Half the bytes take reads in pick order.
	col32  [variability.NumClasses][]uint32
	prBits [variability.NumClasses]uint8
	// hist: freeHist[k] counts the nodes with k free GPUs, kept by take
	// and give while a migration-aware frame runs (see room).
	hist     bool
	freeHist []int32
	// memo keeps whole rounds of the frame by their demands (see
	// frameMemo); memoTag is the picking rule they were made under.
	memo    frameMemo
	memoTag int
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
	// pmask[off+pos] has bit i set when GPU i of the node (counting from
	// its first) is in the bin (only on a narrow index): AND the node's
	// free mask (nodeMask), the pair's free GPUs in id order.
	pmask []uint64
	// only[off+pos] is the node's one GPU in the bin when it has exactly
	// one there, else -1. A node in a bucket then holds it free, so a
	// pick takes it without scanning the node (with a bin per outlier,
	// most (bin, node) pairs are single GPUs).
	only []int32
	// multi lists the GPUs whose (bin, node) pair holds more than one,
	// ascending, each with its pair's index in cnt (see load).
	multi []multiGPU
	// pairs lists those (bin, node) pairs once each, with their GPUs'
	// ranks in the node's bin order (PAL only: see load).
	pairs []multiPairRanks
	// sole is only with every multi pair's -1 replaced by the index of
	// the padding flag past the free mask, which is never set: load
	// gathers each bin's single pairs' flags without a branch.
	sole []int32

	gbin []int32 // bin of each GPU (what walks compare)
	// pos[g]>>6 is the position of GPU g's node in its bin's node list
	// (its bit in the bin's buckets), and pos[g]&63 the GPU's rank in its
	// node's bin order (PAL only, see ord): one load serves take. A column per class rather than a record
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

	// ord describes each node's GPUs in bin order (ties by id), laid out
	// like the GPUs (node i at nodeStart[i]); see rankInfo (PAL only).
	// smask[i] has bit k set when node i's GPU of rank k is free (a view
	// into words), so a node's n-th best free GPU is the n-th set bit:
	// wkey reads a key with a few bit operations and one cache line.
	ord   []rankInfo
	smask []uint64
	smOff int
	// permIdx[nd] is node nd's row in scoreIndex.permTab (when built).
	permIdx []uint16
	// nwStart[b] is the sum of nw over bins before b: where bin b's words
	// start in a within queue's buckets.
	nwStart []int32
	// wq[n] (2 <= n <= maxPer, PAL only) orders nodes for jobs of n GPUs;
	// see wkey and wmin.
	wq []withinQueue
	// unbuilt has bit n set while wq[n] holds nothing valid: a load
	// leaves the queues to be built from the node masks by the first
	// wmin that needs them (see buildQueue), and give files nothing in
	// them meanwhile.
	unbuilt uint64
	// lvBin[i] is floorBin of the class's i-th L×V entry (PAL only): the
	// score table, and so its L×V order, never changes under an index.
	lvBin []int
	// acrossFrom[b] (withinFrom[b]) is the first across (within) entry of
	// bin >= b, len(lvBin) if none, for b in 0..len(bins); withinBefore[i]
	// is the largest bin of a within entry before entry i, -1 if none. An
	// entry succeeds when its bin reaches a threshold (see PAL.pick), so
	// these find the winning entry without walking the order.
	acrossFrom, withinFrom, withinBefore []int

	// The class's share of the mutable slabs: i32[i32Lo:i32Hi] and
	// words[wLo:wHi].
	i32Lo, i32Hi, wLo, wHi int
}

// packColumns lets build pack a class's column (see col32); tests turn
// it off to reach the unpacked one, which only bins and node lists too
// large for a test need.
var packColumns = true

// multiGPU is a GPU of a (bin, node) pair holding more than one, and
// at, that pair's index in its class's cnt: load counts the free ones
// with one read of each list instead of reading the GPU's bin, the bin's
// offset and the GPU's pos, three dependent reads, for each (on 4608x6
// that was a third of a load).
type multiGPU struct{ g, at int32 }

// multiPairRanks is a (bin, node) pair holding more than one GPU: at,
// its index in cnt, and ranks, the bits of its GPUs in the node's free
// mask (smask). A node's GPUs are ranked in bin order, so a pair's ranks
// are a run of bits, and the pair's free count is a popcount of the
// node's mask under them.
type multiPairRanks struct {
	at, node, bin int32
	ranks         uint64
}

// binPos is a GPU's bin and pos in one class (see scoreIndex.bp).
type binPos struct{ bin, pos int32 }

// multiPair marks a binPos whose (bin, node) pair holds more than one
// GPU (bins are below MaxInt32/2, see build). Only such pairs' counts
// (cnt) are ever read: a single GPU's pair counts its free flag.
const multiPair = 1 << 30

// rankInfo is a node's GPU of some rank in its bin order: its bin, and
// pos = p<<6 | e, where p is the node's position in the bin's node list
// and e the rank of the node's last GPU in the same bin.
type rankInfo struct{ bin, pos int32 }

// divider sets divM and divS when every node has maxPer GPUs and the
// multiply-shift gives exactly gpuNode for every GPU (checked, not
// assumed).
func (x *scoreIndex) divider() {
	per := uint64(x.maxPer)
	if per == 0 || uint64(x.size) != per*uint64(x.nodes) {
		return
	}
	s := 32 + uint(bits.Len64(per))
	m := (uint64(1)<<s + per - 1) / per
	for g, nd := range x.gpuNode {
		if int32(uint64(g)*m>>s) != nd {
			return
		}
	}
	x.divM, x.divS = m, s
}

// nodeOf is GPU g's node.
func (x *scoreIndex) nodeOf(g int) int32 {
	if x.divM != 0 {
		return int32(uint64(g) * x.divM >> x.divS)
	}
	return x.gpuNode[g]
}

// spreadFlags writes the free mask to flags, a byte a GPU, and returns
// flags (see load).
func (x *scoreIndex) spreadFlags() []byte {
	fl := x.flags
	for w, m := range x.fbits {
		d := (*[64]byte)(fl[w*64:])
		binary.LittleEndian.PutUint64(d[0:], spread8[m&0xff])
		binary.LittleEndian.PutUint64(d[8:], spread8[m>>8&0xff])
		binary.LittleEndian.PutUint64(d[16:], spread8[m>>16&0xff])
		binary.LittleEndian.PutUint64(d[24:], spread8[m>>24&0xff])
		binary.LittleEndian.PutUint64(d[32:], spread8[m>>32&0xff])
		binary.LittleEndian.PutUint64(d[40:], spread8[m>>40&0xff])
		binary.LittleEndian.PutUint64(d[48:], spread8[m>>48&0xff])
		binary.LittleEndian.PutUint64(d[56:], spread8[m>>56])
	}
	return fl
}

// spread8[b] has byte i set to bit i of b.
var spread8 = func() (t [256]uint64) {
	for b := range t {
		for i := range 8 {
			t[b] |= uint64(b>>i&1) << (8 * i)
		}
	}
	return t
}()

// isFree reports whether GPU g is free.
func (x *scoreIndex) isFree(g int) bool { return x.fbits[g>>6]>>(g&63)&1 != 0 }

// freeBit is 1 when GPU g is free, else 0.
func (x *scoreIndex) freeBit(g int) int { return int(x.fbits[g>>6] >> (g & 63) & 1) }

// nodeMask is node nd's free GPUs off fbits, bit i for its GPU
// nodeStart[nd]+i (on a narrow index only).
func (x *scoreIndex) nodeMask(nd int32) uint64 {
	s, e := x.nodeStart[nd], x.nodeStart[nd+1]
	w, o := s>>6, uint(s&63)
	return (x.fbits[w]>>o | x.fbits[w+1]<<1<<(63-o)) & (^uint64(0) >> (64 - uint(e-s)))
}

// withinQueue is the bucket queue of one (class, n): node nd sits in
// bucket (b, r) when its within key (see wkey) is bin b and count
// maxPer-r, as a bit at its position in bin b's node list (like the count
// buckets). Buckets in bin order, and inside a bin by r, are the key
// order, and a bucket's bits are node ids in order, so the first node of
// the first non-empty bucket is the best. A stored entry may be stale,
// but only ever too good (see wmin).
type withinQueue struct {
	r    int32   // buckets per bin: maxPer-n+1
	wOff int32   // the queue's first word in the words slab
	pop  []int32 // nodes in bucket (b, r): pop[b*r+r]; view into i32
	// hint is, per bucket, a word before which it is empty (see
	// classIndex.hint); view into i32.
	hint []int32
	// cur[0]: a bucket (b*r+r', see pop) before which every bucket is
	// empty; wmin starts there, inside its bin too.
	cur []int32
}

// prepare returns the index for env, building it when the cluster or the
// score table changed, or nil when the inputs cannot be indexed (the caller
// then uses the reference implementation). within asks for PAL's queues.
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
	x.divider()
	for c := range x.cls {
		sf := sc.SF[c]
		if len(sf) != x.size || slices.ContainsFunc(sf, math.IsNaN) {
			return
		}
	}
	if within && x.maxPer > 64 {
		return // a node's free GPUs must fit a word (see smask)
	}
	var n32, nWords int
	for c := range x.cls {
		ci := &x.cls[c]
		ci.wLo = nWords
		n32, nWords = ci.shape(sc.SF[c], x, within, n32, nWords)
		ci.wHi = nWords
	}
	x.i32 = make([]int32, n32+x.nodes)
	x.words = make([]uint64, nWords)
	o := 0
	for c := range x.cls {
		ci := &x.cls[c]
		ci.i32Lo = o
		o = ci.carve(x.i32, o)
		ci.i32Hi = o
	}
	x.nfOff = o
	x.nodeFree = x.i32[o : o+x.nodes : o+x.nodes]
	x.ids = make([]int, x.size)
	for g := range x.ids {
		x.ids[g] = g
	}
	// The all-free state. The mask has one more flag, never set, past
	// its end (see sole).
	x.fbits = make([]uint64, x.size>>6+2)
	for g := range x.size {
		x.fbits[g>>6] |= 1 << (g & 63)
	}
	for i := range x.nodeFree {
		x.nodeFree[i] = x.nodeStart[i+1] - x.nodeStart[i]
	}
	x.total = x.size
	for c := range x.cls {
		ci := &x.cls[c]
		cnt := ci.cnt
		for g, b := range ci.gbin {
			cnt[ci.bins[b].off+ci.pos[g]>>6]++
			ci.binFree[b]++
		}
		for _, bi := range ci.bins {
			for pos := range bi.n {
				k := cnt[bi.off+pos]
				x.words[int(bi.bitOff)+int(k-1)*int(bi.nw)+int(pos>>6)] |= 1 << (pos & 63)
				ci.pop[bi.popOff+k]++
			}
		}
		if within {
			x.fillWithin(ci)
		}
	}
	x.bp = make([][variability.NumClasses]binPos, x.size)
	for c := range x.cls {
		ci := &x.cls[c]
		for g, b := range ci.gbin {
			if ci.only[ci.bins[b].off+ci.pos[g]>>6] < 0 {
				ci.multi = append(ci.multi, multiGPU{int32(g), ci.bins[b].off + ci.pos[g]>>6})
				b |= multiPair
			}
			x.bp[g][c] = binPos{b, ci.pos[g]}
		}
		ci.listPairs(x)
		maxN := int32(1)
		for _, bi := range ci.bins {
			maxN = max(maxN, bi.n)
		}
		prb := 6 + bits.Len32(uint32(maxN-1))
		if packColumns && prb+bits.Len(uint(len(ci.bins)-1)) <= 31 {
			x.col32[c], x.prBits[c] = make([]uint32, x.size), uint8(prb)
			for g := range x.bp {
				bp := x.bp[g][c]
				v := uint32(bp.bin&^multiPair)<<prb | uint32(bp.pos)
				if bp.bin&multiPair != 0 {
					v |= 1 << 31
				}
				x.col32[c][g] = v
			}
			continue
		}
		x.col[c] = make([]binPos, x.size)
		for g := range x.bp {
			x.col[c][g] = x.bp[g][c]
		}
	}
	x.fbitsInit = slices.Clone(x.fbits)
	if within && x.maxPer <= permMaxPer {
		x.buildPerms()
	}
	x.flags = make([]byte, len(x.fbits)*64)
	if x.maxPer <= 64 {
		x.narrow = true
		for c := range x.cls {
			ci := &x.cls[c]
			ci.pmask = make([]uint64, len(ci.only))
			for g, b := range ci.gbin {
				nd := x.gpuNode[g]
				ci.pmask[ci.bins[b].off+ci.pos[g]>>6] |= 1 << (int32(g) - x.nodeStart[nd])
			}
		}
	}
	x.i32Init = slices.Clone(x.i32)
	x.wordsInit = slices.Clone(x.words)
	if within {
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

// permMaxPer is the largest node whose within masks load reads off
// permTab: 720 orders of 6 GPUs, 64 bytes each, at most.
const permMaxPer = 6

// buildPerms fills permTab and every class's permIdx from the GPUs'
// ranks (pos&63, set by fillWithin).
func (x *scoreIndex) buildPerms() {
	rows := map[uint32]uint16{}
	x.permTab = x.permTab[:0]
	for c := range x.cls {
		ci := &x.cls[c]
		ci.permIdx = make([]uint16, x.nodes)
		for nd := range x.nodes {
			s, e := x.nodeStart[nd], x.nodeStart[nd+1]
			key := uint32(e - s)
			for g := s; g < e; g++ {
				key = key<<3 | uint32(ci.pos[g]&63)
			}
			k, ok := rows[key]
			if !ok {
				k = uint16(len(rows))
				rows[key] = k
				row := make([]uint8, 64)
				for f := range 1 << (e - s) {
					for i := range e - s {
						if f>>i&1 != 0 {
							row[f] |= 1 << (ci.pos[s+i] & 63)
						}
					}
				}
				x.permTab = append(x.permTab, row...)
			}
			ci.permIdx[nd] = k
		}
	}
}

// fillWithin lays out class ci's per-node bin order and files every node
// in its within queues for the all-free cluster.
func (x *scoreIndex) fillWithin(ci *classIndex) {
	ci.ord = make([]rankInfo, x.size)
	ci.smask = x.words[ci.smOff : ci.smOff+x.nodes : ci.smOff+x.nodes]
	var gs []int32
	for nd := range x.nodes {
		s, e := x.nodeStart[nd], x.nodeStart[nd+1]
		gs = gs[:0]
		for g := s; g < e; g++ {
			gs = append(gs, g)
		}
		slices.SortStableFunc(gs, func(a, b int32) int { return int(ci.gbin[a] - ci.gbin[b]) })
		ord := ci.ord[s:e]
		end := int32(len(gs) - 1)
		for i := len(gs) - 1; i >= 0; i-- {
			g := gs[i]
			if i+1 < len(gs) && ci.gbin[g] != ci.gbin[gs[i+1]] {
				end = int32(i)
			}
			ci.pos[g] |= int32(i)
			ord[i] = rankInfo{bin: ci.gbin[g], pos: ci.pos[g]&^63 | end}
		}
		ci.smask[nd] = ^uint64(0) >> (64 - len(gs))
	}
	for n := 2; n <= x.maxPer; n++ {
		q := &ci.wq[n]
		for nd := range x.nodes {
			if b, cum, p := x.wkey(ci, n, nd); b >= 0 {
				x.wput(ci, q, b, int32(x.maxPer-cum), p)
			}
		}
	}
}

// listPairs fills ci.pairs from ci.multi, with each GPU's rank in its
// node's bin order (pos&63, set by fillWithin; 0 without within
// queues, where ranks are not read), and ci.sole. A node's GPUs of two
// bins may alternate in id order, so a pair is found by its index in
// cnt, not by its neighbour in the list; pairs are listed in the order
// of their first GPU.
func (ci *classIndex) listPairs(x *scoreIndex) {
	ci.sole = make([]int32, len(ci.only))
	for i, g := range ci.only {
		if g < 0 {
			g = int32(x.size)
		}
		ci.sole[i] = g
	}
	ci.pairs = ci.pairs[:0]
	at := make([]int32, len(ci.cnt)) // 1 + the pair's index in pairs
	for _, m := range ci.multi {
		r := uint64(1) << (ci.pos[m.g] & 63)
		if k := at[m.at]; k > 0 {
			ci.pairs[k-1].ranks |= r
			continue
		}
		at[m.at] = int32(len(ci.pairs)) + 1
		ci.pairs = append(ci.pairs, multiPairRanks{at: m.at, node: x.gpuNode[m.g], bin: ci.gbin[m.g], ranks: r})
	}
}

// shape computes class c's bins and static layout, fills its column of
// ci.pos and reserves its room in the slabs (with within queues if
// within): n32 and nWords are the slab lengths so far.
func (ci *classIndex) shape(sf []float64, x *scoreIndex, within bool, n32, nWords int) (int, int) {
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
		ci.pos[g] = (fill[b] - 1) << 6
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
	n32 += int(off) + 2*np + nb + 1
	if !within {
		return n32, nWords
	}
	ci.nwStart = make([]int32, nb+1)
	for b, bi := range ci.bins {
		ci.nwStart[b+1] = ci.nwStart[b] + bi.nw
	}
	ci.smOff = nWords
	nWords += x.nodes
	ci.wq = make([]withinQueue, x.maxPer+1)
	for n := 2; n <= x.maxPer; n++ {
		q := &ci.wq[n]
		q.r = int32(x.maxPer - n + 1)
		q.wOff = int32(nWords)
		nWords += int(q.r) * int(ci.nwStart[nb])
		// pop, hint, cur
		n32 += 2*nb*int(q.r) + 1
	}
	return n32, nWords
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
	for n := 2; n < len(ci.wq); n++ {
		q := &ci.wq[n]
		q.pop = take(len(ci.bins) * int(q.r))
		q.hint = take(len(ci.bins) * int(q.r))
		q.cur = take(1)
	}
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

// reset restores the all-free state for a round in which the classes
// in live have jobs to place; any other class keeps whatever state it
// has, as nothing reads it before a later reset or load (see frame)
// restores it.
func (x *scoreIndex) reset(live [variability.NumClasses]bool) {
	copy(x.fbits, x.fbitsInit)
	copy(x.nodeFree, x.i32Init[x.nfOff:])
	for c := range x.cls {
		if ci := &x.cls[c]; x.dirty[c] && live[c] {
			copy(x.i32[ci.i32Lo:ci.i32Hi], x.i32Init[ci.i32Lo:ci.i32Hi])
			copy(x.words[ci.wLo:ci.wHi], x.wordsInit[ci.wLo:ci.wHi])
			ci.unbuilt = 0
		}
		x.dirty[c] = x.dirty[c] || live[c]
	}
	x.live = live
	x.total = x.size
}

// resetBounds is reset for a migration-aware round (moveFrameOn), in
// which a class in live is rebuilt from the free mask (load) before
// anything reads its structures, except its free GPUs per bin, which
// freeBelow bounds on while the class is retired: only those are
// restored (reset would copy every slab, which the loads then rewrite).
func (x *scoreIndex) resetBounds(live [variability.NumClasses]bool) {
	copy(x.fbits, x.fbitsInit)
	copy(x.nodeFree, x.i32Init[x.nfOff:])
	for c := range x.cls {
		if ci := &x.cls[c]; live[c] {
			o := ci.i32Lo + len(ci.cnt) + len(ci.pop) + len(ci.hint) // binFree (see carve)
			copy(ci.binFree, x.i32Init[o:o+len(ci.binFree)])
			x.dirty[c] = true
		}
	}
	x.live = live
	x.total = x.size
}

// allLive is every class: reset(allLive) makes the whole index current.
var allLive = func() (a [variability.NumClasses]bool) {
	for c := range a {
		a[c] = true
	}
	return a
}()

// take marks gpus busy in the structures of every live class (the frame
// keeps a class live only while it still has jobs to place).
func (x *scoreIndex) take(gpus []int) {
	nLive, one := 0, 0
	for c, l := range x.live {
		if l {
			nLive++
			one = c
		}
	}
	if nLive == 1 {
		x.takeOne(one, gpus)
		return
	}
	for _, g := range gpus {
		x.fbits[g>>6] &^= 1 << (g & 63)
		nd := x.nodeOf(g)
		if x.hist {
			x.freeHist[x.nodeFree[nd]]--
			x.freeHist[x.nodeFree[nd]-1]++
			x.nodeFree[nd]-- // read only with hist (see takeOne)
		}
		bps := &x.bp[g]
		for c := range x.cls {
			if !x.live[c] {
				continue
			}
			ci := &x.cls[c]
			bp := bps[c]
			bin, pr := bp.bin&^multiPair, bp.pos
			pos := pr >> 6
			if x.withinOn {
				ci.smask[nd] &^= 1 << (pr & 63)
			}
			// Move the node from bucket k to bucket k-1 of its bin.
			bi := &ci.bins[bin]
			fi := bi.off + pos
			k := int32(1) // a single GPU's pair: its count is its free flag
			if bp.bin&multiPair != 0 {
				k = ci.cnt[fi]
			}
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

// takeOne is take while class c alone is live (the base frame's every
// take, see frame): the slices every GPU's take writes are read once a
// call instead of once a GPU, and a single GPU's (bin, node) pair, whose
// count nothing reads (see multiPair), gets no store to cnt: a take then
// writes the bucket word, pop and binFree alone. The slices only some
// takes read (a multi pair's count and hint, the unpacked column, the
// nodes' free counts) are read where used: copied up front as well, the
// copies spilled to the stack every call, most of which take one GPU
// (on the 20,000-job Synergy trace on 16x4 under LAS, takeOne's
// instructions fell from 490.5 to 450.5 million over 1.39 million calls).
func (x *scoreIndex) takeOne(c int, gpus []int) {
	if x.col32[c] == nil || x.divM == 0 {
		x.takeOneAny(c, gpus)
		return
	}
	// Two passes over gpus, each with fewer slices than one pass would
	// hold (they spilled to the stack and were reloaded every GPU): the
	// free bits and node masks, then the count buckets.
	ci := &x.cls[c]
	c32, prb := x.col32[c], x.prBits[c]
	prMask := uint32(1)<<prb - 1
	fb := x.fbits
	if x.withinOn {
		smask, divM, divS := ci.smask, x.divM, x.divS
		for _, g := range gpus {
			fb[g>>6] &^= 1 << (g & 63)
			smask[uint64(g)*divM>>divS] &^= 1 << (c32[g] & 63)
		}
	} else {
		for _, g := range gpus {
			fb[g>>6] &^= 1 << (g & 63)
		}
	}
	bins, pop, binFree, words := ci.bins, ci.pop, ci.binFree, x.words
	for _, g := range gpus {
		v := c32[g]
		bin, pos := int32(v<<1>>1>>(prb&31)), int32(v&prMask)>>6 // &31: a bare shift, no check of its range
		bi := &bins[bin]
		w := int(bi.bitOff) + int(pos>>6)
		bit := uint64(1) << (pos & 63)
		if v>>31 == 0 {
			words[w] &^= bit
			pop[bi.popOff+1]--
		} else {
			// Move the node from bucket k to bucket k-1 of its bin.
			fi := bi.off + pos
			k := ci.cnt[fi]
			ci.cnt[fi] = k - 1
			words[w+int(k-1)*int(bi.nw)] &^= bit
			pop[bi.popOff+k]--
			if k > 1 {
				words[w+int(k-2)*int(bi.nw)] |= bit
				pop[bi.popOff+k-1]++
				if h := &ci.hint[bi.popOff+k-1]; *h > pos>>6 {
					*h = pos >> 6
				}
			}
		}
		binFree[bin]--
	}
	x.total -= len(gpus)
	if x.hist {
		x.takeHist(gpus)
	}
}

// takeHist counts gpus out of their nodes' free counts and freeHist for
// takeOne in a migration-aware frame (see hist), whose takes then run on
// takeOne's fast path rather than takeOneAny: on 4608x6 under PM-First,
// 13,112 GPUs a round, in 1.69 instead of 1.86 million instructions. The
// check costs the base frame's takeOne about 5 instructions a call (PAL
// on 4608x6: 0.2% of a round's instructions). CPU profiles charge it
// with up to a tenth of a pm-first-ma round, yet counting a node's GPUs
// out together (one update of freeHist a node rather than a GPU) made
// the round no faster (best of 6 runs: 1.119 against 1.124 ms).
func (x *scoreIndex) takeHist(gpus []int) {
	nf, fh, divM, divS := x.nodeFree, x.freeHist, x.divM, x.divS
	for _, g := range gpus {
		nd := uint64(g) * divM >> divS
		fh[nf[nd]]--
		fh[nf[nd]-1]++
		nf[nd]--
	}
}

// takeOneAny is takeOne for any index: an unpacked column or nodes of
// several sizes.
func (x *scoreIndex) takeOneAny(c int, gpus []int) {
	ci := &x.cls[c]
	bins, pop, binFree, words, fb, smask := ci.bins, ci.pop, ci.binFree, x.words, x.fbits, ci.smask
	c32, prb := x.col32[c], x.prBits[c]
	prMask := uint32(1)<<prb - 1
	for _, g := range gpus {
		fb[g>>6] &^= 1 << (g & 63)
		nd := x.nodeOf(g)
		if x.hist {
			// Only a migration-aware frame reads the nodes' free counts
			// (room, through freeHist); reset restores them for the next.
			nf := x.nodeFree
			x.freeHist[nf[nd]]--
			x.freeHist[nf[nd]-1]++
			nf[nd]--
		}
		var bin, pr int32
		var multi bool
		if c32 != nil {
			v := c32[g]
			bin, pr, multi = int32(v<<1>>1>>(prb&31)), int32(v&prMask), v>>31 != 0
		} else {
			bp := x.col[c][g]
			bin, pr, multi = bp.bin&^multiPair, bp.pos, bp.bin&multiPair != 0
		}
		pos := pr >> 6
		if x.withinOn {
			smask[nd] &^= 1 << (pr & 63)
		}
		bi := &bins[bin]
		w := int(bi.bitOff) + int(pos>>6)
		bit := uint64(1) << (pos & 63)
		if !multi {
			words[w] &^= bit
			pop[bi.popOff+1]--
		} else {
			// Move the node from bucket k to bucket k-1 of its bin.
			fi := bi.off + pos
			k := ci.cnt[fi]
			ci.cnt[fi] = k - 1
			words[w+int(k-1)*int(bi.nw)] &^= bit
			pop[bi.popOff+k]--
			if k > 1 {
				words[w+int(k-2)*int(bi.nw)] |= bit
				pop[bi.popOff+k-1]++
				if h := &ci.hint[bi.popOff+k-1]; *h > pos>>6 {
					*h = pos >> 6
				}
			}
		}
		binFree[bin]--
	}
	x.total -= len(gpus)
}

// wkey is node's within key for jobs of n GPUs of class ci: the bin of
// its n-th best free GPU (-1 when it has fewer than n free), cum, how
// many of its free GPUs score no worse than that bin, and p, the node's
// position in that bin's node list. Nodes are ordered by (bin, -cum, id),
// the way the reference's within scan ranks them. The reference counts
// GPUs scoring <= the entry's v rather than <= the node's n-th bin; the
// two agree when the winner's n-th bin is the entry's own bin, and within
// checks that before trusting the key.
func (x *scoreIndex) wkey(ci *classIndex, n, node int) (bin int32, cum int, p int32) {
	m := ci.smask[node]
	if bits.OnesCount64(m) < n {
		return -1, 0, -1
	}
	r := ci.ord[int(x.nodeStart[node])+nthBit(m, n)]
	return r.bin, bits.OnesCount64(m & (^uint64(0) >> (63 - r.pos&63))), r.pos >> 6
}

// nthBit is the index of the n-th lowest set bit of m (n >= 1; m has
// at least n): off a table for masks of nodes of up to 6 GPUs, by
// clearing the n-1 lowest bits otherwise.
func nthBit(m uint64, n int) int {
	if m < 64 {
		return int(nth6[n&7][m])
	}
	for range n - 1 {
		m &= m - 1
	}
	return bits.TrailingZeros64(m)
}

// nth6[n][m] is the index of the n-th lowest set bit of m < 64.
var nth6 = func() (t [8][64]uint8) {
	for m := range 64 {
		k := 0
		for i := range 6 {
			if m>>i&1 != 0 {
				k++
				t[k][m] = uint8(i)
			}
		}
	}
	return t
}()

// wput files a node in bucket (b, r) of queue q at its position p in bin
// b's node list.
func (x *scoreIndex) wput(ci *classIndex, q *withinQueue, b, r, p int32) {
	bi := &ci.bins[b]
	i := b*q.r + r
	w := p >> 6
	word, bit := &x.words[q.wOff+ci.nwStart[b]*q.r+r*bi.nw+w], uint64(1)<<(p&63)
	if *word&bit != 0 {
		return // filed there already (see give)
	}
	*word |= bit
	q.pop[i]++
	if q.hint[i] > w {
		q.hint[i] = w
	}
}

// wmin is the best node of class c's within queue for n GPUs and its
// key's bin, or (len(bins), -1) when no node has n free GPUs: a within
// entry of bin b succeeds exactly when b >= that bin. Within a
// round GPUs are only taken, and taking a GPU never makes a node's key
// better (its n-th best free bin can only get worse, and with the same
// bin fewer GPUs score no worse), so a stored entry is never worse than
// the node's key: the first stored node whose key is still the one it
// is filed under is the best. A stale node met on the way is re-filed
// under its key, which lies after the bucket it leaves, so a round
// re-files only the nodes that reach the front of some queue, and take
// keeps no log for the queues.
func (x *scoreIndex) wmin(c, n int) (bin, node int) {
	ci := &x.cls[c]
	q := &ci.wq[n]
	if ci.unbuilt>>n&1 != 0 {
		x.buildQueue(ci, n)
	}
	nb := int32(len(ci.bins))
	b0, r0 := q.cur[0]/q.r, q.cur[0]%q.r
	for b := b0; b < nb; b, r0 = b+1, 0 {
		bi := &ci.bins[b]
		for r := r0; r < q.r; r++ {
			i := b*q.r + r
			o := q.wOff + ci.nwStart[b]*q.r + r*bi.nw
			for q.pop[i] > 0 {
				h := &q.hint[i]
				for x.words[o+*h] == 0 {
					*h++
				}
				p := *h<<6 | int32(bits.TrailingZeros64(x.words[o+*h]))
				nd := int(ci.binNodes[bi.off+p])
				tb, cum, tp := x.wkey(ci, n, nd)
				if tb == b && int32(x.maxPer-cum) == r {
					q.cur[0] = i
					return int(b), nd
				}
				x.words[o+*h] &^= 1 << (p & 63)
				q.pop[i]--
				if tb >= 0 {
					x.wput(ci, q, tb, int32(x.maxPer-cum), tp)
				}
			}
		}
	}
	q.cur[0] = nb * q.r
	return int(nb), -1
}

// buildQueue files every node with n free GPUs of class c in wq[n]
// under its key, read off the node masks. A load (a class whose run
// starts mid-round, or a migration-aware round's reserve) leaves the
// queues unbuilt rather than restarting them from the all-free state:
// restarted, they held every node at its all-free key, and wmin
// re-filed or dropped, one by one, each node the classes before had
// used as it reached the front. Built here, only nodes that can hold
// the job are filed, at their true keys, and a queue no job of the
// class asks for costs nothing.
func (x *scoreIndex) buildQueue(ci *classIndex, n int) {
	q := &ci.wq[n]
	nb := int32(len(ci.bins))
	qw := x.words[q.wOff : q.wOff+q.r*ci.nwStart[nb]]
	clear(qw)
	// base[b] is bin b's first word in qw: bucket (b, r) is
	// base[b]+r*nw.. (see wput).
	x.qbase = slices.Grow(x.qbase[:0], int(nb))[:nb]
	base := x.qbase
	for b := range nb {
		base[b] = ci.nwStart[b] * q.r
	}
	// Every node is filed once, so a bucket's count and hint are read
	// off its words after (below) instead of kept per node as wput does.
	lo := nb
	ord, bins, per := ci.ord, ci.bins, int32(x.maxPer)
	for nd, m := range ci.smask {
		if bits.OnesCount64(m) < n {
			continue
		}
		// wkey, inline.
		r := ord[int(x.nodeStart[nd])+nthBit(m, n)]
		cum := int32(bits.OnesCount64(m & (^uint64(0) >> (63 - r.pos&63))))
		b, p := r.bin, r.pos>>6
		qw[base[b]+(per-cum)*bins[b].nw+p>>6] |= 1 << (p & 63)
		lo = min(lo, b)
	}
	for b := lo; b < nb; b++ {
		nw := bins[b].nw
		for r := range q.r {
			i := b*q.r + r
			pop, h := 0, int32(math.MaxInt32)
			for w, v := range qw[base[b]+r*nw : base[b]+r*nw+nw] {
				if v != 0 {
					pop += bits.OnesCount64(v)
					h = min(h, int32(w))
				}
			}
			q.pop[i], q.hint[i] = int32(pop), h
		}
	}
	// Buckets of bins before lo are empty.
	clear(q.pop[:lo*q.r])
	for i := range q.hint[:lo*q.r] {
		q.hint[i] = math.MaxInt32
	}
	q.cur[0] = lo * q.r
	ci.unbuilt &^= 1 << n
}

// pmFirst is picker.pmFirst over bins 0..bmax: the n best free GPUs of
// class c, ordered by (bin, tie-break, GPU id). It returns them ascending
// in x.buf, or nil when fewer than n qualify.
func (x *scoreIndex) pmFirst(c, n, bmax int, tb PMFirstTieBreak) []int {
	ci := &x.cls[c]
	if bmax < 0 || x.total < n {
		return nil
	}
	tk := x.fuse && x.narrow && (!x.withinOn || x.divM != 0 && x.col32[c] != nil)
	if n == 1 && tb == PMFirstArtifact {
		if tk {
			return x.pmFirstOneTake(c, bmax)
		}
		return x.pmFirstOne(c, bmax)
	}
	if ci.freeUpTo(bmax, x.total) < n {
		return nil
	}
	x.buf, x.runs = x.buf[:0], x.runs[:0]
	r := n
	for b := ci.first(x.total); b <= bmax && r > 0; b++ {
		f := int(ci.binFree[b])
		if f == 0 {
			continue
		}
		if f <= r || tb != PMFirstArtifact {
			// The whole bin goes, so order inside it does not matter; or
			// the paper's tie-break, GPU id, i.e. nodes in id order.
			x.runs = append(x.runs, len(x.buf))
			if tk {
				r = x.walkTake(c, b, x.allBuckets(ci, b), r)
			} else {
				r = x.walk(c, b, x.allBuckets(ci, b), r)
			}
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
				x.runs = append(x.runs, len(x.buf))
				if tk {
					r = x.walkTake(c, b, x.ks, r)
				} else {
					r = x.walk(c, b, x.ks, r)
				}
			}
		}
	}
	if r > 0 {
		return nil // unreachable: the free counts said n qualify
	}
	x.sortRuns()
	x.took = tk
	return x.buf
}

// sortRuns sorts buf, a run of ascending ids from each walk (a walk
// visits a bin's nodes in id order) starting at each of runs: in order
// when each run starts above the last one's end (O(runs) to check, where
// slices.IsSorted read every id of every pick), else merged pairwise.
// slices.IsSorted and slices.Sort took about 4.5% of a PM-First round's
// instructions at 4608x6, the sort mostly on big jobs' picks across a
// few bins.
func (x *scoreIndex) sortRuns() {
	buf, runs := x.buf, x.runs
	sorted := true
	for _, st := range runs[min(1, len(runs)):] {
		if st > 0 && st < len(buf) && buf[st-1] > buf[st] {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	runs = append(runs, len(buf))
	x.mbuf = slices.Grow(x.mbuf[:0], len(buf))[:len(buf)]
	src, dst := buf, x.mbuf
	for len(runs) > 2 {
		// Merge runs 0+1, 2+3, ... from src into dst; runs keeps the
		// starts of the merged ones (and the end).
		k := 0
		for a := 0; a+1 < len(runs); a += 2 {
			lo, mid, hi := runs[a], runs[a+1], runs[len(runs)-1]
			if a+2 < len(runs) {
				hi = runs[a+2]
			}
			mergeInto(dst[lo:hi], src[lo:mid], src[mid:hi])
			runs[k] = lo
			k++
		}
		runs[k] = len(buf)
		runs = runs[:k+1]
		src, dst = dst, src
	}
	if &src[0] != &buf[0] {
		copy(buf, src)
	}
}

// mergeInto merges ascending a and b into dst (len(a)+len(b)).
func mergeInto(dst, a, b []int) {
	i, j := 0, 0
	for k := range dst {
		if j >= len(b) || i < len(a) && a[i] <= b[j] {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
	}
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
	p := x.firstIn(ci, bi, lowestBucket(ci, bi))
	if g := ci.only[int(bi.off)+p]; g >= 0 {
		x.buf = append(x.buf[:0], int(g))
		return x.buf
	}
	nd := ci.binNodes[int(bi.off)+p]
	if x.narrow {
		x.buf = append(x.buf[:0], int(x.nodeStart[nd])+bits.TrailingZeros64(x.nodeMask(nd)&ci.pmask[int(bi.off)+p]))
		return x.buf
	}
	for g := int(x.nodeStart[nd]); ; g++ {
		if x.isFree(g) && ci.gbin[g] == int32(b) {
			x.buf = append(x.buf[:0], int(g))
			return x.buf
		}
	}
}

// lowestBucket is bin bi's lowest non-empty count bucket, whose first
// node (firstIn) holds the bin's first free GPU for a one-GPU pick. The
// bin has a free GPU, so some bucket holds its node.
func lowestBucket(ci *classIndex, bi *binInfo) int32 {
	k := int32(1)
	for ci.pop[bi.popOff+k] == 0 {
		k++
	}
	return k
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
			if x.narrow {
				// A multi pair: its free GPUs in id order are the set
				// bits of the node's free mask under the pair's.
				s := int(x.nodeStart[nd])
				for m := x.nodeMask(nd) & ci.pmask[int(bi.off)+p]; m != 0 && r > 0; m &= m - 1 {
					x.buf = append(x.buf, s+bits.TrailingZeros64(m))
					r--
				}
				continue
			}
			// Without node masks: which of the node's GPUs are free is a
			// coin toss to the branch predictor, so each is appended and
			// kept by a count instead of a branch.
			for g := x.nodeStart[nd]; g < x.nodeStart[nd+1] && r > 0; g++ {
				k := x.freeBit(int(g)) & bit(ci.gbin[g] == int32(b))
				x.buf = append(x.buf, int(g))
				x.buf = x.buf[:len(x.buf)-1+k]
				r -= k
			}
		}
	}
	return r
}

// walkTake is walk with the take fused in, for the base frame of an
// index on nodes of at most 64 GPUs (with within queues, PAL's, on
// nodes of one size with a packed column: it keeps their node masks as
// takeOne does; see fuse):
// a pick of the prefix is always taken, and the walk already holds what
// takeOne would look up again GPU by GPU (each GPU's bin and position in
// the class's column, the bin's layout, the pair's bucket). A node's
// single pairs are cleared from bucket 1 a word at a time, and a multi
// pair moves once from bucket k to k-t for its t GPUs taken. The state
// it leaves is takeOne's: the same words, pop, cnt and binFree, and the
// hints takeOne lowers, step by step, for buckets k-1 down to k-t. (The
// multi pair's part as a call of its own, to spare the single pairs'
// loop its spills, cost more than it saved: 7.95M instructions a
// PM-First round at 4608x6 against 7.71M.)
func (x *scoreIndex) walkTake(c, b int, ks []int32, r int) int {
	ci := &x.cls[c]
	bi := &ci.bins[b]
	nw := int(bi.nw)
	base := int(bi.bitOff)
	off := int(bi.off)
	nodes := ci.binNodes[off : off+int(bi.n)]
	only := ci.only[off : off+int(bi.n)]
	pmask := ci.pmask[off : off+int(bi.n)]
	pop := ci.pop[bi.popOff : bi.popOff+bi.maxCnt+1]
	hint := ci.hint[bi.popOff : bi.popOff+bi.maxCnt+1]
	words, fb := x.words, x.fbits
	// PAL's index (within queues) keeps each node's free GPUs of the
	// class in rank order too (smask), as takeOne does.
	within := x.withinOn
	smask, c32, divM, divS := ci.smask, x.col32[c], x.divM, x.divS
	start := int32(nw)
	for _, k := range ks {
		h := &hint[k]
		for o := base + int(k-1)*nw; *h < int32(nw) && words[o+int(*h)] == 0; {
			*h++
		}
		start = min(start, *h)
	}
	buf := x.buf
	taken := 0
	for w := int(start); w < nw && r > 0; w++ {
		var m uint64
		for _, k := range ks {
			m |= words[base+int(k-1)*nw+w]
		}
		var ones uint64 // single pairs taken in this word (bucket 1)
		for m != 0 && r > 0 {
			low := m & -m
			p := w<<6 | bits.TrailingZeros64(m)
			m &= m - 1
			if g := only[p]; g >= 0 {
				buf = append(buf, int(g))
				fb[g>>6] &^= 1 << (g & 63)
				if within {
					smask[uint64(g)*divM>>divS] &^= 1 << (c32[g] & 63)
				}
				ones |= low
				r--
				continue
			}
			nd := nodes[p]
			s := int(x.nodeStart[nd])
			t := int32(0)
			for m := x.nodeMask(nd) & pmask[p]; m != 0 && r > 0; m &= m - 1 {
				g := s + bits.TrailingZeros64(m)
				buf = append(buf, g)
				fb[g>>6] &^= 1 << (g & 63)
				if within {
					smask[nd] &^= 1 << (c32[g] & 63)
				}
				r--
				t++
			}
			// Move the node from bucket k to bucket k-t of its bin.
			fi := off + p
			k := ci.cnt[fi]
			ci.cnt[fi] = k - t
			words[base+int(k-1)*nw+w] &^= low
			pop[k]--
			if k-t >= 1 {
				words[base+int(k-t-1)*nw+w] |= low
				pop[k-t]++
			}
			for kk := k - 1; kk >= max(k-t, 1); kk-- {
				hint[kk] = min(hint[kk], int32(w))
			}
			taken += int(t)
		}
		if ones != 0 {
			words[base+w] &^= ones
			n1 := bits.OnesCount64(ones)
			pop[1] -= int32(n1)
			taken += n1
		}
	}
	x.buf = buf
	ci.binFree[b] -= int32(taken)
	x.total -= taken
	return r
}

// pmFirstOneTake is pmFirstOne with the take fused in (see walkTake).
func (x *scoreIndex) pmFirstOneTake(c, bmax int) []int {
	ci := &x.cls[c]
	b := ci.first(x.total)
	if b > bmax {
		return nil
	}
	bi := &ci.bins[b]
	k := lowestBucket(ci, bi)
	p := x.firstIn(ci, bi, k)
	fi := int(bi.off) + p
	g := int(ci.only[fi])
	if g < 0 {
		nd := ci.binNodes[fi]
		g = int(x.nodeStart[nd]) + bits.TrailingZeros64(x.nodeMask(nd)&ci.pmask[fi])
		ci.cnt[fi] = k - 1
	}
	// Move the node from bucket k to bucket k-1 of its bin.
	x.fbits[g>>6] &^= 1 << (g & 63)
	if x.withinOn {
		ci.smask[uint64(g)*x.divM>>x.divS] &^= 1 << (x.col32[c][g] & 63)
	}
	w := int(bi.bitOff) + p>>6
	bit := uint64(1) << (p & 63)
	x.words[w+int(k-1)*int(bi.nw)] &^= bit
	ci.pop[bi.popOff+k]--
	if k > 1 {
		x.words[w+int(k-2)*int(bi.nw)] |= bit
		ci.pop[bi.popOff+k-1]++
		if h := &ci.hint[bi.popOff+k-1]; *h > int32(p>>6) {
			*h = int32(p >> 6)
		}
	}
	ci.binFree[b]--
	x.total--
	x.buf = append(x.buf[:0], g)
	x.took = true
	return x.buf
}

// within is refWithin over bins 0..bv: the node whose n-th best free GPU
// has the smallest bin (ties: more free GPUs in bins <= bv, then lower
// id), and there its first n free GPUs in bins <= that bin. The result is
// in x.buf, ascending; nil when no node has n such GPUs.
func (x *scoreIndex) within(c, n, bv int) []int {
	if bv < 0 || n < 2 || n > x.maxPer {
		return nil
	}
	bn, node := x.wmin(c, n)
	if bn > bv {
		return nil
	}
	if bn < bv {
		// The queue's tie-break counted GPUs up to bn, the reference counts
		// them up to bv: re-rank the nodes whose n-th bin is bn. PAL's own
		// L×V orders never get here (the within entry of bn comes first
		// and would have succeeded), hand-built orders may.
		node = x.rerank(c, n, bn, bv)
	}
	return x.fromNode(c, node, n, bn)
}

// fromNode puts node's first n free GPUs of class c in bins <= b in
// x.buf, ascending (the node has them).
func (x *scoreIndex) fromNode(c, node, n, b int) []int {
	gbin := x.cls[c].gbin
	x.buf = x.buf[:0]
	if x.narrow {
		// Only the free GPUs, from the node's mask, in id order.
		s := int(x.nodeStart[node])
		for m := x.nodeMask(int32(node)); m != 0 && len(x.buf) < n; m &= m - 1 {
			g := s + bits.TrailingZeros64(m)
			k := bit(int(gbin[g]) <= b)
			x.buf = append(x.buf, g)
			x.buf = x.buf[:len(x.buf)-1+k]
		}
		return x.buf
	}
	for g := x.nodeStart[node]; g < x.nodeStart[node+1] && len(x.buf) < n; g++ {
		k := x.freeBit(int(g)) & bit(int(gbin[g]) <= b) // no branch on the flags (see walk)
		x.buf = append(x.buf, int(g))
		x.buf = x.buf[:len(x.buf)-1+k]
	}
	return x.buf
}

// bit is 1 for true and 0 for false, without a branch.
func bit(b bool) int {
	var k int
	if b {
		k = 1
	}
	return k
}

// withinTop finds the within queue's best node for n GPUs of class c on
// the count buckets instead, when it lies in the lowest bin with a free
// GPU: no
// node has a free GPU below that bin, so a node's n-th best free GPU is
// in it exactly when the node has n free GPUs there, and its count of
// GPUs scoring no worse is that number. The minimum is then the node
// with the most, lowest id first: the first node of the highest
// non-empty bucket k >= n. ok is false when no node has n free GPUs in
// the bin (the best, if any, is in a later bin: ask the queue). Keeping
// PAL's usual within pick off the queues means their stale entries are
// re-filed only for the picks that need them.
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
// GPUs in bins <= bv (more first, then lower id), right after wmin found
// bn: every node whose key's bin is bn is then filed in bin bn (none is
// filed before it, and entries are never worse than the key), though a
// stale one there may have moved on.
func (x *scoreIndex) rerank(c, n, bn, bv int) int {
	ci := &x.cls[c]
	q := &ci.wq[n]
	bi := &ci.bins[bn]
	best, bestCnt := -1, -1
	for r := range q.r {
		o := q.wOff + ci.nwStart[bn]*q.r + r*bi.nw
		for w := range bi.nw {
			for m := x.words[o+w]; m != 0; m &= m - 1 {
				nd := int(ci.binNodes[bi.off+w<<6+int32(bits.TrailingZeros64(m))])
				if tb, _, _ := x.wkey(ci, n, nd); int(tb) != bn {
					continue
				}
				cnt := 0
				for g := x.nodeStart[nd]; g < x.nodeStart[nd+1]; g++ {
					if x.isFree(int(g)) && int(ci.gbin[g]) <= bv {
						cnt++
					}
				}
				if cnt > bestCnt || cnt == bestCnt && nd < best {
					best, bestCnt = nd, cnt
				}
			}
		}
	}
	return best
}

// frame is the class-first round frame (refClassFirstFrame) on the index:
// the must-schedule prefix ordered by class with a counting sort (stable,
// like the reference's stable sort), the rest in order, greedy until the
// first miss. A job that gets back exactly the GPUs it holds is handed its
// own slice, so steady rounds allocate only for jobs that move. m, if not
// nil, is a migration-aware rule: when it pins a running job the frame is
// its moveFrame, in the same visiting order.
//
// The answer goes to out (len(order), all nil); ready, if not nil, is told
// as it becomes final (see policy.Streamer): every StreamChunk jobs when
// the frame visits the jobs in order (one class), else once at the end.
func (x *scoreIndex) frame(order []*workload.Job, out [][]int, ready func(int), pick func(n, c int) []int, m *mover) {
	k, sum := 0, 0
	x.byCls = [variability.NumClasses + 1]int{}
	for ; k < len(order); k++ {
		d := x.dem[k]
		if sum+int(d.n) > x.size {
			break
		}
		sum += int(d.n)
		x.byCls[d.c+1]++
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
		// ends where the next begins). A local slice: a store through
		// x.idx reloaded the field each time (9 instructions a job).
		idx := x.idx
		for i := range idx {
			idx[i] = i
		}
		copy(x.byCls[:], x.byCls[1:])
	} else {
		for i, d := range x.dem[:k] {
			x.idx[x.byCls[d.c]] = i
			x.byCls[d.c]++
		}
		for i := k; i < len(order); i++ {
			x.idx[i] = i
		}
	}
	// The prefix runs class by class and a job past it can only fail on
	// the free count (the prefix holds all but fewer GPUs than it needs),
	// so once a class's last job is placed its structures are never read
	// again this round: take stops maintaining them. A trace of one class
	// (Synergy's) then costs a quarter of the updates. A class's run
	// reads its structures only from its start (see the lazy loads
	// below).
	var live [variability.NumClasses]bool
	for c := range live {
		live[c] = x.byCls[c] > 0 && (c == 0 || x.byCls[c] > x.byCls[c-1])
	}
	if m != nil && x.pins > 0 {
		if classes <= 1 {
			m.ready = ready // the visiting order is the order
		}
		x.prefix = k
		x.moveFrameOn(order, out, ready, pick, m)
		return
	}
	// The round's answer is a function of the demands it visits up to
	// position k, the first past the prefix (see frameMemo).
	end := min(k+1, len(x.idx))
	slot, hit, rec := x.memo.slot(x.size, x.dem, x.idx[:end])
	if hit {
		x.answers(slot, order, out, x.idx[:end])
		if ready != nil {
			ready(len(order))
		}
		return
	}
	if rec {
		x.memo.keep(slot, x.dem, x.idx[:end])
	}
	// Only the class being placed is kept current: the next one is
	// rebuilt off the free mask in one pass (load) when its run starts.
	// Kept current from the start instead, every take would update every
	// class still to come; at 27,648 GPUs the rebuilds cost about a tenth
	// less than those updates (both placers), and a take then reads only
	// that class's column (see col). So reset restores the first class
	// alone: a load rewrites all of a class's structures, and restoring
	// the others too would copy them twice.
	if k > 0 {
		c0 := int(x.dem[x.idx[0]].c)
		for c := range live {
			live[c] = live[c] && c == c0
		}
	}
	x.reset(live)
	cur, end0 := 0, x.byCls[0] // end0: where class cur's run ends
	stream := ready != nil && classes <= 1
	for p, i := range x.idx {
		if stream && p%policy.StreamChunk == 0 && p > 0 {
			ready(p)
		}
		if p >= end0 && p < k {
			for p < k && cur < len(x.live) && x.byCls[cur] <= p {
				x.live[cur] = false
				cur++
			}
			end0 = math.MaxInt
			if cur < len(x.live) {
				end0 = x.byCls[cur]
			}
		}
		d := x.dem[i]
		if p < k && !x.live[d.c] {
			x.load(int(d.c))
			x.live[d.c] = true
		}
		x.fuse = p < k
		g := pick(int(d.n), int(d.c))
		// The frame stops by end (see frameMemo); a pick is its demand.
		rec = rec && p < end && (g == nil || len(g) == int(d.n) && len(g) > 0)
		if rec {
			x.memo.put(slot, p, g)
		}
		if g == nil {
			break
		}
		if x.took {
			x.took = false // pmFirst took it as it walked (see fuse)
		} else if p < k {
			// d.c alone is live here (see above): take's count of the
			// live classes, every pick, was a sixth of its instructions.
			x.takeOne(int(d.c), g)
		} else {
			x.take(g)
		}
		if window(g) {
			// line's answer for it, without the call: most picks are
			// of one GPU.
			out[i] = x.ids[g[0] : g[0]+len(g) : g[0]+len(g)]
			continue
		}
		x.lastRef = 0
		out[i] = x.line(order[i], g)
		if rec && x.lastRef != 0 {
			x.memo.ref(slot, p, x.lastRef)
		}
	}
	x.fuse, x.took = false, false
	if rec {
		x.memo.done(slot)
	}
	if ready != nil {
		ready(len(order))
	}
}

// own turns a pick (scratch) into j's line of the answer: fresh's, but
// a staying job whose pick is no window gets its own list back.
func (x *scoreIndex) own(j *workload.Job, g []int) []int {
	if !window(g) && j.Running() && slices.Equal(j.GPUsHeld, g) {
		return j.GPUsHeld
	}
	return x.fresh(g)
}

// line turns j's pick (scratch) into its line of the answer: fresh,
// which does not read the job, on a cluster past internGPUs, own on a
// smaller one (see fresh).
func (x *scoreIndex) line(j *workload.Job, g []int) []int {
	if x.size > internGPUs {
		return x.fresh(g)
	}
	return x.own(j, g)
}

// window reports whether ascending g is consecutive ids (every one-GPU
// answer), which an answer hands out as a window of the read-only id
// list, with no allocation (see policy.Placer). A job that ran on it
// last round holds this very window, so the driver sees it stay with a
// pointer compare, and the frame never reads the job's own list.
func window(g []int) bool { return g[len(g)-1]-g[0] == len(g)-1 }

// fresh is own without reading the job: a staying job whose list is not
// a window of ids gets a copy, not its own list. The driver still sees
// it stay (round.Applier checks a copy against the owner table, without
// reading the job's list either), and the frame, which reads each job's
// demand only in gather, reads neither the job's GPUsHeld nor the list
// it points to: on the million-job trace those two cache misses (own's
// check of a running job) were a seventh of the CPU samples of the
// placer's goroutine (a migration-aware frame uses it too, see line,
// though there it measured no faster). On a cluster small enough to
// intern answers (see
// answerSet) the frame uses own: its jobs stay in the cache, and a
// lookup of the interned set cost more than the read (under LAS on
// 16x4, 1.7% more CPU a run).
func (x *scoreIndex) fresh(g []int) []int {
	if window(g) {
		return x.ids[g[0] : g[0]+len(g) : g[0]+len(g)]
	}
	return x.keep(g)
}

// keepChunk is the size, in GPU ids, of the blocks keep carves answers
// from: a round's moved multi-GPU jobs then cost a handful of
// allocations instead of one each (1,291 a round at 27,648 GPUs), while
// a long-running job's answer pins at most one small block.
const keepChunk = 256

// keep copies g into the current block (a fresh one when it is short)
// and returns the copy with its capacity cut to its length, so an append
// to one answer never writes into the next. Blocks are never reused: an
// answer is the caller's to keep. On a small cluster the copy is the
// shared one of its set (see answerSet).
func (x *scoreIndex) keep(g []int) []int {
	x.lastRef = 0
	if x.size <= internGPUs {
		if l, k := x.sets.find(g); l != nil {
			x.lastRef = k
			return l
		}
	}
	if len(x.keepBuf) < len(g) {
		x.keepBuf = make([]int, max(keepChunk, len(g)))
	}
	s := x.keepBuf[:len(g):len(g)]
	x.keepBuf = x.keepBuf[len(g):]
	copy(s, g)
	return s
}

// freeBelow counts class c's free GPUs scoring below thr, up to need:
// bins from the lowest with a free GPU, while their score is below thr.
// For a retired class (see retire) it is a bound, never below the truth:
// what the class's frozen counts held below thr when it retired, plus
// every GPU given back since.
func (x *scoreIndex) freeBelow(c int, thr float64, need int) int {
	ci := &x.cls[c]
	if !x.live[c] {
		n := x.given - x.givenAt[c]
		for b := 0; b < len(ci.vals) && ci.vals[b] < thr && n < need; b++ {
			n += int(ci.binFree[b])
		}
		return min(n, need)
	}
	n := 0
	for b := ci.first(x.total); b < len(ci.vals) && ci.vals[b] < thr && n < need; b++ {
		n += int(ci.binFree[b])
	}
	return n
}

// retire stops maintaining class c's structures (take and give skip it)
// until a pick revives it; its counts stay as they were, which freeBelow
// bounds on.
func (x *scoreIndex) retire(c int) {
	x.live[c] = false
	x.givenAt[c] = x.given
}

// moveFrameOn runs the migration rule's frame (see moveFrame) on the
// index, in frame's visiting order. As in the base frame, a class's
// structures are kept only over its run of the prefix: loaded from the
// free mask when the run starts (the takes before it skip the class) and
// retired (see retire) when it ends. After that only a pinned job of the
// class asks about it (mayPay bounds it on the retired counts) or a job
// past the prefix, which fits only once a preemption frees GPUs, and a
// pick revives it with one load. Keeping every class live to the end of
// the order instead would make every take update every class (jobs past
// the prefix are in order, not by class).
func (x *scoreIndex) moveFrameOn(order []*workload.Job, out [][]int, ready func(int), pick func(n, c int) []int, m *mover) {
	var live [variability.NumClasses]bool
	var last, first [variability.NumClasses]int
	for p, i := range x.idx {
		c := x.dem[i].c
		if !live[c] {
			live[c], last[c], first[c] = true, -1, p
		}
		if p < x.prefix {
			last[c] = p
		}
	}
	x.resetBounds(live)
	for c := range last {
		// A class is loaded only when its run of the prefix starts (see
		// visited), so the takes before it skip it.
		if live[c] && (last[c] < 0 || first[c] > 0) {
			x.retire(c)
		}
	}
	m.freeBelow, m.room = x.freeBelow, x.room
	m.visited = func(p int) int {
		for c := range last {
			// The class whose run ends the prefix stays live: past the
			// prefix a job fits only once a preemption frees GPUs, so
			// takes and gives are few there, and the first job past the
			// prefix is as likely of that class as of any other (kept,
			// its pick needs no load).
			if last[c] == p && p+1 < x.prefix {
				x.retire(c)
			}
		}
		if p+1 < x.prefix {
			if c := x.dem[x.idx[p+1]].c; first[c] == p+1 && !x.live[c] {
				x.revive(int(c))
			}
		}
		// Only a class's last position and the one before its first
		// change anything: the next of those is the next turn to hear of.
		next := len(x.idx)
		for c := range last {
			if last[c] > p {
				next = min(next, last[c])
			}
			if first[c]-1 > p {
				next = min(next, first[c]-1)
			}
		}
		return next
	}
	x.hist = true // reserve counts the nodes by free GPUs (fillHist)
	m.moveFrame(order, x.idx, out, x, &x.ms, func(i int) []int {
		d := x.dem[i]
		if int(d.n) > x.total {
			// Both placers' picks fail on the free count before they
			// read a class (PAL.pick, pmFirst): a job past the prefix
			// that waits for a preemption costs no load.
			return nil
		}
		if !x.live[d.c] {
			x.revive(int(d.c))
		}
		// A job not pinned takes its pick (takePick): with its class
		// alone live, as in the base frame, the pick takes as it walks.
		x.fuse = !x.lent && x.live == x.onlyLive(int(d.c))
		g := pick(int(d.n), int(d.c))
		x.fuse = false
		return g
	}, func(i int, g []int) []int { return x.line(order[i], g) })
	x.hist = false
	if ready != nil {
		ready(len(order))
	}
}

// revive makes class c's structures current again after it was retired
// (see moveFrameOn), from the free mask.
func (x *scoreIndex) revive(c int) {
	x.load(c)
	x.live[c] = true
}

// fillHist counts the nodes by free GPUs.
func (x *scoreIndex) fillHist() {
	x.freeHist = slices.Grow(x.freeHist[:0], x.maxPer+1)[:x.maxPer+1]
	clear(x.freeHist)
	for _, f := range x.nodeFree {
		x.freeHist[f]++
	}
}

// room reports whether some node has n GPUs free, counting held (a
// job's own, ascending, so a node's are consecutive).
func (x *scoreIndex) room(n int, h []int) bool {
	if n > x.maxPer {
		return false
	}
	for k := n; k <= x.maxPer; k++ {
		if x.freeHist[k] > 0 {
			return true
		}
	}
	for a := 0; a < len(h); {
		nd := x.nodeOf(h[a])
		b := a + 1
		for b < len(h) && x.nodeOf(h[b]) == nd {
			b++
		}
		if int(x.nodeFree[nd])+b-a >= n {
			return true
		}
		a = b
	}
	return false
}

// reserve implements moveSpace on the marks gatherPinned made: it reads
// no job (a pinned job's GPUs are its line of out), nor the lines: the
// pinned jobs' GPUs are resv's bits, taken off the free mask a word at
// a time. (Taken job by job, GPU by GPU, with a free check each, they
// cost 0.70M instructions of a pm-first-ma round at 27,648 GPUs.) A
// live class's
// structures are loaded from the free mask in one pass (load) rather
// than by taking the reserved GPUs one by one: about half the cluster is
// reserved in a loaded round, and the per-GPU path would update every
// live class for every reserved GPU.
func (x *scoreIndex) reserve(order []*workload.Job, m *mover, st *moveScratch, out [][]int) {
	fb, nf, n := x.fbits, x.nodeFree, 0
	for w, r := range x.resv {
		cl := fb[w] & r // a GPU two pinned jobs hold is taken once
		if cl == 0 {
			continue
		}
		fb[w] &^= cl
		n += bits.OnesCount64(cl)
		if divM, divS := x.divM, x.divS; divM != 0 {
			for ; cl != 0; cl &= cl - 1 {
				nf[uint64(w<<6|bits.TrailingZeros64(cl))*divM>>divS]--
			}
			continue
		}
		for ; cl != 0; cl &= cl - 1 {
			nf[x.gpuNode[w<<6|bits.TrailingZeros64(cl)]]--
		}
	}
	x.total -= n
	if x.hist {
		x.fillHist()
	}
	for c := range x.cls {
		if x.live[c] {
			x.load(c)
		}
	}
}

// load makes class c's structures those of the free mask fbits: the
// counts and buckets are rebuilt in one pass over the bins' node lists.
// Hints and the bin cursor restart at 0, which is always a valid lower
// bound (walks move them up). Each node's free mask is read off the free
// GPUs, and PAL's within queues are left for buildQueue to file from
// those masks when a job first asks for one.
func (x *scoreIndex) load(c int) {
	ci := &x.cls[c]
	free := x.spreadFlags()
	counts := len(ci.cnt) + len(ci.pop) + len(ci.hint) + len(ci.binFree) + len(ci.lo)
	binWords := ci.wHi
	if x.withinOn {
		ci.unbuilt = ^uint64(0)
		binWords = ci.smOff
		if tab := x.permTab; tab != nil {
			pi := ci.permIdx[:len(ci.smask)]
			for nd := range ci.smask {
				ci.smask[nd] = uint64(tab[int(pi[nd])<<6|int(x.nodeMask(int32(nd)))])
			}
		} else if per := x.maxPer; x.divM != 0 {
			// Nodes of per GPUs each (see divider): node nd's GPUs are
			// nd*per.., read as fixed windows without nodeStart.
			free, pos := free[:len(ci.smask)*per], ci.pos[:len(ci.smask)*per]
			for nd := range ci.smask {
				fr, ps := free[nd*per:nd*per+per], pos[nd*per:nd*per+per]
				var m uint64
				for i, fl := range fr {
					m |= uint64(fl) << (ps[i] & 63)
				}
				ci.smask[nd] = m
			}
		} else {
			for nd := range ci.smask {
				var m uint64
				for g := x.nodeStart[nd]; g < x.nodeStart[nd+1]; g++ {
					m |= uint64(free[g]) << (ci.pos[g] & 63)
				}
				ci.smask[nd] = m
			}
		}
	}
	clear(x.i32[ci.i32Lo : ci.i32Lo+counts])
	clear(x.words[ci.wLo:binWords])
	// Most (bin, node) pairs hold one GPU (see only), whose free flag is
	// the pair's count: only the GPUs of the other pairs (multi) are
	// counted GPU by GPU, and the pass over the bins' node lists reads
	// the rest off the free mask. A migration-aware round loads about
	// five classes at 27,648 GPUs, and the pass over every GPU this
	// replaces was most of a load.
	cnt, bins := ci.cnt, ci.bins
	if x.withinOn {
		// The node masks are current: a pair's count is a popcount, one
		// per pair rather than a read per GPU (a class of two bins on
		// 4608x6 has 25,815 GPUs in 7,000-odd such pairs).
		smask := ci.smask
		for _, p := range ci.pairs {
			cnt[p.at] = int32(bits.OnesCount64(smask[p.node] & p.ranks))
		}
	} else {
		// GPU by GPU here: a popcount of the node's free mask under the
		// pair's GPUs (pmask), one a pair, cost more instructions
		// (PM-First on 4608x6: 1.59M a round against 1.49M) and was no
		// faster (BenchmarkLoad/within=false, best of 12: 130 against
		// 127 µs).
		for _, m := range ci.multi {
			cnt[m.at] += int32(free[m.g])
		}
	}
	// Whether a GPU is free is a coin toss to the branch predictor, so a
	// single pair's bit is gathered into a register without a branch and
	// stored a word at a time, and counted (into pop's bucket 1 and the
	// bin's free GPUs) by a popcount of the word: counted pair by pair,
	// every count would wait on the store of the one before. A multi
	// pair's entry reads the padding flag (see sole), so the gather
	// does not branch on the kind of pair either; those pairs are filed
	// after, from their counts. (A single pair's count, cnt, stays 0:
	// never read, see multiPair.)
	for b, bi := range bins {
		ones := 0
		w1 := x.words[bi.bitOff : bi.bitOff+bi.nw]
		so := ci.sole[bi.off : bi.off+bi.n]
		for k := range w1 {
			s := so[k*64 : min(len(so), k*64+64)]
			var acc uint64
			i := 0
			for ; i+8 <= len(s); i += 8 {
				// Eight at a time: the loop's own count and compare were
				// half of a GPU's instructions.
				q := s[i : i+8 : i+8]
				acc |= (uint64(free[q[0]]) | uint64(free[q[1]])<<1 |
					uint64(free[q[2]])<<2 | uint64(free[q[3]])<<3 |
					uint64(free[q[4]])<<4 | uint64(free[q[5]])<<5 |
					uint64(free[q[6]])<<6 | uint64(free[q[7]])<<7) << (i & 63)
			}
			for ; i < len(s); i++ {
				acc |= uint64(free[s[i]]) << (i & 63)
			}
			w1[k] |= acc
			ones += bits.OnesCount64(acc)
		}
		ci.pop[bi.popOff+1] += int32(ones)
		ci.binFree[b] = int32(ones)
	}
	for _, p := range ci.pairs {
		if k := cnt[p.at]; k > 0 {
			bi := &bins[p.bin]
			pos := p.at - bi.off
			x.words[int(bi.bitOff)+int(k-1)*int(bi.nw)+int(pos>>6)] |= 1 << (pos & 63)
			ci.pop[bi.popOff+k]++
			ci.binFree[p.bin] += k
		}
	}
	x.dirty[c] = true
}

// lend implements moveSpace: a pick for j reads only its own class's
// structures (and the shared columns), so j's GPUs are given back in
// those alone; if j stays, unlend takes them back there, and only if it
// moves does settle free them in every other live class too.
func (x *scoreIndex) lend(j *workload.Job) {
	x.lent = true
	saved := x.live
	x.live = x.onlyLive(int(j.Class))
	x.give(j.GPUsHeld)
	x.live = saved
}

// unlend implements moveSpace (see lend).
func (x *scoreIndex) unlend(j *workload.Job) {
	x.lent = false
	saved := x.live
	x.live = x.onlyLive(int(j.Class))
	x.take(j.GPUsHeld)
	x.live = saved
}

// settle implements moveSpace (see lend): the other live classes see
// j's GPUs free, the shared columns already do.
func (x *scoreIndex) settle(j *workload.Job) {
	x.lent = false
	saved := x.live
	x.live[j.Class] = false
	if x.live != ([variability.NumClasses]bool{}) {
		for _, g := range j.GPUsHeld {
			x.fbits[g>>6] &^= 1 << (g & 63)
			x.nodeFree[x.nodeOf(g)]--
		}
		x.total -= len(j.GPUsHeld)
		hist := x.hist
		x.hist = false
		x.give(j.GPUsHeld)
		x.hist = hist
	}
	x.live = saved
}

// onlyLive is the live set with class c alone (if it is live).
func (x *scoreIndex) onlyLive(c int) (l [variability.NumClasses]bool) {
	l[c] = x.live[c]
	return l
}

// freeCount implements moveSpace.
func (x *scoreIndex) freeCount() int { return x.total }

// takePick implements moveSpace: the GPUs are taken unless the pick took
// them (took, see fuse), when only the nodes' free counts (hist) are
// left to count.
func (x *scoreIndex) takePick(gpus []int) {
	if !x.took {
		x.take(gpus)
		return
	}
	x.took = false
	switch {
	case !x.hist:
	case x.divM != 0:
		x.takeHist(gpus)
	default:
		nf := x.nodeFree
		for _, g := range gpus {
			nd := x.gpuNode[g]
			x.freeHist[nf[nd]]--
			x.freeHist[nf[nd]-1]++
			nf[nd]--
		}
	}
}

// discard implements moveSpace (the index caches no pick).
func (x *scoreIndex) discard() {}

// give marks gpus free again in the structures of every live class:
// take's inverse, for the migration-aware frame (a pinned job offered
// its own GPUs, a preemption). Count buckets, hints and the bin cursor
// move back exactly; a within queue gets the node filed under its new,
// better key, and the entry it had stays behind as a stale one that is
// too bad rather than too good: wmin meets the better one first, and
// drops the other when it gets there (wput never files a node twice in
// one bucket).
func (x *scoreIndex) give(gpus []int) {
	x.given += len(gpus)
	for _, g := range gpus {
		x.fbits[g>>6] |= 1 << (g & 63)
		nd := x.nodeOf(g)
		if x.hist {
			x.freeHist[x.nodeFree[nd]]--
			x.freeHist[x.nodeFree[nd]+1]++
		}
		x.nodeFree[nd]++
		bps := &x.bp[g]
		for c := range x.cls {
			if !x.live[c] {
				continue
			}
			ci := &x.cls[c]
			bp := bps[c]
			bin, pr := bp.bin&^multiPair, bp.pos
			pos := pr >> 6
			if x.withinOn {
				ci.smask[nd] |= 1 << (pr & 63)
			}
			// Move the node from bucket k to bucket k+1 of its bin.
			bi := &ci.bins[bin]
			fi := bi.off + pos
			k := int32(0) // a single GPU's pair (see take)
			if bp.bin&multiPair != 0 {
				k = ci.cnt[fi]
			}
			ci.cnt[fi] = k + 1
			w := int(bi.bitOff) + int(pos>>6)
			bit := uint64(1) << (pos & 63)
			if k > 0 {
				x.words[w+int(k-1)*int(bi.nw)] &^= bit
				ci.pop[bi.popOff+k]--
			}
			x.words[w+int(k)*int(bi.nw)] |= bit
			ci.pop[bi.popOff+k+1]++
			if h := &ci.hint[bi.popOff+k+1]; *h > pos>>6 {
				*h = pos >> 6
			}
			ci.binFree[bin]++
			if ci.lo[0] > bin {
				ci.lo[0] = bin
			}
		}
	}
	x.total += len(gpus)
	if !x.withinOn {
		return
	}
	last := int32(-1)
	for _, g := range gpus {
		nd := x.nodeOf(g)
		if nd == last {
			continue
		}
		last = nd
		for c := range x.cls {
			if !x.live[c] {
				continue
			}
			ci := &x.cls[c]
			for n := 2; n < len(ci.wq); n++ {
				if ci.unbuilt>>n&1 != 0 {
					continue
				}
				if b, cum, p := x.wkey(ci, n, int(nd)); b >= 0 {
					q := &ci.wq[n]
					x.wput(ci, q, b, int32(x.maxPer-cum), p)
					q.cur[0] = min(q.cur[0], b*q.r+int32(x.maxPer-cum))
				}
			}
		}
	}
}

// demand is a job's GPUs and class as the frame reads them.
type demand struct{ n, c int32 }

// gather fills x.dem for order and reports whether every job's class
// indexes the score table (the reference panics on others, and so does
// the index, but the counting sort needs the range checked first). One
// tight pass lets the processor fetch many jobs at once; the picks,
// which do real work between jobs, would otherwise stall on each.
func (x *scoreIndex) gather(order []*workload.Job) bool {
	x.dem = slices.Grow(x.dem[:0], len(order))[:len(order)]
	dem, most := x.dem, x.size+1 // locals: stores through x reload its fields
	for i, j := range order {
		if j.Class < 0 || j.Class >= variability.NumClasses {
			return false
		}
		// A demand above the cluster fails like any that does not fit.
		dem[i] = demand{n: int32(min(j.GPUs, most)), c: int32(j.Class)}
	}
	return true
}

// gatherPinned is gather for a migration-aware round (m not nil): in the
// same pass, while each job is in the cache, it marks the job for the
// frame (moveScratch.mark: running, pinned, pinBound) and makes a pinned
// job's GPUs its line of out, which reserve then takes without reading
// a job. Marked in a pass of their own, the jobs were read from memory
// twice a round (at 27,648 GPUs, 8,584 jobs of 384 bytes each). The
// other way round did not pay either: a tight first pass reading what the
// bounds need of each job (cost, remaining work, the first GPU held),
// the bounds worked out in a second, made a pm-first-ma round at 4608x6
// slower (best of 6 runs of 300 rounds: 1.205 ms against 1.151 ms).
func (x *scoreIndex) gatherPinned(order []*workload.Job, m *mover, out [][]int) bool {
	if m == nil {
		return x.gather(order)
	}
	x.dem = slices.Grow(x.dem[:0], len(order))[:len(order)]
	st := &x.ms
	st.size(len(order))
	x.resv = slices.Grow(x.resv[:0], len(x.fbits))[:len(x.fbits)]
	clear(x.resv)
	dem, most, pins, resv := x.dem, x.size+1, 0, x.resv
	for i, j := range order {
		if j.Class < 0 || j.Class >= variability.NumClasses {
			return false
		}
		dem[i] = demand{n: int32(min(j.GPUs, most)), c: int32(j.Class)}
		if !m.scores {
			if st.mark(m, i, j) {
				out[i] = j.GPUsHeld
				pins++
				for _, g := range j.GPUsHeld {
					resv[g>>6] |= 1 << (g & 63)
				}
			}
			continue
		}
		// st.mark, with the bound worked out by pinBound.
		if !j.Running() {
			continue
		}
		st.ran[i] = true
		if !pinned(j) {
			continue
		}
		st.pin[i] = true
		st.bounds[i] = x.pinBound(m, j, resv)
		out[i] = j.GPUsHeld
		pins++
	}
	x.pins = pins
	return true
}

// pinBound is m.bound(j) for a placer that weighs scores, off the
// index (the worst bin of j's GPUs is its worst score, bins being the
// distinct scores, ascending), and it sets j's GPUs' bits in resv (see
// reserve) on the same pass. The job's GPUs' bins are read once from
// memory (the count below hi and lo reads them again in the cache), and
// env.Locality is asked once, for the penalty both the held slowdown and
// the bound use (a pure function of the spec, see mover.bound). Through
// mover.bound, held slowdown and counts were reached through two
// function values, each looking up the class's view and the job's GPUs
// again. The reference frame (freeSet) still uses mover.bound, and
// TestPinBoundMatchesBound compares the two.
func (x *scoreIndex) pinBound(m *mover, j *workload.Job, resv []uint64) pinBound {
	b := pinBound{pen: 1, gpus: int32(j.GPUs), class: int8(j.Class)}
	c := j.MoveCost.Migration
	w := j.Remaining() * j.IterTime
	h := j.GPUsHeld
	if math.IsInf(c, 1) || !(w > 0) {
		for _, g := range h {
			resv[g>>6] |= 1 << (g & 63)
		}
		b.never = true
		return b
	}
	ci := &x.cls[j.Class]
	gbin := ci.gbin
	bin := gbin[h[0]]
	for _, g := range h {
		bin = max(bin, gbin[g])
		resv[g>>6] |= 1 << (g & 63)
	}
	// h is ascending (workload.Job.GPUsHeld) and node ids ascend with
	// GPU ids: h spans nodes when its ends lie on two.
	spans := x.nodeOf(h[0]) != x.nodeOf(h[len(h)-1])
	s := ci.vals[bin]
	if loc := m.env.Locality; loc != nil {
		b.pen = loc(&j.Spec)
		if spans {
			s *= b.pen
		}
	}
	b.thr = s - c/w
	if m.env.Scores == nil {
		return b // heldCounts: none (unreachable on an index)
	}
	hi, lo := b.hi(), b.lo()
	vals := ci.vals
	var nh, nl int32
	for _, g := range h {
		v := vals[gbin[g]]
		nh += int32(bit(v < hi))
		nl += int32(bit(v < lo))
	}
	b.below = [2]int32{nh, nl}
	return b
}
