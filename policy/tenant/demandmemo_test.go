package tenant

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// TestValidateMemoMatchesValidate: one DemandMemo kept over job after
// job (as pal-kube keeps one over a round's gangs) gives each job the
// answer Validate gives it alone, on hand-built cells where each field of
// a demand changes the answer: VC (B's two K80 nodes hold two pods of 4,
// A's one does not), pods (A's K80 node holds one pod of 4, not two),
// leaf type (A's V100 node holds two pods of 4), pinned cell (A-PIN, one
// K80 node, does not hold two pods of 4) and priority (an opportunistic
// job's leaf type is checked, not its fit). Jobs of one demand and
// different ids each get an error naming their own id.
func TestValidateMemoMatchesValidate(t *testing.T) {
	cfg, err := tenancy.Parse("memo.yaml", []byte(`physicalCluster:
  cellTypes:
    K80-NODE: {childCellType: K80, childCellNumber: 4, isNodeLevel: true}
    V100-NODE: {childCellType: V100, childCellNumber: 8, isNodeLevel: true}
  physicalCells:
  - {cellType: K80-NODE, cellAddress: k0}
  - {cellType: K80-NODE, cellAddress: k1}
  - {cellType: K80-NODE, cellAddress: k2}
  - {cellType: K80-NODE, cellAddress: k3, pinnedCellId: A-PIN}
  - {cellType: V100-NODE, cellAddress: v0}
virtualClusters:
  A: {virtualCells: [{cellType: K80-NODE, cellNumber: 1}, {cellType: V100-NODE, cellNumber: 1}], pinnedCells: [{pinnedCellId: A-PIN}]}
  B: {virtualCells: [{cellType: K80-NODE, cellNumber: 2}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := 0
	job := func(vc string, gpus, pod, prio int, pin, leaf string) workload.Spec {
		id++
		return workload.Spec{ID: id, GPUs: gpus, PodGPUs: pod, VCPriority: prio, Iterations: 60, IterTime: 1, Model: workload.NoModel,
			Tracked: true, VC: vc, PinnedCell: pin, LeafCellType: leaf, Source: "memo.csv", Line: id + 1}
	}
	const opp = tenancy.Opportunistic
	jobs := []workload.Spec{
		job("B", 8, 4, 0, "", "K80"),   // fits B's two K80 nodes
		job("A", 8, 4, 0, "", "K80"),   // VC: A has one K80 node
		job("A", 4, 4, 0, "", "K80"),   // fits A's K80 node
		job("A", 8, 4, 0, "", "K80"),   // pods: two of 4 do not (again, another id)
		job("A", 8, 4, 0, "", "V100"),  // leaf type: fits the V100 node
		job("A", 8, 4, 0, "", ""),      // fits the V100 node
		job("A", 8, 4, 0, "A-PIN", ""), // pinned cell: one K80 node
		job("A", 8, 4, opp, "", "K80"), // priority: opportunistic, fit not checked
		job("A", 8, 4, 0, "", "K80"),   // guaranteed again
		job("A", 8, 4, 5, "", "K80"),   // another guaranteed priority asks the same
		job("A", 8, 4, 0, "", "P100"),  // unknown leaf type
	}
	memo := DemandMemo{}
	fails := 0
	for _, j := range jobs {
		one := &workload.Trace{Name: "memo.csv", Jobs: []workload.Spec{j}}
		want := fmt.Sprint(l.Validate(one, true))
		if want != "<nil>" {
			fails++
		}
		if got := fmt.Sprint(l.ValidateMemo(one, true, memo)); got != want {
			t.Errorf("job %d (VC %s, %d GPUs in pods of %d, priority %d, pinned %q, leaf %q): with the memo %s, alone %s",
				j.ID, j.VC, j.GPUs, j.PodGPUs, j.VCPriority, j.PinnedCell, j.LeafCellType, got, want)
		}
	}
	if fails == 0 || fails == len(jobs) {
		t.Fatalf("%d of %d jobs fail: the case tells nothing apart", fails, len(jobs))
	}
	if len(memo) >= len(jobs) {
		t.Fatalf("the memo holds %d answers for %d jobs: none was asked twice", len(memo), len(jobs))
	}
}
