package place

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The indexed PM-First and PAL must be indistinguishable from the
// reference scans (reference.go). These tests draw many small clusters on
// which every tie-break matters: few distinct scores, uniform and uneven
// node sizes (6 and other non-powers of two included), partly busy
// clusters, every job size from 1 to the cluster, every class, and L×V
// orders as PAL builds them as well as shuffled, truncated or off-bin
// hand-built ones.

// randomCluster draws 1..10 nodes, either all of one size (1..8) or each
// of its own size.
func randomCluster(t *testing.T, rng *rand.Rand) *cluster.Cluster {
	t.Helper()
	nodes := 1 + rng.IntN(10)
	sizes := make([]int, nodes)
	per := 1 + rng.IntN(8)
	uneven := rng.IntN(4) == 0
	for i := range sizes {
		sizes[i] = per
		if uneven {
			sizes[i] = 1 + rng.IntN(8)
		}
	}
	c, err := cluster.NewSized(sizes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wideCluster is a uniform cluster of 65 to 64+extra nodes: past 64
// nodes a bin's buckets span several words (and their summary).
func wideCluster(t *testing.T, rng *rand.Rand, extra int) *cluster.Cluster {
	t.Helper()
	c, err := cluster.New(65+rng.IntN(extra), 1+rng.IntN(8))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scorePool holds values like real bins: tight main bins, an outlier, and
// pairs that differ in the last digits.
var scorePool = []float64{0.9128, 0.95, 0.9851, 0.9876, 1.0, 1.0124, 1.0145, 1.1, 2.5946, 3.5}

// randomScores gives each class 1-5 distinct values (mostly 2-5), skewed
// towards the first one as K-Means bins are, and an L×V order.
func randomScores(rng *rand.Rand, size int) *policy.Scores {
	s := &policy.Scores{}
	for c := range s.SF {
		k := 2 + rng.IntN(4)
		if rng.IntN(10) == 0 {
			k = 1
		}
		vals := make([]float64, k)
		for i := range vals {
			vals[i] = scorePool[rng.IntN(len(scorePool))]
		}
		sf := make([]float64, size)
		for g := range sf {
			if rng.IntN(2) == 0 {
				sf[g] = vals[0]
			} else {
				sf[g] = vals[rng.IntN(k)]
			}
		}
		s.SF[c] = sf
		s.LV[c] = randomLV(rng, sf)
	}
	return s
}

// randomLV is usually PAL's own order (variability.LxV) for a random L;
// sometimes it is mangled so that within entries come out of order, some
// are missing, or V falls between, below or above the bins.
func randomLV(rng *rand.Rand, sf []float64) []policy.LVStep {
	L := []float64{1.0, 1.16, 1.5, 1.7, 3.0}[rng.IntN(5)]
	var out []policy.LVStep
	for _, e := range variability.LxV(sf, L) {
		out = append(out, policy.LVStep{V: e.V, Across: e.Across})
	}
	if rng.IntN(4) != 0 {
		return out
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	out = out[:rng.IntN(len(out)+1)]
	for range rng.IntN(4) {
		v := []float64{0.5, 0.93, 0.99, 1.05, 2.0, 9, math.Inf(1), math.Inf(-1), math.NaN()}[rng.IntN(9)]
		out = append(out, policy.LVStep{V: v, Across: rng.IntN(2) == 0})
	}
	return out
}

// randomQueue draws jobs of every size and class; a random subset runs on
// disjoint random GPUs (non-sticky placers ignore where, except that a job
// getting its own GPUs back may be handed its own slice).
func randomQueue(rng *rand.Rand, c *cluster.Cluster) []*workload.Job {
	size := c.Size()
	maxPer := c.MaxGPUsPerNode()
	var order []*workload.Job
	perm := rng.Perm(size)
	demand := 0
	for i := 0; demand < 2*size; i++ {
		n := 1 + rng.IntN(maxPer)
		if rng.IntN(3) == 0 {
			n = 1 + rng.IntN(size)
		}
		demand += n
		j := workload.NewJob(workload.Spec{ID: i, GPUs: n, Class: variability.Class(rng.IntN(variability.NumClasses)), Submit: float64(i)})
		if rng.IntN(2) == 0 && len(perm) >= n {
			j.GPUsHeld = slices.Sorted(slices.Values(perm[:n]))
			perm = perm[n:]
		}
		order = append(order, j)
	}
	return order
}

func sameAlloc(t *testing.T, what string, got, want [][]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
			t.Fatalf("%s: job %d got %v, reference %v\nall got  %v\nall want %v", what, i, got[i], want[i], got, want)
		}
	}
}

// TestIndexedMatchesReference compares whole rounds. The indexed placers
// are reused across queues (the index is cached) and across clusters (it
// must notice the change and rebuild).
func TestIndexedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pal := [2]*PAL{{TieBreak: PMFirstArtifact}, {TieBreak: PMFirstPaper}}
	pm := [2]*PMFirst{{TieBreak: PMFirstArtifact}, {TieBreak: PMFirstPaper}}
	for trial := range 1500 {
		c := randomCluster(t, rng)
		env := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())}
		for q := range 3 {
			order := randomQueue(rng, c)
			for tb := range 2 {
				what := fmt.Sprintf("trial %d queue %d tie-break %d cluster %v", trial, q, tb, c)
				ref := &refPAL{TieBreak: PMFirstTieBreak(tb)}
				sameAlloc(t, "pal "+what, pal[tb].Place(env, order), ref.Place(env, order))
				refPM := &refPMFirst{TieBreak: PMFirstTieBreak(tb)}
				sameAlloc(t, "pm-first "+what, pm[tb].Place(env, order), refPM.Place(env, order))
			}
		}
		if pal[0].ix.cl != c || !pal[0].ix.ok {
			t.Fatalf("trial %d: PAL did not use the index", trial)
		}
	}
}

// TestIndexedPicksMatchReference compares single picks on partly busy
// clusters for every size, class and bound, including bounds between,
// below and above the bins, where the within queue's tie-break has to be
// re-ranked.
func TestIndexedPicksMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	reranked := 0
	for trial := range 1500 {
		c := randomCluster(t, rng)
		env := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())}
		var x scoreIndex
		if x.prepare(env, true) == nil {
			t.Fatal("index declined valid inputs")
		}
		x.reset(allLive)
		var f freeSet
		f.reset(c)
		var p picker
		// Occupy a random share of the GPUs, as earlier jobs would, in
		// three steps with picks in between (queues are repaired lazily).
		perm := rng.Perm(c.Size())
		for q := range 60 {
			if q%20 == 0 {
				busy := perm[:rng.IntN(len(perm)+1)]
				perm = perm[len(busy):]
				slices.Sort(busy)
				x.take(busy)
				f.take(busy)
			}
			cl := variability.Class(rng.IntN(variability.NumClasses))
			ci := &x.cls[cl]
			vals := ci.vals
			var v float64
			switch rng.IntN(4) {
			case 0:
				v = vals[rng.IntN(len(vals))]
			case 1:
				v = vals[rng.IntN(len(vals))] + 1e-9
			case 2:
				v = vals[rng.IntN(len(vals))] - 1e-9
			default:
				v = []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0}[rng.IntN(4)]
			}
			bv := ci.floorBin(v)
			for n := 1; n <= c.Size(); n++ {
				j := job(0, n, cl)
				for tb := range 2 {
					got := x.pmFirst(int(cl), n, bv, PMFirstTieBreak(tb))
					want := p.pmFirst(env, &f, j, v, PMFirstTieBreak(tb))
					if !slices.Equal(got, want) || (got == nil) != (want == nil) {
						t.Fatalf("trial %d pmFirst class %v n %d v %v tb %d: got %v, reference %v", trial, cl, n, v, tb, got, want)
					}
				}
				if n < 2 || n > x.maxPer {
					continue
				}
				if bn, _ := x.wmin(int(cl), n); bv >= 0 && bn < len(ci.bins) && bn < bv {
					reranked++
				}
				got := x.within(int(cl), n, bv)
				want := refWithin(env, &f, j, v)
				if !slices.Equal(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("trial %d within class %v n %d v %v: got %v, reference %v (free %v)", trial, cl, n, v, got, want, f.free)
				}
			}
		}
	}
	if reranked < 100 {
		t.Fatalf("only %d within picks exercised the re-ranking path", reranked)
	}
}

// TestIndexedMatchesReferenceOnProfiles runs the comparison on clusters
// scored the real way (longhorn draws, artifact K-Means, where class A
// gets a bin per outlier), over several rounds of a shrinking queue.
// profileEnv is a cluster of nodes x per GPUs with the scores of the
// longhorn profiles drawn onto it (seeded by nodes) and their L×V orders.
func profileEnv(t testing.TB, nodes, per int) *policy.Env {
	t.Helper()
	profiles, err := variability.LoadNamed("longhorn")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(nodes, per)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := variability.Assign(profiles, c.Size(), variability.WithReplacement, variability.NewRand(uint64(nodes)), nil)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := variability.NewScores(raw, variability.BinOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := &policy.Scores{}
	for k := range sc.SF {
		sc.SF[k] = vs.SF[k]
		for _, e := range vs.LV[k] {
			sc.LV[k] = append(sc.LV[k], policy.LVStep{V: e.V, Across: e.Across})
		}
	}
	return &policy.Env{Cluster: c, Scores: sc}
}

func TestIndexedMatchesReferenceOnProfiles(t *testing.T) {
	for _, shape := range [][2]int{{16, 4}, {40, 6}, {24, 8}} {
		env := profileEnv(t, shape[0], shape[1])
		c := env.Cluster
		rng := rand.New(rand.NewPCG(uint64(shape[1]), 5))
		pal, pm := NewPAL(), NewPMFirst(PMFirstArtifact)
		for round := range 30 {
			order := randomQueue(rng, c)
			what := fmt.Sprintf("%v round %d", c, round)
			sameAlloc(t, "pal "+what, pal.Place(env, order), (&refPAL{}).Place(env, order))
			sameAlloc(t, "pm-first "+what, pm.Place(env, order), (&refPMFirst{}).Place(env, order))
		}
	}
}

// TestIndexFallsBack checks the inputs the index declines still place,
// through the reference: NaN scores and GPU ids that are not contiguous
// per node.
func TestIndexFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c, err := cluster.New(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	sc := randomScores(rng, c.Size())
	sc.SF[1] = slices.Clone(sc.SF[1])
	sc.SF[1][5] = math.NaN()
	env := &policy.Env{Cluster: c, Scores: sc}
	order := randomQueue(rng, c)
	p := NewPAL()
	sameAlloc(t, "nan", p.Place(env, order), (&refPAL{}).Place(env, order))
	if p.ix.ok {
		t.Fatal("index accepted a NaN score")
	}
	// Node 0 owns GPUs 0 and 2, node 1 owns 1 and 3.
	odd := &cluster.Cluster{
		Nodes: []cluster.Node{{ID: 0, GPUs: []int{0, 2}}, {ID: 1, GPUs: []int{1, 3}}},
		GPUs:  []cluster.GPU{{ID: 0, Node: 0}, {ID: 1, Node: 1}, {ID: 2, Node: 0, Local: 1}, {ID: 3, Node: 1, Local: 1}},
	}
	env = &policy.Env{Cluster: odd, Scores: randomScores(rng, 4)}
	order = []*workload.Job{job(0, 1, variability.ClassA), job(1, 2, variability.ClassB), job(2, 1, variability.ClassC)}
	pm := NewPMFirst(PMFirstArtifact)
	sameAlloc(t, "interleaved ids", pm.Place(env, order), (&refPMFirst{}).Place(env, order))
	if pm.ix.ok {
		t.Fatal("index accepted interleaved GPU ids")
	}
}

// TestIndexedReturnsHeldSlice checks the allocation-saving promise: a job
// placed back on its own GPUs gets its own slice, a moved job a fresh one.
func TestIndexedReturnsHeldSlice(t *testing.T) {
	e := env(t, 2, 4)
	e.Scores = scores([]float64{1, 1, 1, 1, 2, 2, 2, 2}, 1.7)
	stay := job(0, 2, variability.ClassA, 0, 1)
	move := job(1, 2, variability.ClassA, 6, 7)
	p := NewPMFirst(PMFirstArtifact)
	out := p.Place(e, []*workload.Job{stay, move})
	if !slices.Equal(out[0], []int{0, 1}) || !slices.Equal(out[1], []int{2, 3}) {
		t.Fatalf("got %v, want [[0 1] [2 3]]", out)
	}
	// Next round both hold what they got: each is handed that very list
	// back (a driver sees the stay with one pointer compare), and nothing
	// is allocated for them.
	stay.GPUsHeld, move.GPUsHeld = out[0], out[1]
	again := p.Place(e, []*workload.Job{stay, move})
	for i, j := range []*workload.Job{stay, move} {
		if &again[i][0] != &j.GPUsHeld[0] || len(again[i]) != len(j.GPUsHeld) {
			t.Fatalf("job %d holding %v got a different list %v", i, j.GPUsHeld, again[i])
		}
	}
	// A held list that is not consecutive comes back itself too.
	e.Scores = scores([]float64{1, 2, 1, 2, 2, 2, 2, 2}, 1.7)
	odd := job(0, 2, variability.ClassA, 0, 2)
	if got := p.Place(e, []*workload.Job{odd}); !slices.Equal(got[0], []int{0, 2}) || &got[0][0] != &odd.GPUsHeld[0] {
		t.Fatalf("job holding %v got %v, not its own list", odd.GPUsHeld, got[0])
	}
}

// BenchmarkPick times single picks on a half-busy 1024x4 cluster, the
// unit the round benchmarks (package bench) multiply by the queue.
func BenchmarkPick(b *testing.B) {
	c, _ := cluster.New(1024, 4)
	rng := rand.New(rand.NewPCG(1, 1))
	env := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())}
	var x scoreIndex
	x.prepare(env, true)
	x.reset(allLive)
	busy := rng.Perm(c.Size())[:c.Size()/2]
	slices.Sort(busy)
	x.take(busy)
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("pmfirst/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				x.pmFirst(0, n, len(x.cls[0].vals)-1, PMFirstArtifact)
			}
		})
	}
	b.Run("within/n=4", func(b *testing.B) {
		for b.Loop() {
			x.within(0, 4, len(x.cls[0].vals)-1)
		}
	})
}

// The packed placements pick nodes through the free set's buckets; they
// must pick what the scan of every node picks, round after round and in
// the middle of rounds (every partial state a frame passes through).
func TestPackedMatchesReferenceScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 400 {
		c := randomCluster(t, rng)
		if trial%4 == 0 {
			c = wideCluster(t, rng, 700)
		}
		e := &policy.Env{Cluster: c, Rand: rand.New(rand.NewPCG(1, 2))}
		order := randomQueue(rng, c)
		var a, b freeSet
		sameAlloc(t, fmt.Sprintf("trial %d sticky %v", trial, c), stickyFrame(e, order, &a, consolidated), stickyFrame(e, order, &b, refConsolidated))
		got, want := make([][]int, len(order)), make([][]int, len(order))
		nonStickyFrame(e, order, got, nil, &a, consolidated, nil)
		nonStickyFrame(e, order, want, nil, &b, refConsolidated, nil)
		sameAlloc(t, fmt.Sprintf("trial %d non-sticky %v", trial, c), got, want)
		// Random takes and gives, comparing every demand in between.
		a.reset(c)
		var held [][]int
		for range 30 {
			for n := 1; n <= min(c.Size(), 3*c.MaxGPUsPerNode()); n++ {
				j := &workload.Job{Spec: workload.Spec{GPUs: n}}
				if got, want := consolidated(e, &a, j), refConsolidated(e, &a, j); !slices.Equal(got, want) {
					t.Fatalf("trial %d %v free %v: %d GPUs: got %v, scan %v", trial, c, a.nodeFree, n, got, want)
				}
			}
			if len(held) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(held))
				a.give(held[k])
				held = slices.Delete(held, k, k+1)
				continue
			}
			j := &workload.Job{Spec: workload.Spec{GPUs: 1 + rng.IntN(c.MaxGPUsPerNode()+1)}}
			if g := consolidated(e, &a, j); g != nil {
				a.take(g)
				held = append(held, g)
			}
		}
	}
}

// TestIndexedMatchesReferenceOnWideBins compares whole rounds on clusters
// of 200–300 nodes with two or three distinct scores per class, so a bin's
// nodes fill several bitset words and a walk starts at a bucket's hint
// (on the small clusters above every bucket is one word, where a hint
// left too high cannot show).
func TestIndexedMatchesReferenceOnWideBins(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	pal := [2]*PAL{{TieBreak: PMFirstArtifact}, {TieBreak: PMFirstPaper}}
	pm := [2]*PMFirst{{TieBreak: PMFirstArtifact}, {TieBreak: PMFirstPaper}}
	for trial := range 24 {
		per := 1 + rng.IntN(4)
		c, err := cluster.New(200+rng.IntN(101), per)
		if err != nil {
			t.Fatal(err)
		}
		s := &policy.Scores{}
		for k := range s.SF {
			vals := []float64{1.0, 1.1, 2.5}[:2+rng.IntN(2)]
			sf := make([]float64, c.Size())
			for g := range sf {
				sf[g] = vals[rng.IntN(len(vals))]
			}
			s.SF[k], s.LV[k] = sf, randomLV(rng, sf)
		}
		env := &policy.Env{Cluster: c, Scores: s}
		var order []*workload.Job
		for demand := 0; demand < c.Size()*3/2; {
			n := 1 + rng.IntN(per)
			if rng.IntN(8) == 0 {
				n = 1 + rng.IntN(4*per)
			}
			demand += n
			order = append(order, workload.NewJob(workload.Spec{ID: len(order), GPUs: n,
				Class: variability.Class(rng.IntN(variability.NumClasses)), Submit: float64(len(order))}))
		}
		for tb := range 2 {
			what := fmt.Sprintf("trial %d tie-break %d cluster %v", trial, tb, c)
			sameAlloc(t, "pal "+what, pal[tb].Place(env, order), (&refPAL{TieBreak: PMFirstTieBreak(tb)}).Place(env, order))
			sameAlloc(t, "pm-first "+what, pm[tb].Place(env, order), (&refPMFirst{TieBreak: PMFirstTieBreak(tb)}).Place(env, order))
		}
		if x := &pal[0].ix; !x.ok || x.cls[0].bins[0].nw < 2 {
			t.Fatalf("trial %d: the index is not in use or class A's first bin fits one word", trial)
		}
	}
}

// TestIndexedMatchesReferenceRoundAfterRound places measured profiles'
// scores on clusters past 64 nodes, round after round on one index: a
// class whose run starts mid-round builds its within queues then (see
// buildQueue) over whatever its last round left in them, hints included,
// and bins of more than 64 nodes give those hints words to be wrong
// about.
func TestIndexedMatchesReferenceRoundAfterRound(t *testing.T) {
	for _, shape := range [][2]int{{300, 4}, {200, 6}} {
		env := profileEnv(t, shape[0], shape[1])
		c := env.Cluster
		rng := rand.New(rand.NewPCG(uint64(shape[1]), 7))
		pal := NewPAL()
		for round := range 12 {
			order := randomQueue(rng, c)
			sameAlloc(t, fmt.Sprintf("%v round %d", c, round), pal.Place(env, order), (&refPAL{}).Place(env, order))
		}
		x := &pal.ix
		wide := false
		for _, bi := range x.cls[0].bins {
			wide = wide || bi.nw >= 2
		}
		if !x.ok || !wide {
			t.Fatalf("%v: the index is not in use or each of class A's bins fits one word", c)
		}
	}
}

// TestIndexedMatchesReferenceOnBigNodes runs PM-First (PAL declines
// such clusters) on clusters with a node of more than 64 GPUs, where the
// index keeps no node masks (narrow is false) and its picks read the free
// bits GPU by GPU, against the reference, a few rounds with running jobs.
func TestIndexedMatchesReferenceOnBigNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 40 {
		sizes := []int{65 + rng.IntN(40)}
		for range rng.IntN(4) {
			sizes = append(sizes, 1+rng.IntN(80))
		}
		rng.Shuffle(len(sizes), func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
		c, err := cluster.NewSized(sizes)
		if err != nil {
			t.Fatal(err)
		}
		env := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size())}
		for tb := range 2 {
			pm := &PMFirst{TieBreak: PMFirstTieBreak(tb)}
			order := randomQueue(rng, c)
			for round := range 3 {
				what := fmt.Sprintf("trial %d tie-break %d round %d cluster %v", trial, tb, round, sizes)
				got := pm.Place(env, order)
				sameAlloc(t, what, got, (&refPMFirst{TieBreak: PMFirstTieBreak(tb)}).Place(env, order))
				for i, g := range got {
					order[i].GPUsHeld = g
				}
			}
			if !pm.ix.ok || pm.ix.narrow {
				t.Fatalf("trial %d: index ok %v narrow %v on nodes of up to %d GPUs", trial, pm.ix.ok, pm.ix.narrow, pm.ix.maxPer)
			}
		}
	}
}
