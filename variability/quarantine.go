package variability

import "fmt"

// Quarantine decides which GPUs run too slow to be worth a guarantee: a
// GPU whose slowdown (how many times slower than its profile it runs,
// learned from jobs or told by telemetry) reaches Above is quarantined,
// and comes back once its slowdown falls below Below. The gap between
// the two keeps a GPU near the threshold from going in and out with
// every observation.
type Quarantine struct {
	Above, Below float64
	on           []bool
}

// DefaultQuarantineBelow is the release threshold for a quarantine at
// above: halfway from above back to full speed (1.5 → 1.25, 2 → 1.5).
func DefaultQuarantineBelow(above float64) float64 { return 1 + (above-1)/2 }

// NewQuarantine makes the rule for gpus GPUs, none quarantined. Above
// must exceed 1 and Below lie in [1, Above).
func NewQuarantine(gpus int, above, below float64) (*Quarantine, error) {
	if !(above > 1) {
		return nil, fmt.Errorf("quarantine threshold %g: want a slowdown above 1 (1.5 = 50%% slower than the profile)", above)
	}
	if !(below >= 1 && below < above) {
		return nil, fmt.Errorf("quarantine release %g: want a slowdown in [1, %g)", below, above)
	}
	return &Quarantine{Above: above, Below: below, on: make([]bool, gpus)}, nil
}

// Update takes GPU g's current slowdown and reports whether its state
// changed, and the state now.
func (q *Quarantine) Update(g int, slowdown float64) (changed, on bool) {
	if g < 0 || g >= len(q.on) {
		return false, false
	}
	was := q.on[g]
	q.on[g] = QuarantineNext(q.Above, q.Below, was, slowdown)
	return q.on[g] != was, q.on[g]
}

// QuarantineNext is the rule for one GPU: whether it is quarantined after
// showing slowdown, given whether it was (in at above, out below below).
// A driver that keys GPUs its own way keeps the state and asks this.
func QuarantineNext(above, below float64, was bool, slowdown float64) bool {
	if was {
		return slowdown >= below
	}
	return slowdown >= above
}

// On reports whether GPU g is quarantined.
func (q *Quarantine) On(g int) bool { return g >= 0 && g < len(q.on) && q.on[g] }

// Count is the number of GPUs quarantined.
func (q *Quarantine) Count() int {
	n := 0
	for _, x := range q.on {
		if x {
			n++
		}
	}
	return n
}

// Slowdown is how many times slower than its profile belief says GPU g
// runs: the largest ratio over the classes (a GPU slow for any class is
// slow), and 1 when it is no slower.
func Slowdown(belief func(c Class, g int) float64, profile *Table, g int) float64 {
	s := 1.0
	for c := range Class(NumClasses) {
		if g < len(profile.Values[c]) && profile.Values[c][g] > 0 {
			s = max(s, belief(c, g)/profile.Values[c][g])
		}
	}
	return s
}
