package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/internal/cliroot/clitest"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clitest.Run(t, newRootCmdFor(args), args...) // as main builds it
}

func TestSimDefaultsPrintEveryPlacement(t *testing.T) {
	out, err := run(t, "sim")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"pal", "pm-first", "packed-sticky", "packed-nonsticky", "random-sticky", "random-nonsticky", "sia-philly/1", "16x4"} {
		if !strings.Contains(out, p) {
			t.Errorf("default output lacks %q:\n%s", p, out)
		}
	}
}

func TestSimJSONShapeAndDeterminism(t *testing.T) {
	get := func() []map[string]any {
		out, err := run(t, "sim", "--trace", "sia-philly/4", "--placement", "pal,random-nonsticky", "--output", "json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Runs []map[string]any `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		for _, r := range doc.Runs {
			for _, k := range []string{"trace", "scheduler", "placement", "jobs", "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "utilization", "preemptions", "migrations", "wall_ms"} {
				if _, ok := r[k]; !ok {
					t.Fatalf("run lacks key %q: %v", k, r)
				}
			}
			delete(r, "wall_ms")
		}
		return doc.Runs
	}
	a, _ := json.Marshal(get())
	b, _ := json.Marshal(get())
	if !bytes.Equal(a, b) {
		t.Fatal("same flags gave different JSON")
	}
}

func TestJobsOut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "jobs.csv")
	if _, err := run(t, "sim", "--trace", "sia-philly/2", "--placement", "pal", "--jobs-out", p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.HasPrefix(lines[0], "placement,job_id,") || !strings.Contains(string(b), "pal,159,") {
		t.Fatalf("jobs file:\n%s", lines[0])
	}
}

// Bad input gets an error naming file, line and field; never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.csv", "job_id,num_gpus,submit_time,duration,model\n0,1,0,10,resnet50\n1,two,0,10,BERT\n")
	unknown := write("unknown.csv", "job_id,num_gpus,submit_time,duration,model\n0,1,0,10,alexnet\n")
	big := write("big.csv", "job_id,num_gpus,submit_time,duration,model\n0,1,0,10,BERT\n1,65,3,10,BERT\n")
	yml := write("models.yaml", "models:\n  - name: x\n    iter_time_s: [\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--trace", bad}, "bad.csv:3: field \"num_gpus\""},
		{[]string{"sim", "--trace", unknown}, "unknown.csv:2: field \"model\": unknown model \"alexnet\""},
		{[]string{"sim", "--trace", big}, "big.csv:3: field \"num_gpus\": job 1 asks for 65 GPUs but the cluster (16x4) has 64"},
		{[]string{"sim", "--cluster", "16x"}, "--cluster \"16x\""},
		{[]string{"sim", "--models", yml}, "models.yaml"},
		{[]string{"sim", "--trace", filepath.Join(dir, "missing.csv")}, "not a readable file"},
		{[]string{"sim", "--placement", "fastest"}, "unknown placement \"fastest\""},
		{[]string{"sim", "--scheduler", "edf"}, "unknown scheduler \"edf\""},
		{[]string{"sim", "--output", "xml"}, "--output \"xml\""},
		{[]string{"sim", "--preset", "mine"}, "--preset \"mine\""},
		{[]string{"sim", "--gpu-scores", bad}, "bad.csv"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// One vocabulary: pal --version, clean defaults in sim's help, csv from
// every results command (TestEveryCommandOneVocabulary checks the flags).
func TestCLIVocabulary(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || !strings.HasPrefix(out, "pal ") {
		t.Fatalf("--version: %q, %v", out, err)
	}
	help, _ := run(t, "sim", "--help")
	for _, want := range []string{"duration     length in iterations, not seconds", "duration_s", "p99 art. =", "(default 3600000)", "(default 3250,7200)"} {
		if !strings.Contains(help, want) {
			t.Errorf("sim --help lacks %q", want)
		}
	}
	if strings.Contains(help, "(default [])") || strings.Contains(help, "3.6e+06") {
		t.Errorf("sim --help shows unclean defaults")
	}
	// Every command that prints results offers csv (after "# " input lines).
	for head, args := range map[string][]string{
		"app,dram_util,fu_util,class":              {"classify", "-o", "csv"},
		"class,k,bin,score,raw,gpus,outlier":       {"profile", "show", "-o", "csv"},
		"placement,cluster,gpus,jobs,median_us,":   {"bench", "placement", "--cluster", "2x4", "--reps", "1", "-o", "csv"},
		"trace,scheduler,placement,jobs,avg_jct_s": {"sim", "--placement", "pal", "-o", "csv"},
		"index,trace,load_jobs_per_hour,":          {"sweep", "--placement", "pal", "-o", "csv"},
		"apps,cluster,gpus,offered,":               {"bench", "auction", "--case", "10@4x4", "--reps", "1", "-o", "csv"},
		"nodes,gpus,rack_nodes,vcs,":               {"bench", "tenancy", "--nodes", "8", "--vcs", "2", "--reps", "5", "-o", "csv"},
	} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var first string
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "#") {
				first = l
				break
			}
		}
		if !strings.HasPrefix(first, head) {
			t.Errorf("%v: first row %q, want %q...", args, first, head)
		}
	}
}
