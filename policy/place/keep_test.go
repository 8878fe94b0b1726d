package place

import (
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
)

// TestKeepCopiesWithoutAliasing checks keep's answers: each equals the
// pick it copies, has no room past its end (an append to one answer must
// not write into the next one carved from the same block), and survives
// later keeps and changes to the scratch it was copied from.
func TestKeepCopiesWithoutAliasing(t *testing.T) {
	cases := []struct {
		name  string
		picks [][]int
	}{
		{"small", [][]int{{3, 5}, {0, 2, 7}, {9, 11}}},
		{"block boundary", [][]int{make([]int, keepChunk-1), {1, 4}, {6, 8}}},
		{"pick over a block", [][]int{{1, 3}, make([]int, keepChunk+5), {2, 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var x scoreIndex
			var got [][]int
			for _, p := range tc.picks {
				scratch := slices.Clone(p)
				k := x.keep(scratch)
				scratch[0] = -1 // the scratch is reused by the next pick
				got = append(got, k)
			}
			for i, k := range got {
				if !slices.Equal(k, tc.picks[i]) {
					t.Fatalf("answer %d = %v, want %v", i, k, tc.picks[i])
				}
				if cap(k) != len(k) {
					t.Fatalf("answer %d has cap %d, want %d", i, cap(k), len(k))
				}
				_ = append(k, -7)
			}
			for i, k := range got {
				if !slices.Equal(k, tc.picks[i]) {
					t.Fatalf("after appends, answer %d = %v, want %v", i, k, tc.picks[i])
				}
			}
		})
	}
}

// TestIndexMarksMultiGPUPairs checks the multiPair flag on a 2x3
// cluster whose class scores put GPUs 0 and 1 (node 0) in one bin and
// every other (bin, node) pair on a single GPU: only those two carry
// it, and every GPU's bin and pos are its class's gbin and pos.
func TestIndexMarksMultiGPUPairs(t *testing.T) {
	c, err := cluster.New(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	sc := &policy.Scores{}
	for cl := range sc.SF {
		sc.SF[cl] = []float64{1, 1, 2, 1, 2, 3}
	}
	var x scoreIndex
	if x.prepare(&policy.Env{Cluster: c, Scores: sc}, false) == nil {
		t.Fatal("index declined valid inputs")
	}
	wantMulti := []bool{true, true, false, false, false, false}
	wantBin := []int32{0, 0, 1, 0, 1, 2}
	for cl := range x.cls {
		ci := &x.cls[cl]
		for g, bp := range x.bp {
			if multi := bp[cl].bin&multiPair != 0; multi != wantMulti[g] {
				t.Errorf("class %d GPU %d: multiPair %v, want %v", cl, g, multi, wantMulti[g])
			}
			if b := bp[cl].bin &^ multiPair; b != wantBin[g] || b != ci.gbin[g] || bp[cl].pos != ci.pos[g] {
				t.Errorf("class %d GPU %d: bin %d pos %d, want bin %d (gbin %d) pos %d", cl, g, b, bp[cl].pos, wantBin[g], ci.gbin[g], ci.pos[g])
			}
		}
	}
}

// TestIndexColumnsMatchRecords: take reads a class's column (col) while
// that class is the only one live and the per-GPU records (bp)
// otherwise, so the two must hold the same bin and pos for every GPU and
// class. The classes score the GPUs differently here, so that reading
// another class's column would be seen.
func TestIndexColumnsMatchRecords(t *testing.T) { eachPacking(t, indexColumnsMatchRecords) }

func indexColumnsMatchRecords(t *testing.T) {
	c, err := cluster.New(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	sc := &policy.Scores{}
	sf := [][]float64{{1, 1, 2, 1, 2, 3}, {3, 2, 1, 1, 2, 1}, {2, 2, 2, 1, 1, 1}, {1, 3, 1, 3, 1, 3}}
	for cl := range sc.SF {
		sc.SF[cl] = sf[cl%len(sf)]
	}
	var x scoreIndex
	if x.prepare(&policy.Env{Cluster: c, Scores: sc}, false) == nil {
		t.Fatal("index declined valid inputs")
	}
	differ := false
	for cl := range x.cls {
		if n := len(x.col[cl]) + len(x.col32[cl]); n != len(x.bp) || (x.col32[cl] != nil) != packColumns {
			t.Fatalf("class %d: column of %d GPUs (packed: %v), want %d (packed: %v)", cl, n, x.col32[cl] != nil, len(x.bp), packColumns)
		}
		for g, bp := range x.bp {
			if got := colAt(&x, cl, g); got != bp[cl] {
				t.Errorf("class %d GPU %d: column %+v, record %+v", cl, g, got, bp[cl])
			}
			differ = differ || bp[cl] != bp[0]
		}
	}
	if !differ {
		t.Fatal("every class has the same bins: the test cannot tell the columns apart")
	}
}

// colAt is GPU g's entry of class c's column, packed or not.
func colAt(x *scoreIndex, c, g int) binPos {
	if x.col32[c] == nil {
		return x.col[c][g]
	}
	v, prb := x.col32[c][g], x.prBits[c]
	bp := binPos{bin: int32(v << 1 >> 1 >> prb), pos: int32(v & (1<<prb - 1))}
	if v>>31 != 0 {
		bp.bin |= multiPair
	}
	return bp
}
