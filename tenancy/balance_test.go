package tenancy

import (
	"strings"
	"testing"
)

// balanceCells: four 2-GPU nodes, n0 and n1 fast (1.0), n2 and n3 slow
// (2.0) for class 0 (class 1 reversed); VCs A and B two node cells each.
const balanceCells = `
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 2, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
  - {cellType: NODE, cellAddress: n2}
  - {cellType: NODE, cellAddress: n3}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
`

func balanceSpeeds(class int, node string, _ int) float64 {
	fast := node == "n0" || node == "n1"
	if fast == (class == 0) {
		return 1
	}
	return 2
}

// Worked by hand (class 0, the chain's mean 1.5). hived-pm binds the
// fastest free node each time: A gets n0 and n1, B the slow n2 and n3.
// hived-speed binds the slowest node that keeps the VC's mean at or
// below 1.5, else the fastest: A first n0 (a slow node alone would be
// 2.0; n0 and n1 tie, the first wins), then n2 ((1+1+2+2)/4 = 1.5, the
// slowest allowed); B then n1 (n3 alone is 2.0), then n3 (1.5). Each VC
// ends at the cluster's mean. Check holds after every decision.
func TestBalanceBindings(t *testing.T) {
	for _, c := range []struct {
		balance bool
		want    []string
	}{
		{false, []string{"a1=n0[0 1]", "a2=n1[0 1]", "b1=n2[0 1]", "b2=n3[0 1]"}},
		{true, []string{"a1=n0[0 1]", "a2=n2[0 1]", "b1=n1[0 1]", "b2=n3[0 1]"}},
	} {
		s := mustNew(t, balanceCells)
		s.SetSpeeds(2, balanceSpeeds)
		s.SetBalance(c.balance)
		var got []string
		for _, g := range []struct{ name, vc string }{{"a1", "A"}, {"a2", "A"}, {"b1", "B"}, {"b2", "B"}} {
			d := mustPlace(t, s, Request{Group: g.name, VC: g.vc, Pods: []int{2}, Fastest: true, Class: 0})
			mustCheck(t, s)
			got = append(got, g.name+"="+d.String())
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("balance %v: %v, want %v", c.balance, got, c.want)
		}
	}
}

// Cells come and go: after a1 (n0) and b1 (n1) leave, A holds only the
// slow n2 (mean 2.0) and n0 and n1 are free. A's next group must bind a
// node that brings it to 1.5 or below: either fast node does
// ((2+2+1+1)/4 = 1.5), and of equals the first, n0, wins. A request of class 1 (speeds reversed,
// n2 and n3 fast) on a fresh scheduler binds n2 for A first, then n0.
// Without Fastest nothing is balanced (buddy order: n0 then n1).
func TestBalanceRebindAndClass(t *testing.T) {
	s := mustNew(t, balanceCells)
	s.SetSpeeds(2, balanceSpeeds)
	s.SetBalance(true)
	for _, g := range []struct{ name, vc string }{{"a1", "A"}, {"a2", "A"}, {"b1", "B"}, {"b2", "B"}} {
		mustPlace(t, s, Request{Group: g.name, VC: g.vc, Pods: []int{2}, Fastest: true, Class: 0})
	}
	if err := s.Release("a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("b1"); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	// Free now: n0 and n1. A holds n2 (2.0): n0 or n1 gives 1.5, the
	// slowest allowed of equals is the first, n0.
	if d := mustPlace(t, s, Request{Group: "a3", VC: "A", Pods: []int{2}, Fastest: true, Class: 0}); d.String() != "n0[0 1]" {
		t.Errorf("a3 = %s, want n0[0 1]", d)
	}
	mustCheck(t, s)

	s = mustNew(t, balanceCells)
	s.SetSpeeds(2, balanceSpeeds)
	s.SetBalance(true)
	var got []string
	for _, name := range []string{"a1", "a2"} {
		d := mustPlace(t, s, Request{Group: name, VC: "A", Pods: []int{2}, Fastest: true, Class: 1})
		mustCheck(t, s)
		got = append(got, d.String())
	}
	if strings.Join(got, " ") != "n2[0 1] n0[0 1]" {
		t.Errorf("class 1: %v, want n2 then n0", got)
	}
	s = mustNew(t, balanceCells)
	s.SetSpeeds(2, balanceSpeeds)
	s.SetBalance(true)
	got = nil
	for _, name := range []string{"a1", "a2"} {
		d := mustPlace(t, s, Request{Group: name, VC: "A", Pods: []int{2}})
		got = append(got, d.String())
	}
	if strings.Join(got, " ") != "n0[0 1] n1[0 1]" {
		t.Errorf("without Fastest: %v, want n0 then n1", got)
	}
}
