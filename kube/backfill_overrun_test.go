package kube

import (
	"slices"
	"testing"
	"time"
)

// A gang backfilled on an estimate that is too short is evicted when
// the waiting gang's first reservation comes, as in pal sim: 4 nodes x 4
// GPUs, FIFO, packed-sticky and pal-ma, a round every 100 s, 1 s per
// iteration. Gang a (two 4-GPU pods) runs 0-1000 s; gang g (16 GPUs,
// 500 s) waits for it, reserved all 16 GPUs at 1000; pod s (2 GPUs)
// says 600 iterations, so it binds at 0 on reserved GPUs, but runs
// 1500 s. At 1000 it still holds two of g's GPUs: the round evicts it
// (its controller makes it again), and g binds at 1100, the round after
// s has left, one round past its reservation at most; s binds again at
// 1600, when g ends. Without the eviction g would bind at 1500.
func TestSchedulerBackfillOverrunEvicted(t *testing.T) {
	want := []string{"0: a-0 a-1 s", "1100: g-0 g-1 g-2 g-3", "1600: s"}
	for _, placement := range []string{"packed-sticky", "pal-ma"} {
		t.Run(placement, func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, placement, "easy")
			w.create("s", 2, ann("600"), t0.Add(-2*time.Second))
			got, evicted := playOverrunWith(t, w, at, map[string]int{"a": 1000, "g": 500, "s": 1500}, -1, func(int) {})
			if !slices.Equal(got, want) {
				t.Errorf("binds %q, want %q", got, want)
			}
			if !slices.Equal(evicted, []string{"1000: s"}) {
				t.Errorf("evicted %q, want s at 1000", evicted)
			}
		})
	}
}
