package intruns

import "testing"

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		xs   []int
		sep  string
		want string
	}{
		{nil, ",", ""},
		{[]int{7}, ",", "7"},
		{[]int{0, 1, 2, 3, 8, 9}, ",", "0-3,8-9"},
		{[]int{0, 2, 4}, ", ", "0, 2, 4"},
		{[]int{1, 2, 3, 5, 1001}, ", ", "1-3, 5, 1001"},
		{[]int{-2, -1, 0, 4}, ",", "-2-0,4"},
	} {
		if got := Format(tc.xs, tc.sep); got != tc.want {
			t.Errorf("Format(%v, %q) = %q, want %q", tc.xs, tc.sep, got, tc.want)
		}
	}
	// The top of an unsigned type ends a run without wrapping to 0.
	if got := Format([]uint64{1<<64 - 2, 1<<64 - 1}, ","); got != "18446744073709551614-18446744073709551615" {
		t.Errorf("Format at the top of uint64 = %q", got)
	}
}
