package main

import (
	"testing"

	"github.com/palsched/pal/workload"
)

// A short trace's run must not take huge pages (a Sia-Philly trace's
// CPU time grew by a quarter with them); a long one does.
func TestWantHugeHeap(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   *workload.Trace
		want bool
	}{
		{"no trace", nil, false},
		{"3,160 rows", &workload.Trace{Jobs: make([]workload.Spec, 3160)}, false},
		{"9,999 rows", &workload.Trace{Jobs: make([]workload.Spec, 9999)}, false},
		{"10,000 rows", &workload.Trace{Jobs: make([]workload.Spec, 10000)}, true},
		{"20,000 rows", &workload.Trace{Jobs: make([]workload.Spec, 20000)}, true},
	} {
		if got := wantHugeHeap(c.tr); got != c.want {
			t.Errorf("%s: wantHugeHeap = %v, want %v", c.name, got, c.want)
		}
	}
}
