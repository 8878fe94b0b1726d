package fairness

import (
	"fmt"
	"math"
)

// Leases is who holds each GPU and until when. A lease is never revoked
// early: granting a GPU whose lease is still running to another app is an
// error, which is the invariant the simulator checks every round.
type Leases struct {
	holder []int     // app index, -1 when free
	end    []float64 // lease end (seconds)
}

// NewLeases has every one of n GPUs free.
func NewLeases(n int) *Leases {
	l := &Leases{holder: make([]int, n), end: make([]float64, n)}
	for g := range l.holder {
		l.holder[g] = -1
	}
	return l
}

// Holder is the app holding g at time now, or -1 when g is free or its
// lease has expired.
func (l *Leases) Holder(g int, now float64) int {
	if l.holder[g] >= 0 && l.end[g] > now {
		return l.holder[g]
	}
	return -1
}

// Grant leases gpus to app from now for length seconds. A GPU may be
// re-granted to the app already holding it (a renewal) or when its lease
// has expired.
func (l *Leases) Grant(app int, gpus []int, now, length float64) error {
	if !(length > 0) || math.IsInf(length, 0) {
		return fmt.Errorf("lease length must be positive and finite, got %v", length)
	}
	for _, g := range gpus {
		if g < 0 || g >= len(l.holder) {
			return fmt.Errorf("lease: GPU %d does not exist", g)
		}
		if h := l.Holder(g, now); h >= 0 && h != app {
			return fmt.Errorf("lease: GPU %d is leased to app %d until %g s; app %d cannot have it at %g s", g, h, l.end[g], app, now)
		}
	}
	for _, g := range gpus {
		l.holder[g], l.end[g] = app, now+length
	}
	return nil
}

// Release ends app's leases on gpus early, at the holder's own request
// (its job finished or was stopped).
func (l *Leases) Release(app int, gpus []int) error {
	for _, g := range gpus {
		if g < 0 || g >= len(l.holder) || l.holder[g] != app {
			return fmt.Errorf("lease: app %d does not hold GPU %d", app, g)
		}
	}
	for _, g := range gpus {
		l.holder[g], l.end[g] = -1, 0
	}
	return nil
}

// Offer is every GPU that is free or whose lease has expired at now,
// ascending: what an auction at now may hand out.
func (l *Leases) Offer(now float64) []int {
	out := []int{}
	for g := range l.holder {
		if l.Holder(g, now) < 0 {
			out = append(out, g)
		}
	}
	return out
}

// NextExpiry is the earliest lease end after now (+Inf if none).
func (l *Leases) NextExpiry(now float64) float64 {
	t := math.Inf(1)
	for g, h := range l.holder {
		if h >= 0 && l.end[g] > now {
			t = min(t, l.end[g])
		}
	}
	return t
}

// End is when the lease on g ends (0 when g has never been leased or was
// released): a driver that must not evict a job before its lease ends
// reads it.
func (l *Leases) End(g int) float64 { return l.end[g] }
