package variability

import (
	"fmt"
	"math"
	"sync"
)

// Scores is everything placement needs to know about GPU speed, computed
// once per cluster because profiles are static: the raw values (which the
// simulator charges), the bins and binned scores (which placement
// compares), and each class's L×V traversal.
type Scores struct {
	Raw  *Table
	Bins [NumClasses]*Binning
	// SF[c][g] is GPU g's binned score for class c (Bins[c].SF).
	SF [NumClasses][]float64
	// LV[c] is class c's traversal order.
	LV [NumClasses][]LVEntry
	// L[c] is the across-node penalty LV[c] was built with.
	L [NumClasses]float64
}

// serialBinGPUs is the table size below which NewScores bins the classes
// one after the other: binning a 64-GPU class takes about 25 us, less
// than waking a second thread for it in a process that has only begun.
const serialBinGPUs = 1024

// NewScores bins every class of raw and builds its traversal with the
// class's penalty from L (nil means DefaultLocalityPenalty everywhere).
// Classes are independent, so they are binned concurrently; each uses
// opts.Seed, as the artifact fits every class with the same random_state.
func NewScores(raw *Table, opts BinOptions, L func(Class) float64) (*Scores, error) {
	if raw == nil {
		return nil, fmt.Errorf("scores: no table")
	}
	n := raw.NumGPUs()
	if n == 0 {
		return nil, fmt.Errorf("scores: table has no GPUs")
	}
	for c := range Class(NumClasses) {
		if len(raw.Values[c]) != n {
			return nil, fmt.Errorf("scores: class %s has %d GPUs, class A has %d", c, len(raw.Values[c]), n)
		}
	}
	if L == nil {
		L = func(Class) float64 { return DefaultLocalityPenalty }
	}
	s := &Scores{Raw: raw}
	var errs [NumClasses]error
	var wg sync.WaitGroup
	for c := range Class(NumClasses) {
		s.L[c] = L(c)
		if l := s.L[c]; !(l > 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("scores: class %s: locality penalty must be positive and finite, got %v", c, l)
		}
	}
	bin := func(c Class) {
		b, err := Bin(raw.Values[c], opts)
		if err != nil {
			errs[c] = fmt.Errorf("class %s: %w", c, err)
			return
		}
		s.Bins[c] = b
		s.SF[c] = b.SF
		s.LV[c] = LxV(b.SF, s.L[c])
	}
	for c := range Class(NumClasses) {
		if n < serialBinGPUs {
			bin(c)
			continue
		}
		wg.Go(func() { bin(c) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}
