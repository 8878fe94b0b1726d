package workload

import (
	"testing"
	"unsafe"
)

// TestJobPlacerLine checks that what a placer's pass over the order
// reads of every job (whether it runs, its id, size and class) lies in
// one cache line of a Job: 384 bytes, so allocated on 64-byte
// boundaries. (The simulator's record wraps a Job; sim's TestJobLayout
// checks its lines.)
func TestJobPlacerLine(t *testing.T) {
	var j Job
	if s := unsafe.Sizeof(j); s%64 != 0 {
		t.Errorf("a Job is %d bytes, not a whole number of cache lines", s)
	}
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"GPUsHeld", unsafe.Offsetof(j.GPUsHeld), unsafe.Sizeof(j.GPUsHeld)},
		{"ID", unsafe.Offsetof(j.ID), 8},
		{"GPUs", unsafe.Offsetof(j.GPUs), 8},
		{"Class", unsafe.Offsetof(j.Class), unsafe.Sizeof(j.Class)},
	} {
		if first, last := f.off/64, (f.off+f.size-1)/64; first != 1 || last != 1 {
			t.Errorf("%s at bytes %d..%d: lines %d..%d, want line 1", f.name, f.off, f.off+f.size-1, first, last)
		}
	}
}
