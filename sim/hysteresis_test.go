package sim

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/workload"
)

// Property: with a migration cost of 0 a migration-aware placement is its
// base placement, round for round and job for job, under every scheduler,
// on random traces and clusters (a preemption cost, which the variants do
// not weigh, changes nothing either). With positive costs the variants
// keep every invariant of a run.
func TestMigrationAwareEqualsBaseAtCostZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 3))
	for trial := range 12 {
		nodes, per := 1+rng.IntN(5), 1+rng.IntN(6)
		cl, _ := cluster.New(nodes, per)
		size := cl.Size()
		jobs := randomJobs(rng, size, 20+rng.IntN(30), 400)
		tr := &workload.Trace{Name: fmt.Sprintf("trial-%d", trial), Jobs: jobs}
		raw, sc := randomTables(rng, size)
		cfg := func(sn, pn string, costs workload.MoveCost) Config {
			sched, _ := schedule.New(sn)
			return Config{Cluster: cl, Trace: tr, Scheduler: sched, Placer: mustPlacer(t, pn), Round: 300,
				Locality: ConstantLocality(1.5), Raw: raw, Scores: sc, Seed: uint64(trial),
				StarvationGuard: 20000, MaxRounds: 100000, Costs: workload.Costs{Default: costs}}
		}
		for _, sn := range schedule.Names() {
			for _, ma := range place.MigrationAwareNames() {
				base := ma[:len(ma)-len(place.MigrationAwareSuffix)]
				for _, costs := range []workload.MoveCost{{}, {Preemption: 90}} {
					a, err := Run(cfg(sn, base, costs))
					if err != nil {
						t.Fatal(err)
					}
					b, err := Run(cfg(sn, ma, costs))
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(a, b) {
						t.Fatalf("trial %d %s, costs %+v: %s and %s differ\n%+v\n%+v", trial, sn, costs, base, ma, a.Summary, b.Summary)
					}
				}
				checkInvariants(t, fmt.Sprintf("trial %d %s %s with costs", trial, sn, ma), cfg(sn, ma, workload.MoveCost{Migration: 200, Preemption: 200}))
			}
		}
	}
}

// The migration-aware placers' answers also depend on each running job's
// remaining work, which shrinks between rounds; a job kept because its
// move did not pay never becomes worth moving as its work shrinks, so a
// dead round stays dead. Checked like TestIncrementalMatchesPlain: with
// move costs always on, the incremental loop (stepping or skipping) gives
// the plain loop's results exactly.
func TestMigrationAwareIncrementalMatchesPlain(t *testing.T) {
	trials := 300
	if testing.Short() {
		trials = 60
	}
	rng := rand.New(rand.NewPCG(31, 41))
	for trial := range trials {
		cfg, tiresias := randomCase(rng, trial)
		cfg.Costs = workload.Costs{Default: workload.MoveCost{Migration: float64(1 + rng.IntN(2000)), Preemption: float64(rng.IntN(400))}}
		sn := schedule.Names()[trial%len(schedule.Names())]
		pn := place.MigrationAwareNames()[trial%len(place.MigrationAwareNames())]
		sched := tiresias
		if sn != "tiresias-las" {
			sched = func() policy.Scheduler { s, _ := schedule.New(sn); return s }
		}
		requireLoopsAgree(t, fmt.Sprintf("trial %d %s %s costs %+v", trial, sn, pn, cfg.Costs.Default), cfg, sched, pn)
	}
}
