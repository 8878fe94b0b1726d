package place

// minTree is a min-tree over int64 leaves with eight children per inner
// entry. A within query repairs about one leaf per one-GPU pick since the
// last query (those picks take the GPUs that make a node a good within
// choice), so the cost that matters is a leaf update: five levels of one
// cache line each on 4,608 nodes, where a binary tree walks thirteen.
//
// Levels sit one after another in t: level 0 holds the leaves, padded
// with noKey to a multiple of minFan, and each level above holds the
// minimum of each run of minFan entries below it; the last level is the
// root alone. A tree is its slice, so restoring a saved state is a copy.
type minTree struct {
	off []int // start of each level in t; the root is t[off[len(off)-1]]
	n   int   // leaves in use
}

const minFan = 8

// newMinTree lays out a tree over n leaves and returns it with the length
// of the slice that holds it.
func newMinTree(n int) (minTree, int) {
	m := minTree{n: n}
	size := 0
	for w := n; ; w = (w + minFan - 1) / minFan {
		m.off = append(m.off, size)
		if w <= 1 {
			size++
			return m, size
		}
		size += (w + minFan - 1) / minFan * minFan
	}
}

// build fills t from its leaves t[:n] (the padding is set here).
func (m *minTree) build(t []int64) {
	for l := 0; l+1 < len(m.off); l++ {
		lo, hi := m.off[l], m.off[l+1]
		if l == 0 {
			for i := lo + m.n; i < hi; i++ {
				t[i] = noKey
			}
		}
		for p := 0; lo+p*minFan < hi; p++ {
			t[m.off[l+1]+p] = min8(t[lo+p*minFan:])
		}
		if l+2 < len(m.off) { // pad the level above
			for i := m.off[l+1] + (hi-lo)/minFan; i < m.off[l+2]; i++ {
				t[i] = noKey
			}
		}
	}
}

func (m *minTree) root(t []int64) int64 { return t[m.off[len(m.off)-1]] }

// set changes leaf i to v and repairs the minima above it.
func (m *minTree) set(t []int64, i int, v int64) {
	t[i] = v
	for l := 0; l+1 < len(m.off); l++ {
		p := i / minFan
		mv := min8(t[m.off[l]+p*minFan:])
		up := m.off[l+1] + p
		if t[up] == mv {
			return // the rest of the path already holds this minimum
		}
		t[up] = mv
		i = p
	}
}

func min8(s []int64) int64 {
	s = s[:minFan]
	a, b := min(s[0], s[1]), min(s[2], s[3])
	c, d := min(s[4], s[5]), min(s[6], s[7])
	return min(min(a, b), min(c, d))
}

// visit calls f for every leaf whose stored key satisfies keep, pruning
// any subtree whose minimum does not: keep must be false for every key
// above one it is false for (a minimum that fails rules out its subtree).
func (m *minTree) visit(t []int64, keep func(int64) bool, f func(leaf int)) {
	m.visitAt(t, len(m.off)-1, 0, keep, f)
}

func (m *minTree) visitAt(t []int64, l, i int, keep func(int64) bool, f func(int)) {
	if !keep(t[m.off[l]+i]) {
		return
	}
	if l == 0 {
		if i < m.n {
			f(i)
		}
		return
	}
	for c := i * minFan; c < i*minFan+minFan; c++ {
		if m.off[l-1]+c < m.off[l] {
			m.visitAt(t, l-1, c, keep, f)
		}
	}
}
