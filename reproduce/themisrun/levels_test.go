package themisrun

import (
	"math"
	"testing"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/workload"
)

// The simulator charges the authors' levels: a 4-GPU gang on one machine
// of two 2-GPU slots crosses a slot, and under the macro factors (0.8
// across slots) its 800 s of work take 1000 s, ending at the 60 s (Themis)
// or 300 s (Tiresias) boundary after. Without levels the machine is one
// slot: 800 s.
func TestLevelsSlowProgress(t *testing.T) {
	jobs := []workload.Spec{{ID: 0, GPUs: 4, Iterations: 800, Model: "synergy", IterTime: 1, Tracked: true, App: "a"}}
	eo, _ := experiment.Preset("paper")
	eo.Cluster, eo.Trace = "1x4", "hand"
	eo.Explicit.Preset = true
	in, err := experiment.PrepareWith(eo, &workload.Trace{Name: "hand", Jobs: jobs, HasApp: true})
	if err != nil {
		t.Fatal(err)
	}
	models, err := ModelsWithSlowdowns("macro")
	if err != nil {
		t.Fatal(err)
	}
	lv := &fairness.Levels{Racks: 1, MachinesPerRack: 1, SlotsPerMachine: 2, GPUsPerSlot: 2}
	for _, c := range []struct {
		policy string
		levels *fairness.Levels
		want   float64
	}{{"themis", lv, 1020}, {"themis", nil, 840}, {"tiresias", lv, 1200}, {"tiresias", nil, 900}} {
		r, err := Run(Spec{Inputs: in, Models: models, Policy: c.policy, Themis: themis.Config{Auction: fairness.DefaultOptions()}, Flat: true, Levels: c.levels})
		if err != nil {
			t.Fatal(err)
		}
		if r.Jobs.Makespan != c.want {
			t.Errorf("%s levels %v: makespan %v, want %v", c.policy, c.levels, r.Jobs.Makespan, c.want)
		}
		if c.levels != nil && math.Abs(r.Placement-0.8) > 1e-12 {
			t.Errorf("%s: placement score %v, want 0.8", c.policy, r.Placement)
		}
	}
	if _, err := Run(Spec{Inputs: in, Models: models, Policy: "themis", Levels: &fairness.Levels{Racks: 1, MachinesPerRack: 2, SlotsPerMachine: 1, GPUsPerSlot: 2}}); err == nil {
		t.Error("levels that do not describe the cluster accepted")
	}
}
