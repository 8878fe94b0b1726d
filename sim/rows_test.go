package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/workload"
)

// synergyFile writes a generated Synergy trace to a file: what pal
// trace synergy writes and pal sim reads.
func synergyFile(t *testing.T, opt workload.SynergyOptions) string {
	t.Helper()
	jobs, err := workload.GenerateSynergyEmbedded(opt)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "syn.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := workload.WriteTrace(f, jobs); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamedTraceMatchesWhole runs generated Synergy traces read row by
// row as the clock reaches them (workload.StreamTraceFile) and read whole
// (workload.ReadTraceFile), under both loops, with and without per-job
// records, and requires the same results exactly: every per-job record,
// round line and summary figure, and the same rounds and extras.
func TestStreamedTraceMatchesWhole(t *testing.T) {
	zoo, err := workload.ParseClassMix("zoo")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(12, 4)
	if err != nil {
		t.Fatal(err)
	}
	raw, sc := randomTables(rand.New(rand.NewPCG(3, 3)), cl.Size())
	for _, tc := range []struct {
		opt   workload.SynergyOptions
		sched func() policy.Scheduler
		pl    string
		costs workload.MoveCost
		guard float64
	}{
		{workload.SynergyOptions{Rate: 40, Jobs: 1000, Seed: 1, Mix: zoo}, func() policy.Scheduler { return schedule.FIFO{} }, "pal", workload.MoveCost{}, 0},
		// A tracked window (untracked rows around it), move costs (lost
		// GPU time) and a starvation guard that fires.
		{workload.SynergyOptions{Rate: 60, Jobs: 900, Seed: 2, Mix: zoo, Track: &workload.TrackRange{First: 300, Last: 900}},
			func() policy.Scheduler { return schedule.LAS{} }, "packed-nonsticky", workload.MoveCost{Migration: 40, Preemption: 90}, 20000},
	} {
		p := synergyFile(t, tc.opt)
		whole, err := workload.ReadTraceFile(p, workload.DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := workload.StreamTraceFile(p, workload.DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		if !streamed.Streamed() || len(streamed.Jobs) != 0 {
			t.Fatalf("%s: not streamed", p)
		}
		for _, plain := range []bool{false, true} {
			for _, noRecords := range []bool{false, true} {
				name := fmt.Sprintf("%s rate %g, plain %v, no records %v", tc.pl, tc.opt.Rate, plain, noRecords)
				run := func(tr *workload.Trace) *Result {
					cfg := Config{Cluster: cl, Trace: tr, Scheduler: tc.sched(), Placer: mustPlacer(t, tc.pl), Round: 300,
						Locality: ConstantLocality(1.7), Raw: raw, Scores: sc, Seed: 5, Plain: plain, StarvationGuard: tc.guard,
						Costs: workload.Costs{Default: tc.costs}, NoRecords: noRecords, NoRoundStats: noRecords, NoMoveGains: noRecords}
					res, err := Run(cfg)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return res
				}
				want, got := run(whole), run(streamed)
				if d := sameResult(want, got); d != "" {
					t.Fatalf("%s: streamed: %s", name, d)
				}
				if got.NumRounds != want.NumRounds || got.Extras != want.Extras || noRecords != (len(want.Jobs) == 0) {
					t.Fatalf("%s: streamed: %d rounds, %d extras, %d records; whole %d, %d, %d", name, got.NumRounds, got.Extras, len(got.Jobs),
						want.NumRounds, want.Extras, len(want.Jobs))
				}
				if want.Summary.Jobs == 0 || (tc.costs != workload.MoveCost{}) && want.Summary.LostGPUSeconds == 0 {
					t.Fatalf("%s: the case measures nothing: %+v", name, want.Summary)
				}
			}
		}
	}
}

// A streamed trace's rows are read again, so the extras that reuse them
// are refused before the first round.
func TestStreamedTraceRefusesExtras(t *testing.T) {
	p := synergyFile(t, workload.SynergyOptions{Rate: 10, Jobs: 20, Seed: 1})
	tr, err := workload.StreamTraceFile(p, workload.DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := cluster.New(2, 4)
	_, err = Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "pal"), Round: 300,
		Locality: ConstantLocality(1.7), ExtraLoad: 2})
	if want := "sim: " + p + " is streamed, but extra arrivals (2 jobs/h) reuse its rows, which needs them held whole"; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}
