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

// twoNodeEnv is 2 nodes x 2 GPUs: for class A, node 0's GPUs score 1.0
// and node 1's 0.9 (faster); locality penalty 2.
func twoNodeEnv(t *testing.T) *policy.Env {
	t.Helper()
	c, err := cluster.New(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	sc := &policy.Scores{}
	for k := range sc.SF {
		sc.SF[k] = []float64{1.0, 1.0, 0.9, 0.9}
		sc.LV[k] = []policy.LVStep{{V: 0.9}, {V: 1.0}, {V: 0.9, Across: true}, {V: 1.0, Across: true}}
	}
	return &policy.Env{Cluster: c, Scores: sc, Rand: rand.New(rand.NewPCG(1, 2)),
		Locality: func(*workload.Spec) float64 { return 2 }}
}

// costly makes a running class-A job of n GPUs with remaining work iters
// x 1 s on held, and a migration cost.
func costly(id int, iters, cost float64, held ...int) *workload.Job {
	j := job(id, len(held), variability.ClassA, held...)
	j.Iterations, j.IterTime = iters, 1
	j.MoveCost.Migration = cost
	return j
}

func mustNew(t *testing.T, name string) policy.Placer {
	t.Helper()
	p, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Hand-computed: a 1-GPU job on GPU 0 (score 1.0) with 1,000 s of work
// left would run 0.1 x 1,000 = 100 s faster on GPU 2 (score 0.9), which
// is PAL's and PM-First's pick. It moves when that gain exceeds its
// migration cost and stays otherwise; the base placers always move it.
func TestMigrationAwareMovesOnlyWhenItPays(t *testing.T) {
	for _, base := range []string{"pal", "pm-first"} {
		for _, tc := range []struct {
			cost float64
			want []int
		}{
			{0, []int{2}},   // free: the base placer's answer
			{50, []int{2}},  // gain 100 > 50: moves
			{99, []int{2}},  // gain 100 > 99: moves
			{100, []int{0}}, // gain 100 = cost: stays (it must exceed)
			{500, []int{0}}, // gain 100 < 500: stays
		} {
			e := twoNodeEnv(t)
			j := costly(0, 1000, tc.cost, 0)
			if got := mustNew(t, base).Place(e, []*workload.Job{j}); !slices.Equal(got[0], []int{2}) {
				t.Fatalf("%s: base placer gives %v, want the faster GPU 2", base, got[0])
			}
			got := mustNew(t, base+"-ma").Place(e, []*workload.Job{j})
			if !slices.Equal(got[0], tc.want) {
				t.Errorf("%s-ma, cost %v: job on %v, want %v", base, tc.cost, got[0], tc.want)
			}
		}
	}
}

// Less work left, less gain: at 400 s left the same move gains 40 s, so a
// 50 s cost keeps the job where it is.
func TestMigrationAwareWeighsRemainingWork(t *testing.T) {
	e := twoNodeEnv(t)
	j := costly(0, 1000, 50, 0)
	j.Executed = 600
	if got := mustNew(t, "pal-ma").Place(e, []*workload.Job{j}); !slices.Equal(got[0], []int{0}) {
		t.Errorf("400 s left, gain 40 s, cost 50 s: on %v, want it kept on [0]", got[0])
	}
}

// A running job whose move has a price keeps its GPUs whoever would take
// them: a waiting job, even one ahead of it in the order, picks among the
// GPUs nobody holds, and takes a running job's only through a preemption
// the order asks for (it does not fit otherwise, and the running job is
// behind it) or when the job itself moves because that pays. On 2 nodes x
// 2 GPUs (class A: node 0 scores 1.0, node 1 0.9, faster), the running
// job R holds GPU 2 with 1e9 s of work and a 1e9 s migration cost, so
// its move never pays.
func TestMigrationAwareKeepsRunningJobs(t *testing.T) {
	unpreemptible := func(j *workload.Job) *workload.Job { j.MoveCost.Preemption = math.Inf(1); return j }
	for _, tc := range []struct {
		name string
		// order: W (waiting, wants n GPUs) and R, W first unless rFirst.
		n      int
		rFirst bool
		noPre  bool
		wantW  []int
		wantR  []int
		// pmFirstW: PM-First's answer where it differs (it ignores
		// locality: the best free GPU, 3, then the first 1.0 one).
		pmFirstW map[string][]int
	}{
		// W (2 GPUs) would take node 1 (GPUs 2, 3) under the base
		// placer; GPU 2 is R's, so it takes node 0 instead.
		{name: "waiting job ahead fits elsewhere", n: 2, wantW: []int{0, 1}, wantR: []int{2},
			pmFirstW: map[string][]int{"pm-first": {0, 3}}},
		// W needs all 4 GPUs: only a preemption makes room, and R is
		// behind it in the order, so R is preempted.
		{name: "order asks for a preemption", n: 4, wantW: []int{0, 1, 2, 3}, wantR: nil},
		// The same with R ahead of W: the order does not ask, W waits.
		{name: "running job ahead is never preempted", n: 4, rFirst: true, wantW: nil, wantR: []int{2}},
		// R may not be preempted (a pod nothing would recreate): W waits.
		{name: "unpreemptible job keeps its GPUs", n: 4, noPre: true, wantW: nil, wantR: []int{2}},
		// W needs 3: the 3 free GPUs hold it, nothing is preempted.
		{name: "fits around the running job", n: 3, wantW: []int{0, 1, 3}, wantR: []int{2}},
	} {
		for _, base := range []string{"pal", "pm-first", "packed-nonsticky"} {
			e := twoNodeEnv(t)
			w := job(0, tc.n, variability.ClassA)
			r := costly(1, 1e9, 1e9, 2)
			if tc.noPre {
				unpreemptible(r)
			}
			order := []*workload.Job{w, r}
			if tc.rFirst {
				order = []*workload.Job{r, w}
			}
			got := mustNew(t, base+"-ma").Place(e, order)
			gw, gr := got[0], got[1]
			if tc.rFirst {
				gw, gr = got[1], got[0]
			}
			wantW := tc.wantW
			if w, ok := tc.pmFirstW[base]; ok {
				wantW = w
			}
			if !slices.Equal(gw, wantW) || (gw == nil) != (tc.wantW == nil) {
				t.Errorf("%s-ma, %s: waiting job got %v, want %v", base, tc.name, gw, wantW)
			}
			if !slices.Equal(gr, tc.wantR) || (gr == nil) != (tc.wantR == nil) {
				t.Errorf("%s-ma, %s: running job got %v, want %v", base, tc.name, gr, tc.wantR)
			}
		}
	}
}

// The rule's arithmetic: a move's gain uses the slowdown of the slowest
// GPU the job holds. On 2 nodes x 2 GPUs (class A: node 0 scores 0.9,
// node 1 1.0; locality penalty 2), a 2-GPU job on GPUs 1 (0.9) and 2
// (1.0) spans the nodes: held slowdown max(0.9, 1.0) x 2 = 2.0. Node 0's
// two 0.9 GPUs (its own GPU 1 and the free GPU 0) give 0.9, so with
// 1,000 s left the move gains 1,000 x (2.0 - 0.9) = 1,100 s: it moves at
// cost 1,000 and stays at cost 1,200. (Reading the first GPU's score
// instead of the slowest would give 1.8 and a gain of 900 s.)
func TestMigrationGainUsesSlowestHeldGPU(t *testing.T) {
	for _, tc := range []struct {
		cost float64
		want []int
	}{
		{1000, []int{0, 1}},
		{1099, []int{0, 1}},
		{1100, []int{1, 2}},
		{1200, []int{1, 2}},
	} {
		for _, name := range []string{"pal-ma", "pm-first-ma"} {
			e := twoNodeEnv(t)
			for k := range e.Scores.SF {
				e.Scores.SF[k] = []float64{0.9, 0.9, 1.0, 1.0}
			}
			j := costly(0, 1000, tc.cost, 1, 2)
			p := mustNew(t, name)
			if g := p.(policy.MoveJudge).MoveGain(e, j, []int{1, 2}, []int{0, 1}); math.Abs(g-1100) > 1e-9 {
				t.Errorf("%s: gain of [1 2] -> [0 1] is %v, want 1100", name, g)
			}
			if got := p.Place(e, []*workload.Job{j}); !slices.Equal(got[0], tc.want) {
				t.Errorf("%s, cost %v: job on %v, want %v", name, tc.cost, got[0], tc.want)
			}
		}
	}
}

// The variability-blind baselines weigh locality only: a 2-GPU job spread
// over GPUs 1 and 2 (penalty 2) with 1,000 s left gains 1,000 s by
// consolidating, so a 999 s cost moves it and a 1,000 s cost keeps it. A
// job on one node gains nothing from another node, whatever the scores.
func TestMigrationAwareBaselinesWeighLocality(t *testing.T) {
	for _, tc := range []struct {
		held []int
		cost float64
		want []int
	}{
		{[]int{1, 2}, 999, []int{0, 1}},
		{[]int{1, 2}, 1000, []int{1, 2}},
		{[]int{0, 1}, 1, []int{0, 1}},
	} {
		e := twoNodeEnv(t)
		j := costly(0, 1000, tc.cost, tc.held...)
		got := mustNew(t, "packed-nonsticky-ma").Place(e, []*workload.Job{j})
		if !slices.Equal(got[0], tc.want) {
			t.Errorf("held %v cost %v: got %v, want %v", tc.held, tc.cost, got[0], tc.want)
		}
	}
	// Random: a job on one node never moves once moves cost anything.
	e := twoNodeEnv(t)
	r := mustNew(t, "random-nonsticky-ma")
	for range 20 {
		j := costly(0, 1e6, 1, 2, 3)
		if got := r.Place(e, []*workload.Job{j}); !slices.Equal(got[0], []int{2, 3}) {
			t.Fatalf("random-nonsticky-ma moved a consolidated job to %v", got[0])
		}
	}
}

// A kept job's GPUs are never handed to another job, also by Random,
// which caches a pool of free GPUs across picks.
func TestMigrationAwareRandomNeverDoubleBooks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		c := randomCluster(t, rng)
		e := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size()), Rand: rand.New(rand.NewPCG(uint64(trial), 1))}
		order := randomQueue(rng, c)
		for _, j := range order {
			j.Iterations, j.IterTime, j.MoveCost.Migration = 1000, 1, 5
		}
		for _, name := range MigrationAwareNames() {
			out := mustNew(t, name).Place(e, order)
			seen := map[int]int{}
			for i, g := range out {
				if g != nil && len(g) != order[i].GPUs {
					t.Fatalf("%s: job %d got %d GPUs, wants %d", name, order[i].ID, len(g), order[i].GPUs)
				}
				for _, x := range g {
					if o, ok := seen[x]; ok {
						t.Fatalf("%s trial %d: GPU %d given to jobs %d and %d", name, trial, x, o, order[i].ID)
					}
					seen[x] = order[i].ID
				}
			}
		}
	}
}

// The indexed migration-aware placers return what the reference scans
// return, on random clusters, queues and costs.
func TestMigrationAwareIndexedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	pal := &PAL{TieBreak: PMFirstArtifact, MigrationAware: true}
	pm := &PMFirst{TieBreak: PMFirstArtifact, MigrationAware: true}
	for trial := range 400 {
		c := randomCluster(t, rng)
		e := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size()),
			Locality: func(*workload.Spec) float64 { return 1.7 }}
		sameMigrationAware(t, fmt.Sprintf("trial %d", trial), e, randomQueue(rng, c), rng, pal, pm)
	}
}

// Names: every migration-aware name is its base's non-sticky variant; a
// sticky placement has none.
func TestMigrationAwareNames(t *testing.T) {
	for _, n := range MigrationAwareNames() {
		p := mustNew(t, n)
		if p.Name() != n || p.Sticky() {
			t.Errorf("New(%q): Name %q, Sticky %v", n, p.Name(), p.Sticky())
		}
	}
	if p := mustNew(t, "PAL-MA"); p.Name() != "pal-ma" {
		t.Errorf("PAL-MA is %q", p.Name())
	}
	for _, bad := range []string{"packed-sticky-ma", "random-sticky-ma", "tiresias-ma", "best-ma"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

// The index keeps state between rounds (which classes it restored, which
// it loaded, which it retired): migration-aware rounds on one cluster and
// score table, each with a fresh queue and running set, must each match
// the reference, as must a base round after them.
func TestMigrationAwareIndexedMatchesReferenceAcrossRounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 60 {
		c := randomCluster(t, rng)
		e := &policy.Env{Cluster: c, Scores: randomScores(rng, c.Size()),
			Locality: func(*workload.Spec) float64 { return 1.7 }}
		pal := &PAL{TieBreak: PMFirstArtifact, MigrationAware: true}
		pm := &PMFirst{TieBreak: PMFirstArtifact, MigrationAware: true}
		for round := range 8 {
			sameMigrationAware(t, fmt.Sprintf("trial %d round %d", trial, round), e, randomQueue(rng, c), rng, pal, pm)
		}
	}
}

// The migration-aware frame gives GPUs back to the index (a pinned job
// offered its own, a preemption), which lowers a bucket's hint to the
// word of the node given back. Only a bin of more than 64 nodes has a
// second word for a hint to be wrong about, so the rounds above, on
// small clusters, cannot see a hint that give leaves too high: these run
// on measured profiles at 300x4 and 200x6, round after round on one
// index, against the reference. The jobs are of a node or less, so that
// a round fills the cluster instead of ending at a job larger than what
// is free.
func TestMigrationAwareIndexedMatchesReferenceOnWideBins(t *testing.T) {
	for _, shape := range [][2]int{{300, 4}, {200, 6}} {
		env := profileEnv(t, shape[0], shape[1])
		env.Locality = func(*workload.Spec) float64 { return 1.7 }
		c := env.Cluster
		rng := rand.New(rand.NewPCG(uint64(shape[0]), 9))
		pal := &PAL{TieBreak: PMFirstArtifact, MigrationAware: true}
		pm := &PMFirst{TieBreak: PMFirstArtifact, MigrationAware: true}
		for round := range 6 {
			sameMigrationAware(t, fmt.Sprintf("%v round %d", c, round), env, smallJobsQueue(rng, c), rng, pal, pm)
		}
		wide := false
		for _, bi := range pm.ix.cls[0].bins {
			wide = wide || bi.nw >= 2
		}
		if !pm.ix.ok || !wide {
			t.Fatalf("%v: the index is not in use or no bin of class A spans two words", c)
		}
	}
}

// smallJobsQueue is randomQueue with jobs of at most a node's GPUs, 1.2
// times the cluster in all, half of them running on random free GPUs.
func smallJobsQueue(rng *rand.Rand, c *cluster.Cluster) []*workload.Job {
	perm := rng.Perm(c.Size())
	var order []*workload.Job
	for demand := 0; demand < c.Size()*6/5; {
		n := 1 + rng.IntN(c.MaxGPUsPerNode())
		demand += n
		j := workload.NewJob(workload.Spec{ID: len(order), GPUs: n, Class: variability.Class(rng.IntN(variability.NumClasses)), Submit: float64(len(order))})
		if rng.IntN(2) == 0 && len(perm) >= n {
			j.GPUsHeld = slices.Sorted(slices.Values(perm[:n]))
			perm = perm[n:]
		}
		order = append(order, j)
	}
	return order
}

// sameMigrationAware draws each job's work and migration cost (0-600 s)
// and fails unless pal-ma and pm-first-ma, on their indexes, place order
// as the reference does.
func sameMigrationAware(t *testing.T, what string, e *policy.Env, order []*workload.Job, rng *rand.Rand, pal *PAL, pm *PMFirst) {
	t.Helper()
	for _, j := range order {
		j.Iterations, j.IterTime = float64(rng.IntN(5000)), 1
		j.MoveCost.Migration = []float64{0, 1, 30, 120, 600}[rng.IntN(5)]
	}
	sameAlloc(t, what+" pal-ma", pal.Place(e, order), (&refPAL{TieBreak: PMFirstArtifact, MigrationAware: true}).Place(e, order))
	sameAlloc(t, what+" pm-first-ma", pm.Place(e, order), (&refPMFirst{TieBreak: PMFirstArtifact, MigrationAware: true}).Place(e, order))
}
