package place

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// job makes a job of n GPUs; held lists the GPUs it runs on (nil: waiting).
func job(id, n int, class variability.Class, held ...int) *workload.Job {
	j := workload.NewJob(workload.Spec{ID: id, GPUs: n, Class: class, Submit: float64(id)})
	if len(held) > 0 {
		j.GPUsHeld = held
	}
	return j
}

func env(t *testing.T, nodes, per int) *policy.Env {
	t.Helper()
	c, err := cluster.New(nodes, per)
	if err != nil {
		t.Fatal(err)
	}
	return &policy.Env{Cluster: c, Rand: rand.New(rand.NewPCG(1, 2))}
}

// blocker makes a running job that pins exactly the given GPUs.
func blocker(id int, gpus ...int) *workload.Job {
	return job(id, len(gpus), variability.ClassA, gpus...)
}

func TestPackedConsolidated(t *testing.T) {
	cases := []struct {
		name string
		busy [][]int // GPUs held by earlier running jobs
		n    int
		want []int
	}{
		// 3x4. node0 has 2 free (2,3), node1 4 free, node2 3 free (9,10,11).
		{"exact fit beats best fit", [][]int{{0, 1}, {8}}, 3, []int{9, 10, 11}},
		{"exact fit lowest node", [][]int{{0, 1}, {8}}, 2, []int{2, 3}},
		{"whole free node", [][]int{{0, 1}, {8}}, 4, []int{4, 5, 6, 7}},
		// 1 GPU: no node has exactly 1 free, best fit = fewest free >= 1 = node0.
		{"best fit fewest free", [][]int{{0, 1}, {8}}, 1, []int{2}},
		// node0 1 free (3), node1 3 free (5,6,7), node2 2 free (10,11): spread
		// takes the fullest node first.
		{"spread most free first", [][]int{{0, 1, 2}, {4}, {8, 9}}, 5, []int{5, 6, 7, 10, 11}},
		{"spread tie lowest node", [][]int{{0, 1}, {4, 5}, {8, 9, 10, 11}}, 3, []int{2, 3, 6}},
		{"does not fit", [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10}}, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := env(t, 3, 4)
			var order []*workload.Job
			for i, b := range tc.busy {
				order = append(order, blocker(i, b...))
			}
			order = append(order, job(99, tc.n, variability.ClassA))
			out := (&Packed{sticky: true}).Place(e, order)
			if got := out[len(out)-1]; !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStickyKeepsRunningAndStopsAtFirstMiss(t *testing.T) {
	e := env(t, 2, 4)
	order := []*workload.Job{
		job(0, 2, variability.ClassA, 2, 3), // running, keeps 2,3
		job(1, 8, variability.ClassA),       // cannot fit: would need preemption of a later job; none later is running
		job(2, 1, variability.ClassA),       // would fit but is behind the blocked head
	}
	out := (&Packed{sticky: true}).Place(e, order)
	if !slices.Equal(out[0], []int{2, 3}) || out[1] != nil || out[2] != nil {
		t.Fatalf("got %v", out)
	}
}

func TestStickyPreemptsFromTail(t *testing.T) {
	e := env(t, 2, 4)
	// LAS-like order: a fresh 4-GPU job first, then three running jobs.
	order := []*workload.Job{
		job(0, 4, variability.ClassA),
		job(1, 4, variability.ClassA, 0, 1, 2, 3),
		job(2, 2, variability.ClassA, 4, 5),
		job(3, 2, variability.ClassA, 6, 7),
	}
	out := (&Packed{sticky: true}).Place(e, order)
	// Job 3 (tail) is suspended first; 2 free GPUs are not enough, so job 2
	// goes too; then node1 is free and job 0 takes it. Job 1 keeps node 0.
	want := [][]int{{4, 5, 6, 7}, {0, 1, 2, 3}, nil, nil}
	for i := range want {
		if !slices.Equal(out[i], want[i]) {
			t.Fatalf("job %d: got %v, want %v (all %v)", i, out[i], want[i], out)
		}
	}
}

// A suspended job counts as waiting for the rest of its round: the scan
// reaches it, and when it does not fit the round ends there, so a job
// behind it is not backfilled (the artifact's packing_sticky.py). Hand
// case on one 4-GPU node: job 0 (3 GPUs) waits, job 1 runs on 0,1, job 2
// (1 GPU) waits; GPUs 2,3 are free. Job 0 does not fit in 2, so job 1 (the
// only running job behind it) is suspended; job 0 then takes 0,1,2 (best
// fit on the one node, lowest ids). Job 1 needs 2 but only GPU 3 is free:
// the round stops at job 1, and job 2 stays queued although GPU 3 would
// hold it.
func TestStickyVictimBlocksTheRestOfTheRound(t *testing.T) {
	for _, p := range []policy.Placer{&Packed{sticky: true}, &Random{sticky: true}} {
		e := env(t, 1, 4)
		order := []*workload.Job{
			job(0, 3, variability.ClassA),
			job(1, 2, variability.ClassA, 0, 1),
			job(2, 1, variability.ClassA),
		}
		out := p.Place(e, order)
		if len(out[0]) != 3 || out[1] != nil || out[2] != nil {
			t.Fatalf("%s: got %v, want job 0 placed on 3 GPUs and jobs 1, 2 waiting", p.Name(), out)
		}
		if p.Name() == "packed-sticky" && !slices.Equal(out[0], []int{0, 1, 2}) {
			t.Fatalf("packed-sticky: job 0 got %v, want [0 1 2]", out[0])
		}
	}
}

func TestNonStickyReplans(t *testing.T) {
	e := env(t, 2, 4)
	// Job 0 runs spread over both nodes; job 1 finished, so re-planning packs it.
	order := []*workload.Job{job(0, 4, variability.ClassA, 2, 3, 4, 5), job(1, 2, variability.ClassA)}
	out := (&Packed{}).Place(e, order)
	if !slices.Equal(out[0], []int{0, 1, 2, 3}) || !slices.Equal(out[1], []int{4, 5}) {
		t.Fatalf("got %v", out)
	}
}

func TestRandomUsesFreeGPUsOnly(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		e := env(t, 4, 4)
		e.Rand = rand.New(rand.NewPCG(seed, 9))
		order := []*workload.Job{job(0, 3, variability.ClassA, 0, 5, 10), job(1, 5, variability.ClassA), job(2, 8, variability.ClassA)}
		out := (&Random{sticky: true}).Place(e, order)
		seen := map[int]bool{}
		for i, g := range out {
			if g == nil {
				t.Fatalf("seed %d: job %d not placed: %v", seed, i, out)
			}
			if len(g) != order[i].GPUs {
				t.Fatalf("seed %d: job %d got %d GPUs", seed, i, len(g))
			}
			for _, x := range g {
				if seen[x] {
					t.Fatalf("seed %d: GPU %d given twice: %v", seed, x, out)
				}
				seen[x] = true
			}
		}
		if !slices.Equal(out[0], []int{0, 5, 10}) {
			t.Fatalf("sticky random moved a running job: %v", out[0])
		}
	}
}

// scores builds a Scores where every class has the same per-GPU values
// and the L×V order the variability package builds from them.
func scores(sf []float64, L float64) *policy.Scores {
	s := &policy.Scores{}
	for c := range s.SF {
		s.SF[c] = sf
		for _, e := range variability.LxV(sf, L) {
			s.LV[c] = append(s.LV[c], policy.LVStep{V: e.V, Across: e.Across})
		}
	}
	return s
}

func TestPMFirstPicksBestScores(t *testing.T) {
	e := env(t, 2, 4)
	e.Scores = scores([]float64{1.0, 0.9, 1.1, 0.9, 1.0, 1.0, 0.9, 1.2}, 1.5)
	cases := []struct {
		tb   PMFirstTieBreak
		n    int
		want []int
	}{
		// Three GPUs score 0.9: 1, 3 (node 0: count 2) and 6 (node 1: count 1).
		// n=1: artifact prefers the node whose same-bin count matches 1 -> GPU 6.
		{PMFirstArtifact, 1, []int{6}},
		{PMFirstPaper, 1, []int{1}},
		// n=2: node 0 has exactly two 0.9s (loc 0) -> 1,3.
		{PMFirstArtifact, 2, []int{1, 3}},
		// n=4: the three 0.9s, then the best 1.0 by loc: 1.0s are GPU 0 (node0
		// count 1) and 4,5 (node1 count 2): |1-4|=3 vs |2-4|=2 -> GPU 4.
		{PMFirstArtifact, 4, []int{1, 3, 4, 6}},
		{PMFirstPaper, 4, []int{0, 1, 3, 6}},
	}
	for _, tc := range cases {
		p := NewPMFirst(tc.tb)
		out := p.Place(e, []*workload.Job{job(0, tc.n, variability.ClassA)})
		if !slices.Equal(out[0], tc.want) {
			t.Errorf("tb %v n %d: got %v, want %v", tc.tb, tc.n, out[0], tc.want)
		}
	}
}

func TestPMFirstClassReorderStaysInPrefix(t *testing.T) {
	e := env(t, 2, 4) // 8 GPUs
	e.Scores = scores([]float64{1, 1, 1, 1, 1, 1, 1, 1}, 1.5)
	order := []*workload.Job{
		job(0, 4, variability.ClassC),
		job(1, 2, variability.ClassB),
		job(2, 4, variability.ClassA), // crosses 8: outside the prefix, must not jump ahead
		job(3, 1, variability.ClassA),
	}
	out := NewPMFirst(PMFirstArtifact).Place(e, order)
	if out[0] == nil || out[1] == nil {
		t.Fatalf("prefix jobs must run: %v", out)
	}
	if out[2] != nil || out[3] != nil {
		t.Fatalf("jobs outside the prefix ran: %v", out)
	}
	// Inside the prefix class B chose first: it got the best (lowest-id) GPUs
	// by the same-bin locality match (node 0 has 4 equal GPUs, |4-2|=2 on
	// both nodes, so GPU ids 0,1).
	if !slices.Equal(out[1], []int{0, 1}) {
		t.Fatalf("class B job should be placed first: %v", out)
	}
}

func TestPALPacksOnGoodNodeRatherThanSpreadOnBetter(t *testing.T) {
	// 3x4: node 0 and 1 have two excellent GPUs each (0.90) and two good
	// (1.00) ones; node 2 is all good (1.00). A 4-GPU job could spread over
	// the four 0.90s (cost 0.90 x 1.7 = 1.53) or pack on node 2 (1.00).
	e := env(t, 3, 4)
	e.Scores = scores([]float64{0.9, 0.9, 1.0, 1.0, 0.9, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}, 1.7)
	out := NewPAL().Place(e, []*workload.Job{job(0, 4, variability.ClassA)})
	// Node 0 is fully free too and its worst GPU is 1.0: it ties with node 1
	// and 2 on score and count, so the lowest node id wins.
	if !slices.Equal(out[0], []int{0, 1, 2, 3}) {
		t.Fatalf("got %v", out[0])
	}
	// PM-First instead takes the four best GPUs across nodes.
	pm := NewPMFirst(PMFirstArtifact).Place(e, []*workload.Job{job(0, 4, variability.ClassA)})
	if !slices.Equal(pm[0], []int{0, 1, 4, 5}) {
		t.Fatalf("pm-first got %v", pm[0])
	}
}

func TestPALSpreadsRatherThanTouchOutlier(t *testing.T) {
	// 2x4, node 0 has a 2.5x outlier: packing there costs 2.5, spreading
	// over two nodes' good GPUs costs 1.0 x 1.7.
	e := env(t, 2, 4)
	e.Scores = scores([]float64{1.0, 1.0, 1.0, 2.5, 1.0, 1.0, 1.0, 1.0}, 1.7)
	// A 4-GPU job is running on node 1? No: block two GPUs of node 1 so no
	// outlier-free node has 4 free.
	order := []*workload.Job{blocker(0, 4, 5), job(1, 4, variability.ClassA)}
	out := NewPAL().Place(e, order)
	// Blocker is re-placed first (non-sticky, 2 GPUs, same class): it takes
	// a best-fit pair; then the 4-GPU job must not include GPU 3.
	if slices.Contains(out[1], 3) {
		t.Fatalf("PAL used the outlier: %v", out)
	}
	if len(out[1]) != 4 {
		t.Fatalf("4-GPU job not placed: %v", out)
	}
}

func TestPALWithinPrefersTightestNode(t *testing.T) {
	// 2-GPU job: node 0 offers a pair with worst score 1.0, node 1 a pair
	// with worst 0.9; within(0.9) finds node 1 first.
	e := env(t, 2, 4)
	e.Scores = scores([]float64{0.9, 1.0, 1.0, 1.0, 1.0, 0.9, 1.0, 0.9}, 1.7)
	out := NewPAL().Place(e, []*workload.Job{job(0, 2, variability.ClassA)})
	if !slices.Equal(out[0], []int{5, 7}) {
		t.Fatalf("got %v", out[0])
	}
}

func TestPALEqualsPMFirstForSingleGPUJobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 200; trial++ {
		e := env(t, 4, 4)
		sf := make([]float64, 16)
		for i := range sf {
			sf[i] = []float64{0.9, 1.0, 1.1, 2.6}[rng.IntN(4)]
		}
		e.Scores = scores(sf, 1.7)
		var order []*workload.Job
		for i := 0; i < 20; i++ {
			order = append(order, job(i, 1, variability.Class(rng.IntN(4))))
		}
		a := NewPAL().Place(e, order)
		b := NewPMFirst(PMFirstArtifact).Place(e, order)
		for i := range a {
			if !slices.Equal(a[i], b[i]) {
				t.Fatalf("trial %d job %d: pal %v pm-first %v", trial, i, a[i], b[i])
			}
		}
	}
}

// Every name New accepts gives a placer that reports that name (or its
// canonical form) and the stickiness the name promises: the sticky ones
// are exactly the Tiresias-style packed-sticky and random-sticky.
func TestNewNamesAndStickiness(t *testing.T) {
	cases := []struct {
		name, canonical string
		sticky          bool
	}{
		{"pal", "pal", false},
		{"pm-first", "pm-first", false},
		{"pmfirst", "pm-first", false},
		{"packed-sticky", "packed-sticky", true},
		{"tiresias", "packed-sticky", true},
		{"packed-nonsticky", "packed-nonsticky", false},
		{"gandiva", "packed-nonsticky", false},
		{"random-sticky", "random-sticky", true},
		{"random-nonsticky", "random-nonsticky", false},
	}
	if len(Names()) != 6 {
		t.Fatalf("Names() = %v, want the artifact's six placements", Names())
	}
	seen := 0
	for _, tc := range cases {
		p, err := New(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != tc.canonical || p.Sticky() != tc.sticky {
			t.Errorf("New(%q): Name %q Sticky %v, want %q %v", tc.name, p.Name(), p.Sticky(), tc.canonical, tc.sticky)
		}
		if slices.Contains(Names(), tc.name) {
			seen++
		}
	}
	if seen != len(Names()) {
		t.Fatalf("the table covers %d of the %d names in Names()", seen, len(Names()))
	}
}

func TestCanonicalRejectsDuplicates(t *testing.T) {
	got, err := Canonical([]string{"pal", "tiresias", "gandiva"})
	if err != nil || !slices.Equal(got, []string{"pal", "packed-sticky", "packed-nonsticky"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, list := range [][]string{{"pal", "pal"}, {"packed-sticky", "tiresias"}} {
		if _, err := Canonical(list); err == nil {
			t.Errorf("%v: no error", list)
		}
	}
}

func TestNewRejectsUnknown(t *testing.T) {
	if _, err := New("best"); err == nil {
		t.Fatal("want error")
	}
	for _, n := range Names() {
		if _, err := New(n); err != nil {
			t.Fatal(err)
		}
	}
}

// A job asking for more GPUs than the cluster has is never placed, by
// any indexed placer, and, being the first job that does not fit, ends
// the round there: on 2x4, 9 GPUs first leaves everyone waiting; after a
// 1-GPU job, the 1-GPU job behind it still waits.
func TestOversizeJobNeverPlaced(t *testing.T) {
	for _, name := range []string{"pal", "pm-first", "pal-ma", "pm-first-ma"} {
		p, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sizes := range [][]int{{9, 1}, {1, 9, 1}, {1, 1 << 40, 1}} {
			e := env(t, 2, 4)
			e.Scores = scores([]float64{1.0, 0.9, 1.1, 0.9, 1.0, 1.0, 0.9, 1.2}, 1.5)
			var order []*workload.Job
			for i, n := range sizes {
				order = append(order, job(i, n, variability.ClassA))
			}
			out := p.Place(e, order)
			for i, g := range out {
				if placed, want := g != nil, i == 0 && sizes[0] == 1; placed != want {
					t.Errorf("%s, sizes %v: job %d got %v, want placed %v", name, sizes, i, g, want)
				}
			}
		}
	}
}
