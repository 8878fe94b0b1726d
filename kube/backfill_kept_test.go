package kube

import (
	"slices"
	"testing"
	"time"
)

// A running gang the round keeps out of the placer's order (bare pods,
// which an eviction would lose) still ends when its work says: the
// waiting gang's reservation reads it. The hand case with gang a's pods
// bare: g is reserved all 16 GPUs at 1000, so s300 and s600 bind at 0
// and s1500 waits for g, as when a's pods have a controller.
func TestSchedulerBackfillKeptGang(t *testing.T) {
	want := []string{"0: a-0 a-1 s300 s600", "1000: g-0 g-1 g-2 g-3", "1500: s1500"}
	for _, placement := range []string{"packed-sticky", "pal-ma"} {
		t.Run(placement, func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, placement, "easy")
			w.mu.Lock()
			for _, k := range []string{"ns/a-0", "ns/a-1"} {
				p := w.pods[k].DeepCopy()
				p.OwnerReferences = nil
				w.put(p)
			}
			w.mu.Unlock()
			for i, d := range []string{"300", "600", "1500"} {
				w.create("s"+d, 2, ann(d), t0.Add(time.Duration(i-2)*time.Second))
			}
			got := playBackfill(t, w, at)
			if !slices.Equal(got, want) {
				t.Errorf("binds %q, want %q", got, want)
			}
		})
	}
}
