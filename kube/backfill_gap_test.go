package kube

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// A head stopped at the round that backfilled a gang past it is gone for
// a round or more on a cluster: its old pods terminate and its Job's
// controller makes new ones only after its failure backoff (10 s, the
// default period). The placer forgets the record and the head's promise
// that round (its head no longer waits), while a scheduler restarted once
// the head is back restores both, from the backfilled gang's pods and
// the head's work record. So the scheduler that keeps running reads them
// back too when the evicted head comes back, and a restart changes
// nothing. The hand case of TestSchedulerBackfillRecordOfHeadStoppedAtItsRound
// (s backfilled past g at 0, promised 1000; a ends at 700), with g's pods
// made again after the round at 0 or only after the round at 100, and
// with no restart or one once g is back: s is evicted at g's promised
// time, 1000, in all four. It used to be at 700, with g bound at 800,
// when the running scheduler saw g without pods for a round.
func TestSchedulerBackfillRecordOfHeadAbsentARound(t *testing.T) {
	for _, c := range []struct {
		name      string
		madeAfter int // the round after which g's pods are made again
		restartAt int // -1: none
	}{
		{"made at once, no restart", 0, -1},
		{"made at once, restart", 0, 100},
		{"gone a round, no restart", 100, -1},
		{"gone a round, restart", 100, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, "packed-sticky", "easy")
			w.create("s", 2, ann("1000"), t0.Add(-2*time.Second))
			remake := func(sec int) {
				if sec == 0 {
					// g stopped at 0: the scheduler that evicted it keeps
					// its work record (arrived at -3, last bound at -100),
					// in memory and in the ConfigMap.
					now := time.Now()
					rec := evictedWork{owner: "uid-set", at: now, seen: now, saved: now, arrived: at(-3), bound: at(-100)}
					writeEvictedWork(t, w, map[string]evictedWork{"ns/g": rec})
					if w.s.evictedWork == nil {
						w.s.evictedWork = map[string]evictedWork{}
					}
					w.s.evictedWork["ns/g"] = rec
					for i := range 4 {
						w.remove(fmt.Sprintf("ns/g-%d", i))
					}
				}
				if sec == c.madeAfter {
					for i := range 4 {
						w.create(fmt.Sprintf("g-%d", i), 4, ann("500", AnnGang, "g", AnnGangSize, "4"), at(sec+50))
					}
				}
			}
			got, evicted := playOverrunWith(t, w, at, map[string]int{"a": 700, "g": 500, "s": 1500}, c.restartAt, remake)
			wantBinds, wantEvicted := []string{"0: a-0 a-1 s", "1100: g-0 g-1 g-2 g-3", "1600: s"}, []string{"1000: s"}
			if !slices.Equal(got, wantBinds) || !slices.Equal(evicted, wantEvicted) {
				t.Errorf("binds %q, evicted %q; want %q and %q", got, evicted, wantBinds, wantEvicted)
			}
		})
	}
}
