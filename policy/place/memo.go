package place

import (
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// frameMemo remembers whole rounds of the index's non-moving frame (see
// frame). That frame starts every round from an all-free cluster and
// visits the jobs in an order fixed by their demands, stopping at the
// first pick that fails, which is at the latest the first job past the
// prefix that fits the cluster (it fails on the free count). So the
// round's answer is a function of the demands (GPUs and class) of the
// jobs it visits up to that job, and a round whose demand sequence was
// seen before can read the answer kept for it instead of picking.
//
// An LAS round on a small cluster swaps most of its running set, yet the
// sequences repeat: on the 20,000-job Synergy trace on 16x4 nearly two
// thirds of the 120,000 rounds find their answer here. It is a two-way
// set-associative cache of rounds on clusters of at most memoGPUs GPUs
// (memoSlots of them at 128 GPUs, twice as many at 64, see
// memoSlotsFor), in pointer-free blocks (1.6 MB) allocated at the
// first round that fits: a round costs a hash of its demands and, on a
// hit, a compare, no pick and no take; a miss overwrites the slot of its
// set used less lately. A slot keeps each position's
// GPUs (a round gives out at most the cluster) and, for a set handed
// out as a shared list, which list (see ref); an answer read off it is
// made as own makes a pick's (see answers), without looking a referenced
// set up again. A trie keeping every start of
// a sequence answered 88% of the picks but cost as much as it saved: its
// walk is a chain of dependent loads through megabytes, a cache miss each,
// while a pick on a 64-GPU index stays in the first-level cache; a map of
// whole sequences cost more than it saved in fresh memory (page faults,
// collection).
//
// A slot's fields are as narrow as a cluster of memoGPUs allows (see the
// constants below): 391 bytes a slot at 64 GPUs, where 32-bit words took
// 1,040. In the memory 2,048 slots took, 4,096 now fit, and more rounds
// are answered (below, and see memoWays). With the narrow slots alone,
// the LAS run above took 0.4% more instructions (bytes are widened as
// they are read) and missed a 2 MiB last-level cache (as cachegrind
// models one) 31% less often; with the slots doubled as well, 23% less
// often.
//
// The blocks are allocated only once the index has framed memoAfter
// rounds: their first touches cost a page fault per 4 KiB, about 5 ms of
// CPU per 1.5 MB on the 2-core virtual machine of docs/performance.md,
// which was a sixth of a whole Sia-Philly run (303 rounds) and more than
// the memo saves there. The LAS run above, which waited 4,096 rounds
// when the memo was 2.1 MB, waits 1,024: with twice the slots it answers
// 77,110 rounds instead of 74,947 (76,068 waiting 4,096), in 5,879
// million instructions instead of 5,910 million (cachegrind, GOMAXPROCS=1
// GOGC=off).
type frameMemo struct {
	rounds int      // rounds framed by this index, up to memoAfter
	tags   []uint64 // per slot: the hash of the kept sequence (0: empty)
	// per slot, wide words: the length, each position's demand key and
	// its answer as a reference into the index's answerSet (index+1; 0:
	// none known yet, see ref)
	wide []uint16
	// per slot, bytes: each position's offset into the slot's GPUs
	// (memoStop: the frame stopped there), then the GPUs
	narrow []uint8
	mru    []uint8 // per set of memoWays slots: the way used last
	// the layout for clusters of up to gpus GPUs: at most maxLen
	// positions; a slot's wide words (keys from 1, refs from refs) and
	// its bytes (offsets from 0, GPUs from gpus0), strideW and strideN
	// of them
	gpus, maxLen, refs, strideW, gpus0, strideN int

	h    uint64 // the round's hash
	used int    // GPUs written to the slot being kept
	hits int    // rounds answered (for tests)
}

const (
	// memoSlots is the number of slots for a cluster of memoGPUs GPUs; a
	// smaller cluster's slots are smaller (a round gives out at most the
	// cluster), and it gets as many more of them as fit the same memory,
	// up to memoMaxSlots.
	memoSlots    = 2048
	memoMaxSlots = 8192
	memoGPUs     = 128
	// memoWays slots make a set: a round's sequence may be kept in
	// either, the one not used last giving way (with two ways, the least
	// recently used). On the 20,000-job
	// Synergy trace on 16x4 under LAS, of 115,432 rounds kept (37,675
	// distinct sequences) 2,048 slots direct-mapped would answer 72,072
	// and two-way 74,947 (1,024 direct-mapped: 68,925); 4,096 two-way
	// answer 76,068 (rounds kept from the 4,097th, as then).
	memoWays = 2
	// memoStop in a kept answer marks the failed pick the frame stopped
	// at.
	memoStop = ^uint8(0)
)

// A slot keeps a demand key (at most memoGPUs+1 GPUs, see gather, times
// the classes, plus the class) and a set reference (at most internMax)
// in 16 bits, and a GPU id (below memoGPUs) and an offset into the
// slot's GPUs (at most memoGPUs, below memoStop) in 8: these constants
// do not compile otherwise.
const (
	_ = uint16((memoGPUs+2)*variability.NumClasses - 1)
	_ = uint16(internMax)
	_ = uint8(memoStop - memoGPUs - 1)
)

// layout sets the slots' layout for clusters of up to g GPUs.
func (m *frameMemo) layout(g int) {
	m.gpus, m.maxLen = g, g+1 // the prefix and the job past it
	m.refs = 1 + m.maxLen
	m.strideW = m.refs + m.maxLen
	m.gpus0 = m.maxLen
	m.strideN = m.gpus0 + g
}

// memoSlotsFor is the number of slots for a cluster of size GPUs (at
// most memoGPUs): memoSlots times memoGPUs over size rounded up to a
// power of two, at most memoMaxSlots.
func memoSlotsFor(size int) int {
	n := memoSlots
	for g := memoGPUs; g/2 >= size && n < memoMaxSlots; g /= 2 {
		n *= 2
	}
	return n
}

// memoAfter is how many rounds an index frames before its memo is
// allocated (see frameMemo); a variable so that tests can start at once.
var memoAfter = 1024

// demandKey is a demand as one wide word (GPUs times the classes plus
// the class); ok is false when it does not fit.
func demandKey(d demand) (uint16, bool) {
	k := uint64(d.n)*variability.NumClasses + uint64(d.c)
	return uint16(k), d.n >= 0 && d.c >= 0 && k <= 0xffff
}

// slot finds the round's slot: the visiting positions idx of the demands
// dem. It returns the slot and whether it holds the round's answer; ok is
// false when the round is not to be kept.
func (m *frameMemo) slot(size int, dem []demand, idx []int) (s int, hit, ok bool) {
	if len(idx) == 0 || len(idx) > size+1 || size > memoGPUs {
		return 0, false, false
	}
	if m.rounds < memoAfter {
		m.rounds++
		return 0, false, false
	}
	h, fits := memoHash(dem, idx)
	if !fits {
		return 0, false, false
	}
	if m.tags == nil || size > m.gpus {
		n := memoSlotsFor(size)
		m.layout(size)
		m.tags = make([]uint64, n)
		m.wide = make([]uint16, n*m.strideW)
		m.narrow = make([]uint8, n*m.strideN)
		m.mru = make([]uint8, n/memoWays)
	}
	m.h = h
	set := m.setOf(h)
	s = set * memoWays
	for w := range memoWays {
		if m.tags[s+w] == h && m.wide[(s+w)*m.strideW] == uint16(len(idx)) && m.same(s+w, dem, idx) {
			m.mru[set] = uint8(w)
			m.hits++
			return s + w, true, true
		}
	}
	w := (int(m.mru[set]) + 1) % memoWays
	m.mru[set] = uint8(w)
	return s + w, false, true
}

// memoHash is the hash of the demands dem at the visiting positions idx
// (never 0, the empty tag); ok is false when one does not fit a key.
func memoHash(dem []demand, idx []int) (h uint64, ok bool) {
	h = uint64(len(idx))
	for _, i := range idx {
		k, fits := demandKey(dem[i])
		if !fits {
			return 0, false
		}
		h = (h ^ uint64(k)) * 0x100000001b3
		h ^= h >> 29
	}
	return h | 1, true
}

// setOf is the set of slots a round of hash h may be kept in.
func (m *frameMemo) setOf(h uint64) int { return int(h>>20) & (len(m.mru) - 1) }

// same reports whether slot s keeps the demands of the visiting
// positions idx.
func (m *frameMemo) same(s int, dem []demand, idx []int) bool {
	off := s * m.strideW
	keys := m.wide[off+1 : off+1+len(idx)]
	for p, i := range idx {
		if k, _ := demandKey(dem[i]); keys[p] != k {
			return false
		}
	}
	return true
}

// keep starts overwriting slot s with the round's demands; the answers
// follow through put.
func (m *frameMemo) keep(s int, dem []demand, idx []int) {
	m.tags[s] = 0 // not valid until done
	off := s * m.strideW
	m.wide[off] = uint16(len(idx))
	for p, i := range idx {
		m.wide[off+1+p], _ = demandKey(dem[i])
	}
	m.used = 0
}

// put keeps position p's pick g (nil: the frame stopped there) in slot s.
func (m *frameMemo) put(s, p int, g []int) {
	m.wide[s*m.strideW+m.refs+p] = 0
	off := s * m.strideN
	if g == nil {
		m.narrow[off+p] = memoStop
		return
	}
	m.narrow[off+p] = uint8(m.used)
	for k, id := range g {
		m.narrow[off+m.gpus0+m.used+k] = uint8(id)
	}
	m.used += len(g)
}

// ref records that position p's answer in slot s is the answerSet's
// list k-1 (k > 0), so that a round reading it back hands out that list
// without looking its ids up again.
func (m *frameMemo) ref(s, p int, k uint32) { m.wide[s*m.strideW+m.refs+p] = uint16(k) }

// done validates slot s.
func (m *frameMemo) done(s int) { m.tags[s] = m.h }

// answers writes the round kept in slot s to out: the answer of each
// visiting position idx[p] until the frame's stop (see answer). A
// window of consecutive GPUs, every one-GPU job's answer, is read here;
// answer is called only for the others.
func (x *scoreIndex) answers(s int, order []*workload.Job, out [][]int, idx []int) {
	m := &x.memo
	d := m.narrow[s*m.strideN : (s+1)*m.strideN]
	offs, gpus := d[:len(idx)], d[m.gpus0:]
	for p, i := range idx {
		o := offs[p]
		if o == memoStop {
			return
		}
		n := int(x.dem[i].n)
		g := gpus[o:][:n]
		if int(g[n-1]-g[0]) == n-1 {
			out[i] = x.ids[g[0] : int(g[0])+n : int(g[0])+n]
			continue
		}
		out[i] = x.answer(s, p, order[i], g)
	}
}

// answer is position p's GPUs g in slot s for job j, which are not
// consecutive, made as own makes a pick's: j's own list when it holds
// those GPUs, else a copy, which is the shared list of its set that the
// slot references when it does (see ref); the first lookup of a set read
// back records it.
func (x *scoreIndex) answer(s, p int, j *workload.Job, g []uint8) []int {
	m := &x.memo
	n := len(g)
	if h := j.GPUsHeld; len(h) == n {
		same := true
		for k, id := range g {
			if h[k] != int(id) {
				same = false
				break
			}
		}
		if same {
			return h
		}
	}
	if k := m.wide[s*m.strideW+m.refs+p]; k != 0 {
		return x.sets.lists[k-1] // what keep would find for g
	}
	x.buf = x.buf[:0]
	for _, id := range g {
		x.buf = append(x.buf, int(id))
	}
	l := x.keep(x.buf)
	if x.lastRef != 0 {
		x.memo.ref(s, p, x.lastRef)
	}
	return l
}

// tag empties the memo when the picking rule changed (t names it, for the
// placer whose index this is).
func (x *scoreIndex) tag(t int) {
	if t != x.memoTag {
		x.memoTag = t
		clear(x.memo.tags)
	}
}
