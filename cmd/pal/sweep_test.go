package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The list flags reach the grid: 2 penalties x 2 seeds x 2 placements.
func TestSweepListsAndCSV(t *testing.T) {
	out, err := run(t, "sweep", "--trace", "sia-philly/1", "--locality-penalty", "1,2", "--seed", "42,7",
		"--placement", "pal,tiresias", "-o", "csv")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The seeds reach no random draw here (pinned inputs, no random
	// placement): one warning says so, before the rows.
	if !strings.HasPrefix(out, "pal: warning: --seed only seeds K-Means") {
		t.Errorf("no --seed warning:\n%s", out)
	}
	_, out, _ = strings.Cut(out, "\n")
	// Then the inputs as "# " lines, then the CSV.
	var lines []string
	inputs := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "# ") {
			inputs++
			continue
		}
		lines = append(lines, l)
	}
	if inputs < 10 || !strings.Contains(out, "# extra_arrivals: ") {
		t.Errorf("CSV states %d inputs:\n%s", inputs, out)
	}
	if len(lines) != 9 {
		t.Fatalf("want a header and 8 rows, got %d lines:\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[1], "0,sia-philly/1,2,1,42,fifo,pal,160,") || !strings.HasPrefix(lines[8], "7,sia-philly/1,2,2,7,fifo,packed-sticky,160,") {
		t.Errorf("rows out of grid order or not canonical:\n%s", out)
	}
}

func TestSweepOutDir(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, "sweep", "--trace", "sia-philly/2", "--placement", "packed-sticky,pal", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Inputs    map[string]string `json:"inputs"`
		Partial   bool              `json:"partial"`
		RunsTotal int               `json:"runs_total"`
		Rows      []struct {
			Placement string  `json:"placement"`
			Vs        float64 `json:"avg_jct_vs_packed_sticky_pct"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Partial || doc.RunsTotal != 2 || len(doc.Rows) != 2 || doc.Rows[0].Vs != 0 || !(doc.Rows[1].Vs < 0) {
		t.Errorf("sweep.json: %+v", doc)
	}
	if doc.Inputs["extra_arrivals"] == "" || doc.Inputs["gpu_values"] == "" {
		t.Errorf("sweep.json inputs: %v", doc.Inputs)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep.csv")); err != nil {
		t.Error(err)
	}
}

func TestSweepBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"bad penalty list": {"sweep", "--locality-penalty", "1,x"},
		"bad seed":         {"sweep", "--seed", "-1"},
		"bad placement":    {"sweep", "--placement", "best"},
		"bad output":       {"sweep", "-o", "xml"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := run(t, args...); err == nil {
				t.Errorf("%v accepted", args)
			}
		})
	}
}
