package stale

import (
	"strings"
	"testing"

	"github.com/palsched/pal/metrics"
)

// One hand-built run of 20 tracked jobs (and one untracked job that must
// not count), ids in reverse order of arrival: the oracle runs every job
// in 100 s, stale in 150 s, learning in 150 s for the first 10 to
// arrive (ids 19..10) and in 100 s after, per-GPU learning as the oracle.
// Ten groups of two by arrival: stale 1.5 throughout, learning 1.5 in
// groups 1-5 and 1.0 in 6-10, per-GPU learning 1.0.
func TestConvergenceGroupsByArrival(t *testing.T) {
	mk := func(jct func(id int) float64) []metrics.JobRecord {
		var rs []metrics.JobRecord
		for id := range 20 {
			rs = append(rs, metrics.JobRecord{ID: id, Tracked: true, Arrival: float64(100 * (19 - id)), JCT: jct(id)})
		}
		return append(rs, metrics.JobRecord{ID: 99, Tracked: false, Arrival: 0, JCT: 1e9})
	}
	run := map[string][]metrics.JobRecord{
		"oracle":             mk(func(int) float64 { return 100 }),
		"stale":              mk(func(int) float64 { return 150 }),
		"stale+gpu-learning": mk(func(int) float64 { return 100 }),
		"stale+learning": mk(func(id int) float64 {
			if id >= 10 {
				return 150
			}
			return 100
		}),
		"stale+learning+dcgm": mk(func(int) float64 { return 120 }),
	}
	cs, err := convergence(map[string]map[string][]metrics.JobRecord{"1\x00sia-philly\x00t": run}, []string{"sia-philly"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Runs != 1 {
		t.Fatalf("curves %+v, want one of one run", cs)
	}
	// A family the plan did not run has no curve (not one of NaNs).
	if cs, err := convergence(map[string]map[string][]metrics.JobRecord{"1\x00sia-philly\x00t": run}, []string{"sia-philly", "synergy"}); err != nil || len(cs) != 1 || cs[0].Family != "sia-philly" {
		t.Errorf("with a family of no runs: %+v, %v", cs, err)
	}
	for g := range convergenceGroups {
		wantL := 1.0
		if g < 5 {
			wantL = 1.5
		}
		if r := cs[0].Ratio; r["stale"][g] != 1.5 || r["stale+learning"][g] != wantL || r["stale+gpu-learning"][g] != 1 || r["stale+learning+dcgm"][g] != 1.2 {
			t.Errorf("group %d: stale %v learning %v gpu-learning %v dcgm %v, want 1.5 %v 1 1.2", g+1, r["stale"][g], r["stale+learning"][g], r["stale+gpu-learning"][g], r["stale+learning+dcgm"][g], wantL)
		}
	}
	// A variant whose runs kept no records is an error, not a panic.
	dcgm := run["stale+learning+dcgm"]
	delete(run, "stale+learning+dcgm")
	if _, err := convergence(map[string]map[string][]metrics.JobRecord{"1\x00sia-philly\x00t": run}, []string{"sia-philly"}); err == nil || !strings.Contains(err.Error(), "kept no job records under stale+learning+dcgm") {
		t.Errorf("a variant without records: %v", err)
	}
	run["stale+learning+dcgm"] = dcgm
	delete(run, "stale")
	run["stale"] = mk(func(int) float64 { return 150 })[:19]
	if _, err := convergence(map[string]map[string][]metrics.JobRecord{"1\x00sia-philly\x00t": run}, []string{"sia-philly"}); err == nil || !strings.Contains(err.Error(), "under stale tracks 19 jobs, the oracle 20") {
		t.Errorf("a variant missing a job: %v", err)
	}
}
