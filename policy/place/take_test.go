package place

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
)

// classState is what take keeps current for a live class: per bin, the
// nodes in each count bucket (pop and the bucket bitsets) and the free
// GPUs, the counts of multi-GPU (bin, node) pairs (the only ones read,
// see multiPair) and, with within queues, each node's free mask. Hints
// and cursors are lower bounds and are left out; so are the within
// queues, which load restarts from the all-free state.
func classState(x *scoreIndex, c int) (pop []int32, words []uint64, binFree, multi []int32, smask []uint64) {
	ci := &x.cls[c]
	for _, bi := range ci.bins {
		pop = append(pop, ci.pop[bi.popOff+1:bi.popOff+bi.maxCnt+1]...)
		words = append(words, x.words[bi.bitOff:bi.bitOff+bi.maxCnt*bi.nw]...)
	}
	for _, m := range ci.multi {
		multi = append(multi, ci.cnt[ci.bins[ci.gbin[m.g]].off+ci.pos[m.g]>>6])
	}
	return pop, words, slices.Clone(ci.binFree), multi, slices.Clone(ci.smask)
}

// TestTakeOneMatchesLoad takes random GPUs, in random batches and
// order, while a single class is live (take's single-class path, the
// base frame's every take) and checks that the class's structures are
// then those load rebuilds from the free mask.
func TestTakeOneMatchesLoad(t *testing.T) { eachPacking(t, takeOneMatchesLoad) }

// eachPacking runs f with the take column packed and unpacked, and
// restores packing even when f stops the test (t.Fatal), so that a
// failure does not leave later tests running on the unpacked column.
func eachPacking(t *testing.T, f func(*testing.T)) {
	defer func() { packColumns = true }()
	for _, pack := range []bool{true, false} {
		packColumns = pack
		f(t)
	}
}

// randomIndex is an index prepared (with within queues if within) on a
// random cluster, past 64 nodes in every third trial, with random scores.
func randomIndex(t *testing.T, rng *rand.Rand, trial int, within bool) (*cluster.Cluster, *scoreIndex) {
	t.Helper()
	c := randomCluster(t, rng)
	if trial%3 == 0 {
		c = wideCluster(t, rng, 300)
	}
	env := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())}
	x := &scoreIndex{}
	if x.prepare(env, within) == nil {
		t.Fatal("index declined valid inputs")
	}
	return c, x
}

func takeOneMatchesLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 600 {
		c, x := randomIndex(t, rng, trial, trial%2 == 0)
		if (x.col32[0] != nil) != packColumns {
			t.Fatalf("trial %d: packed column %v, want %v", trial, x.col32[0] != nil, packColumns)
		}
		cl := rng.IntN(variability.NumClasses)
		var live [variability.NumClasses]bool
		live[cl] = true
		x.reset(live)
		perm := rng.Perm(c.Size())
		perm = perm[:rng.IntN(len(perm)+1)]
		for len(perm) > 0 {
			k := 1 + rng.IntN(min(len(perm), 9))
			x.take(perm[:k])
			perm = perm[k:]
		}
		pop, words, binFree, multi, smask := classState(x, cl)
		x.load(cl)
		wp, ww, wb, wm, ws := classState(x, cl)
		switch {
		case !slices.Equal(pop, wp):
			t.Fatalf("pack %v trial %d class %d: bucket counts %v after takes, %v loaded", packColumns, trial, cl, pop, wp)
		case !slices.Equal(words, ww):
			t.Fatalf("trial %d class %d: buckets %x after takes, %x loaded", trial, cl, words, ww)
		case !slices.Equal(binFree, wb):
			t.Fatalf("trial %d class %d: free per bin %v after takes, %v loaded", trial, cl, binFree, wb)
		case !slices.Equal(multi, wm):
			t.Fatalf("trial %d class %d: multi-GPU pair counts %v after takes, %v loaded", trial, cl, multi, wm)
		case !slices.Equal(smask, ws):
			t.Fatalf("trial %d class %d: node masks %x after takes, %x loaded", trial, cl, smask, ws)
		}
	}
}

// BenchmarkLoad rebuilds every class's structures (load) from a free
// mask with half the GPUs taken at random, on 4608x6 with Longhorn's
// scores: with within queues (PAL, where a class of two bins has 25,815
// of its 27,648 GPUs in pairs of more than one, counted by node mask)
// and without (PM-First, counted GPU by GPU).
func BenchmarkLoad(b *testing.B) {
	for _, within := range []bool{true, false} {
		b.Run(fmt.Sprintf("within=%v", within), func(b *testing.B) {
			x := &scoreIndex{}
			if x.prepare(profileEnv(b, 4608, 6), within) == nil {
				b.Fatal("index declined the cluster")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var taken []int
			for g := range x.size {
				if rng.IntN(2) != 0 {
					taken = append(taken, g)
				}
			}
			x.reset([variability.NumClasses]bool{})
			x.take(taken)
			for b.Loop() {
				for c := range variability.NumClasses {
					x.load(c)
				}
			}
		})
	}
}

// TestNodeMasksFollowTakes takes and gives random GPUs, one class live
// or several, and checks after each step that the free bits (isFree)
// and every node's free mask (nodeMask, which walk, pmFirstOne,
// fromNode and load read a node at a time) are what the test took and
// gave.
func TestNodeMasksFollowTakes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		c, x := randomIndex(t, rng, trial, trial%2 == 0)
		if !x.narrow {
			t.Fatalf("trial %d: index not narrow with %d GPUs a node at most", trial, x.maxPer)
		}
		var live [variability.NumClasses]bool
		for cl := range live {
			live[cl] = rng.IntN(2) == 0
		}
		x.reset(live)
		held := map[int]bool{}
		var order []int
		for step := range 20 {
			if len(order) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(order)) + 1
				x.give(order[:k])
				for _, g := range order[:k] {
					delete(held, g)
				}
				order = order[k:]
			} else {
				var g []int
				for _, id := range rng.Perm(c.Size()) {
					if !held[id] && len(g) < 1+rng.IntN(9) {
						g = append(g, id)
						held[id] = true
					}
				}
				x.take(g)
				order = append(order, g...)
			}
			for nd, n := range c.Nodes {
				var want uint64
				for i, g := range n.GPUs {
					if x.isFree(g) == held[g] {
						t.Fatalf("trial %d step %d: GPU %d free %v, taken %v", trial, step, g, x.isFree(g), held[g])
					}
					if !held[g] {
						want |= 1 << i
					}
				}
				if got := x.nodeMask(int32(nd)); got != want {
					t.Fatalf("trial %d step %d: node %d mask %b, want %b", trial, step, nd, got, want)
				}
			}
		}
	}
}

// TestNthBit checks nthBit, table and loop, against counting bits one
// by one.
func TestNthBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 20000 {
		m := rng.Uint64()
		if trial%2 == 0 {
			m &= 63 // the table's masks
		}
		k := 0
		for i := range 64 {
			if m>>i&1 == 0 {
				continue
			}
			k++
			if got := nthBit(m, k); got != i {
				t.Fatalf("nthBit(%b, %d) = %d, want %d", m, k, got, i)
			}
		}
	}
}
