package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The migration rule as a property of whole runs: on random traces,
// clusters and move costs (> 0), under every scheduler, every
// migration-aware placement and both move models, every migration a run
// records was expected to save more than it cost (the rounds' and the
// jobs' smallest margins are positive), and at a cost of 1e9 s nothing
// ever moves. The same traces under the base placements do record moves
// that do not pay, so the check is one that could fail.
func TestMigrationsPayForThemselves(t *testing.T) {
	trials := 2400
	if testing.Short() {
		trials = 400
	}
	rng := rand.New(rand.NewPCG(2026, 12))
	scheds := append(schedule.Names(), "tiresias-las")
	unpaid, horizon, baseHorizon := 0, 0, 0
	for trial := range trials {
		cfg, tiresias := randomCase(rng, trial)
		mig := float64(1 + rng.IntN(3000))
		if trial%10 == 0 {
			mig = 1e9
		}
		// A preemption cost under half a round: LAS preempts every round
		// and must still progress to finish within the horizon.
		cfg.Costs = workload.Costs{Default: workload.MoveCost{Migration: mig, Preemption: float64(rng.IntN(int(cfg.Round / 2)))}}
		if rng.IntN(2) == 0 {
			cfg.Moves = MovesEvictRelaunch
		}
		sn := scheds[trial%len(scheds)]
		sched := tiresias
		if sn != "tiresias-las" {
			sched = func() policy.Scheduler { s, _ := schedule.New(sn); return s }
		}
		ma := place.MigrationAwareNames()[(trial/len(scheds))%len(place.MigrationAwareNames())]
		name := fmt.Sprintf("trial %d %s %s moves %s costs %+v", trial, sn, ma, cfg.Moves, cfg.Costs.Default)
		res, err := runLoop(t, cfg, sched, ma, trial%3 == 0, false, false)
		if err != "" {
			if strings.Contains(err, "unfinished after") {
				horizon++
				continue
			}
			t.Fatalf("%s: %s", name, err)
		}
		checkMovesPay(t, name, res, mig)
		base := strings.TrimSuffix(ma, place.MigrationAwareSuffix)
		b, berr := runLoop(t, cfg, sched, base, false, false, false)
		if berr != "" && strings.Contains(berr, "unfinished after") {
			baseHorizon++
		}
		if berr == "" {
			for _, r := range b.Rounds {
				if r.Migrations > 0 && !(r.MinMoveMargin > 0) {
					unpaid++
					break
				}
			}
		}
	}
	t.Logf("%d of %d traces: the base placement makes a move that does not pay; %d stopped at the horizon", unpaid, trials, horizon)
	// Costly moves under LAS and SRTF can keep a random trace from
	// finishing within randomCase's 1,500 rounds (jobs preempted every
	// round pay the cost every round); the base placements, which move
	// far more, stop there several times as often.
	t.Logf("stopped at the horizon: %d runs of the migration-aware placements, %d of the base ones", horizon, baseHorizon)
	if horizon > trials/10 || horizon >= baseHorizon {
		t.Errorf("%d of %d runs stopped at the horizon", horizon, trials)
	}
	if unpaid == 0 {
		t.Errorf("no base placement ever made a move that does not pay: the check cannot fail on these traces")
	}
}

func checkMovesPay(t *testing.T, name string, res *Result, cost float64) {
	t.Helper()
	moves := 0
	for _, r := range res.Rounds {
		moves += r.Migrations
		if r.Migrations > 0 && !(r.MinMoveMargin > 0) {
			t.Fatalf("%s: round at %v s: %d migrations, smallest gain minus cost %v s", name, r.T, r.Migrations, r.MinMoveMargin)
		}
	}
	for _, j := range res.Jobs {
		if j.Migrations > 0 && !(j.MinMoveMargin > 0 && j.MoveGain > cost) {
			t.Fatalf("%s: job %d: %d migrations, gain %v s, smallest margin %v s", name, j.ID, j.Migrations, j.MoveGain, j.MinMoveMargin)
		}
	}
	if moves != res.Summary.Migrations {
		t.Fatalf("%s: rounds record %d migrations, the summary %d", name, moves, res.Summary.Migrations)
	}
	if cost >= 1e9 && moves > 0 {
		t.Fatalf("%s: %d migrations at cost %g s", name, moves, cost)
	}
}

// A two-job case, hand-derived: 16 nodes x 4 GPUs, every GPU
// scoring 1.0. Job 1 (4 GPUs, class C) runs on GPUs 0-3 from t = 0; job 2
// (32 GPUs, class A) arrives at 400 s, when 60 GPUs are free. No GPU is
// faster than another and job 1 already sits on one node, so its move
// gains nothing and it keeps GPUs 0-3 at any positive cost; job 2 takes
// GPUs 4-35 (the 32 lowest free ones: 8 whole nodes). Under the plain
// placers job 1 is moved (PAL's frame places class A's job 2 first, on
// GPUs 0-31).
func TestNewJobOfAnotherClassDoesNotMoveARunningOne(t *testing.T) {
	cl, _ := cluster.New(16, 4)
	tr := &workload.Trace{Name: "two.csv", Jobs: []workload.Spec{
		{ID: 1, GPUs: 4, Submit: 0, Iterations: 36000, IterTime: 1, Class: variability.ClassC, Tracked: true},
		{ID: 2, GPUs: 32, Submit: 400, Iterations: 3600, IterTime: 1, Class: variability.ClassA, Tracked: true},
	}}
	sc := &policy.Scores{}
	for c := range sc.SF {
		for range cl.Size() {
			sc.SF[c] = append(sc.SF[c], 1)
		}
		sc.LV[c] = []policy.LVStep{{V: 1}, {V: 1, Across: true}}
	}
	for _, cost := range []float64{120, 100000} {
		for _, pn := range []string{"pal", "pm-first", "pal-ma", "pm-first-ma", "packed-nonsticky-ma"} {
			var at400 [][]int
			cfg := Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, pn), Round: 360,
				Locality: ConstantLocality(1.7), Scores: sc, MaxRounds: 10000,
				Costs: workload.Costs{Default: workload.MoveCost{Migration: cost}}, Plain: true,
				Observe: func(T float64, order []*workload.Job, alloc [][]int) {
					if T == 720 {
						at400 = alloc
					}
				}}
			res, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wantMoves := 0 // -ma; the plain placers move job 1 at least once
			if !strings.HasSuffix(pn, "-ma") {
				wantMoves = 1
			}
			if res.Summary.Migrations != wantMoves && (wantMoves == 0 || res.Summary.Migrations == 0) {
				t.Errorf("%s at cost %g: %d migrations, want %d", pn, cost, res.Summary.Migrations, wantMoves)
			}
			if wantMoves == 0 {
				if len(at400) != 2 || !slices.Equal(at400[0], []int{0, 1, 2, 3}) || !slices.Equal(at400[1], seq(4, 36)) {
					t.Errorf("%s at cost %g: round at 720 s placed %v, want job 1 on 0-3 and job 2 on 4-35", pn, cost, at400)
				}
			}
		}
	}
}

func seq(from, to int) []int {
	var s []int
	for g := from; g < to; g++ {
		s = append(s, g)
	}
	return s
}
