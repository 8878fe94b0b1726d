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
	if !strings.Contains(tab, "lost GPU-s") || !strings.Contains(tab, "move costs:") {
		t.Errorf("table lacks the lost column or the cost header:\n%s", tab)
	}
	for _, bad := range [][]string{{"--migration-cost", "-1"}, {"--preemption-cost", "NaN"}, {"--migration-cost", "+Inf"}} {
		if _, err := run(t, append([]string{"sim"}, bad...)...); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: got %v", bad, err)
		}
	}
}

// A sweep states its move costs and counts what they lost.
func TestSweepStatesMoveCosts(t *testing.T) {
	out, err := run(t, "sweep", "--trace", "sia-philly/3", "--placement", "packed-sticky,pal,pal-ma", "--migration-cost", "600", "-o", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "# move_costs: migration 600 s, preemption 0 s") {
		t.Errorf("sweep CSV does not state the move costs:\n%s", out)
	}
	var head []string
	lost := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if head == nil {
			head = f
			continue
		}
		var p string
		for i, h := range head {
			switch h {
			case "placement":
				p = f[i]
			case "lost_gpu_s":
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					t.Fatal(err)
				}
				lost[p] = v
			}
		}
	}
	// FIFO packed-sticky never moves a job; PAL does, and its
	// migration-aware variant loses less.
	if len(lost) != 3 || lost["packed-sticky"] != 0 || !(lost["pal"] > lost["pal-ma"]) || !(lost["pal-ma"] > 0) {
		t.Errorf("lost GPU-s by placement: %v", lost)
	}
}
