package workload

import (
	"strings"
	"testing"
)

// Moves are free only when neither cost is set; a preemption cost alone
// is a priced run, and the run header says both costs.
func TestMoveCostFree(t *testing.T) {
	for _, tc := range []struct {
		c    MoveCost
		free bool
		head string
	}{
		{MoveCost{}, true, "free (the PAL artifact's model)"},
		{MoveCost{Migration: 30}, false, "migration 30 s, preemption 0 s of lost progress per move (GPU time lost: that x the job's GPUs)"},
		{MoveCost{Preemption: 45.5}, false, "migration 0 s, preemption 45.5 s of lost progress per move (GPU time lost: that x the job's GPUs)"},
	} {
		if got := tc.c.Free(); got != tc.free {
			t.Errorf("%+v: Free() = %v, want %v", tc.c, got, tc.free)
		}
		cs := Costs{Default: tc.c}
		if got := cs.Free(); got != tc.free {
			t.Errorf("Costs{%+v}: Free() = %v, want %v", tc.c, got, tc.free)
		}
		if got := cs.String(); got != tc.head {
			t.Errorf("Costs{%+v}: header %q, want %q", tc.c, got, tc.head)
		}
	}
}

// An unknown key in a model table is named with every key a model row
// has, the Themis sensitivity factors included.
func TestModelsUnknownFieldListsAll(t *testing.T) {
	_, err := ParseModels("m.yaml", []byte("models:\n  - name: x\n    iter_time_s: 1\n    class: A\n    paper_class: A\n    spread_facter: 0.9\n"))
	want := `unknown field "spread_facter" (a model has name, iter_time_s, class, paper_class, migration_cost_s, preemption_cost_s, spread_factor, rack_factor, slot_factor)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want it to contain %s", err, want)
	}
}
