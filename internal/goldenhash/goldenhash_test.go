package goldenhash

import "testing"

func TestSum(t *testing.T) {
	sum := func(vs ...int) uint64 {
		h := New()
		for _, v := range vs {
			h.Int(v)
		}
		return h.Sum()
	}
	// FNV-1a 64 of the empty input is its offset basis.
	if got := sum(); got != 0xcbf29ce484222325 {
		t.Errorf("empty sum %#x, want the FNV-1a offset basis", got)
	}
	cases := []struct {
		name string
		a, b []int
	}{
		{"order", []int{1, 2}, []int{2, 1}},
		{"sign", []int{-1}, []int{1}},
		{"width", []int{0}, []int{}},
		{"split", []int{1, 0}, []int{1}},
	}
	for _, c := range cases {
		if sum(c.a...) == sum(c.b...) {
			t.Errorf("%s: %v and %v give the same sum", c.name, c.a, c.b)
		}
	}
	if sum(7, -3) != sum(7, -3) {
		t.Error("the same input gave two sums")
	}
}
