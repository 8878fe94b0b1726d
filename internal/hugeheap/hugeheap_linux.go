package hugeheap

import (
	"runtime"
	"syscall"
	"unsafe"
)

const hugePage = 2 << 20

func reserve(n int) (lo, hi uintptr) {
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(&b[0]))
	lo = (p + hugePage - 1) &^ (hugePage - 1)
	hi = (p + uintptr(n)) &^ (hugePage - 1)
	if hi <= lo || syscall.Madvise(b[lo-p:hi-p], syscall.MADV_HUGEPAGE) != nil {
		lo, hi = 0, 0
	}
	runtime.GC() // b is dead: its pages go back to the heap
	return lo, hi
}
