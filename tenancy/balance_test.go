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

// pacedCells: three 4-GPU nodes, one node cell for each of the VCs W
// (whole-node pods) and S (one-device pods) and one spare, so a request
// chooses among all three free nodes.
const pacedCells = `
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: a}
  - {cellType: NODE, cellAddress: b}
  - {cellType: NODE, cellAddress: c}
virtualClusters:
  W: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  S: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
`

func pacedSpeeds(vals map[string][4]float64) func(int, string, int) float64 {
	return func(_ int, node string, gpu int) float64 { return vals[node][gpu] }
}

// Worked by hand. Node b has a straggler. Values a 1.1 x4 (sum 4.4,
// slowest 1.1), b 0.6 0.6 0.6 2.0 (sum 3.8, slowest 2.0), c 1.2 x4 (sum
// 4.8, slowest 1.2); the chain's mean device value is 13/12 = 1.083.
//
// A pod of 4 runs at its slowest device. Counted by the mean, b (0.95)
// is the only node at or below 1.083, so W would bind b and run at 2.0.
// Paced for pods of 4 the nodes are worth 4.4, 8.0 and 4.8 (a mean of
// 17.2/12 = 1.433): a (1.1) and c (1.2) keep W at or below it, and the
// slowest of them, c, is bound.
func TestBalancePacedGang(t *testing.T) {
	s := mustNew(t, pacedCells)
	s.SetSpeeds(1, pacedSpeeds(map[string][4]float64{"a": {1.1, 1.1, 1.1, 1.1}, "b": {0.6, 0.6, 0.6, 2.0}, "c": {1.2, 1.2, 1.2, 1.2}}))
	s.SetBalance(true)
	d := mustPlace(t, s, Request{Group: "w1", VC: "W", Pods: []int{4}, Fastest: true})
	mustCheck(t, s)
	if d.String() != "c[0 1 2 3]" {
		t.Errorf("w1 = %s, want c[0 1 2 3]", d)
	}
}

// Worked by hand. Values a 0.8 0.8 0.8 1.6 (sum 4.0), b 0.8 0.8 0.8 3.0
// (sum 5.4), c 0.95 x4 (sum 3.8); the chain's mean is 13.2/12 = 1.1.
// Gang cost (a node's worth of devices at its slowest, less the sum): a
// 6.4-4.0 = 2.4, b 12-5.4 = 6.6, c 0; 9.0 in all, and S, with 8 of the
// 12 devices, is due 6.0 of it.
//
// S's first group, one device: S holds no gang cost (0 < 6.0), so it
// takes the node that costs it least net of what it spares gangs: its
// value less its gang cost, a 1.6, b -1.2, c 3.8: b, which by the mean
// alone (1.35, above 1.1) it would never take. Its second group, two
// pods of 2, fills b's spare devices with one pod and binds a second
// node for the other. Now S holds 6.6 >= 6.0 and the paced mean
// decides: for pods of 2 (pairs of sorted devices at the slower one) a
// is worth 4.8, b 7.6, c 3.8, a mean of 1.35; with b, a gives
// (7.6+4.8)/8 = 1.55 and c (7.6+3.8)/8 = 1.425, neither at or below, so
// the fastest, c (were S still due, a: 4.8-2.4 = 2.4 against 3.8). W's
// whole-node group then gets a, whose slowest device (1.6) is far
// better than b's 3.0.
func TestBalanceGangDue(t *testing.T) {
	s := mustNew(t, pacedCells)
	s.SetSpeeds(1, pacedSpeeds(map[string][4]float64{"a": {0.8, 0.8, 0.8, 1.6}, "b": {0.8, 0.8, 0.8, 3.0}, "c": {0.95, 0.95, 0.95, 0.95}}))
	s.SetBalance(true)
	var got []string
	for _, r := range []Request{
		{Group: "s1", VC: "S", Pods: []int{1}, Fastest: true},
		{Group: "s2", VC: "S", Pods: []int{2, 2}, Fastest: true},
		{Group: "w1", VC: "W", Pods: []int{4}, Fastest: true},
	} {
		d := mustPlace(t, s, r)
		mustCheck(t, s)
		got = append(got, r.Group+"="+d.String())
	}
	if want := "s1=b[0] s2=b[1 2] c[0 1] w1=a[0 1 2 3]"; strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// Worked by hand: of the cells a due VC may take, the one that costs it
// least net of what it spares gangs, not the one gangs lose most on.
// Values a 1.0 1.0 1.0 1.4 (sum 4.4, gang cost 5.6-4.4 = 1.2), b 0.7 0.7
// 0.7 1.3 (3.4, 1.8), c 1.5 1.5 1.5 2.2 (6.7, 2.1): S is due (0 < 8/12
// of 5.1); net a 3.2, b 1.6, c 4.6: b, though c costs gangs most.
func TestBalanceGangDueNet(t *testing.T) {
	s := mustNew(t, pacedCells)
	s.SetSpeeds(1, pacedSpeeds(map[string][4]float64{"a": {1.0, 1.0, 1.0, 1.4}, "b": {0.7, 0.7, 0.7, 1.3}, "c": {1.5, 1.5, 1.5, 2.2}}))
	s.SetBalance(true)
	d := mustPlace(t, s, Request{Group: "s1", VC: "S", Pods: []int{1}, Fastest: true})
	mustCheck(t, s)
	if d.String() != "b[0]" {
		t.Errorf("s1 = %s, want b[0]", d)
	}
}

// Who waits, worked by hand on balanceCells (class 0, the chain's mean
// 1.5; A and B 4 devices each, 8 in all). A binds a1 with no queues:
// n0, as in TestBalanceBindings. Then, for a2:
//   - queues A 2, B 0: A waits 2/4 per device against the chain's 2/8,
//     so it is pressed and binds the fastest free node, n1 (1.0);
//   - queues A 1, B 1: 1/4 against 2/8, not above, so the balance rule:
//     the slowest node that keeps A's mean at or below 1.5, n2;
//   - queues A 0, B 3: B is pressed, not A: n2 again.
//
// Pressure does not override gang cost: in TestBalanceGangDue's cells S,
// due, still takes b (the straggler node) for its first one-device group
// though it alone waits (S 5, W 0).
func TestBalancePressed(t *testing.T) {
	for _, c := range []struct {
		a, b int
		want string
	}{
		{2, 0, "n1[0 1]"},
		{1, 1, "n2[0 1]"},
		{0, 3, "n2[0 1]"},
	} {
		s := mustNew(t, balanceCells)
		s.SetSpeeds(2, balanceSpeeds)
		s.SetBalance(true)
		if d := mustPlace(t, s, Request{Group: "a1", VC: "A", Pods: []int{2}, Fastest: true, Class: 0}); d.String() != "n0[0 1]" {
			t.Fatalf("a1 = %s, want n0[0 1]", d)
		}
		s.SetQueues(map[string]int{"A": c.a, "B": c.b})
		d := mustPlace(t, s, Request{Group: "a2", VC: "A", Pods: []int{2}, Fastest: true, Class: 0})
		mustCheck(t, s)
		if d.String() != c.want {
			t.Errorf("queues A %d, B %d: a2 = %s, want %s", c.a, c.b, d, c.want)
		}
	}

	s := mustNew(t, pacedCells)
	s.SetSpeeds(1, pacedSpeeds(map[string][4]float64{"a": {0.8, 0.8, 0.8, 1.6}, "b": {0.8, 0.8, 0.8, 3.0}, "c": {0.95, 0.95, 0.95, 0.95}}))
	s.SetBalance(true)
	s.SetQueues(map[string]int{"S": 5})
	d := mustPlace(t, s, Request{Group: "s1", VC: "S", Pods: []int{1}, Fastest: true})
	mustCheck(t, s)
	if d.String() != "b[0]" {
		t.Errorf("pressed and due: s1 = %s, want b[0]", d)
	}
}
