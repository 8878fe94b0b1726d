package tenant

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// The cells of the two cases (tenancy/testdata): three 4-GPU nodes, n1
// pinned as A-PIN, VC A = one node cell + A-PIN, VC B = one node cell
// (GPUs numbered in config order: n0 0-3, n1 4-7, n2 8-11); and one VC
// over a K80 node k0 (GPUs 0-3) and a V100 node v0 (GPUs 4-7).
const (
	pinnedCells = "../../tenancy/testdata/pools-pinned.yaml"
	skuCells    = "../../tenancy/testdata/pools-skus.yaml"
)

// layoutFile loads a cells file into a layout.
func layoutFile(t *testing.T, path string) *Layout {
	t.Helper()
	cfg, err := tenancy.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func pinned(s workload.Spec, cell string) workload.Spec { s.PinnedCell = cell; return s }
func typed(s workload.Spec, leaf string) workload.Spec  { s.LeafCellType = leaf; return s }

// The pinned case, by hand (FIFO inside each VC, rounds of 60 s, the same
// under packed-sticky and spread: each pool below is one node, so both
// placers take its lowest free GPUs):
//
//   - alone, a 4-GPU job naming A-PIN runs on n1 = [4 5 6 7] at 0;
//   - p1 and p2 (2 GPUs each, naming A-PIN, 5 rounds) fill n1: [4 5] and
//     [6 7] at 0; u (4 GPUs, naming nothing, 10 rounds) goes to A's node
//     cell, which buddy allocation binds to the first free node, n0 (n1
//     left the free list when it was pinned): [0 1 2 3] at 0; B's job gets
//     the last node, n2 = [8..11];
//   - u2 (4 GPUs, naming nothing) waits for A's node cell: A-PIN is free
//     from 300 (p1 and p2 done), but only jobs that name it may use it, so
//     u2 starts when u finishes, at 600, on n0.
func TestPinnedCellTwoLayers(t *testing.T) {
	l := layoutFile(t, pinnedCells)
	for _, placer := range []string{"packed-sticky", "spread"} {
		alone := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{pinned(job(0, "A", 0, 4, 4, 0, 10), "A-PIN")}}
		recs := runStage(t, l, "hived", alone, "fifo", placer, true)
		if r := recs[0]; r.FirstStart != 0 || fmt.Sprint(r.GPUIDs) != "[4 5 6 7]" {
			t.Errorf("%s: the pinned job alone started at %g on %v, want 0 on [4 5 6 7]", placer, r.FirstStart, r.GPUIDs)
		}
		tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
			pinned(job(0, "A", 0, 2, 2, 0, 5), "A-PIN"), // p1
			pinned(job(1, "A", 0, 2, 2, 0, 5), "A-PIN"), // p2
			job(2, "A", 0, 4, 4, 0, 10),                 // u
			job(3, "B", 0, 4, 4, 0, 10),                 // B's
			job(4, "A", 0, 4, 4, 0, 10),                 // u2
		}}
		recs = runStage(t, l, "hived", tr, "fifo", placer, true)
		want := map[int]string{0: "0 [4 5]", 1: "0 [6 7]", 2: "0 [0 1 2 3]", 3: "0 [8 9 10 11]", 4: "600 [0 1 2 3]"}
		for id, w := range want {
			if got := fmt.Sprintf("%g %v", recs[id].FirstStart, recs[id].GPUIDs); got != w {
				t.Errorf("%s: job %d started at %s, want %s", placer, id, got, w)
			}
		}
	}
}

// The two-SKU case, by hand (FIFO, rounds of 60 s, packed-sticky and
// spread alike: each pool is one node). The VC's pools are K80 then V100
// (leaf-type order).
//
//   - t = 0: j0 (V100, 4 GPUs, 10 rounds) runs on v0 = [4 5 6 7]; j1
//     (naming nothing, 2 GPUs, 20 rounds) goes to the first pool with room,
//     K80: [0 1]; j2 (K80, 2 GPUs, 20 rounds) takes [2 3].
//   - t = 60: j3 (naming nothing, 4 GPUs, 5 rounds) finds no room in
//     either pool and waits in K80's; j4 (V100, 4 GPUs) waits for v0.
//   - t = 600: j0 is done; j3 now has room in V100 and is ahead of j4 in
//     the VC's order: it runs [600, 900) on [4 5 6 7]; j4 follows at 900.
//
// No job ever runs on the other type's node.
func TestLeafCellTypeTwoLayers(t *testing.T) {
	l := layoutFile(t, skuCells)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		typed(job(0, "A", 0, 4, 4, 0, 10), "V100"),
		job(1, "A", 0, 2, 2, 0, 20),
		typed(job(2, "A", 0, 2, 2, 0, 20), "K80"),
		job(3, "A", 0, 4, 4, 60, 5),
		typed(job(4, "A", 0, 4, 4, 60, 5), "V100"),
	}}
	if err := l.Validate(tr, true); err != nil {
		t.Fatal(err)
	}
	for _, placer := range []string{"packed-sticky", "spread"} {
		recs := runStage(t, l, "hived", tr, "fifo", placer, true)
		want := map[int]string{0: "0 [4 5 6 7]", 1: "0 [0 1]", 2: "0 [2 3]", 3: "600 [4 5 6 7]", 4: "900 [4 5 6 7]"}
		for id, w := range want {
			if got := fmt.Sprintf("%g %v", recs[id].FirstStart, recs[id].GPUIDs); got != w {
				t.Errorf("%s: job %d started at %s, want %s", placer, id, got, w)
			}
		}
	}
}

// pooledCells mixes what pools are made of: VC A has a rack (two K80
// nodes), a V100 node and a pinned V100 node; VC B a K80 node and a pinned
// K80 node.
const pooledCells = `
physicalCluster:
  cellTypes:
    K-PAIR: {childCellType: K80, childCellNumber: 2}
    K-NODE: {childCellType: K-PAIR, childCellNumber: 2, isNodeLevel: true}
    K-RACK: {childCellType: K-NODE, childCellNumber: 2}
    V-NODE: {childCellType: V100, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: K-RACK, cellChildren: [{cellAddress: k0}, {cellAddress: k1}]}
  - {cellType: K-RACK, cellChildren: [{cellAddress: k2}, {cellAddress: k3, pinnedCellId: B-PIN}]}
  - {cellType: V-NODE, cellAddress: v0}
  - {cellType: V-NODE, cellAddress: v1, pinnedCellId: A-PIN}
virtualClusters:
  A: {virtualCells: [{cellType: K-RACK, cellNumber: 1}, {cellType: V-NODE, cellNumber: 1}], pinnedCells: [{pinnedCellId: A-PIN}]}
  B: {virtualCells: [{cellType: K-RACK.K-NODE, cellNumber: 1}], pinnedCells: [{pinnedCellId: B-PIN}]}
`

// HiveD's promise holds with pinned cells and leaf types too: with
// guaranteed jobs only, every job starts, stops and finishes when it does
// on its VC's private cluster, where the same pools constrain it (a
// pooled VC's private reference runs through the stage, Layout.Pooled).
// And no job ever runs outside what it names.
func TestPoolsEqualPrivate(t *testing.T) {
	l := layoutOf(t, pooledCells)
	type shape struct {
		gpus, pod int
		pin, leaf string
		vc        string
		nodes     []int // allowed nodes (nil: any of the VC's)
	}
	// Cluster nodes: k0 0, k1 1, k2 2, k3 3, v0 4, v1 5.
	shapes := []shape{
		{gpus: 2, pod: 2, vc: "A"}, {gpus: 4, pod: 4, vc: "A"}, {gpus: 1, vc: "A", leaf: "K80", nodes: []int{0, 1, 2}},
		{gpus: 4, pod: 4, vc: "A", leaf: "V100", nodes: []int{4}}, {gpus: 2, pod: 2, vc: "A", pin: "A-PIN", nodes: []int{5}},
		{gpus: 8, pod: 4, vc: "A", leaf: "K80", nodes: []int{0, 1, 2}},
		{gpus: 2, pod: 2, vc: "B", nodes: []int{0, 1, 2}}, {gpus: 2, pod: 2, vc: "B", pin: "B-PIN", nodes: []int{3}},
		{gpus: 1, vc: "B", leaf: "K80", nodes: []int{0, 1, 2}},
	}
	if !l.Pooled("A") || !l.Pooled("B") {
		t.Fatal("both VCs have pinned cells")
	}
	for seed := uint64(0); seed < 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		tr := &workload.Trace{Name: "pools.csv"}
		kind := map[int]shape{}
		for i := 0; i < 40; i++ {
			sh := shapes[rng.IntN(len(shapes))]
			j := workload.Spec{ID: i, GPUs: sh.gpus, PodGPUs: sh.pod, Submit: float64(rng.IntN(20) * 60),
				Iterations: float64(60 * (1 + rng.IntN(20))), IterTime: 1, Model: workload.NoModel, Tracked: true,
				VC: sh.vc, VCPriority: rng.IntN(2), PinnedCell: sh.pin, LeafCellType: sh.leaf, Source: "pools.csv", Line: i + 2}
			tr.Jobs = append(tr.Jobs, j)
			kind[i] = sh
		}
		slices.SortStableFunc(tr.Jobs, func(a, b workload.Spec) int { return cmp.Compare(a.Submit, b.Submit) })
		if err := l.Validate(tr, true); err != nil {
			t.Fatal(err)
		}
		for _, sched := range []string{"fifo", "tiresias-las"} {
			for _, placer := range []string{"packed-sticky", "spread", "packed-nonsticky"} {
				shared := runStage(t, l, "hived", tr, sched, placer, true)
				for id, r := range shared {
					sh := kind[id]
					for _, n := range r.Nodes {
						if sh.nodes != nil && !slices.Contains(sh.nodes, n) {
							t.Fatalf("seed %d %s %s: job %d (%+v) ran on node %d", seed, sched, placer, id, sh, n)
						}
						if sh.pin == "" && (n == 3 || n == 5) {
							t.Fatalf("seed %d %s %s: job %d names no pinned cell and ran on pinned node %d", seed, sched, placer, id, n)
						}
					}
				}
				samePrivate(t, l, tr, sched, placer, shared, "hived", fmt.Sprintf("seed %d", seed))
			}
		}
	}
}

// Layout.Node finds a node's index by name, for the nodes of either
// file (n0-n2; k0 and v0, whose GPUs are of two types), and refuses a
// name the cells lack.
func TestLayoutNode(t *testing.T) {
	for _, c := range []struct {
		path, name string
		want       int
		ok         bool
	}{
		{pinnedCells, "n0", 0, true}, {pinnedCells, "n2", 2, true}, {pinnedCells, "x", 0, false},
		{skuCells, "k0", 0, true}, {skuCells, "v0", 1, true},
	} {
		l := layoutFile(t, c.path)
		if got, ok := l.Node(c.name); got != c.want || ok != c.ok {
			t.Errorf("%s: Node(%q) = %d, %v; want %d, %v", c.path, c.name, got, ok, c.want, c.ok)
		}
	}
}
