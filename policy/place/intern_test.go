package place

import (
	"slices"
	"testing"
)

// TestAnswerSetSharesEqualSets asks for sets in turn, each case naming
// by hand which earlier request's list the answer must be (the same
// slice, or -1: a new one), and checks every list equals its request,
// has no room past its end and is not the caller's scratch.
func TestAnswerSetSharesEqualSets(t *testing.T) {
	cases := []struct {
		name string
		asks [][]int
		same []int // per ask: index of the earlier ask whose list it gets, -1 new
	}{
		{"repeats", [][]int{{1, 5}, {2, 9, 11}, {1, 5}, {2, 9, 11}, {1, 5}},
			[]int{-1, -1, 0, 1, 0}},
		{"prefixes, orders and last ids differ", [][]int{{1, 5}, {1, 5, 6}, {1}, {5, 1}, {1, 5, 6}, {1, 6}},
			[]int{-1, -1, -1, -1, 1, -1}},
		{"empty and single", [][]int{{}, {0}, {}, {0}},
			[]int{-1, -1, 0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s answerSet
			var got [][]int
			for i, a := range tc.asks {
				scratch := slices.Clone(a)
				l := s.get(scratch)
				if len(scratch) > 0 {
					scratch[0] = -1 // the caller reuses its scratch
				}
				if !slices.Equal(l, a) || cap(l) != len(l) {
					t.Fatalf("ask %d %v: got %v (cap %d)", i, a, l, cap(l))
				}
				if w := tc.same[i]; w >= 0 {
					if len(l) > 0 && &l[0] != &got[w][0] || len(l) != len(got[w]) {
						t.Fatalf("ask %d %v: not ask %d's list", i, a, w)
					}
				} else {
					for k, g := range got {
						if len(l) > 0 && len(g) > 0 && &l[0] == &g[0] {
							t.Fatalf("ask %d %v: shares ask %d's list %v", i, a, k, g)
						}
					}
				}
				got = append(got, l)
			}
		})
	}
}

// TestAnswerSetGrowsAndFills adds internMax distinct sets (the table
// grows many times on the way), checks each is still found as the same
// list, and that a new set past the limit gets nil while known ones are
// still shared.
func TestAnswerSetGrowsAndFills(t *testing.T) {
	var s answerSet
	set := func(i int) []int { return []int{i % 97, 100 + i/97} }
	first := make([][]int, internMax)
	for i := range first {
		first[i] = s.get(set(i))
	}
	for i := range first {
		if l := s.get(set(i)); &l[0] != &first[i][0] || !slices.Equal(l, set(i)) {
			t.Fatalf("set %d %v: got %v, not its list %v", i, set(i), l, first[i])
		}
	}
	if l := s.get(set(internMax)); l != nil {
		t.Fatalf("past the limit: got %v, want nil", l)
	}
	if len(s.lists) != internMax {
		t.Fatalf("%d lists, want %d", len(s.lists), internMax)
	}
}
