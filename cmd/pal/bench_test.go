package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchPlacementJSON checks the command's interface: one object for
// one combination, {"results": [...]} for several, with the keys scripts
// read.
func TestBenchPlacementJSON(t *testing.T) {
	out, err := run(t, "bench", "placement", "--placement", "pal", "--cluster", "8x4", "--reps", "3", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(out), &one); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"placement", "cluster", "gpus", "jobs", "median_us", "p99_us", "mean_us", "reps"} {
		if _, ok := one[k]; !ok {
			t.Errorf("missing %q in %s", k, out)
		}
	}
	if one["placement"] != "pal" || one["cluster"] != "8x4" || one["gpus"] != 32.0 || one["reps"] != 3.0 {
		t.Fatalf("got %s", out)
	}
	out, err = run(t, "bench", "placement", "--placement", "pal,pm-first", "--cluster", "4x4, 3x6", "--reps", "2", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var many struct {
		Results []struct {
			Placement, Cluster string
			GPUs               int
		}
	}
	if err := json.Unmarshal([]byte(out), &many); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(many.Results) != 4 || many.Results[3].Placement != "pm-first" || many.Results[3].Cluster != "3x6" || many.Results[3].GPUs != 18 {
		t.Fatalf("got %s", out)
	}
}

func TestBenchPlacementTableAndErrors(t *testing.T) {
	out, err := run(t, "bench", "placement", "--placement", "pm-first", "--cluster", "4x4", "--reps", "2", "--output", "table")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "median (µs)") || !strings.Contains(out, "pm-first") {
		t.Fatalf("table:\n%s", out)
	}
	for _, args := range [][]string{
		{"--cluster", "4by4"},
		{"--placement", "best"},
		{"--output", "yaml"},
		{"--reps", "0"},
		{"--queue", "-1"},
		{"--cluster", ","},
	} {
		if _, err := run(t, append([]string{"bench", "placement", "--reps", "1"}, args...)...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
