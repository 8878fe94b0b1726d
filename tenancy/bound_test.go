package tenancy

import (
	"fmt"
	"reflect"
	"testing"
)

// boundMasks renders the bound-children mask of every cell of a chain
// with children, as "address:mask" in binary, one bit per child (child 0
// rightmost).
func boundMasks(s *Scheduler, chain string) []string {
	var out []string
	var walk func(p *PCell)
	walk = func(p *PCell) {
		if len(p.children) == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s:%0*b", p.Addr, len(p.children), p.bound))
		for _, c := range p.children {
			walk(c)
		}
	}
	for _, t := range s.byChain[chain].tops {
		walk(t)
	}
	return out
}

// The mask of bound children follows every binding and unbinding, and a
// cell binds inside a healthy parent without opportunistic load to the
// first unbound child. Hand-derived on one RACK of three 2-GPU nodes, VC
// A holding the whole RACK (virtual nodes 0.0, 0.1, 0.2):
//
//	g1 (1 GPU): RACK→0, 0.0 to the first unbound node n0, its leaf 0.0.0
//	  to n0/0.
//	g2 (2 GPUs): 0.0 has 1 free, so 0.1, bound to n1 (n0 is bound).
//	g3 (1 GPU): 0.1 is full, 0.0 has room: its leaf 0.0.1 goes to n0/1.
//	g4 (2 GPUs): 0.2, bound to n2, past the bound n0 and n1.
//	release g2: 0.1 is unused, so it and its leaves are unbound.
//	g5 (1 GPU): 0.0 and 0.2 are full, so 0.1, bound to n1 again (the
//	  only unbound node, between two bound ones).
//	release g1, g3: 0.0 is unused and unbound; the RACK stays bound.
//	release g4, g5: nothing is bound; the RACK is free again.
func TestBoundChildrenMask(t *testing.T) {
	s := mustNew(t, `
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 2, isNodeLevel: true}
    RACK: {childCellType: NODE, childCellNumber: 3}
  physicalCells:
  - {cellType: RACK, cellChildren: [{cellAddress: n0}, {cellAddress: n1}, {cellAddress: n2}]}
virtualClusters:
  A: {virtualCells: [{cellType: RACK, cellNumber: 1}]}
`)
	for _, step := range []struct {
		place   string // group to place (pods), or "" to release
		pods    []int
		release []string
		placed  string // the decision, for a placement
		masks   []string
	}{
		{place: "g1", pods: []int{1}, placed: "n0[0]",
			masks: []string{"0:001", "n0:01", "n1:00", "n2:00"}},
		{place: "g2", pods: []int{2}, placed: "n1[0 1]",
			masks: []string{"0:011", "n0:01", "n1:11", "n2:00"}},
		{place: "g3", pods: []int{1}, placed: "n0[1]",
			masks: []string{"0:011", "n0:11", "n1:11", "n2:00"}},
		{place: "g4", pods: []int{2}, placed: "n2[0 1]",
			masks: []string{"0:111", "n0:11", "n1:11", "n2:11"}},
		{release: []string{"g2"},
			masks: []string{"0:101", "n0:11", "n1:00", "n2:11"}},
		{place: "g5", pods: []int{1}, placed: "n1[0]",
			masks: []string{"0:111", "n0:11", "n1:01", "n2:11"}},
		{release: []string{"g1", "g3"},
			masks: []string{"0:110", "n0:00", "n1:01", "n2:11"}},
		{release: []string{"g4", "g5"},
			masks: []string{"0:000", "n0:00", "n1:00", "n2:00"}},
	} {
		what := fmt.Sprintf("release %v", step.release)
		if step.place != "" {
			what = "place " + step.place
			d := mustPlace(t, s, Request{Group: step.place, VC: "A", Priority: 0, Pods: step.pods})
			if got := d.String(); got != step.placed {
				t.Fatalf("%s = %s, want %s", step.place, got, step.placed)
			}
		}
		for _, g := range step.release {
			if err := s.Release(g); err != nil {
				t.Fatal(err)
			}
		}
		mustCheck(t, s)
		if got := boundMasks(s, "RACK"); !reflect.DeepEqual(got, step.masks) {
			t.Fatalf("after %s: masks %v, want %v", what, got, step.masks)
		}
	}
	if got := freeList(s, "RACK", 3); len(got) != 1 || got[0] != "0" {
		t.Fatalf("at the end: RACK free list %v, want [0]", got)
	}
}

// firstUnbound reads the mask: the lowest clear bit among the children,
// nil when all are bound, and no answer for a cell wider than the mask.
func TestFirstUnbound(t *testing.T) {
	for _, c := range []struct {
		children int
		bound    uint64
		want     int // child index; -1 none; -2 not answered
	}{
		{2, 0b00, 0},
		{2, 0b01, 1},
		{2, 0b10, 0},
		{2, 0b11, -1},
		{8, 0xbf, 6}, // 1011 1111: bit 6 is the first unbound child
		{8, 0xff, -1},
		{64, ^uint64(0) >> 1, 63},
		{64, ^uint64(0), -1},
		{65, 0, -2},
	} {
		p := &PCell{}
		for i := 0; i < c.children; i++ {
			p.children = append(p.children, &PCell{pos: i, parent: p})
		}
		p.bound = c.bound
		got, i, ok := p.firstUnbound()
		idx := -1
		switch {
		case !ok:
			idx = -2
		case got != nil:
			idx = got.pos
			if i != got.pos {
				t.Errorf("%d children, bound %b: child %d named as %d", c.children, c.bound, got.pos, i)
			}
		}
		if idx != c.want {
			t.Errorf("%d children, bound %b: child %d, want %d", c.children, c.bound, idx, c.want)
		}
	}
}
