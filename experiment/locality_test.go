package experiment

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Per-model and per-class locality reach the run, on a hand case: one
// PointNet job (class D) of 16 GPUs on 4 nodes x 4 GPUs, 250 iterations
// of 1 s, median GPUs, 100 s rounds. It always spans nodes, so a round
// credits 100 / L iterations:
//
//	per-model: the artifact's table gives (PointNet, 16) -> 1.25:
//	           80 it/round, 240 after 3 rounds, done at T = 400
//	per-class: class D -> 1.10: 90.9 it/round, 272.7 after 3: T = 300
//	constant:  1.7: 58.8 it/round, 294 after 5 rounds: T = 500
func TestLocalityModelsOnHandCase(t *testing.T) {
	for _, tc := range []struct {
		model string
		done  float64
	}{{"per-model", 400}, {"per-class", 300}, {"constant", 500}} {
		in := &Inputs{Opts: Options{LocalityModel: tc.model, LocalityPenalty: 1.7}}
		if err := in.locality(); err != nil {
			t.Fatal(err)
		}
		cl, _ := cluster.New(4, 4)
		pl, _ := place.New("packed-sticky")
		job := workload.Spec{ID: 0, GPUs: 16, Iterations: 250, IterTime: 1, Model: "PointNet", Class: variability.ClassD, Tracked: true}
		res, err := sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: []workload.Spec{job}},
			Scheduler: schedule.FIFO{}, Placer: pl, Round: 100, Locality: in.Locality})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || res.Jobs[0].Completion != tc.done {
			t.Errorf("%s: %+v, want completion at %v", tc.model, res.Jobs, tc.done)
		}
	}
}
