package cluster

import (
	"slices"
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
	// A GPU the job already holds is held too: taking it again would
	// count it free twice over.
	if err := c.Assign(1, []int{2}); err == nil {
		t.Error("Assign gave job 1 a GPU it already holds")
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

// Install takes a whole owner table and recounts what is free, per node
// and in all, from it: on 2x2, job 5 on GPU 1 and job 6 on GPUs 2 and 3
// leave node 0 one GPU free, node 1 none, one in all. The table it hands
// back is the one it replaced (all free), and a table of the wrong size
// is refused without a change.
func TestInstallRecounts(t *testing.T) {
	c, _ := New(2, 2)
	old, err := c.Install([]int{Free, 5, 6, 6})
	if err != nil {
		t.Fatal(err)
	}
	if c.FreeCount() != 1 || c.FreeOnNode(0) != 1 || c.FreeOnNode(1) != 0 || c.Owner(1) != 5 || c.Owner(3) != 6 {
		t.Errorf("free %d (node 0: %d, node 1: %d), owners %d %d; want 1 (1, 0), 5 6", c.FreeCount(), c.FreeOnNode(0), c.FreeOnNode(1), c.Owner(1), c.Owner(3))
	}
	if len(old) != 4 || slices.ContainsFunc(old, func(o int) bool { return o != Free }) {
		t.Errorf("replaced table %v, want four free GPUs", old)
	}
	if _, err := c.Install([]int{Free}); err == nil || c.FreeCount() != 1 {
		t.Errorf("a 1-GPU table for 4 GPUs: err %v, free %d", err, c.FreeCount())
	}
}

// Adopt is Install with the free count given: on nodes of 2, 3 and 1
// GPUs, job 7 on GPUs 0 and 3 and job 8 on GPU 5 leave 3 free (one on
// node 0, two on node 1, none on node 2, counted on the table); the
// table it hands back is the one it replaced; a table of the wrong size
// or a count out of range is refused without a change. Assign and
// Release after it keep the counts.
func TestAdopt(t *testing.T) {
	c, _ := NewSized([]int{2, 3, 1})
	next := []int{7, Free, Free, 7, Free, 8}
	old, err := c.Adopt(next, 3)
	if err != nil {
		t.Fatal(err)
	}
	if c.FreeCount() != 3 || c.FreeOnNode(0) != 1 || c.FreeOnNode(1) != 2 || c.FreeOnNode(2) != 0 || c.Owner(3) != 7 || c.Owner(5) != 8 {
		t.Errorf("free %d (%d %d %d), owners %d %d; want 3 (1 2 0), 7 8", c.FreeCount(), c.FreeOnNode(0), c.FreeOnNode(1), c.FreeOnNode(2), c.Owner(3), c.Owner(5))
	}
	if len(old) != 6 || slices.ContainsFunc(old, func(o int) bool { return o != Free }) {
		t.Errorf("replaced table %v, want six free GPUs", old)
	}
	for _, bad := range []struct {
		owner []int
		free  int
	}{{[]int{Free}, 1}, {old, -1}, {old, 7}} {
		if _, err := c.Adopt(bad.owner, bad.free); err == nil || c.FreeCount() != 3 || c.Owner(0) != 7 {
			t.Errorf("Adopt(%v, %d): err %v, free %d, owner of 0 %d", bad.owner, bad.free, err, c.FreeCount(), c.Owner(0))
		}
	}
	if err := c.Assign(9, []int{1, 4}); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(7, []int{0, 3}); err != nil {
		t.Fatal(err)
	}
	if c.FreeCount() != 3 || c.FreeOnNode(0) != 1 || c.FreeOnNode(1) != 2 || c.FreeOnNode(2) != 0 {
		t.Errorf("after assign and release: free %d (%d %d %d), want 3 (1 2 0)", c.FreeCount(), c.FreeOnNode(0), c.FreeOnNode(1), c.FreeOnNode(2))
	}
}

// Every node's GPU list and name are windows of blocks the nodes share
// (NewSized allocates a handful of blocks whatever the size), so a list
// appended to by a caller must not write into the next node's.
func TestNewSizedNodesAreIndependent(t *testing.T) {
	c, err := NewSized([]int{2, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{{0, "node-0", []int{0, 1}}, {1, "node-1", []int{2, 3, 4}}, {2, "node-2", []int{5}}}
	for i, n := range c.Nodes {
		if n.ID != want[i].ID || n.Name != want[i].Name || !slices.Equal(n.GPUs, want[i].GPUs) {
			t.Errorf("node %d: %+v, want %+v", i, n, want[i])
		}
	}
	for g, x := range c.GPUs {
		if x.ID != g || c.NodeOf(g) != x.Node || x.Local != g-c.Nodes[x.Node].GPUs[0] || !c.IsFree(g) {
			t.Errorf("GPU %d: %+v (node of %d, free %v)", g, x, c.NodeOf(g), c.IsFree(g))
		}
	}
	_ = append(c.Nodes[0].GPUs, 99)
	if !slices.Equal(c.Nodes[1].GPUs, []int{2, 3, 4}) {
		t.Errorf("an append to node 0's list changed node 1's: %v", c.Nodes[1].GPUs)
	}
	if c.FreeCount() != 6 || c.FreeOnNode(1) != 3 {
		t.Errorf("free %d, on node 1 %d; want 6 and 3", c.FreeCount(), c.FreeOnNode(1))
	}
}
