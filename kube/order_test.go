package kube

import (
	"testing"
	"time"
)

// The API server keeps creation times to the second. One 4-GPU node,
// FIFO: b (4 GPUs) is created and bound; a (4 GPUs) is created in the
// same second. a came later, so it waits behind b, whose name sorts
// after a's: b is never evicted for it, and a binds once b has finished.
func TestSameSecondArrivalsKeepTheirOrder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	w := newWorld(t, cfg, 1, 1, 4)
	at := time.Unix(1_700_000_000, 0)
	step := func(what, want string) {
		t.Helper()
		if got := w.step(&at, what); got != want {
			t.Fatalf("%s: bound %s, want %s", what, got, want)
		}
		if p := w.pods["ns/b"]; p != nil && p.DeletionTimestamp != nil {
			t.Fatalf("%s: b evicted for a, which came after it", what)
		}
	}
	created := at
	w.create("b", 4, nil, created)
	step("b arrives", "ns/b@n0[0,1,2,3]")
	w.create("a", 4, nil, created)
	step("a arrives in the same second", "ns/b@n0[0,1,2,3]")
	step("a round later", "ns/b@n0[0,1,2,3]")
	w.finish("ns/b")
	step("b finished", "ns/a@n0[0,1,2,3]")
}
