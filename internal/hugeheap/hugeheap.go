// Package hugeheap lets a short command that fills its heap quickly have
// that heap backed by transparent huge pages where the kernel leaves them
// to the program (THP's "madvise" mode, a common default, which the Go
// runtime does not ask for on its heap).
//
// On a virtual machine the first touch of a 4 KiB page can cost 15-25 µs
// (a fault in the guest and one in the host): a page-touching loop on the
// shared 2-core machine of the scale records gave 16-24 µs a page, and
// 0.7-4.6 µs with the range advised. `pal sim` on the 20,000-job
// Synergy trace faulted about 4,100-4,450 times a run, about a tenth of
// its CPU time; with Reserve 970-1,410 (see
// docs/measurements/sim-scale-20k-las-half-2026-12-05.txt).
package hugeheap

import "sync"

// Size is what Reserve sets aside: enough for the heap of a run on a
// trace of tens of thousands of jobs (25-30 MB peak for the 20,000-job
// Synergy trace). A larger heap grows past it in ordinary pages.
const Size = 64 << 20

var (
	once         sync.Once
	advLo, advHi uintptr // the range Reserve advised
)

// Reserve, once per process, grows the Go heap by Size bytes of address
// space it never touches, advises the kernel that the range may be
// backed by huge pages, and frees it (one collection of a heap that is
// still small), so that the heap's next allocations fall in the advised
// range: the first touch of each 2 MiB then faults once, not 512 times.
// It reports the advised range (empty where the system has no such
// advice or refused it). Memory is only backed as it is touched, so a
// run's peak grows by at most the part of a huge page it has not used.
func Reserve() (lo, hi uintptr) {
	once.Do(func() { advLo, advHi = reserve(Size) })
	return advLo, advHi
}
