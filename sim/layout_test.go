package sim

import (
	"testing"
	"unsafe"
)

// TestJobLayout checks, field by field, the cache line of the
// simulator's job record it lies in (see job and workload.Job): what the
// round loop reads of every running job every round in lines 0-2, what a
// start or a stop reads or writes besides in line 5, worked out from the
// field sizes (the record's header is 32 bytes, workload.Job's running
// state 104, the Spec 192).
func TestJobLayout(t *testing.T) {
	var j job
	cases := []struct {
		name      string
		off, size uintptr
		line      uintptr
	}{
		{"it", unsafe.Offsetof(j.it), unsafe.Sizeof(j.it), 0},
		{"base", unsafe.Offsetof(j.base), unsafe.Sizeof(j.base), 0},
		{"running", unsafe.Offsetof(j.running), unsafe.Sizeof(j.running), 0},
		{"Executed", unsafe.Offsetof(j.Executed), 8, 0},
		{"Attained", unsafe.Offsetof(j.Attained), 8, 0},
		{"GPUService", unsafe.Offsetof(j.GPUService), 8, 0},
		{"PM", unsafe.Offsetof(j.PM), 8, 0},
		{"Loc", unsafe.Offsetof(j.Loc), 8, 1},
		{"Debt", unsafe.Offsetof(j.Debt), 8, 1},
		{"RoundsRun", unsafe.Offsetof(j.RoundsRun), 8, 1},
		{"Priority", unsafe.Offsetof(j.Priority), 8, 1},
		{"SinceScheduled", unsafe.Offsetof(j.SinceScheduled), 8, 1},
		{"GPUsHeld", unsafe.Offsetof(j.GPUsHeld), unsafe.Sizeof(j.GPUsHeld), 1},
		{"Migrations", unsafe.Offsetof(j.Migrations), 8, 2},
		{"ID", unsafe.Offsetof(j.ID), 8, 2},
		{"GPUs", unsafe.Offsetof(j.GPUs), 8, 2},
		{"MaxGPUs", unsafe.Offsetof(j.MaxGPUs), 8, 2},
		{"Submit", unsafe.Offsetof(j.Submit), 8, 2},
		{"Iterations", unsafe.Offsetof(j.Iterations), 8, 2},
		{"IterTime", unsafe.Offsetof(j.IterTime), 8, 2},
		{"Class", unsafe.Offsetof(j.Class), unsafe.Sizeof(j.Class), 2},
		{"LastGPUs", unsafe.Offsetof(j.LastGPUs), unsafe.Sizeof(j.LastGPUs), 5},
		{"FirstStart", unsafe.Offsetof(j.FirstStart), 8, 5},
		{"Preemptions", unsafe.Offsetof(j.Preemptions), 8, 5},
		{"MoveCost", unsafe.Offsetof(j.MoveCost), unsafe.Sizeof(j.MoveCost), 5},
	}
	for _, c := range cases {
		first, last := c.off/64, (c.off+c.size-1)/64
		if first != c.line || last != c.line {
			t.Errorf("%s at bytes %d..%d: lines %d..%d, want line %d", c.name, c.off, c.off+c.size-1, first, last, c.line)
		}
	}
	if s := unsafe.Sizeof(j); s != 448 {
		t.Errorf("a job is %d bytes, want 448 (seven lines)", s)
	}
}
