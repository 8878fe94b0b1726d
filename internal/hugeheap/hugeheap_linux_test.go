package hugeheap

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags is the VmFlags line of the mapping of /proc/self/smaps that
// holds addr ("" if none does).
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	return ""
}

// Reserve advises a range of Size less at most two huge pages of
// rounding, once: the mapping holding it carries the huge-page flag (hg),
// the block is no longer counted in the heap, a second call gives the
// same range without allocating, and a large allocation made next
// falls in the freed block (the advised range and the rounding either
// side of it).
func TestReserve(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages:", err)
	}
	lo, hi := Reserve()
	if hi <= lo || hi-lo < Size-2*hugePage || lo%hugePage != 0 || hi%hugePage != 0 {
		t.Fatalf("advised %#x-%#x, want an aligned range of at least %d bytes", lo, hi, Size-2*hugePage)
	}
	for _, a := range []uintptr{lo, hi - 1} {
		if fl := vmFlags(t, a); !strings.Contains(fl, " hg") {
			t.Errorf("%#x: %q, want the hg flag", a, fl)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc >= Size/2 {
		t.Errorf("heap after Reserve: %d bytes allocated, want the block freed", ms.HeapAlloc)
	}
	if n := testing.AllocsPerRun(1, func() { Reserve() }); n != 0 {
		t.Errorf("a second Reserve allocated %v times", n)
	}
	if lo2, hi2 := Reserve(); lo2 != lo || hi2 != hi {
		t.Errorf("second Reserve gave %#x-%#x, want %#x-%#x", lo2, hi2, lo, hi)
	}
	b := make([]byte, 8<<20)
	if p := uintptr(unsafe.Pointer(&b[0])); p < lo-hugePage || p+uintptr(len(b)) > hi+hugePage {
		t.Errorf("an 8 MiB allocation after Reserve lies at %#x, outside %#x-%#x", p, lo-hugePage, hi+hugePage)
	}
}
