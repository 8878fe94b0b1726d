package place

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// TestFusedTakeMatchesPickThenTake runs pmFirst picks on two twin
// indexes of one cluster: on one the pick takes its GPUs as it walks
// (fuse: walkTake, pmFirstOneTake), on the other it only picks and
// takeOne takes them after, as every take did before. Each pick, and
// the whole mutable state after it (free mask, count buckets, pop,
// hints, multi pairs' counts, free GPUs per bin and cursors: the i32
// and word slabs, compared whole), must be the same. Random clusters
// and scores, a hand-built cluster whose nodes hold two and three GPUs
// of a bin, and the Longhorn profile on 64x6; random states (GPUs taken
// at random first) and demands, under both tie-breaks.
func TestFusedTakeMatchesPickThenTake(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var envs []*policy.Env
	envs = append(envs, handEnv(t), profileEnv(t, 64, 6))
	for range 300 {
		c := randomCluster(t, rng)
		if rng.IntN(3) == 0 {
			c = wideCluster(t, rng, 100)
		}
		envs = append(envs, &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())})
	}
	fused := [2]int{}
	for k, env := range slices.Concat(envs, envs) {
		// The second pass indexes within queues too (PAL's index), whose
		// node masks (smask, in the word slab) a take keeps as well.
		e, within := k%len(envs), k >= len(envs)
		x, y := &scoreIndex{}, &scoreIndex{}
		if x.prepare(env, within) == nil || y.prepare(env, within) == nil {
			t.Fatalf("env %d (within queues: %v): index declined valid inputs", e, within)
		}
		for trial := range 4 {
			cl := rng.IntN(variability.NumClasses)
			tb := PMFirstTieBreak(rng.IntN(2))
			var live [variability.NumClasses]bool
			live[cl] = true
			fuses := x.narrow && (!within || x.divM != 0 && x.col32[cl] != nil)
			x.reset(live)
			y.reset(live)
			perm := rng.Perm(x.size)
			pre := perm[:rng.IntN(len(perm)/2+1)]
			for len(pre) > 0 {
				k := 1 + rng.IntN(min(len(pre), 5))
				g := slices.Sorted(slices.Values(pre[:k]))
				x.takeOne(cl, g)
				y.takeOne(cl, g)
				pre = pre[k:]
			}
			for step := 0; x.total > 0; step++ {
				n := 1 + rng.IntN(min(x.total, 1+rng.IntN(2*x.maxPer+2)))
				x.fuse = true
				gx := slices.Clone(x.pmFirst(cl, n, len(x.cls[cl].vals)-1, tb))
				x.fuse = false
				tookX := x.took
				x.took = false
				gy := slices.Clone(y.pmFirst(cl, n, len(y.cls[cl].vals)-1, tb))
				if y.took {
					t.Fatalf("env %d: pmFirst took without fuse", e)
				}
				if !slices.Equal(gx, gy) {
					t.Fatalf("env %d trial %d step %d (class %d, %d GPUs, tie-break %d): fused pick %v, pick %v", e, trial, step, cl, n, tb, gx, gy)
				}
				if gy == nil {
					break
				}
				if tookX != fuses {
					t.Fatalf("env %d (within queues: %v): a fused pick of %d GPUs took: %v, want %v", e, within, n, tookX, fuses)
				}
				if !tookX {
					y.takeOne(cl, gy)
					x.takeOne(cl, gx)
					continue
				}
				if within {
					fused[1]++
				} else {
					fused[0]++
				}
				y.takeOne(cl, gy)
				switch {
				case x.total != y.total:
					t.Fatalf("env %d trial %d step %d: %d free after the fused take, %d after takeOne", e, trial, step, x.total, y.total)
				case !slices.Equal(x.fbits, y.fbits):
					t.Fatalf("env %d trial %d step %d: free mask %x after the fused take, %x after takeOne", e, trial, step, x.fbits, y.fbits)
				case !slices.Equal(x.words, y.words):
					t.Fatalf("env %d trial %d step %d (class %d, %d GPUs, pick %v): bucket words differ after the fused take", e, trial, step, cl, n, gx)
				case !sameButHints(x, y, cl):
					ci := &x.cls[cl]
					t.Fatalf("env %d trial %d step %d (class %d, %d GPUs, pick %v): counts differ after the fused take:\npop  %v\nwant %v\nhint %v\nwant %v\ncnt  %v\nwant %v\nfree %v\nwant %v",
						e, trial, step, cl, n, gx, ci.pop, y.cls[cl].pop, ci.hint, y.cls[cl].hint, ci.cnt, y.cls[cl].cnt, ci.binFree, y.cls[cl].binFree)
				}
			}
		}
	}
	if fused[0] < 1000 || fused[1] < 1000 {
		t.Fatalf("only %d fused picks without within queues and %d with", fused[0], fused[1])
	}
}

// handEnv is a cluster of 4 nodes of 6 GPUs whose scores put two and
// three GPUs of a node in one bin (multi pairs, partly taken by a pick)
// beside single ones.
func handEnv(t *testing.T) *policy.Env {
	t.Helper()
	c, err := cluster.New(4, 6)
	if err != nil {
		t.Fatal(err)
	}
	s := &policy.Scores{}
	row := []float64{
		1.0, 1.0, 1.0, 1.1, 1.1, 2.5,
		1.1, 1.0, 2.5, 2.5, 1.0, 3.5,
		1.0, 1.1, 1.1, 1.1, 2.5, 1.0,
		3.5, 1.0, 1.0, 1.0, 1.0, 1.1,
	}
	for cl := range s.SF {
		s.SF[cl] = slices.Clone(row)
		if cl%2 == 1 {
			slices.Reverse(s.SF[cl])
		}
	}
	return &policy.Env{Cluster: c, Scores: s}
}

// TestMigrationAwareFrameKeepsIndexCurrent runs pm-first-ma rounds
// (where picks of jobs not pinned take as they walk, and takePick counts
// their GPUs out of the nodes' free counts) and checks the index they
// leave: every class still live has the structures load rebuilds from
// the free mask, and the nodes' free counts and their histogram (which
// room reads; a count too high there only makes mayPay try a pick, so
// the answers alone cannot tell) are those of the free mask.
func TestMigrationAwareFrameKeepsIndexCurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	live := 0
	for trial := range 300 {
		c := randomCluster(t, rng)
		if trial%4 == 0 {
			c = wideCluster(t, rng, 100)
		}
		e := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size()),
			Locality: func(*workload.Spec) float64 { return 1.7 }}
		pm := &PMFirst{TieBreak: PMFirstArtifact, MigrationAware: true}
		for round := range 3 {
			order := randomQueue(rng, c)
			for _, j := range order {
				j.Iterations, j.IterTime = float64(rng.IntN(5000)), 1
				j.MoveCost.Migration = []float64{0, 1, 30, 120, 600}[rng.IntN(5)]
			}
			pm.Place(e, order)
			x := &pm.ix
			if !x.ok || x.pins == 0 {
				continue
			}
			for nd := range c.Nodes {
				if got, want := x.nodeFree[nd], int32(bits.OnesCount64(x.nodeMask(int32(nd)))); got != want {
					t.Fatalf("trial %d round %d: node %d counted %d free, its mask has %d", trial, round, nd, got, want)
				}
			}
			hist := make([]int32, x.maxPer+1)
			for _, f := range x.nodeFree {
				hist[f]++
			}
			if !slices.Equal(hist, x.freeHist) {
				t.Fatalf("trial %d round %d: free histogram %v, nodes' free counts make %v", trial, round, x.freeHist, hist)
			}
			for cl, l := range x.live {
				if !l {
					continue
				}
				live++
				pop, words, binFree, multi, _ := classState(x, cl)
				x.load(cl)
				wp, ww, wb, wm, _ := classState(x, cl)
				if !slices.Equal(pop, wp) || !slices.Equal(words, ww) || !slices.Equal(binFree, wb) || !slices.Equal(multi, wm) {
					t.Fatalf("trial %d round %d: live class %d is not its free mask's: pop %v, loaded %v; free per bin %v, loaded %v", trial, round, cl, pop, wp, binFree, wb)
				}
			}
		}
	}
	if live < 300 {
		t.Fatalf("only %d live classes checked", live)
	}
}

// TestPinBoundMatchesBound compares the index's pinBound with
// mover.bound (and the GPUs it reserves with the job's) on the score table and the cluster (no held or heldBelow
// functions: slowdown and the scores themselves), field for field, for
// running jobs on random clusters: random GPUs held (on one node or
// several), costs (0, finite, +Inf), remaining work (none too) and
// locality penalties (none, constant, per model). mayPay only filters
// the picks pays then judges, so a bound that is too loose changes no
// answer: the reference comparisons cannot see it.
func TestPinBoundMatchesBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	locs := []func(*workload.Spec) float64{
		nil,
		func(*workload.Spec) float64 { return 1.7 },
		func(s *workload.Spec) float64 { return 1 + float64(len(s.Model))/10 },
	}
	checked := 0
	for trial := range 300 {
		c := randomCluster(t, rng)
		if trial%3 == 0 {
			c = wideCluster(t, rng, 100)
		}
		e := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size()), Locality: locs[trial%len(locs)]}
		x := &scoreIndex{}
		if x.prepare(e, trial%2 == 0) == nil {
			t.Fatal("index declined valid inputs")
		}
		m := &mover{env: e, scores: true}
		for range 30 {
			n := 1 + rng.IntN(min(c.Size(), 12))
			var held []int
			if rng.IntN(2) == 0 {
				nd := c.Nodes[rng.IntN(len(c.Nodes))].GPUs
				n = min(n, len(nd))
				held = slices.Clone(nd[:n])
			} else {
				held = slices.Sorted(slices.Values(rng.Perm(c.Size())[:n]))
			}
			j := workload.NewJob(workload.Spec{GPUs: n, Class: variability.Class(rng.IntN(variability.NumClasses)),
				Model:      []string{"", "resnet", "transformer-xl"}[rng.IntN(3)],
				Iterations: float64(rng.IntN(3) * rng.IntN(5000)), IterTime: []float64{1, 0.25, 3}[rng.IntN(3)]})
			j.Executed = float64(rng.IntN(100))
			j.GPUsHeld = held
			j.MoveCost.Migration = []float64{0, 1, 30, 120, 600, math.Inf(1)}[rng.IntN(6)] // 0: a threshold equal to a score
			resv := make([]uint64, len(x.fbits))
			got, want := x.pinBound(m, j, resv), m.bound(j)
			if got != want {
				t.Fatalf("trial %d: job of class %d on %v: pinBound %+v, bound %+v", trial, j.Class, held, got, want)
			}
			wantResv := make([]uint64, len(x.fbits))
			for _, g := range held {
				wantResv[g>>6] |= 1 << (g & 63)
			}
			if !slices.Equal(resv, wantResv) {
				t.Fatalf("trial %d: job on %v (never %v) reserved %x, want %x", trial, held, got.never, resv, wantResv)
			}
			checked++
		}
	}
	t.Logf("%d bounds", checked)
}

// sameButHints reports whether indexes x and y hold the same int32 slab
// but for class c's bucket hints, and checks that those hints are lower
// bounds of each bucket's first non-empty word in both. A hint is where
// a walk starts looking: a fused walk, which takes as it goes, may have
// advanced one past words a take emptied before a later bucket's walk
// (on PAL's index layout it does), which only saves the next walk a few
// reads; a hint past a set bit would hide a node.
func sameButHints(x, y *scoreIndex, c int) bool {
	xs, ys := slices.Clone(x.i32), slices.Clone(y.i32)
	for _, ix := range []*scoreIndex{x, y} {
		ci := &ix.cls[c]
		for _, bi := range ci.bins {
			for k := int32(1); k <= bi.maxCnt; k++ {
				o := int(bi.bitOff) + int(k-1)*int(bi.nw)
				for w := range min(ci.hint[bi.popOff+k], bi.nw) {
					if ix.words[o+int(w)] != 0 {
						return false
					}
				}
			}
		}
	}
	h := &x.cls[c].hint
	for i := range x.i32 {
		if len(*h) > 0 && &x.i32[i] == &(*h)[0] {
			clear(xs[i : i+len(*h)])
			clear(ys[i : i+len(*h)])
			break
		}
	}
	return slices.Equal(xs, ys)
}
