package tenancy

import (
	"fmt"
	"reflect"
	"testing"
)

// bindings renders every bound physical cell of a chain as
// "address→virtual cell", the virtual cell named by its path of indices
// from its preassigned cell (e.g. "0.1" = child 1 of preassigned cell 0).
func bindings(s *Scheduler, chain string) []string {
	vname := func(v *VCell) string {
		name := ""
		for ; v.parent != nil; v = v.parent {
			name = fmt.Sprintf(".%d", v.idx) + name
		}
		return fmt.Sprintf("%d", v.idx) + name
	}
	out := []string{}
	var walk func(p *PCell)
	walk = func(p *PCell) {
		if p.vcell != nil {
			out = append(out, p.Addr+"→"+vname(p.vcell))
		}
		for _, c := range p.children {
			walk(c)
		}
	}
	for _, t := range s.byChain[chain].tops {
		walk(t)
	}
	return out
}

// A lazy victim's demotion can leave its whole preassigned cell unused, so
// the cell goes back to the buddy system and is bound afresh while the
// preemptor binds. If that cell holds a bad node, binding it shows the
// failure to the VC (fixBad) on an unbound virtual child, and that child
// must not be the one the preemptor's pod was fitted to: it once was, and
// bind then linked the same virtual node to a second, healthy physical
// node, leaving the bad node pointing at a virtual cell bound elsewhere
// (later a "split cell is free or bound" safety failure). Shrunk from
// TestH7RandomSequencesKeepSafety, PAL_PROP_SEED=4, config 724, step 19.
//
// Hand-derived: RACK = {n0, n1} of 2 GPUs, VC A reserves the whole RACK.
//  1. g1 (prio 0, lazy, 1 GPU) binds RACK→0, n0→0.0, n0/0→0.0.0.
//  2. n1 fails: fixBad shows it to A on the unbound virtual node, n1→0.1.
//  3. g2 (prio 2, 2 GPUs): virtual node 0.1 is bad, so the view fits g2 on
//     0.0 by preempting g1. Demoting g1 leaves all of RACK's virtual cells
//     unused, so RACK is unbound and freed; binding it again must show n1
//     on 0.1 (not chosen), and 0.0 goes to n0, its leaves to n0's devices
//     in order. The pod lists its free leaf 0.0.1 before the preemptible
//     0.0.0, so g2 runs on n0[1 0], and g1 is preempted.
func TestBindShowsBadNodeOffThePlacement(t *testing.T) {
	s := mustNew(t, `
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 2, isNodeLevel: true}
    RACK: {childCellType: NODE, childCellNumber: 2}
  physicalCells:
  - {cellType: RACK, cellChildren: [{cellAddress: n0}, {cellAddress: n1}]}
virtualClusters:
  A: {virtualCells: [{cellType: RACK, cellNumber: 1}]}
`)
	d := mustPlace(t, s, Request{Group: "g1", VC: "A", Priority: 0, Pods: []int{1}, LazyPreemptable: true})
	if got := d.String(); got != "n0[0]" {
		t.Fatalf("g1 = %s, want n0[0]", got)
	}
	if err := s.SetNodeHealth("n1", false); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	want := []string{"0→0", "n0→0.0", "n0/0→0.0.0", "n1→0.1"}
	if got := bindings(s, "RACK"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after n1 fails: bindings %v, want %v", got, want)
	}
	d = mustPlace(t, s, Request{Group: "g2", VC: "A", Priority: 2, Pods: []int{2}})
	if got := d.String(); got != "n0[1 0] preempted=[g1]" {
		t.Fatalf("g2 = %s, want n0[1 0] preempted=[g1]", got)
	}
	want = []string{"0→0", "n0→0.0", "n0/0→0.0.0", "n0/1→0.0.1", "n1→0.1"}
	if got := bindings(s, "RACK"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after g2: bindings %v, want %v", got, want)
	}
	// Recovery and release leave nothing bound and the RACK free again.
	if err := s.SetNodeHealth("n1", true); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	if err := s.Release("g2"); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	if got := bindings(s, "RACK"); len(got) != 0 {
		t.Fatalf("after release: bindings %v, want none", got)
	}
	if got := freeList(s, "RACK", 3); !reflect.DeepEqual(got, []string{"0"}) {
		t.Fatalf("after release: RACK free list %v, want [0]", got)
	}
}
