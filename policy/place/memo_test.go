package place

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// TestFrameMemoMatchesFreshPlacer places rounds that repeat (whole
// queues again, or again with one job's class, GPUs held or the
// tie-break changed) on placers that keep their memo, and checks every
// answer against a fresh placer (empty memo) and the reference: the same
// GPUs, and a job's own list handed back exactly when the fresh placer
// hands it back.
func TestFrameMemoMatchesFreshPlacer(t *testing.T) {
	memoFromStart(t)
	rng := rand.New(rand.NewPCG(31, 32))
	hits, refs := 0, 0
	for trial := range 200 {
		c := randomCluster(t, rng)
		env := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())}
		pal, pm := &PAL{}, &PMFirst{}
		var queues [][]*workload.Job
		for range 3 {
			queues = append(queues, randomQueue(rng, c))
		}
		for round := range 12 {
			var order []*workload.Job
			q := queues[rng.IntN(len(queues))]
			for _, j := range q {
				cp := *j
				order = append(order, &cp)
			}
			switch rng.IntN(4) {
			case 0: // another class for one job
				j := order[rng.IntN(len(order))]
				j.Class = (j.Class + 1) % variability.NumClasses
			case 1: // a job that ran stops, or takes another job's place
				j := order[rng.IntN(len(order))]
				j.GPUsHeld = nil
			}
			tb := PMFirstTieBreak(rng.IntN(2))
			pal.TieBreak, pm.TieBreak = tb, tb
			what := fmt.Sprintf("trial %d round %d tie-break %d cluster %v", trial, round, tb, c)
			ref := &refPAL{TieBreak: tb}
			checkMemo(t, "pal "+what, order, pal.Place(env, order), (&PAL{TieBreak: tb}).Place(env, order), ref.Place(env, order))
			refPM := &refPMFirst{TieBreak: tb}
			checkMemo(t, "pm-first "+what, order, pm.Place(env, order), (&PMFirst{TieBreak: tb}).Place(env, order), refPM.Place(env, order))
		}
		hits += pal.ix.memo.hits + pm.ix.memo.hits
		refs += memoRefsValid(t, fmt.Sprintf("pal trial %d", trial), &pal.ix) + memoRefsValid(t, fmt.Sprintf("pm-first trial %d", trial), &pm.ix)
	}
	if hits < 500 {
		t.Fatalf("the memo answered %d rounds of 4,800; the test does not exercise it", hits)
	}
	if refs < 100 {
		t.Fatalf("the memo kept %d set references; the test does not exercise them", refs)
	}
}

func checkMemo(t *testing.T, what string, order []*workload.Job, got, fresh, ref [][]int) {
	t.Helper()
	sameAlloc(t, what+" vs fresh", got, fresh)
	sameAlloc(t, what+" vs reference", got, ref)
	for i, j := range order {
		own := func(a []int) bool { return a != nil && j.GPUsHeld != nil && &a[0] == &j.GPUsHeld[0] }
		if own(got[i]) != own(fresh[i]) {
			t.Fatalf("%s: job %d holding %v got %v, own list %v; a fresh placer: own list %v", what, i, j.GPUsHeld, got[i], own(got[i]), own(fresh[i]))
		}
	}
}

// TestFrameMemoKeys: the memo's key is the demand sequence, GPUs and
// class, and nothing it cannot hold is kept.
func TestFrameMemoKeys(t *testing.T) {
	memoFromStart(t)
	for _, c := range []struct {
		a, b demand
		same bool
	}{
		{demand{1, 0}, demand{1, 0}, true},
		{demand{1, 0}, demand{1, 1}, false},
		{demand{1, 3}, demand{2, 0}, false},
		{demand{2, 0}, demand{1, 2}, false},
	} {
		ka, _ := demandKey(c.a)
		kb, _ := demandKey(c.b)
		if (ka == kb) != c.same {
			t.Errorf("demandKey(%v) = %d, demandKey(%v) = %d: want same %v", c.a, ka, c.b, kb, c.same)
		}
	}
	var m frameMemo
	dem := []demand{{1, 0}, {2, 1}}
	for _, c := range []struct {
		size int
		idx  []int
		ok   bool
	}{
		{64, []int{0, 1}, true},
		{memoGPUs, []int{1, 0}, true},
		{memoGPUs + 1, []int{0, 1}, false}, // a large cluster: off
		{64, nil, false},
		{64, slices.Repeat([]int{0}, 66), false}, // longer than a prefix of 64 GPUs and one more
	} {
		if _, hit, ok := m.slot(c.size, dem, c.idx); ok != c.ok || hit {
			t.Errorf("slot(%d, %v) = hit %v, ok %v; want ok %v and no hit", c.size, c.idx, hit, ok, c.ok)
		}
	}
}

// memoFromStart makes indexes keep rounds from their first (memoAfter
// 0) for the rest of the test.
func memoFromStart(t *testing.T) {
	old := memoAfter
	memoAfter = 0
	t.Cleanup(func() { memoAfter = old })
}

// TestFrameMemoWaits: an index's memo takes no memory, and keeps nothing,
// until the index has framed memoAfter rounds; then it keeps them.
func TestFrameMemoWaits(t *testing.T) {
	old := memoAfter
	memoAfter = 3
	t.Cleanup(func() { memoAfter = old })
	var m frameMemo
	dem := []demand{{1, 0}, {2, 1}}
	for r := range 3 {
		if _, _, ok := m.slot(64, dem, []int{0, 1}); ok || m.tags != nil || m.wide != nil || m.narrow != nil {
			t.Fatalf("round %d of 3: ok %v, memory %d+%d+%d words; want nothing kept and nothing allocated", r, ok, len(m.tags), len(m.wide), len(m.narrow))
		}
	}
	sl, hit, ok := m.slot(64, dem, []int{0, 1})
	if !ok || hit || len(m.tags) != 2*memoSlots {
		t.Fatalf("fourth round: ok %v hit %v, %d slots; want a slot kept from now on", ok, hit, len(m.tags))
	}
	m.keep(sl, dem, []int{0, 1})
	m.put(sl, 0, []int{5})
	m.put(sl, 1, []int{6, 7})
	m.done(sl)
	if _, hit, _ := m.slot(64, dem, []int{0, 1}); !hit {
		t.Fatal("the round kept on the fourth is not found on the fifth")
	}
}

// TestFrameMemoRefs reads a kept round back twice through answers: a
// window for consecutive GPUs, the job's own list when it holds the
// GPUs, else the shared list of the set, whose index the first read
// records in the slot (hand-worked refs: set {6,9} is list 0, so 1;
// {10,12} is never looked up, its job holding it) and the second hands
// out without a lookup. Keeping another round in the slot clears them.
func TestFrameMemoRefs(t *testing.T) {
	memoFromStart(t)
	x := &scoreIndex{size: 64, ids: make([]int, 64)}
	for i := range x.ids {
		x.ids[i] = i
	}
	dem := []demand{{1, 0}, {2, 0}, {2, 0}, {2, 0}, {1, 0}}
	x.dem = dem
	idx := []int{0, 1, 2, 3, 4}
	picks := [][]int{{5}, {6, 9}, {10, 12}, {6, 9}, nil}
	held := []int{10, 12}
	jobs := []*workload.Job{{}, {}, {GPUsHeld: held}, {}, {}}
	sl, hit, ok := x.memo.slot(x.size, dem, idx)
	if hit || !ok {
		t.Fatalf("slot: hit %v ok %v, want a slot to keep", hit, ok)
	}
	x.memo.keep(sl, dem, idx)
	for p, g := range picks {
		x.memo.put(sl, p, g)
	}
	x.memo.done(sl)
	refs := func() []uint16 {
		o := sl*x.memo.strideW + x.memo.refs
		return slices.Clone(x.memo.wide[o : o+len(picks)])
	}
	cases := []struct {
		read     string
		wantRefs []uint16
	}{
		{"first", []uint16{0, 1, 0, 1, 0}},
		{"second", []uint16{0, 1, 0, 1, 0}},
	}
	for _, tc := range cases {
		if _, hit, _ := x.memo.slot(x.size, dem, idx); !hit {
			t.Fatalf("%s read: the kept round is not found", tc.read)
		}
		out := make([][]int, len(picks))
		x.answers(sl, jobs, out, idx)
		for p, g := range picks {
			got := out[p]
			switch {
			case g == nil:
				if got != nil {
					t.Errorf("%s read, position %d: %v, want nil (the frame stopped)", tc.read, p, got)
				}
			case !slices.Equal(got, g):
				t.Errorf("%s read, position %d: %v, want %v", tc.read, p, got, g)
			case p == 0 && &got[0] != &x.ids[5]:
				t.Errorf("%s read: {5} is not the id list's window", tc.read)
			case p == 2 && &got[0] != &held[0]:
				t.Errorf("%s read: {10,12} is not the job's own list", tc.read)
			case (p == 1 || p == 3) && (len(x.sets.lists) != 1 || &got[0] != &x.sets.lists[0][0]):
				t.Errorf("%s read, position %d: not the shared list of {6,9} (%d lists)", tc.read, p, len(x.sets.lists))
			}
		}
		if got := refs(); !slices.Equal(got, tc.wantRefs) {
			t.Errorf("after the %s read the slot's refs are %v, want %v", tc.read, got, tc.wantRefs)
		}
	}
	x.memo.keep(sl, dem, idx)
	for p, g := range picks {
		x.memo.put(sl, p, g)
	}
	if got := refs(); !slices.Equal(got, []uint16{0, 0, 0, 0, 0}) {
		t.Errorf("a slot kept again has refs %v, want none", got)
	}
}

// memoRefsValid checks every valid slot of x's memo: a position's set
// reference, if any, names a shared list equal to the GPUs kept there.
// It returns how many references it saw.
func memoRefsValid(t *testing.T, what string, x *scoreIndex) int {
	t.Helper()
	m, seen := &x.memo, 0
	for s, tag := range m.tags {
		if tag == 0 {
			continue
		}
		w, b := m.wide[s*m.strideW:(s+1)*m.strideW], m.narrow[s*m.strideN:(s+1)*m.strideN]
		n := int(w[0])
		for p := range n {
			k := w[m.refs+p]
			if k == 0 {
				continue
			}
			seen++
			o := b[p]
			if o == memoStop || int(k) > len(x.sets.lists) {
				t.Fatalf("%s: slot %d position %d refers to list %d of %d at offset %d", what, s, p, k, len(x.sets.lists), o)
			}
			l := x.sets.lists[k-1]
			for i, id := range l {
				if b[m.gpus0+int(o)+i] != uint8(id) {
					t.Fatalf("%s: slot %d position %d refers to %v, which is not its answer", what, s, p, l)
				}
			}
		}
	}
	return seen
}

// TestMemoSlotsFor: a smaller cluster gets smaller slots and as many more
// of them as fit the same memory, up to memoMaxSlots.
func TestMemoSlotsFor(t *testing.T) {
	for _, c := range []struct{ size, want int }{
		{128, 2048}, {65, 2048}, {64, 4096}, {33, 4096}, {32, 8192},
		{17, 8192}, {16, 8192}, {8, 8192}, {1, 8192},
	} {
		if got := memoSlotsFor(c.size); got != c.want {
			t.Errorf("memoSlotsFor(%d) = %d, want %d", c.size, got, c.want)
		}
	}
	var m frameMemo
	m.layout(64)
	// wide: length, 65 demands, 65 references; bytes: 65 offsets, 64 GPUs
	if m.maxLen != 65 || m.refs != 66 || m.strideW != 131 || m.gpus0 != 65 || m.strideN != 129 {
		t.Errorf("layout(64): maxLen %d refs %d strideW %d gpus0 %d strideN %d; want 65 66 131 65 129", m.maxLen, m.refs, m.strideW, m.gpus0, m.strideN)
	}
}

// TestFrameMemoTwoWays keeps three rounds whose sequences fall in one
// set: the first two are both found, and the third takes the slot of
// the one not read last (whichever was kept last).
func TestFrameMemoTwoWays(t *testing.T) {
	memoFromStart(t)
	var m frameMemo
	const size = 64
	if _, _, ok := m.slot(size, []demand{{1, 0}}, []int{0}); !ok {
		t.Fatal("no memo")
	}
	clear(m.tags)
	// Three sequences of four demands of 1-8 GPUs in one set.
	bySet := map[int][][]demand{}
	var seqs [][]demand
	for v := range 8 * 8 * 8 * 8 {
		d := []demand{{int32(v%8 + 1), 0}, {int32(v/8%8 + 1), 0}, {int32(v/64%8 + 1), 0}, {int32(v/512 + 1), 0}}
		h, _ := memoHash(d, []int{0, 1, 2, 3})
		s := m.setOf(h)
		if bySet[s] = append(bySet[s], d); len(bySet[s]) == 3 {
			seqs = bySet[s]
			break
		}
	}
	if seqs == nil {
		t.Fatal("no three sequences in one set")
	}
	idx := []int{0, 1, 2, 3}
	keep := func(d []demand) {
		sl, hit, ok := m.slot(size, d, idx)
		if hit || !ok {
			t.Fatalf("keeping %v: hit %v ok %v, want a slot to keep", d, hit, ok)
		}
		m.keep(sl, d, idx)
		for p := range idx {
			m.put(sl, p, []int{p})
		}
		m.done(sl)
	}
	found := func(d []demand) bool { _, hit, _ := m.slot(size, d, idx); return hit }
	a, b, c := seqs[0], seqs[1], seqs[2]
	keep(a)
	keep(b)
	if fb, fa := found(b), found(a); !fa || !fb {
		t.Fatalf("two sequences of one set: found %v and %v, want both", fa, fb)
	}
	// a was read last, though b was kept last: c takes b's slot.
	keep(c)
	if fb, fa, fc := found(b), found(a), found(c); fb || !fa || !fc {
		t.Fatalf("after a third: a %v b %v c %v, want true false true", fa, fb, fc)
	}
}
