package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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

// TestValidateReadsRowsOnlyWhenBoundsMayFail validates streamed traces
// on 8 GPUs with a horizon of 10 rounds of 300 s (3000 s): when the
// first reading's bounds show that no row can fail, validate counts the
// tracked rows without reading the file again (it is gone by then);
// when a row may fail, or a Track range decides what counts, it reads
// the rows and gives what a trace held whole gives.
func TestValidateReadsRowsOnlyWhenBoundsMayFail(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration_s,model\n"
	cl, err := cluster.New(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rows string
		track      *[2]int
		removed    bool   // the file is removed after its first reading
		tracked    int    // when no error
		err        string // the start of the error, "" for none
	}{
		{"every row within: no reading", "1,2,0,100,BERT\n2,4,60,200,BERT\n3,8,90,2800,BERT\n", nil, true, 3, ""},
		{"a row needs 16 GPUs", "1,2,0,100,BERT\n2,16,60,200,BERT\n", nil, false, 0, `:3: field "num_gpus": job 2 asks for 16 GPUs`},
		{"a row arrives at the horizon", "1,2,0,100,BERT\n2,1,3000,10,BERT\n", nil, false, 0, `:3: field "submit_time": job 2 arrives at 3000 s`},
		{"a row ends past it", "1,2,0,100,BERT\n2,1,60,2950,BERT\n", nil, false, 0, `:3: field "duration_s": job 2 runs`},
		{"a Track range: the rows are read", "1,2,0,100,BERT\n2,4,60,200,BERT\n", &[2]int{2, 2}, false, 1, ""},
		{"a Track range, file gone", "1,2,0,100,BERT\n2,4,60,200,BERT\n", &[2]int{2, 2}, true, 0, "open "},
	} {
		p := filepath.Join(t.TempDir(), "t.csv")
		if err := os.WriteFile(p, []byte(h+tc.rows), 0o644); err != nil {
			t.Fatal(err)
		}
		whole, err := workload.ReadTraceFile(p, workload.DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := workload.StreamTraceFile(p, workload.DefaultModels())
		if err != nil || !streamed.Streamed() {
			t.Fatalf("%s: %v, streamed %v", tc.name, err, streamed != nil && streamed.Streamed())
		}
		if tc.removed {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		cfg := func(tr *workload.Trace) *Config {
			return &Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "pal"), Round: 300,
				Locality: ConstantLocality(1.7), MaxRounds: 10, Track: tc.track}
		}
		got, gotErr := cfg(streamed).validate()
		switch {
		case tc.err == "" && (gotErr != nil || got != tc.tracked):
			t.Errorf("%s: %d tracked, error %v; want %d and none", tc.name, got, gotErr, tc.tracked)
		case tc.err != "" && (gotErr == nil || !strings.Contains(gotErr.Error(), tc.err)):
			t.Errorf("%s: error %v, want one holding %q", tc.name, gotErr, tc.err)
		}
		if !tc.removed {
			want, wantErr := cfg(whole).validate()
			if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("%s: streamed %d, %v; whole %d, %v", tc.name, got, gotErr, want, wantErr)
			}
		}
	}
}
