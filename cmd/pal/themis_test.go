package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The expected outcomes are the hand-computed T4 and T5 of TESTDATA.md
// (hand-derived Themis scenarios).
func TestThemisAuctionFiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string
	}{
		{"t4.yaml", `{"bidders":["A","B"],"apps":{
			"A":{"rho":null,"bidder":true,"pf":[0,1],"keep_fraction":0.5,"kept":[0],"final":[0,1]},
			"B":{"rho":null,"bidder":true,"pf":[2,3],"keep_fraction":1,"kept":[2,3],"final":[2,3]}},
			"leftover":[]}`},
		{"t5.yaml", `{"bidders":["A","B"],"apps":{
			"A":{"rho":null,"bidder":true,"pf":[0,1],"keep_fraction":0.5,"kept":[0],"final":[0]},
			"B":{"rho":null,"bidder":true,"pf":[2,3],"keep_fraction":1,"kept":[2,3],"final":[2,3]},
			"C":{"rho":0.2,"bidder":false,"pf":[],"keep_fraction":0,"kept":[],"final":[1,4]}},
			"leftover":[]}`},
	} {
		out, err := run(t, "themis", "auction", "--input", filepath.Join("..", "..", "fairness", "testdata", tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		var got, want any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: output is not JSON: %v\n%s", tc.file, err, out)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", tc.file, g, w)
		}
	}
}

func TestThemisAuctionBadInput(t *testing.T) {
	dir := t.TempDir()
	base := func(edit func(string) string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "fairness", "testdata", "t4.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return edit(string(b))
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"knob", base(func(s string) string { return strings.Replace(s, "fairness_knob: 0 ", "fairness_knob: 1.5", 1) }),
			[]string{"knob.yaml:11:", `field "fairness_knob"`, "[0, 1]"}},
		{"malformed", "cluster: 2x2\napps: [\n", []string{"malformed.yaml", "malformed YAML", "line"}},
		{"unknown", base(func(s string) string {
			return strings.Replace(s, "max_gpus: 4\n    spread_factor: 1", "max_gpu: 4\n    spread_factor: 1", 1)
		}),
			[]string{"unknown.yaml:26:", `field "apps[1].max_gpu"`, "unknown field"}},
		{"negative", base(func(s string) string { return strings.Replace(s, "remaining_gpu_s: 14400", "remaining_gpu_s: -5", 1) }),
			[]string{"negative.yaml:17:", `field "apps[0].remaining_gpu_s"`, ">= 0"}},
		{"held-offered", base(func(s string) string { return strings.Replace(s, "held: []", "held: [3]", 1) }),
			[]string{"held-offered.yaml:21:", `field "apps[0].held[0]"`, "also offered"}},
		{"gpu", base(func(s string) string { return strings.Replace(s, "offer: [0, 1, 2, 3]", "offer: [0, 1, 2, 9]", 1) }),
			[]string{"gpu.yaml:29:", `field "offer[3]"`, "does not exist"}},
		{"no-offer", base(func(s string) string { return strings.Replace(s, "offer: [0, 1, 2, 3]", "", 1) }),
			[]string{"no-offer.yaml:", `field "offer"`, "required"}},
	} {
		p := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, "themis", "auction", "--input", p)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

func TestThemisSimAndTrace(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "apps.csv")
	if _, err := run(t, "trace", "themis", "--apps", "8", "--rate", "6", "--max-jobs", "4", "--max-hours", "4", "--seed", "3", "--out", tr); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "job_id,num_gpus,submit_time,duration,model,app\n") {
		t.Fatalf("trace header: %q", strings.SplitN(string(b), "\n", 2)[0])
	}
	appsOut := filepath.Join(dir, "rho.csv")
	out, err := run(t, "themis", "sim", "--trace", tr, "--cluster", "2x4", "--policy", "themis,tiresias", "--apps-out", appsOut, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Inputs map[string]any   `json:"inputs"`
		Runs   []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Runs) != 2 || doc.Inputs["lease_s"] != 600.0 || doc.Inputs["trace"] != tr {
		t.Fatalf("output: %s", out)
	}
	for _, r := range doc.Runs {
		f := r["fairness"].(map[string]any)
		if f["apps"] != 8.0 || f["max_rho"].(float64) <= 0 || f["jain"].(float64) <= 0 || f["jain"].(float64) > 1 {
			t.Errorf("%v: fairness %v", r["policy"], f)
		}
		if _, bad := r["violations"]; bad {
			t.Errorf("%v: invariants violated: %v", r["policy"], r["violations"])
		}
	}
	rows, err := os.ReadFile(appsOut)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rows), "\n"); n != 1+2*8 {
		t.Errorf("--apps-out has %d lines, want 17", n)
	}
	for _, bad := range [][]string{
		{"--lease", "-5"}, {"--fairness-knob", "1.5"}, {"--pa-payments", "maybe"}, {"--leftover", "all"}, {"--policy", "drf"},
	} {
		args := append([]string{"themis", "sim", "--trace", tr, "--cluster", "2x4"}, bad...)
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// pal sim --scheduler themis: Themis schedules and places, on 60 s rounds
// unless --round is given.
func TestSimSchedulerThemis(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "apps.csv")
	if _, err := run(t, "trace", "themis", "--apps", "6", "--rate", "4", "--max-jobs", "3", "--max-hours", "2", "--out", tr); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		round string
	}{{nil, "60 s"}, {[]string{"--round", "300"}, "300 s"}} {
		out, err := run(t, append([]string{"sim", "--trace", tr, "--scheduler", "themis", "-o", "json"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Inputs map[string]string `json:"inputs"`
			Runs   []map[string]any  `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Inputs["round"] != tc.round || len(doc.Runs) != 1 || doc.Runs[0]["placement"] != "themis" || doc.Runs[0]["scheduler"] != "themis" {
			t.Errorf("%v: inputs %v runs %v", tc.args, doc.Inputs, doc.Runs)
		}
	}
}

// presetFlags parses args as pal trace themis would and applies the
// preset they name.
func presetFlags(t *testing.T, args []string) themisGenFlags {
	t.Helper()
	var g themisGenFlags
	cmd := &cobra.Command{Use: "themis"}
	g.add(cmd)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := g.applyPreset(cmd); err != nil {
		t.Fatal(err)
	}
	return g
}

// The hyperparam preset: 84 apps, 5/84 single-job, U{2..155} jobs (median
// (2 + 155)/2 = 78.5), 84 arrivals over 63.5 days = 84/1524 per hour; a flag
// given explicitly wins; an unknown preset is refused.
func TestTraceThemisPreset(t *testing.T) {
	for _, tc := range []struct {
		args []string
		apps int
	}{{[]string{"--preset", "hyperparam"}, 84}, {[]string{"--preset", "hyperparam", "--apps", "10"}, 10}} {
		g := presetFlags(t, tc.args)
		if g.opt.Apps != tc.apps || g.opt.MaxJobs != 155 || g.opt.SingleShare != 5.0/84 || g.opt.Rate != 84.0/1524 {
			t.Errorf("%v: %+v", tc.args, g.opt)
		}
	}
	g := themisGenFlags{preset: "nosuch"}
	if err := g.applyPreset(&cobra.Command{Use: "themis"}); err == nil {
		t.Error("unknown preset accepted")
	}
	// macro: elastic 1..4-GPU jobs, 30 apps of up to 20 jobs, 24 h cap;
	// --elastic given explicitly wins.
	for _, tc := range []struct {
		args    []string
		elastic int
	}{{[]string{"--preset", "macro"}, 4}, {[]string{"--preset", "macro", "--elastic", "2"}, 2}} {
		g := presetFlags(t, tc.args)
		if g.opt.Elastic != tc.elastic || g.opt.Apps != 30 || g.opt.MaxJobs != 20 || g.opt.Rate != 1 || g.maxHour != 24 {
			t.Errorf("%v: %+v, max hours %v", tc.args, g.opt, g.maxHour)
		}
	}
}
