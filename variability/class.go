// Package variability holds what is known about how fast each GPU runs
// each class of application: profiles measured on real clusters, the raw
// per-GPU multipliers a simulated cluster draws from them, the PM-score
// bins K-Means groups them into, and PAL's L×V traversal order.
//
// Values are time-like: 1.0 is the median GPU, 1.2 means 20% slower.
// The raw value drives the simulated slowdown; the binned score (sf)
// drives placement decisions, as in the PAL artifact.
package variability

import (
	"fmt"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// Class is an application class: jobs of one class share a variability
// profile. The PAL artifact uses four (A..D); the paper text three.
type Class int

// The classes in placement-priority order: PM-First and PAL place class A
// (most variability-sensitive, compute-bound) first.
const (
	ClassA Class = iota
	ClassB
	ClassC
	ClassD
	NumClasses = 4
)

// String gives the short name ("A").
func (c Class) String() string {
	if c < 0 || c >= NumClasses {
		return fmt.Sprintf("Class(%d)", int(c))
	}
	return string(rune('A' + int(c)))
}

// ParseClass accepts "A", "a", "classA" or "class A".
func ParseClass(s string) (Class, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSpace(strings.TrimPrefix(t, "CLASS"))
	if len(t) == 1 && t[0] >= 'A' && t[0] < 'A'+NumClasses {
		return Class(t[0] - 'A'), nil
	}
	return 0, fmt.Errorf("unknown class %s (want A, B, C or D)", quote.Value(s))
}

// Table is the raw per-GPU value of every class: Values[c][g] is how much
// slower than the median GPU g runs class c.
type Table struct {
	Values [NumClasses][]float64
}

// NumGPUs is the number of GPUs the table covers.
func (t *Table) NumGPUs() int { return len(t.Values[0]) }
