package cluster

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := Parse("16x4")
	if err != nil {
		t.Fatal(err)
	}
	if c.Size() != 64 || c.NumNodes() != 16 || c.NodeOf(5) != 1 || c.GPUs[63].Local != 3 || c.String() != "16x4" {
		t.Fatalf("%v", c)
	}
	for _, bad := range []string{"", "16", "x4", "16x", "0x4", "4x0", "-1x4", "ax4", "16x4x2", "1.5x4", "9999999x4", "1048576x1024"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "--cluster") {
			t.Errorf("Parse(%q) = %v, want a --cluster error", bad, err)
		}
	}
}

func TestAssignNeverGivesAGPUTwice(t *testing.T) {
	c, _ := New(2, 2)
	if err := c.Assign(1, []int{0, 2}); err != nil {
		t.Fatal(err)
	}
	for _, g := range [][]int{{2}, {1, 1}, {4}, {-1}} {
		if err := c.Assign(2, g); err == nil {
			t.Errorf("Assign(%v) succeeded", g)
		}
	}
	if c.FreeCount() != 2 || c.FreeOnNode(0) != 1 || !c.SpansNodes([]int{0, 2}) || c.SpansNodes([]int{2, 3}) {
		t.Fatal("bookkeeping")
	}
	if err := c.Release(2, []int{0}); err == nil {
		t.Fatal("released a GPU the job does not hold")
	}
	if err := c.Release(1, []int{0, 2}); err != nil || c.FreeCount() != 4 {
		t.Fatal(err)
	}
}

// TryAssign refuses exactly what Assign refuses, changing nothing then.
func TestTryAssignAsAssign(t *testing.T) {
	c, _ := New(2, 2)
	if !c.TryAssign(1, []int{0, 2}) || c.Owner(0) != 1 || c.Owner(2) != 1 || c.FreeCount() != 2 || c.FreeOnNode(1) != 1 {
		t.Fatal("a free set was not assigned")
	}
	for _, g := range [][]int{{1, 2}, {1, 1}, {4}, {-1}} {
		d, _ := New(2, 2)
		_ = d.Assign(1, []int{0, 2})
		if d.TryAssign(2, g) || d.Assign(2, g) == nil {
			t.Errorf("TryAssign or Assign(%v) succeeded", g)
		}
		if d.FreeCount() != 2 || d.Owner(1) != Free || d.Owner(3) != Free {
			t.Errorf("a refused TryAssign(%v) changed the owner table", g)
		}
	}
	if c.TryAssign(-1, []int{1}) {
		t.Error("TryAssign took a negative job id")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"16x4", "4608x6", "0x0", "x", "1x1024"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err == nil && (c.Size() <= 0 || c.Size() != c.NumNodes()*c.MaxGPUsPerNode()) {
			t.Fatalf("%q parsed to a broken cluster", s)
		}
	})
}
