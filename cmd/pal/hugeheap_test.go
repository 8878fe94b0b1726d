package main

import (
	"os"
	"path/filepath"
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

// A trace file long enough takes huge pages before it is read; a short
// one, a built-in trace's name or a missing file does not.
func TestWantHugeHeapFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, size int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, path string
		want       bool
	}{
		{"built-in trace", "sia-philly/1", false},
		{"missing file", filepath.Join(dir, "none.csv"), false},
		{"a byte short", file("short.csv", hugeheapBytes-1), false},
		{"at the size", file("at.csv", hugeheapBytes), true},
		{"20,000 Synergy rows (833 kB)", file("syn20k.csv", 832887), true},
	} {
		if got := wantHugeHeapFile(c.path); got != c.want {
			t.Errorf("%s: wantHugeHeapFile = %v, want %v", c.name, got, c.want)
		}
	}
}
