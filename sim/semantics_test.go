package sim

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/workload"
)

// runHand runs a hand-built trace with unit iteration times, median GPUs
// (PM 1) and no locality penalty, 100 s rounds.
func runHand(t *testing.T, nodes, per int, sched policy.Scheduler, placer string, guard float64, jobs ...workload.Spec) *Result {
	t.Helper()
	cl, err := cluster.New(nodes, per)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Cluster: cl, Trace: &workload.Trace{Name: "t.csv", Jobs: jobs}, Scheduler: sched,
		Placer: mustPlacer(t, placer), Round: 100, Locality: ConstantLocality(1), StarvationGuard: guard})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// life is what the hand derivations predict for one job.
type life struct {
	start, done float64
	pre, mig    int
}

// checkJobs compares every finished job with want, after checking that
// exactly the wanted jobs finished.
func checkJobs(t *testing.T, res *Result, want map[int]life) {
	t.Helper()
	if len(res.Jobs) != len(want) {
		t.Fatalf("%d jobs finished, want %d: %+v", len(res.Jobs), len(want), res.Jobs)
	}
	for _, j := range res.Jobs {
		if got := (life{j.FirstStart, j.Completion, j.Preemptions, j.Migrations}); got != want[j.ID] {
			t.Errorf("job %d: %+v, want %+v", j.ID, got, want[j.ID])
		}
	}
}

// Non-sticky packed placement, FIFO, 2 nodes x 2 GPUs, by hand:
//
//	T=0    job 0 (1 GPU, 150 it) arrives; no node has exactly 1 free, the
//	       fewest-free node with room is node 0 (tie, lowest id): GPU 0.
//	T=100  job 1 (2 GPUs, 1000 it, submitted 50) arrives; re-plan: job 0
//	       on GPU 0 again, job 1 on node 1 (exactly 2 free): GPUs 2,3.
//	T=200  job 0 has 200 >= 150 it: done. Job 2 (1 GPU, submitted 150)
//	       arrives. Re-plan: job 1 now finds node 0 with exactly 2 free and
//	       moves to GPUs 0,1 (a migration); job 2 gets node 1's GPU 2.
//	       Nothing moves after that: job 1 has 100 it and needs 900 more,
//	       done at T=1100; job 2 (100 it) is done at T=300.
//
// One migration (job 1), no preemption.
func TestPreemptionMigrationCountsNonSticky(t *testing.T) {
	res := runHand(t, 2, 2, schedule.FIFO{}, "packed-nonsticky", 0,
		spec(0, 1, 0, 150), spec(1, 2, 50, 1000), spec(2, 1, 150, 100))
	checkJobs(t, res, map[int]life{
		0: {0, 200, 0, 0}, 1: {100, 1100, 0, 1}, 2: {200, 300, 0, 0}})
	if res.Summary.Preemptions != 0 || res.Summary.Migrations != 1 {
		t.Errorf("summary preemptions %d migrations %d, want 0 and 1", res.Summary.Preemptions, res.Summary.Migrations)
	}
}

// LAS with sticky packing on one 2-GPU node, by hand:
//
//	T=0    job 0 (2 GPUs, 1000 it) runs on GPUs 0,1.
//	T=100  job 1 (2 GPUs, 100 it, submitted 50) arrives with 0 s attained
//	       against job 0's 100 s, so LAS puts it first. It does not fit;
//	       job 0, behind it, is suspended (one preemption) and job 1 runs.
//	T=200  job 1 has 100 it: done. Job 0 resumes (100 it done so far).
//	T=1100 job 0 reaches 1000 it: done.
func TestPreemptionMigrationCountsLAS(t *testing.T) {
	res := runHand(t, 1, 2, schedule.LAS{}, "packed-sticky", 0, spec(0, 2, 0, 1000), spec(1, 2, 50, 100))
	checkJobs(t, res, map[int]life{0: {0, 1100, 1, 0}, 1: {100, 200, 0, 0}})
	if res.Summary.Preemptions != 1 || res.Summary.Migrations != 0 {
		t.Errorf("summary preemptions %d migrations %d, want 1 and 0", res.Summary.Preemptions, res.Summary.Migrations)
	}
}

// The starvation guard, one GPU, FIFO, sticky, guard 250 s, by hand: job 0
// (10,000 it) and job 1 (100 it) both arrive at 0; job 0 runs. Job 1 has
// waited 100, 200, 300 s at T=100, 200, 300: at T=300 it passes the guard,
// gets priority 1, goes first, and job 0 (behind it) is suspended. Job 1
// runs in (300, 400] and is done at 400; job 0 resumes at 400 with 300 it
// done and needs 97 more rounds: done at 10,100. Without the guard job 1
// would start at 10,000.
func TestStarvationGuardJumpsAtTheExactRound(t *testing.T) {
	res := runHand(t, 1, 1, schedule.FIFO{}, "packed-sticky", 250, spec(0, 1, 0, 10000), spec(1, 1, 0, 100))
	checkJobs(t, res, map[int]life{0: {0, 10100, 1, 0}, 1: {300, 400, 0, 0}})
}

// Completion at the exact boundary and inclusive arrival: at 0.5 s per
// iteration a 100 s round credits exactly 200 iterations, so a 400-it job
// launched at 0 reaches its total exactly at T=200 and ends there (not at
// 300). A job submitted exactly at 200 is admitted at 200 (arrival <= T)
// and, with 200 it, ends exactly at 300.
func TestCompletionAtExactBoundaryAndInclusiveArrival(t *testing.T) {
	a, b := spec(0, 1, 0, 400), spec(1, 1, 200, 200)
	a.IterTime, b.IterTime = 0.5, 0.5
	res := runHand(t, 1, 1, schedule.FIFO{}, "packed-sticky", 0, a, b)
	checkJobs(t, res, map[int]life{0: {0, 200, 0, 0}, 1: {200, 300, 0, 0}})
}
