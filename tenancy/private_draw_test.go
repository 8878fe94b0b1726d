package tenancy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// drawConfig is four 2-GPU nodes n0..n3 (n3 pinned as p3); VC a holds
// two node cells, VC b one GPU cell, VC c the pinned node.
func drawConfig() *Config {
	cfg := &Config{File: "draw.yaml", CellTypes: []CellTypeSpec{{Name: "NODE", ChildCellType: "GPU", ChildCellNumber: 2, IsNodeLevel: true}}}
	for i := range 4 {
		p := PhysicalCellSpec{CellType: "NODE", CellAddress: fmt.Sprintf("n%d", i)}
		if i == 3 {
			p.PinnedCellID = "p3"
		}
		cfg.PhysicalCells = append(cfg.PhysicalCells, p)
	}
	cfg.VCs = []VCSpec{
		{Name: "a", VirtualCells: []VirtualCellSpec{{CellType: "NODE", CellNumber: 2}}},
		{Name: "b", VirtualCells: []VirtualCellSpec{{CellType: "NODE.GPU", CellNumber: 1}}},
		{Name: "c", PinnedCells: []PinnedCellSpec{{PinnedCellID: "p3"}}},
	}
	return cfg
}

func TestPrivateDraw(t *testing.T) {
	s, err := New(drawConfig())
	if err != nil {
		t.Fatal(err)
	}
	const n = 6000
	r := rand.New(rand.NewPCG(1, 2))
	pairs := map[string]int{}
	for range n {
		got, err := s.PrivateDraw("a", r)
		if err != nil {
			t.Fatal(err)
		}
		// Two whole nodes, each device 0 then 1, never the pinned n3.
		if len(got) != 4 || got[0].Node != got[1].Node || got[2].Node != got[3].Node || got[0].Node == got[2].Node ||
			got[0].GPU != 0 || got[1].GPU != 1 || got[2].GPU != 0 || got[3].GPU != 1 || got[0].Node == "n3" || got[2].Node == "n3" {
			t.Fatalf("draw for a: %v", got)
		}
		k := []string{got[0].Node, got[2].Node}
		slices.Sort(k)
		pairs[k[0]+"+"+k[1]]++
	}
	// Three unpinned nodes, two drawn: three pairs, a third each
	// (binomial sd 37 at n = 6000).
	if len(pairs) != 3 {
		t.Fatalf("pairs drawn: %v", pairs)
	}
	for k, c := range pairs {
		if c < n/3-150 || c > n/3+150 {
			t.Errorf("pair %s drawn %d times of %d, want about %d", k, c, n, n/3)
		}
	}
	// b's one GPU: any of the six unpinned devices, a sixth each.
	leaves := map[Leaf]int{}
	for range n {
		got, err := s.PrivateDraw("b", r)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("draw for b: %v", got)
		}
		leaves[got[0]]++
	}
	if len(leaves) != 6 {
		t.Fatalf("b's leaves: %v", leaves)
	}
	for l, c := range leaves {
		if l.Node == "n3" || c < n/6-120 || c > n/6+120 {
			t.Errorf("b drew %v %d times of %d, want about %d and never n3", l, c, n, n/6)
		}
	}
	// The pinned cell is its own.
	got, err := s.PrivateDraw("c", r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Leaf{{"n3", 0}, {"n3", 1}}; !slices.Equal(got, want) {
		t.Errorf("draw for c: %v, want %v", got, want)
	}
	// The same seed draws the same cells.
	x, y := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for range 20 {
		a, _ := s.PrivateDraw("a", x)
		b, _ := s.PrivateDraw("a", y)
		if !slices.Equal(a, b) {
			t.Fatalf("same seed, draws %v and %v", a, b)
		}
	}
	if _, err := s.PrivateDraw("nope", r); err == nil {
		t.Error("unknown VC: no error")
	}
}

// Larger cells are drawn first: VC d's node cell and two one-GPU cells
// fill a cluster of two 2-GPU nodes, so the node cell needs a node whose
// devices no one-GPU cell took. Drawn smallest first, the two GPU cells
// would land on both nodes in two draws of three and leave no node.
func TestPrivateDrawLargerCellsFirst(t *testing.T) {
	cfg := &Config{File: "draw.yaml", CellTypes: []CellTypeSpec{{Name: "NODE", ChildCellType: "GPU", ChildCellNumber: 2, IsNodeLevel: true}}}
	for i := range 2 {
		cfg.PhysicalCells = append(cfg.PhysicalCells, PhysicalCellSpec{CellType: "NODE", CellAddress: fmt.Sprintf("n%d", i)})
	}
	cfg.VCs = []VCSpec{{Name: "d", VirtualCells: []VirtualCellSpec{{CellType: "NODE", CellNumber: 1}, {CellType: "NODE.GPU", CellNumber: 2}}}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		got, err := s.PrivateDraw("d", r)
		if err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		if len(got) != 4 {
			t.Fatalf("draw %d: %v, want 4 devices", i, got)
		}
		seen := map[Leaf]bool{}
		for _, l := range got {
			if seen[l] {
				t.Fatalf("draw %d: %v gives device %v twice", i, got, l)
			}
			seen[l] = true
		}
	}
}

// A VC's private cluster is its GPUs: VC A of OpenPAI's mixed SKUs owns
// a GPU node and a CPU node cell, and its draw is the four devices of a
// GPU node only (worker1's or worker2's), as the simulator's cluster
// has GPUs only; the CPU cell is drawn (it takes its node's CPU
// devices) but not returned.
func TestPrivateDrawGPUsOnly(t *testing.T) {
	s := mixedScheduler(t)
	r := rand.New(rand.NewPCG(5, 6))
	nodes := map[string]int{}
	for i := range 400 {
		got, err := s.PrivateDraw("A", r)
		if err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		if len(got) != 4 || got[0].Node != got[3].Node || got[0].GPU != 0 || got[3].GPU != 3 {
			t.Fatalf("draw %d for A: %v, want one GPU node's devices 0-3", i, got)
		}
		nodes[got[0].Node]++
	}
	if len(nodes) != 2 {
		t.Errorf("A's GPU node drawn from %v, want worker1 and worker2", nodes)
	}
}
