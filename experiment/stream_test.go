package experiment

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/palsched/pal/workload"
)

// writeSynergy writes a generated Synergy trace to a file, with an app
// column when apps is set.
func writeSynergy(t *testing.T, jobs int, apps bool) string {
	t.Helper()
	specs, err := workload.GenerateSynergyEmbedded(workload.SynergyOptions{Rate: 40, Jobs: jobs, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if apps {
		for i := range specs {
			specs[i].App = "a"
		}
	}
	p := filepath.Join(t.TempDir(), "syn.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := workload.WriteTrace(f, specs); err != nil {
		t.Fatal(err)
	}
	return p
}

// wholeAndStreamed runs o with the trace read whole and again with
// StreamTrace, and requires the same header and every run's figures (the
// wall time aside). It returns both inputs and the whole runs.
func wholeAndStreamed(t *testing.T, what string, o Options) (whole, streamed *Inputs, runs []*RunResult) {
	t.Helper()
	brief := Hooks{NoJobRecords: true, NoMoveGains: true, NoRoundStats: true}
	wantIn, want, err := RunAllWith(o, brief)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	brief.StreamTrace = true
	gotIn, got, err := RunAllWith(o, brief)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(gotIn.Header(), wantIn.Header()) {
		t.Errorf("%s: header\n got %v\nwant %v", what, gotIn.Header(), wantIn.Header())
	}
	for i := range want {
		w, g := *want[i], *got[i]
		w.WallMS, g.WallMS = 0, 0
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s, %s: streamed\n got %+v\nwant %+v", what, w.Placement, g, w)
		}
	}
	return wantIn, gotIn, want
}

// pal sim streams a trace file where nothing needs it whole, and its
// header and every run's figures are those of the trace read whole.
func TestStreamedRunsMatchWhole(t *testing.T) {
	o, err := Preset("artifact")
	if err != nil {
		t.Fatal(err)
	}
	o.Trace, o.Cluster, o.Placements, o.Round = writeSynergy(t, 400, false), "8x4", "pal,packed-nonsticky", 300
	wantIn, gotIn, want := wholeAndStreamed(t, "synergy", o)
	if wantIn.Trace.Streamed() || !gotIn.Trace.Streamed() {
		t.Fatalf("streamed: %v without StreamTrace, %v with it", wantIn.Trace.Streamed(), gotIn.Trace.Streamed())
	}
	for _, r := range want {
		if r.Jobs != 400 || r.Migrations == 0 && r.Placement != "pal" {
			t.Errorf("%s: %d jobs measured, %d migrations", r.Placement, r.Jobs, r.Migrations)
		}
	}
}

// A run that needs the rows whole gets them whole: extra arrivals reuse
// them, the apps' fairness reads them all, and so do per-job records
// (which name each job's origin) and a forecast.
func TestStreamedOnlyWhereNothingNeedsRows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apps  bool
		extra float64
		hooks Hooks
	}{
		{"extras", false, 2, Hooks{NoJobRecords: true, StreamTrace: true}},
		{"apps", true, 0, Hooks{NoJobRecords: true, StreamTrace: true}},
		{"records", false, 0, Hooks{StreamTrace: true}},
	} {
		o, err := Preset("artifact")
		if err != nil {
			t.Fatal(err)
		}
		o.Trace, o.Cluster, o.Placements, o.Round = writeSynergy(t, 40, tc.apps), "4x4", "pal", 300
		if tc.extra > 0 {
			o.ExtraLoad = tc.extra
			o.Explicit.ExtraLoad = true
		}
		in, runs, err := RunAllWith(o, tc.hooks)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if in.Trace.Streamed() || len(in.Trace.Jobs) != 40 || runs[0].Jobs == 0 {
			t.Errorf("%s: streamed %v, %d rows held, %d jobs measured", tc.name, in.Trace.Streamed(), len(in.Trace.Jobs), runs[0].Jobs)
		}
	}
}

// A built-in trace is streamed from its compact kept rows where nothing
// needs it whole, with the figures of the trace read whole: the
// artifact's pinned copy (its extras are its own tracked=0 rows) and a
// plain one without extras. With generated extras, which reuse its rows,
// it is read whole.
func TestStreamedBuiltinTraces(t *testing.T) {
	for _, tc := range []struct {
		name     string
		set      func(o *Options)
		streamed bool
	}{
		{"pinned", func(o *Options) {}, true},
		{"no extras", func(o *Options) { o.ExtraLoad, o.Explicit.ExtraLoad = 0, true }, true},
		{"generated extras", func(o *Options) { o.Pinned, o.Explicit.Pinned = false, true }, false},
	} {
		o, err := Preset("artifact")
		if err != nil {
			t.Fatal(err)
		}
		o.Trace, o.Placements = "sia-philly/2", "pal,pm-first"
		tc.set(&o)
		wantIn, gotIn, _ := wholeAndStreamed(t, tc.name, o)
		if wantIn.Trace.Streamed() || gotIn.Trace.Streamed() != tc.streamed {
			t.Fatalf("%s: streamed %v without StreamTrace, %v with it; want %v", tc.name, wantIn.Trace.Streamed(), gotIn.Trace.Streamed(), tc.streamed)
		}
		if gotIn.Origin(2) != "trace" || tc.name == "pinned" && gotIn.Origin(gotIn.Trace.Len()-1) != "extra-pinned" {
			t.Errorf("%s: origins %q and %q", tc.name, gotIn.Origin(2), gotIn.Origin(gotIn.Trace.Len()-1))
		}
	}
}
