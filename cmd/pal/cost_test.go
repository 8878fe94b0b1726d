package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Move costs reach every output: the header, the table's column, the JSON
// run and the per-job CSV, whose lost GPU-seconds add up to the run's.
func TestMoveCostsInEveryOutput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "jobs.csv")
	js, err := run(t, "sim", "--trace", "sia-philly/3", "--placement", "pal", "--migration-cost", "120", "--preemption-cost", "60", "-o", "json", "--jobs-out", p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Inputs map[string]string `json:"inputs"`
		Runs   []struct {
			Migrations  int     `json:"migrations"`
			Preemptions int     `json:"preemptions"`
			Lost        float64 `json:"lost_gpu_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Inputs["move_costs"], "migration 120 s, preemption 60 s") {
		t.Errorf("move_costs input: %q", doc.Inputs["move_costs"])
	}
	r := doc.Runs[0]
	if r.Migrations == 0 || r.Lost <= 0 {
		t.Fatalf("PAL on workload 3 should migrate and lose time: %+v", r)
	}
	recs := readJobsOut(t, p)
	col := -1
	for i, h := range recs[0] {
		if h == "lost_gpu_s" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("--jobs-out header %v has no lost_gpu_s", recs[0])
	}
	sum := 0.0
	for _, rec := range recs[1:] {
		v, err := strconv.ParseFloat(rec[col], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	// --jobs-out holds the finished jobs; the run's total also counts
	// background jobs still running at the end, so it can only be larger.
	if sum <= 0 || sum > r.Lost+1e-6 {
		t.Errorf("--jobs-out lost GPU-s sum %v, run total %v", sum, r.Lost)
	}
	tab, err := run(t, "sim", "--trace", "sia-philly/3", "--placement", "pal", "--migration-cost", "120")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab, "LOST GPU-S") || !strings.Contains(tab, "move costs:") {
		t.Errorf("table lacks the lost column or the cost header:\n%s", tab)
	}
	for _, bad := range [][]string{{"--migration-cost", "-1"}, {"--preemption-cost", "NaN"}, {"--migration-cost", "+Inf"}} {
		if _, err := run(t, append([]string{"sim"}, bad...)...); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: got %v", bad, err)
		}
	}
}
