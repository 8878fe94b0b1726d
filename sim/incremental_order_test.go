package sim

import (
	"strings"
	"testing"
)

// appendAscending is the check that the jobs a round stops come in the
// queue's order (the one ordered run requeue files them in): rising
// items are kept, a falling one is our own bug and panics.
func TestAppendAscendingPanicsOutOfOrder(t *testing.T) {
	var s []item
	for _, it := range []item{{hi: 1, seq: 3}, {hi: 1, lo: 2, seq: 1}, {hi: 2, seq: 0}} {
		s = appendAscending(s, it)
	}
	if len(s) != 3 {
		t.Fatalf("kept %d items, want 3", len(s))
	}
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "out of order") {
			t.Fatalf("recovered %q, want an out-of-order panic", r)
		}
	}()
	appendAscending(s, item{hi: 1, lo: 5, seq: 9})
}
