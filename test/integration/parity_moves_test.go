//go:build integration

package integration

import (
	"slices"
	"testing"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/sim"
)

// Sim-to-real parity under the driver's default policy: the mixed-class
// trace (four classes) under FIFO and pal-ma at the scheduler's default
// migration cost (2 min). PAL moves a running job here (on this trace
// job 10, once, when the move's expected gain beats the cost), and on the
// cluster a move is an eviction and a relaunch a round later, so the
// simulator runs with --moves evict-relaunch, the mechanics the driver
// has; the replay charges the same cost to a gang recreated after its
// eviction, as the simulator does. Every job must get the same last GPUs,
// first start and completion, and the same number of evictions, in both.
func TestParityWithSimPALMixedClasses(t *testing.T) {
	cost := kube.DefaultMigrationCost.Seconds()
	tracePath, scoresPath := parityInputs(t, parityTrace)

	o, _ := experiment.Preset("artifact")
	o.Trace, o.Cluster, o.GPUScores, o.ExtraLoad, o.Placements = tracePath, "4x4", scoresPath, 0, "pal-ma"
	o.MigrationCost, o.PreemptionCost, o.Moves = cost, cost, string(sim.MovesEvictRelaunch)
	in, err := experiment.Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := in.Config("pal-ma")
	if err != nil {
		t.Fatal(err)
	}
	simRes, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sim pal-ma --migration-cost %g --moves evict-relaunch: %d migrations, %d preemptions", cost, simRes.Summary.Migrations, simRes.Summary.Preemptions)
	if simRes.Summary.Migrations == 0 {
		t.Fatalf("the trace makes no move under pal-ma at %g s: this test would not check the driver's moves", cost)
	}

	res := replayOnDevCluster(t, tracePath, scoresPath, "pal-ma", cost, cost)
	if len(res.Jobs) != len(simRes.Jobs) {
		t.Fatalf("replay finished %d jobs, sim %d", len(res.Jobs), len(simRes.Jobs))
	}
	for i, rj := range res.Jobs {
		sj := simRes.Jobs[i]
		want, got := simGPUNames(sj.GPUIDs), replayGPUs(res.Placements[i])
		t.Logf("job %2d: sim GPUs %v start %5.0f end %5.0f moves %d | replay GPUs %v start %5.0f end %5.0f evictions %d",
			sj.ID, want, sj.FirstStart, sj.Completion, sj.Migrations+sj.Preemptions, got, rj.FirstStart, rj.Completion, rj.Preemptions)
		if !slices.Equal(got, want) {
			t.Errorf("job %d: replay's last GPUs %v, sim %v", sj.ID, got, want)
		}
		if rj.FirstStart != sj.FirstStart || rj.Completion != sj.Completion {
			t.Errorf("job %d: replay start/end %v/%v, sim %v/%v", sj.ID, rj.FirstStart, rj.Completion, sj.FirstStart, sj.Completion)
		}
		if rj.Preemptions != sj.Migrations+sj.Preemptions {
			t.Errorf("job %d: %d evictions on the cluster, %d moves in the sim", sj.ID, rj.Preemptions, sj.Migrations+sj.Preemptions)
		}
	}
}
