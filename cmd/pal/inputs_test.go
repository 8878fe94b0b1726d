package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/data"
)

// threeJobs writes a user's own 3-job trace.
func threeJobs(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "my.csv")
	body := "job_id,num_gpus,submit_time,duration,model\n0,2,0,1000,resnet50\n1,4,100,5000,vgg19\n2,1,500,200,BERT\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readJobsOut(t *testing.T, p string) [][]string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A user's own 3-job trace gets exactly its 3 jobs: no background
// arrivals and no pinned artifact table unless asked for, and the header
// says so.
func TestUserTraceHasNoHiddenInputs(t *testing.T) {
	tr := threeJobs(t)
	jobs := filepath.Join(t.TempDir(), "jobs.csv")
	out, err := run(t, "sim", "--trace", tr, "--placement", "pal,packed-sticky", "--jobs-out", jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"extra arrivals:   none: a trace file gets no background arrivals", "3 rows, 3 tracked", "profile longhorn"} {
		if !strings.Contains(out, want) {
			t.Errorf("header lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pinned") {
		t.Errorf("a user trace used a pinned artifact input:\n%s", out)
	}
	recs := readJobsOut(t, jobs)
	if len(recs) != 1+2*3 {
		t.Fatalf("--jobs-out has %d rows, want a header and 3 jobs for each of 2 placements:\n%v", len(recs), recs)
	}
	for _, r := range recs[1:] {
		if r[2] != "trace" || (r[1] != "0" && r[1] != "1" && r[1] != "2") {
			t.Errorf("job row %v is not one of the trace's jobs 0-2", r)
		}
	}
}

// Asked for, the background arrivals come, and --jobs-out marks them.
func TestUserTraceExtrasOnlyWhenAsked(t *testing.T) {
	tr := threeJobs(t)
	for _, args := range [][]string{{"--extra-load", "2"}, {"--preset", "artifact"}} {
		jobs := filepath.Join(t.TempDir(), "jobs.csv")
		out, err := run(t, append([]string{"sim", "--trace", tr, "--placement", "pal", "-o", "json", "--jobs-out", jobs}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Inputs map[string]string `json:"inputs"`
			Runs   []struct {
				Jobs   int `json:"jobs"`
				Extras int `json:"extras_generated"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Runs) != 1 || doc.Runs[0].Jobs != 3 || doc.Runs[0].Extras == 0 {
			t.Fatalf("%v: runs %+v, want 3 tracked jobs and some extras", args, doc.Runs)
		}
		if !strings.Contains(doc.Inputs["extra_arrivals"], "2 jobs/h after the trace, generated") {
			t.Errorf("%v: inputs.extra_arrivals = %q", args, doc.Inputs["extra_arrivals"])
		}
		extras := 0
		for _, r := range readJobsOut(t, jobs)[1:] {
			if r[2] == "extra-generated" {
				extras++
				if r[6] != "false" {
					t.Errorf("extra %v is tracked", r)
				}
			}
		}
		if extras == 0 {
			t.Errorf("%v: --jobs-out marks no job extra-generated", args)
		}
	}
}

// Every header states every input: the table, the JSON inputs and the CSV
// comment lines carry the same names.
func TestEveryOutputStatesItsInputs(t *testing.T) {
	names := []string{"preset", "trace", "extra_arrivals", "cluster", "gpu_values", "scheduler", "round", "locality", "class_map", "models", "k_strategy", "pmfirst_tiebreak", "seed", "track", "starvation_guard", "move_costs", "moves"}
	js, err := run(t, "sim", "--trace", "sia-philly/2", "--placement", "pal", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Inputs map[string]string `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Inputs) != len(names) {
		t.Errorf("JSON inputs has %d entries, want %d: %v", len(doc.Inputs), len(names), doc.Inputs)
	}
	cs, err := run(t, "sim", "--trace", "sia-philly/2", "--placement", "pal", "-o", "csv")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := run(t, "sim", "--trace", "sia-philly/2", "--placement", "pal")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if doc.Inputs[n] == "" {
			t.Errorf("JSON inputs lack %q", n)
		}
		if !strings.Contains(cs, "# "+n+": ") {
			t.Errorf("CSV comments lack %q", n)
		}
		if !strings.Contains(tab, strings.ReplaceAll(n, "_", " ")+":") {
			t.Errorf("table header lacks %q", n)
		}
	}
	if !strings.Contains(doc.Inputs["extra_arrivals"], "pinned") || !strings.Contains(doc.Inputs["gpu_values"], "pinned") {
		t.Errorf("built-in trace on 16x4 should say its pinned inputs: %v", doc.Inputs)
	}
}

// A row that would keep the simulator busy past its horizon is refused
// before the first round, naming file, line and field; a row that is
// merely very long is run, with a warning first.
func TestHorizonErrorsAndLongWarnings(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		row, want string
	}{
		{"1,4,1e18,100,vgg19", `late.csv:3: field "submit_time"`},
		{"1,4,100,1e13,vgg19", `late.csv:3: field "duration"`},
	}
	for _, tc := range cases {
		p := filepath.Join(dir, "late.csv")
		os.WriteFile(p, []byte("job_id,num_gpus,submit_time,duration,model\n0,2,0,1000,resnet50\n"+tc.row+"\n"), 0o644)
		_, err := run(t, "sim", "--trace", p, "--placement", "pal")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.row, err, tc.want)
		}
	}
	p := filepath.Join(dir, "long.csv")
	os.WriteFile(p, []byte("job_id,num_gpus,submit_time,duration,model\n0,1,0,2e8,vgg19\n"), 0o644)
	out, err := run(t, "sim", "--trace", p, "--placement", "pal")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `pal: warning: `+p+`:2: field "duration"`) {
		t.Errorf("no warning about the long row:\n%s", out)
	}
}

// A GPU table must match --cluster in size and in layout (which node
// holds each GPU id).
func TestGPUScoresMustMatchCluster(t *testing.T) {
	table := filepath.Join("..", "..", "data", "reference", "pal-artifact-gpu-pmscores.csv")
	cases := []struct{ cluster, want string }{
		{"32x2", `pal-artifact-gpu-pmscores.csv:4: field "Node_ID": GPU 2 is on node 0, but --cluster 32x2 puts it on node 1`},
		{"8x4", "has 64 GPUs but --cluster 8x4 has 32"},
	}
	for _, tc := range cases {
		_, err := run(t, "sim", "--trace", "sia-philly/1", "--cluster", tc.cluster, "--gpu-scores", table, "--placement", "pal")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--cluster %s: error %v, want %q", tc.cluster, err, tc.want)
		}
	}
	if _, err := run(t, "sim", "--trace", "sia-philly/1", "--gpu-scores", table, "--placement", "pal"); err != nil {
		t.Errorf("the table on its own 16x4 cluster: %v", err)
	}
}

// Options that cannot change the run warn once; a placement named twice
// is an error.
func TestNoEffectWarningsAndDuplicatePlacements(t *testing.T) {
	out, err := run(t, "sim", "--scheduler", "las", "--tiresias-thresholds", "100,200", "--placement", "packed-sticky", "--seed", "4", "--k-strategy", "paper")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"pal: warning: --tiresias-thresholds has no effect with --scheduler las",
		"pal: warning: --k-strategy has no effect: no pal or pm-first placement is run",
		"pal: warning: --seed has no effect",
	} {
		if strings.Count(out, w) != 1 {
			t.Errorf("want the warning %q once:\n%s", w, out)
		}
	}
	out, err = run(t, "sweep", "--trace", "sia-philly/1,sia-philly/2", "--placement", "packed-sticky", "--seed", "1,2", "-o", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "pal: warning: --seed has no effect") != 1 {
		t.Errorf("sweep over pinned inputs: want one --seed warning:\n%s", out)
	}
	for _, args := range [][]string{{"sim", "--placement", "pal,tiresias,packed-sticky"}, {"sweep", "--placement", "pal,pal"}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "--placement") {
			t.Errorf("%v: error %v, want a --placement error", args, err)
		}
	}
}

// A Sia-Philly trace under the artifact's settings runs the artifact's
// own extra arrivals, the tracked=0 rows of its pinned copy: --jobs-out
// marks those extra-pinned and the rest trace, and the inputs count
// them.
func TestPinnedExtrasMarked(t *testing.T) {
	b, err := fs.ReadFile(data.Reference, "reference/sia-philly-extended/workload-1.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	tracked := slices.Index(rows[0], "tracked")
	if tracked < 0 {
		t.Fatalf("the pinned trace has no tracked column: %v", rows[0])
	}
	want := map[string]string{}
	extras := 0
	for _, r := range rows[1:] {
		want[r[0]] = "trace"
		if r[tracked] == "0" {
			want[r[0]] = "extra-pinned"
			extras++
		}
	}
	jobs := filepath.Join(t.TempDir(), "jobs.csv")
	out, err := run(t, "sim", "--trace", "sia-philly/1", "--placement", "pal", "-o", "json", "--jobs-out", jobs)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("the artifact's own %d extra arrivals, pinned", extras); extras == 0 || !strings.Contains(out, s) {
		t.Fatalf("inputs do not say %q", s)
	}
	// The run ends when its last tracked job does, so only the extras
	// that arrived by then have rows.
	n := map[string]int{}
	for _, r := range readJobsOut(t, jobs)[1:] {
		if w, ok := want[r[1]]; !ok || r[2] != w {
			t.Errorf("job %s: origin %q, want %q", r[1], r[2], w)
		}
		n[r[2]]++
	}
	if n["trace"] != len(want)-extras || n["extra-pinned"] == 0 {
		t.Errorf("--jobs-out has %d trace and %d extra-pinned rows, want %d and some", n["trace"], n["extra-pinned"], len(want)-extras)
	}
}
