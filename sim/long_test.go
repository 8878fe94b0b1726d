package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// TestLongOrdersMatchPlain: rounds whose order is long enough for the
// incremental loop to apply the answer in applyLong (round.ReadsAhead:
// 1,024 jobs and more; the property test's clusters never get there)
// give exactly the plain loop's records, rounds and summary, stepping
// and skipping. On 128x8, jobs of 1 and 2 GPUs arrive in waves faster
// than they finish, so that most rounds order a full cluster of running
// jobs and the waiting ones behind them; non-sticky placements move
// most running jobs every round, with and without move costs and
// starvation guards.
func TestLongOrdersMatchPlain(t *testing.T) {
	cases := []struct {
		sched string
		place string
		costs bool
		guard float64
	}{
		{"fifo", "pal", false, 0},
		{"fifo", "packed-nonsticky", true, 0},
		{"las", "pal", true, 1500},
		{"srtf", "pm-first", false, 0},
		{"tiresias-las", "pal", false, 900},
	}
	for n, c := range cases {
		cfg := longCase(uint64(n))
		if c.costs {
			cfg.Costs = workload.Costs{Default: workload.MoveCost{Migration: 120, Preemption: 200}}
		}
		cfg.StarvationGuard = c.guard
		sched := map[string]func() policy.Scheduler{
			"fifo": func() policy.Scheduler { return schedule.FIFO{} },
			"las":  func() policy.Scheduler { return schedule.LAS{} },
			"srtf": func() policy.Scheduler { return schedule.SRTF{} },
			"tiresias-las": func() policy.Scheduler {
				return schedule.NewTiresiasLAS(schedule.TiresiasConfig{Thresholds: []float64{600, 2400}})
			},
		}[c.sched]
		name := fmt.Sprintf("%s %s costs %v guard %v", c.sched, c.place, c.costs, c.guard)
		want, err := requireLoopsAgree(t, name, cfg, sched, c.place)
		if err != "" {
			t.Fatalf("%s: %s", name, err)
		}
		// A job needs at most 2 GPUs, so the view holds the running
		// jobs and at least the first size/2+1 waiting ones (see
		// buildView).
		long := 0
		for _, r := range want.Rounds {
			if round.ReadsAhead(r.Running + min(r.Queued, cfg.Cluster.Size()/2+1)) {
				long++
			}
		}
		t.Logf("%s: %d long of %d rounds, %d migrations", name, long, len(want.Rounds), want.Summary.Migrations)
		if long < 5 || want.Summary.Migrations == 0 {
			t.Fatalf("%s: %d rounds of %d with 1,024 active jobs or more, %d migrations: the long path is hardly run", name, long, len(want.Rounds), want.Summary.Migrations)
		}
	}
}

// longCase is a trace of 3,000 jobs in five waves on 128x8 GPUs.
func longCase(seed uint64) Config {
	rng := rand.New(rand.NewPCG(seed, 99))
	cl, _ := cluster.New(128, 8)
	size := cl.Size()
	var jobs []workload.Spec
	for i := range 3000 {
		g := []int{1, 1, 1, 2}[rng.IntN(4)]
		s := spec(i, g, float64(i/600)*600+float64(rng.IntN(300)), float64(600+rng.IntN(3000)))
		s.Class = variability.Class(rng.IntN(variability.NumClasses))
		s.IterTime = []float64{1, 0.5, 0.17540429367763434, 3.5714}[rng.IntN(4)]
		jobs = append(jobs, s)
	}
	raw, sc := randomScores(rng, size)
	return Config{Cluster: cl, Trace: &workload.Trace{Name: "long", Jobs: jobs}, Round: 300,
		Locality: ConstantLocality(1.5), Raw: raw, Scores: sc, Seed: seed, MaxRounds: 5000}
}
