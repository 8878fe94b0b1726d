package kube

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/kube/state"
)

// Random rounds of LAS, SRTF and Tiresias-LAS with preemptions and
// moves on four 4-GPU nodes, and now and then a restart: a new scheduler
// on the same apiserver, as after a kill -9, with only what the pods and
// the ConfigMaps hold. A gang's credited work (iterations done) and, for
// the schedulers that order by it, its attained service never go down
// while it lives: a restart must not read a gang that ran, or one that
// ran and waits again, as having run less. After every round no GPU is
// given twice. RESTART_WORLD_SEEDS=1 runs 60 seeds of 300 rounds.
func TestWorkNeverLostAcrossRestarts(t *testing.T) {
	seeds, rounds := 6, 150
	if os.Getenv("RESTART_WORLD_SEEDS") != "" {
		seeds, rounds = 60, 300
	}
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		cfg := testCfg()
		cfg.Scheduler = []string{"las", "srtf", "tiresias-las"}[seed%3]
		cfg.Placement = []string{"pal-ma", "packed-sticky", "pal"}[seed/3%3]
		w := newWorld(t, cfg, uint64(seed), 4, 4)
		rng := rand.New(rand.NewPCG(uint64(seed), 41))
		step := w.workload(rng)
		type credit struct{ executed, attained float64 }
		last := map[string]credit{}
		restarts := 0
		t0 := time.Unix(1_700_000_000, 0)
		for r := range rounds {
			at := t0.Add(time.Duration(r) * 10 * time.Second)
			step(r, at)
			restarted := false
			if r > 0 && rng.IntN(10) == 0 {
				w.restart()
				restarts++
				restarted = true
			}
			w.deliver(-1)
			w.round(at)
			if err := w.check(); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, r, err)
			}
			w.deliver(-1)
			for _, g := range w.s.state.Snapshot().Gangs {
				j := g.Job
				if j == nil || (g.State != state.GangQueued && g.State != state.GangRunning) {
					continue // a leaving gang's job is not kept up to date: it is not placed
				}
				now := credit{j.Executed, j.Attained}
				if was, ok := last[g.Key]; ok {
					if now.executed < was.executed-1e-6*max(1, was.executed) {
						t.Errorf("seed %d (%s/%s) round %d: gang %s (%v) has done %v iterations, %v at the round before (restarted: %v)",
							seed, cfg.Scheduler, cfg.Placement, r, g.Key, g.State, now.executed, was.executed, restarted)
					}
					if cfg.Scheduler != "srtf" && now.attained < was.attained-1e-6*max(1, was.attained) {
						t.Errorf("seed %d (%s/%s) round %d: gang %s (%v) has attained %v s, %v at the round before (restarted: %v)",
							seed, cfg.Scheduler, cfg.Placement, r, g.Key, g.State, now.attained, was.attained, restarted)
					}
				}
				last[g.Key] = now
			}
			if t.Failed() {
				return
			}
		}
		if restarts == 0 {
			t.Errorf("seed %d: no restart", seed)
		}
	}
}

// A restart is invisible: two worlds run the same random rounds (gangs
// arriving, preempted, moved, finishing, evicted pods coming back), one
// with the same scheduler throughout and one with a new scheduler every
// few rounds (as after a kill -9: only the pods and the ConfigMaps
// survive), and after every round the same pods are bound on the same
// devices. What a scheduler holds only in memory (a gang's attained
// service, an evicted gang's work, when it arrived, the restart cost it
// owes, a head's backfill promise) would show as a different order. An
// evicted pod's successor is made with the round's time as its creation
// time, as an apiserver stamps it: a gang is as old as its oldest pod,
// so with it the scheduler that forgot or never saw a gang's arrival
// put it at the back of the line. RESTART_WORLD_SEEDS=1 runs 20 seeds
// (restarts every 3 to 22 rounds); RESTART_WORLD_CASES=sched/placement/
// backfill,... runs those cases instead (themis/pal/, las/pal/easy).
//
// Left out, because a restart is still visible in them:
//
//   - scheduler themis, by design: the fresh policy holds an auction at
//     its first round (nothing on the cluster says when the last one was
//     or which gangs it saw), and its apps' ρ come from state the old
//     policy held only in memory: when each app was first seen, the
//     contention integral behind its N_avg, when it last held GPUs. Seed
//     1 round 88 (restarted at 86): both auction at g48's arrival, and
//     the fresh policy gives it four of the eight free GPUs, the old one
//     none; seed 7 round 82, the fresh policy's first auction gives
//     waiting g41 and g46 GPUs that the old one leaves to nobody; seed 8
//     round 79, both auction at a finish and give the freed GPUs to
//     different gangs (g40 and g46 against g41). The recorded leases
//     (pal.io/lease-until) are kept either way.
//
// Backfill easy runs here under fifo/packed-sticky, tiresias-las/pal-ma,
// las/pal and srtf/packed-sticky; with RESTART_WORLD_SEEDS=1 these and
// las/packed-sticky, las/pal-ma and srtf/pal hold on all 20 seeds. What
// a head was promised is recorded (writePromises, and an evicted head's
// in its work record); before, 17 of 80 such runs (fifo, las, tiresias,
// srtf) differed. Then las/pal 4, las/packed-sticky 5, las/pal-ma 5,
// srtf/pal 2 and srtf/packed-sticky 2 of 20 still differed, through the
// records of gangs backfilled past a head (staleRecord): under LAS and
// SRTF the head is often a running gang the order stopped at that very
// round, whose pods its controller makes again after it, and the
// restarted scheduler read it as a gang that came later under the key
// and dropped the record (las/pal seed 0 round 23: the old scheduler
// keeps g8, backfilled past g11 at round 21, where it runs, and places
// the rest around it; the restarted one evicts g8 and binds g14 at
// once). Reading a head's arrival from its work record instead, it
// restored a record whose head had run since and waits again after an
// eviction (seed 0 round 65), which the old placer forgot when the head
// started: the work record now says when its gang was last bound.
func TestRestartsChangeNothing(t *testing.T) {
	seeds := 3
	if os.Getenv("RESTART_WORLD_SEEDS") != "" {
		seeds = 20
	}
	if testing.Short() {
		seeds = 1
	}
	cases := []struct{ sched, place, backfill string }{
		{"fifo", "packed-sticky", ""}, {"las", "packed-sticky", ""}, {"srtf", "packed-sticky", ""}, {"las", "pal", ""}, {"tiresias-las", "pal-ma", ""}, {"las", "pal-ma", ""}, {"srtf", "pal", ""},
		{"fifo", "packed-sticky", "easy"}, {"tiresias-las", "pal-ma", "easy"}, {"las", "pal", "easy"}, {"srtf", "packed-sticky", "easy"},
	}
	if v := os.Getenv("RESTART_WORLD_CASES"); v != "" {
		cases = cases[:0]
		for _, c := range strings.Split(v, ",") {
			f := strings.Split(c, "/")
			cases = append(cases, struct{ sched, place, backfill string }{f[0], f[1], f[2]})
		}
	}
	for _, c := range cases {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/%s/%d", c.sched, c.place, seed), func(t *testing.T) {
				cfg := testCfg()
				cfg.Scheduler, cfg.Placement, cfg.Backfill = c.sched, c.place, c.backfill
				var ws [2]*world
				var steps [2]func(int, time.Time)
				for i := range ws {
					ws[i] = newWorld(t, cfg, 1, 4, 4)
					steps[i] = ws[i].workload(rand.New(rand.NewPCG(uint64(seed), 8)))
				}
				t0 := time.Unix(1_700_000_000, 0)
				for r := range 150 {
					at := t0.Add(time.Duration(r) * 10 * time.Second)
					for i, w := range ws {
						w.reborn = at
						steps[i](r, at)
						if i == 1 && r%(3+seed) == 2 {
							w.restart()
						}
						w.deliver(-1)
						w.round(at)
						w.deliver(-1)
					}
					if a, b := ws[0].bound(), ws[1].bound(); a != b {
						t.Fatalf("round %d: without restarts %s\nwith restarts    %s", r, a, b)
					}
				}
			})
		}
	}
}
