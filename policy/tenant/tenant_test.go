package tenant

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

const cellsYAML = `
physicalCluster:
  cellTypes:
    PAIR: {childCellType: GPU, childCellNumber: 2}
    NODE: {childCellType: PAIR, childCellNumber: 2, isNodeLevel: true}
    RACK: {childCellType: NODE, childCellNumber: 2}
  physicalCells:
  - {cellType: RACK, cellChildren: [{cellAddress: n0}, {cellAddress: n1}]}
  - {cellType: RACK, cellChildren: [{cellAddress: n2}, {cellAddress: n3}]}
  - {cellType: RACK, cellChildren: [{cellAddress: n4}, {cellAddress: n5}]}
virtualClusters:
  A: {virtualCells: [{cellType: RACK, cellNumber: 1}, {cellType: RACK.NODE.PAIR, cellNumber: 2}]}
  B: {virtualCells: [{cellType: RACK.NODE, cellNumber: 2}]}
  C: {virtualCells: [{cellType: RACK.NODE.PAIR.GPU, cellNumber: 4}]}
`

func layout(t *testing.T) *Layout {
	t.Helper()
	cfg, err := tenancy.Parse("cells.yaml", []byte(cellsYAML))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// randomTrace draws jobs of the three VCs that each fit their VC.
func randomTrace(rng *rand.Rand, n int) *workload.Trace {
	tr := &workload.Trace{Name: "random.csv"}
	shapes := map[string][][2]int{"A": {{1, 0}, {2, 2}, {4, 4}, {8, 4}}, "B": {{4, 4}, {8, 4}, {2, 0}}, "C": {{1, 1}, {1, 0}}}
	vcs := []string{"A", "B", "C"}
	for i := 0; i < n; i++ {
		vc := vcs[rng.IntN(3)]
		sh := shapes[vc][rng.IntN(len(shapes[vc]))]
		prio := rng.IntN(3)
		if rng.IntN(5) == 0 {
			prio = tenancy.Opportunistic
		}
		tr.Jobs = append(tr.Jobs, workload.Spec{ID: i, GPUs: sh[0], PodGPUs: sh[1], Submit: float64(rng.IntN(20) * 60),
			Iterations: float64(60 * (1 + rng.IntN(30))), IterTime: 1, Model: workload.NoModel, Tracked: true,
			VC: vc, VCPriority: prio, Source: "random.csv", Line: i + 2})
	}
	return tr
}

// Under quota no VC ever holds more than its GPU count (opportunistic jobs
// aside); under HiveD the full invariant holds every round, no pod spans
// nodes, and every job finishes.
func TestStagesOnRandomTraces(t *testing.T) {
	l := layout(t)
	for seed := uint64(0); seed < 20; seed++ {
		tr := randomTrace(rand.New(rand.NewPCG(seed, 1)), 60)
		if err := l.Validate(tr, true); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"quota", "hived"} {
			var stage policy.Tenancy = NewQuota(l)
			if mode == "hived" {
				h, err := NewHiveD(l)
				if err != nil {
					t.Fatal(err)
				}
				stage = h
			}
			// The VCs' placer places pods whole, as every driver's does.
			packed, _ := place.New("packed-sticky")
			placer := place.PodGuard{Placer: packed}
			var fail error
			res, err := sim.Run(sim.Config{Cluster: l.Cluster, Trace: tr, Scheduler: schedule.FIFO{}, Placer: placer,
				Tenancy: stage, CheckInvariants: true, Round: 60, Locality: sim.ConstantLocality(1),
				Observe: func(T float64, order []*workload.Job, alloc [][]int) {
					held := map[string]int{}
					for i, j := range order {
						if alloc[i] == nil {
							continue
						}
						if j.VCPriority != tenancy.Opportunistic {
							held[j.VC] += len(alloc[i])
						}
						if j.PodGPUs > 0 && mode == "hived" {
							for p := 0; p < len(alloc[i]); p += j.PodGPUs {
								n := l.Cluster.GPUs[alloc[i][p]].Node
								for _, g := range alloc[i][p : p+j.PodGPUs] {
									if l.Cluster.GPUs[g].Node != n && fail == nil {
										fail = fmt.Errorf("t=%g: job %d's pod spans nodes: %v", T, j.ID, alloc[i])
									}
								}
							}
						}
					}
					for vc, n := range held {
						if n > l.Quota(vc) && fail == nil {
							fail = fmt.Errorf("t=%g: VC %s holds %d GPUs, quota %d", T, vc, n, l.Quota(vc))
						}
					}
				}})
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, mode, err)
			}
			if fail != nil {
				t.Fatalf("seed %d %s: %v", seed, mode, fail)
			}
			if len(res.Jobs) != len(tr.Jobs) {
				t.Fatalf("seed %d %s: %d of %d jobs finished", seed, mode, len(res.Jobs), len(tr.Jobs))
			}
		}
	}
}

type brokenStage struct{ *Quota }

func (brokenStage) Check() error { return errors.New("planted") }

// --check-invariants stops a run whose tenancy stage is broken.
func TestCheckInvariantsStopsTheRun(t *testing.T) {
	l := layout(t)
	tr := randomTrace(rand.New(rand.NewPCG(1, 1)), 5)
	placer, _ := place.New("packed-sticky")
	cfg := sim.Config{Cluster: l.Cluster, Trace: tr, Scheduler: schedule.FIFO{}, Placer: placer,
		Tenancy: brokenStage{NewQuota(l)}, Round: 60, Locality: sim.ConstantLocality(1)}
	if _, err := sim.Run(cfg); err != nil {
		t.Fatalf("without the check: %v", err)
	}
	cfg.CheckInvariants = true
	if _, err := sim.Run(cfg); err == nil || !strings.Contains(err.Error(), "tenancy invariant broken: planted") {
		t.Fatalf("got %v", err)
	}
}

// Validate asks each VC whether a shape fits, even when another VC has
// already answered for the same shape: two pods of 4 GPUs fit VC A's two
// nodes but not VC B's one node and four single GPUs.
func TestValidateFitsPerVC(t *testing.T) {
	cfg, err := tenancy.Parse("fit.yaml", []byte(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
  - {cellType: NODE, cellAddress: n2}
  - {cellType: NODE, cellAddress: n3}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}, {cellType: NODE.GPU, cellNumber: 4}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id int, vc string) workload.Spec {
		return workload.Spec{ID: id, GPUs: 8, PodGPUs: 4, Iterations: 60, IterTime: 1, Model: workload.NoModel,
			Tracked: true, VC: vc, Source: "fit.csv", Line: id + 2}
	}
	tr := &workload.Trace{Name: "fit.csv", Jobs: []workload.Spec{job(0, "A"), job(1, "A"), job(2, "B")}}
	want := `fit.csv:4: field "num_gpus": job 2's pods [4 4] never fit VC B's cells together`
	if err := l.Validate(tr, true); err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	tr.Jobs = tr.Jobs[:2]
	if err := l.Validate(tr, true); err != nil {
		t.Fatal(err)
	}
}
