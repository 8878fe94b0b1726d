package experiment

import (
	"fmt"
	"strings"
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
)

// quarantineCase is a small hand-built cluster where one GPU runs 2x slow
// from t = 1000 on: two 2-GPU nodes n0 (GPUs 0, 1) and n1 (2, 3), VC A
// owning two 1-GPU cells, VC B one, one GPU spare. A submits eight 1-GPU
// jobs of 1000 s at t = 0, B one of 6000 s; all GPUs 1.0, rounds 100 s.
func quarantineCase(t *testing.T, dir string) Options {
	t.Helper()
	cells := writeFile(t, dir, "cells.yaml", `physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 2, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
virtualClusters:
  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 2}]}
  B: {virtualCells: [{cellType: NODE.GPU, cellNumber: 1}]}
`)
	tr := "job_id,num_gpus,submit_time,duration,model,vc\n"
	for i := 0; i < 8; i++ {
		tr += fmt.Sprintf("%d,1,0,1000,synergy,A\n", i)
	}
	tr += "8,1,0,6000,synergy,B\n"
	o, err := Preset("artifact")
	if err != nil {
		t.Fatal(err)
	}
	o.Trace = writeFile(t, dir, "t.csv", tr)
	o.Cells, o.Round, o.Placements, o.Scheduler = cells, 100, "packed-sticky", "fifo"
	o.GPUScores = writeFile(t, dir, "s.csv", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,1,1,1,1\n1,0,1,1,1,1\n2,1,1,1,1,1\n3,1,1,1,1,1\n")
	o.CheckInvariants = true
	return o
}

func vcWaits(t *testing.T, o Options) (map[string]float64, *QuarantineFigures) {
	t.Helper()
	_, runs, err := RunAll(o)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, v := range runs[0].VCs {
		out[v.VC] = v.MeanWait
	}
	return out, runs[0].Quarantine
}

// GPU 0 is A's until t = 1000 (buddy allocation splits n0 for A's first
// two jobs: GPUs 0 and 1; B's job splits n1: GPU 2). At t = 1000 it
// turns 2x slow, while free.
//
// Private reference (K = 8 draws of A's two cells from the cluster, all
// GPUs 1.0 in every draw): A's jobs run two at a time, waits 0, 0, 1000,
// 1000, 2000, 2000, 3000, 3000: mean 1500 s. B waits 0.
//
// hived-speed with quarantine, the slowdown told (--gpu-events-known) or
// hinted by telemetry (--gpu-hints, the learner's prior): GPU 0 is a bad
// cell from t = 1000, A's two cells bind the spare GPU 3 and GPU 1 (n0
// split for its healthy half), and every later pair does the same: A's
// waits are the private ones, 1500 s.
//
// Told that GPU 0 is back to 1.0 at t = 2500, the quarantine is lifted
// (1.0 is below the release, 1.25): two changes, none left at the end,
// and A's waits are still 1500 s.
//
// hived-speed without quarantine, told: the binding at 1000 takes GPU 3
// (the free leaf) and GPU 0 (n0 split, its first child), so one job runs
// 1000-3000. Job 4 starts at 2000 on GPU 1, jobs 5 and 6 at 3000 (GPU 3
// and, n0 merged and split again, GPU 0, 3000-5000), job 7 at 4000:
// waits 0, 0, 1000, 1000, 2000, 3000, 3000, 4000, mean 1750 s.
func TestQuarantineKeepsTheVCsPrivateWait(t *testing.T) {
	dir := t.TempDir()
	events := writeFile(t, dir, "e.csv", "time_s,gpu,class,new_score\n1000,0,*,2.0\n")
	back := writeFile(t, dir, "e2.csv", "time_s,gpu,class,new_score\n1000,0,*,2.0\n2500,0,*,1.0\n")
	hints := writeFile(t, dir, "h.csv", "time_s,gpu,slowdown\n1000,0,2\n")

	o := quarantineCase(t, dir)
	o.Tenancy, o.PrivateDraws = "private", 8
	priv, _ := vcWaits(t, o)
	if priv["A"] != 1500 || priv["B"] != 0 {
		t.Fatalf("private reference: waits %v, want A 1500 B 0", priv)
	}
	for _, tc := range []struct {
		name       string
		events     string
		quarantine float64
		known      bool
		learn      bool
		wantA      float64
		wantQ      string
	}{
		{"told, quarantine", events, 1.5, true, false, 1500, "changes 1 GPUs [0] at end 1"},
		{"hinted, learning, quarantine", events, 1.5, false, true, 1500, "changes 1 GPUs [0] at end 1"},
		{"told, recovers, quarantine", back, 1.5, true, false, 1500, "changes 2 GPUs [0] at end 0"},
		{"told, no quarantine", events, 0, true, false, 1750, ""},
	} {
		o := quarantineCase(t, dir)
		o.Tenancy, o.GPUEvents = "hived-speed", tc.events
		o.GPUEventsKnown, o.LearnScores, o.QuarantineAbove = tc.known, tc.learn, tc.quarantine
		if tc.learn {
			o.GPUHints = hints
		}
		got, q := vcWaits(t, o)
		if got["A"] != tc.wantA || got["B"] != 0 {
			t.Errorf("%s: waits %v, want A %v B 0 (private: A %v)", tc.name, got, tc.wantA, priv["A"])
		}
		if tc.quarantine > 0 && got["A"] > priv["A"] {
			t.Errorf("%s: A waits %v, more than its private reference %v", tc.name, got["A"], priv["A"])
		}
		gotQ := ""
		if q != nil {
			gotQ = fmt.Sprintf("changes %d GPUs %v at end %d", q.Changes, q.GPUs, q.AtEnd)
		}
		if gotQ != tc.wantQ {
			t.Errorf("%s: quarantine %q, want %q", tc.name, gotQ, tc.wantQ)
		}
	}
}

// Without tenancy a quarantined GPU takes its class's slowest score, in
// every class: a class whose scores spread places on it last, a class of
// one bin is unaffected.
func TestQuarantineMarksTheSlowestScore(t *testing.T) {
	q := &quarantine{}
	var err error
	if q.rule, err = variability.NewQuarantine(3, 1.5, 1.25); err != nil {
		t.Fatal(err)
	}
	q.rule.Update(0, 2)
	sc := &policy.Scores{}
	sc.SF[0] = []float64{1, 0.8, 1.2}
	sc.SF[3] = []float64{1, 1, 1}
	got := q.mark(sc)
	if fmt.Sprint(got.SF[0], got.SF[3]) != "[1.2 0.8 1.2] [1 1 1]" || sc.SF[0][0] != 1 {
		t.Fatalf("marked %v %v (input now %v), want [1.2 0.8 1.2] [1 1 1] and the input unchanged", got.SF[0], got.SF[3], sc.SF[0])
	}
}

// --quarantine-above needs a slowdown the scheduler knows of and a
// threshold above 1, and quota has no bad cells to put it in.
func TestQuarantineOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		above   float64
		learn   bool
		tenancy string
		want    string
	}{
		{1.5, false, "hived", "needs --learn-scores or --gpu-events-known"},
		{1, true, "hived", "want a slowdown above 1"},
		{1.5, true, "quota", "not with --tenancy quota"},
	} {
		o := quarantineCase(t, dir)
		o.QuarantineAbove, o.LearnScores, o.Tenancy = tc.above, tc.learn, tc.tenancy
		if _, _, err := RunAll(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc, err, tc.want)
		}
	}
}

// The run's header says the quarantine's thresholds and what it does
// under the run's tenancy.
func TestQuarantineHeader(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ tenancy, want string }{
		{"hived-speed", "reaches 1.5 is quarantined until below 1.25; under hived-speed: a bad cell of one device"},
		{"private", "off in the private reference"},
	} {
		o := quarantineCase(t, dir)
		o.Tenancy, o.GPUEvents, o.GPUEventsKnown, o.QuarantineAbove = tc.tenancy, writeFile(t, dir, "e.csv", "time_s,gpu,class,new_score\n1000,0,*,2.0\n"), true, 1.5
		in, _, err := RunAll(o)
		if err != nil {
			t.Fatal(err)
		}
		if h := in.Describe()["quarantine"]; !strings.Contains(h, tc.want) {
			t.Errorf("%s: header %q, want it to say %q", tc.tenancy, h, tc.want)
		}
	}
}
