package variability

import (
	"fmt"
	"math"
	"slices"
)

// LearnOptions tunes a Learner. The zero value gives the defaults.
type LearnOptions struct {
	// Tol is the relative band within which an observation agrees with
	// the beliefs (0 means 0.01): inside it nothing is learnt, so that
	// measurement noise of that size moves nothing.
	Tol float64
	// Alpha is the step towards an observation (0 means 0.5): a belief
	// moves by Alpha of its distance to what a job showed, so one noisy
	// round moves it only part of the way and a job that keeps showing the
	// same pace drives it there geometrically.
	Alpha float64
	// Rebin is the relative move of any GPU's belief, since its class was
	// last binned, that makes the class be binned again (0 means 0.02).
	Rebin float64
	// Bin is how a class is binned again (its L×V order keeps the
	// class's locality penalty).
	Bin BinOptions
}

func (o LearnOptions) withDefaults() LearnOptions {
	if o.Tol <= 0 {
		o.Tol = 0.01
	}
	if o.Alpha <= 0 || o.Alpha > 1 {
		o.Alpha = 0.5
	}
	if o.Rebin <= 0 {
		o.Rebin = 0.02
	}
	return o
}

// Learner keeps a believed raw value per GPU and class and updates it
// from what jobs show. Its estimator is built around the one thing an
// observation says exactly: a job of class c on GPUs G ran at the pace
// of its slowest GPU (BSP), so with its locality penalty divided out its
// pace y is max over G of the true values. Hence:
//
//   - Every GPU of G runs at most y. A belief above y·(1+Tol) is lowered
//     towards y, and y is remembered as the GPU's upper bound.
//   - If y exceeds the believed max of G by more than Tol, some GPU of G
//     is slower than believed, but which one the max does not say. The
//     blame goes to one GPU: among those whose upper bound still allows
//     y (a GPU seen at most y' < y in another job cannot be the one), the
//     one believed slowest. One GPU and not all of G, because raising
//     eight GPUs for one slow one would hide seven good GPUs from
//     sensitive jobs; a wrong pick is undone the next time that GPU runs
//     in a faster job (its belief is capped) while G, still slow, moves
//     the blame on. When no GPU's bound allows y the GPUs must have
//     changed (drift): their bounds are forgotten and the believed slowest
//     takes the blame.
//   - Noise: nothing moves inside the Tol band, and every move is a step
//     of Alpha towards the observation (an exponentially weighted mean
//     over the rounds a job keeps showing its pace).
//   - GPUs nobody has run on keep their prior (the profile's value, or
//     the median GPU's 1.0 when a GPU has no profile) and, having no
//     upper bound, are the first suspects when a job with them is slow.
//
// When beliefs equal the truth no observation is outside the band, so
// nothing changes. A class is binned again when a belief has moved by
// more than Rebin since its last binning.
type Learner struct {
	opts   LearnOptions
	belief [NumClasses][]float64
	hi     [NumClasses][]float64
	snap   [NumClasses][]float64
	moved  [NumClasses]bool
	cur    *Scores
	// Counters, for reports.
	Observations, Lowered, Raised, Forgot, Rebins int
}

// NewLearner starts from prior (the believed table) and the scores
// already binned from it.
func NewLearner(prior *Table, cur *Scores, opts LearnOptions) (*Learner, error) {
	if prior == nil || cur == nil {
		return nil, fmt.Errorf("learner: no prior table or scores")
	}
	l := &Learner{opts: opts.withDefaults(), cur: cur}
	n := prior.NumGPUs()
	for c := range Class(NumClasses) {
		if len(prior.Values[c]) != n || len(cur.SF[c]) != n {
			return nil, fmt.Errorf("learner: class %s covers %d GPUs, want %d", c, len(prior.Values[c]), n)
		}
		l.belief[c] = slices.Clone(prior.Values[c])
		l.snap[c] = slices.Clone(prior.Values[c])
		l.hi[c] = make([]float64, n)
		for g := range l.hi[c] {
			l.hi[c][g] = math.Inf(1)
		}
	}
	return l, nil
}

// Belief is GPU g's believed value for class c.
func (l *Learner) Belief(c Class, g int) float64 { return l.belief[c][g] }

// Beliefs is a copy of every belief.
func (l *Learner) Beliefs() *Table {
	t := &Table{}
	for c := range t.Values {
		t.Values[c] = slices.Clone(l.belief[c])
	}
	return t
}

// Observe takes one job's round: class c on gpus ran at pace y (its
// slowdown with the locality penalty divided out: 1.0 is the median GPU).
// Non-positive or non-finite paces are ignored.
func (l *Learner) Observe(c Class, gpus []int, y float64) {
	if len(gpus) == 0 || !(y > 0) || math.IsInf(y, 0) || c < 0 || c >= NumClasses {
		return
	}
	l.Observations++
	b, hi := l.belief[c], l.hi[c]
	tol, a := l.opts.Tol, l.opts.Alpha
	believed := 0.0
	allowed := false
	for _, g := range gpus {
		believed = max(believed, b[g])
		allowed = allowed || hi[g] >= y*(1-tol)
	}
	if !allowed {
		for _, g := range gpus {
			hi[g] = math.Inf(1)
		}
		l.Forgot++
	}
	if y > believed*(1+tol) {
		s := -1
		for _, g := range gpus {
			if hi[g] >= y*(1-tol) && (s < 0 || b[g] > b[s]) {
				s = g
			}
		}
		b[s] += a * (y - b[s])
		l.moved[c] = true
		l.Raised++
	}
	for _, g := range gpus {
		hi[g] = min(hi[g], y)
		if b[g] > y*(1+tol) {
			b[g] += a * (y - b[g])
			l.moved[c] = true
			l.Lowered++
		}
	}
}

// Rebin bins again every class whose beliefs moved by more than Rebin
// since its last binning and returns the new scores, or nil when no class
// needed it. Unchanged classes keep their bins.
func (l *Learner) Rebin() (*Scores, error) {
	var redo []Class
	for c := range Class(NumClasses) {
		if !l.moved[c] {
			continue
		}
		l.moved[c] = false
		for g, v := range l.belief[c] {
			if math.Abs(v-l.snap[c][g]) > l.opts.Rebin*l.snap[c][g] {
				redo = append(redo, c)
				break
			}
		}
	}
	if len(redo) == 0 {
		return nil, nil
	}
	ns := *l.cur
	raw := *l.cur.Raw
	ns.Raw = &raw
	for _, c := range redo {
		vals := slices.Clone(l.belief[c])
		bn, err := Bin(vals, l.opts.Bin)
		if err != nil {
			return nil, fmt.Errorf("learner: class %s: %w", c, err)
		}
		raw.Values[c] = vals
		ns.Bins[c], ns.SF[c] = bn, bn.SF
		ns.LV[c] = LxV(bn.SF, l.cur.L[c])
		copy(l.snap[c], vals)
	}
	l.cur = &ns
	l.Rebins++
	return &ns, nil
}
