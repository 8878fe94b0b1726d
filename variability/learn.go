package variability

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
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
	// PerClassOnly turns off the GPU-wide factor (see Learner): each
	// class learns from its own jobs alone.
	PerClassOnly bool
	// Corroborate is how many classes must have pinned a GPU slower than
	// its profile before the GPU-wide factor is carried to the classes
	// that have not (0 means 2; 1 carries the first pin). A GPU pinned
	// faster is never carried (see spread). A slowdown of one
	// application alone (a kernel that hits a weak memory channel, a
	// driver regression for one framework) is not the GPU's, and
	// carried to every class it hides a GPU that is fine for them:
	// measured on random patterns of one class going slow, carrying the
	// first pin made learning end up to 10% above stale; waiting for a
	// second class costs little where the whole GPU slowed, since its
	// next class's job pins it too.
	Corroborate int
	// Forget is the step back towards the prior that a guessed belief
	// takes each round its GPU runs no job of the class (0 means 0.05;
	// see Learner).
	Forget float64
	// RefitShare is the share of a class's GPUs that may be re-placed in
	// the old bins (see Rebin) before the class is fitted again (0 means
	// 0.05). Clusters of at most RefitBelow GPUs (0 means 4096, where a
	// fit costs well under a millisecond) are always fitted again.
	RefitShare float64
	RefitBelow int
	// Memory is how many unresolved slow observations are kept (0 means
	// 4096; see Learner).
	Memory int
	// Expire is how many rounds an unresolved slow observation is kept
	// (0 means 5/Forget, 100 with the default Forget). A remembered
	// observation keeps the guess that explains it from fading (see
	// forgetGuesses), so kept for ever, the old observation of a gang
	// that has moved on holds an innocent GPU slow for good, and the very
	// jobs that could clear it avoid it. 5/Forget is how long the guess
	// would last on its own: five e-foldings of Forget take a x1.5 guess
	// back to within Tol of its prior. A job still slow when its
	// observation expires is observed again and names a GPU again.
	Expire int
	// OneBlame turns off blame by prevalence (see Learner): a slow job's
	// blame goes to its first suspect alone, however many of the jobs
	// placed so far were off their profile.
	OneBlame bool
	// Every is the number of rounds between binnings (0 means 1: every
	// Rebin may re-bin). Beliefs move every round; only the scores given
	// to placement wait. A placer indexes a new score table from scratch,
	// which at 27,648 GPUs costs three to six placement rounds,
	// so large clusters re-bin less often: see RebinEvery.
	Every int
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
	if o.Forget <= 0 || o.Forget > 1 {
		o.Forget = 0.05
	}
	if o.Corroborate <= 0 {
		o.Corroborate = 2
	}
	if o.RefitShare <= 0 {
		o.RefitShare = 0.05
	}
	if o.RefitBelow <= 0 {
		o.RefitBelow = 4096
	}
	if o.Memory <= 0 {
		o.Memory = 4096
	}
	if o.Expire <= 0 {
		o.Expire = int(math.Round(5 / o.Forget))
	}
	if o.Every <= 0 {
		o.Every = 1
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
//
//   - If y exceeds the believed max of G by more than Tol, some GPU of G
//     is slower than believed, but which one the max does not say. The
//     blame goes to one GPU among the suspects, those whose upper bound
//     still allows y (a GPU seen at most y' < y in another job cannot be
//     the one): a suspect that some class pinned slow (unless
//     PerClassOnly; see blameFirst), then the suspect named by the most
//     remembered slow observations of any class (unless PerClassOnly),
//     then the one believed slowest. Slow observations whose slow GPU is
//     not pinned are remembered (for Expire rounds) and revisited each
//     round (settle), so this is a greedy hitting set: the fewest slow
//     GPUs that account for every slow job, which is the likeliest
//     explanation when degradation is rare (one throttled GPU in two slow
//     eight-GPU jobs, not eight). One GPU and not all of G, because
//     raising eight GPUs for one slow one would hide seven good GPUs from
//     sensitive jobs; a wrong pick is undone the next time that GPU runs
//     in a faster job (its belief is capped) while G, still slow, moves
//     the blame on. When no GPU's bound allows y the GPUs must have
//     changed (drift): their bounds are forgotten, the believed slowest
//     takes the blame, and the change counts as seen (next rule).
//
//   - Blame by prevalence (unless OneBlame): the other suspects of a slow
//     set are raised too, each by the posterior weight w = p / (1 -
//     (1-p)^m) of a step, where m is the number of suspects and p the
//     prevalence, the share of GPUs that are slow, estimated from the
//     jobs of at most 8 GPUs placed so far (see prevalence): w is the chance that a given
//     suspect is slow when at least one of m is, each slow with p. The
//     first suspect still takes a whole step, so the hitting set above
//     keeps deciding which GPU a slow job names; the others move by
//     little while slow GPUs are rare (1/m as p goes to 0) and by a third
//     of a step in a 32-GPU gang when a third of the GPUs are slow, where
//     one GPU per slow observation left most slow GPUs believed healthy
//     (measured on random patterns: docs/variability.md). A belief so
//     raised is a guess, withdrawn as any guess is.
//
//   - A slowdown seen as it happens voids older bounds: when a job that
//     has not moved shows a slower pace than the round before (ObserveJob),
//     or a job is slower than every one of its GPUs' bounds allows, some
//     GPU under it changed, and GPUs elsewhere may have changed
//     with it. From that round on, a bound (of a class, or GPU-wide) last
//     confirmed before it says how fast the GPU was, not how fast it is:
//     an observation slower than such a bound forgets it, and the GPU is
//     a suspect again, where otherwise the blame would go to a GPU beside
//     it whose bound is newer or absent. Measured on random patterns of a
//     fifth of the GPUs going slow partway through a run (see
//     docs/variability.md), a GPU seen healthy before the change and slow
//     after it was otherwise never blamed, and the healthy GPUs beside it
//     were. Profiles that went stale before the run (no pace of a job
//     that stays put ever rises, and no job is slower than all its
//     GPUs' bounds) are untouched by this. The second signal matters
//     because the first needs a job that stays put across the change,
//     and a learner that re-bins moves jobs: traced on a drift of a
//     sixth of the GPUs in five steps (docs/variability.md), the first
//     step was seen under an unmoved job and the four later ones under
//     jobs that had moved, so bounds confirmed between the steps kept
//     the slow GPUs out of every suspect set and the blame fell on
//     healthy GPUs beside them for the rest of the run.
//
//   - A redundant guess is withdrawn at once (prune): a guessed GPU that
//     no remembered slow observation needs, because another GPU of each
//     explains it as well, goes back to its belief before the guess, so
//     that the blame stays a hitting set without redundant members.
//
//   - A guess is withdrawn when nothing needs it: a belief raised on a
//     guess (more than one suspect) moves Forget of the way back to the
//     prior each round in which its GPU ran no job of the class and
//     explained no remembered observation. Without this a wrongly blamed
//     GPU is avoided by the very jobs that could clear it, and on a small
//     cluster the good GPUs it stands for are lost for good; with it the
//     GPU is tried again, and if it is slow, blamed again.
//
//   - Noise: nothing moves inside the Tol band, and every move is a step
//     of Alpha towards the observation (an exponentially weighted mean
//     over the rounds a job keeps showing its pace).
//
//   - GPUs nobody has run on keep their prior (the profile's value, or
//     the median GPU's 1.0 when a GPU has no profile) and, having no
//     upper bound, are the first suspects when a job with them is slow.
//
//   - Exoneration is GPU-wide too (unless PerClassOnly): when a job of
//     class c shows GPU g faster, relative to its profile, than another
//     class k believes it, and k's belief of g stands on a guess or only
//     on the GPU-wide factor (k never pinned g itself), k's belief comes
//     down to g's GPU-wide bound. A class-specific slowdown that k
//     measured itself is kept.
//
//   - A GPU-wide factor (unless PerClassOnly): when an observation pins
//     one GPU's value (a one-GPU job, or the only GPU that can be the slow
//     one), the ratio of its new belief to its profile value, capped by
//     the GPU-wide upper bound, is kept as the GPU's factor and applied
//     to the classes that have never run on it and to those that believe
//     the GPU faster (their bounds allow it: see spread) once a second
//     class agrees (Corroborate), but only as a slowdown: a GPU pinned
//     faster than its profile stays faster for the classes that pinned
//     it, and the others learn it from their own jobs. A slow
//     set's blame goes first to the GPU whose factor (as much as its own
//     belief) says it is slow. Throttling, power caps and
//     a replaced board are properties of the GPU, not of the application,
//     so what one class learns is the best prior the others have.
//
// When beliefs equal the truth no observation is outside the band, so
// nothing changes. A class is binned again when a belief has moved by
// more than Rebin since its last binning.
type Learner struct {
	opts   LearnOptions
	prior  [NumClasses][]float64
	health []float64 // GPU-wide factor: belief / prior where a class pinned it
	// slowBy are the classes (bit c) whose own pin puts a GPU slower
	// than its profile (Corroborate).
	slowBy  []uint8
	waiting []bool    // a factor not carried: uncorroborated, or a speed-up (spread)
	hiH     []float64 // upper bound on the GPU-wide factor: min of pace / prior
	belief  [NumClasses][]float64
	hi      [NumClasses][]float64
	// hiAt and hiHAt are the rounds in which each class bound and
	// GPU-wide bound was last set or confirmed (an observation within
	// Tol of it), and changedAt the last round in which a job that had
	// not moved showed a slower pace, or a job was slower than all its
	// GPUs' bounds (0: never): a bound older than that
	// may describe the GPU before it changed (see observe).
	hiAt      [NumClasses][]int
	hiHAt     []int
	changedAt int
	// guess marks beliefs raised on a guess: the blame of a slow set
	// with more than one suspect (see explain).
	guess [NumClasses][]bool
	// carried marks beliefs raised by another class's pin in a class
	// that had observed the GPU itself (see spread).
	carried [NumClasses][]bool
	// hinted marks beliefs raised by telemetry (Hint) that no
	// observation has moved since, and hintBase holds each one's belief
	// before the hint: what a withdrawn hint restores.
	hinted   [NumClasses][]bool
	hintBase [NumClasses][]float64
	// hintRef is what a hint's slowdown multiplies: the prior, unless
	// HintRelativeTo gave the profile under it.
	hintRef [NumClasses][]float64
	// base is, for a GPU with guess set, its belief before the guess:
	// what prune puts back when the guess turns out redundant.
	base [NumClasses][]float64
	// guessed lists the GPUs with guess set (possibly stale entries),
	// lastSeen the round each GPU last ran a job of the class.
	guessed  [NumClasses][]int
	inOpen   [NumClasses][]int32
	lastSeen [NumClasses][]int
	snap     [NumClasses][]float64
	// touched lists the GPUs whose belief changed since the last Rebin
	// (isTouched marks them), so that Rebin looks at those alone.
	touched   [NumClasses][]int
	isTouched [NumClasses][]bool
	// moved lists the GPUs touched since the last TakeMoved (isMoved
	// marks them).
	moved   []int
	isMoved []bool
	// reassigned counts GPUs re-placed in the old bins since the last fit.
	reassigned [NumClasses]int
	// sfCount counts each class's GPUs by score, so that a re-placement's
	// L×V order is built from the distinct scores, not from every GPU.
	sfCount [NumClasses]map[float64]int
	// open are slow observations whose slow GPU is not pinned yet, and
	// openKey their keys (a job seen slow every round is kept once).
	open    []clause
	openKey map[uint64]bool
	cur     *Scores
	// seen is ObserveJob's memory, round the number of Rebin calls (a
	// round's end); jobs not seen in a round are forgotten at its end.
	seenDense []jobSeen
	seen      map[int]jobSeen
	round     int
	// binnedAt is the round of the last binning (see LearnOptions.Every).
	binnedAt int
	// trials counts, by gang size (the index), the jobs seen on a new GPU list
	// (ObserveJob, ObserveTrial), and offProf those of them slower than every one of
	// their GPUs' priors allows: the evidence for prev, the prevalence
	// of slow GPUs (see prevalence), estimated at each round's end.
	trials, offProf []int
	prev            float64
	// counted says trials moved since prev was estimated: a round that
	// counted no job keeps prev rather than bisect again.
	counted bool
	// Counters, for reports.
	Observations, Lowered, Raised, Forgot, Rebins, Refits, Pruned int
}

// RebinEvery is the binning interval, in rounds, for a cluster of gpus
// GPUs: 1 up to 128 GPUs, then one round more per 128 GPUs (2 at 256, 216
// at 27,648). Why: every new score table makes the placer index it again
// from scratch, which at 27,648 GPUs costs three to six placement rounds
// (13-19 ms against rounds of 3-7 ms, measured by
// BenchmarkLearningVsPlacement27648 on one pinned core) and scales with
// the cluster, as a round does. One indexing per 216 rounds is 2-3% of a
// round, which leaves the learner's own work (about 3% in the steady
// state) well inside the 10% it may cost on a noisy machine. Put the other
// way, indexing costs a round no more than re-indexing 128 GPUs every
// round would, tens of microseconds, at every size.
func RebinEvery(gpus int) int { return max(1, (gpus+127)/128) }

// NewLearner starts from prior (the believed table) and the scores
// already binned from it.
func NewLearner(prior *Table, cur *Scores, opts LearnOptions) (*Learner, error) {
	if prior == nil || cur == nil {
		return nil, fmt.Errorf("learner: no prior table or scores")
	}
	l := &Learner{opts: opts.withDefaults(), cur: cur}
	n := prior.NumGPUs()
	l.health = make([]float64, n)
	l.isMoved = make([]bool, n)
	l.hiH = make([]float64, n)
	l.hiHAt = make([]int, n)
	l.slowBy, l.waiting = make([]uint8, n), make([]bool, n)
	for g := range l.health {
		l.health[g], l.hiH[g] = 1, math.Inf(1)
	}
	for c := range Class(NumClasses) {
		if len(prior.Values[c]) != n || len(cur.SF[c]) != n {
			return nil, fmt.Errorf("learner: class %s covers %d GPUs, want %d", c, len(prior.Values[c]), n)
		}
		l.belief[c] = slices.Clone(prior.Values[c])
		l.prior[c] = slices.Clone(prior.Values[c])
		l.sfCount[c] = countScores(cur.SF[c])
		l.isTouched[c] = make([]bool, n)
		l.snap[c] = slices.Clone(prior.Values[c])
		l.hi[c] = make([]float64, n)
		l.hiAt[c] = make([]int, n)
		l.guess[c] = make([]bool, n)
		l.carried[c] = make([]bool, n)
		l.hinted[c] = make([]bool, n)
		l.hintBase[c] = make([]float64, n)
		l.hintRef[c] = l.prior[c]
		l.base[c] = make([]float64, n)
		l.lastSeen[c] = make([]int, n)
		l.inOpen[c] = make([]int32, n)
		for g := range l.hi[c] {
			l.hi[c][g] = math.Inf(1)
		}
	}
	return l, nil
}

// Belief is GPU g's believed value for class c.
func (l *Learner) Belief(c Class, g int) float64 { return l.belief[c][g] }

// Measured is GPU g's belief for class c without telemetry's hint (see
// Hint): what jobs showed, or the profile. A driver keeps this across
// restarts and hands the hints over again, so that a hint is never
// counted twice.
func (l *Learner) Measured(c Class, g int) float64 {
	if l.hinted[c][g] {
		return l.hintBase[c][g]
	}
	return l.belief[c][g]
}

// Beliefs is a copy of every belief.
func (l *Learner) Beliefs() *Table {
	t := &Table{}
	for c := range t.Values {
		t.Values[c] = slices.Clone(l.belief[c])
	}
	return t
}

func (l *Learner) touch(c Class, g int) {
	if !l.isTouched[c][g] {
		l.isTouched[c][g] = true
		l.touched[c] = append(l.touched[c], g)
	}
	if !l.isMoved[g] {
		l.isMoved[g] = true
		l.moved = append(l.moved, g)
	}
}

// TakeMoved appends to dst the GPUs some belief of which may have changed
// since the last call (or since the learner was made), and forgets them:
// a driver that mirrors the beliefs (gauges, a copy by device) updates
// those alone instead of reading every GPU every round.
func (l *Learner) TakeMoved(dst []int) []int {
	for _, g := range l.moved {
		l.isMoved[g] = false
	}
	dst = append(dst, l.moved...)
	l.moved = l.moved[:0]
	return dst
}

// HintRelativeTo makes hints multiply t's values instead of the prior's.
// A driver whose prior already holds what jobs showed (pal-kube scheduler
// starts from its learned ConfigMap) gives the profile here: a GPU
// learned 1.4x slow and still throttled by 1.4x is 1.4x slow, not 1.96x.
func (l *Learner) HintRelativeTo(t *Table) error {
	for c := range Class(NumClasses) {
		if len(t.Values[c]) != len(l.prior[c]) {
			return fmt.Errorf("learner: hint table class %s covers %d GPUs, want %d", c, len(t.Values[c]), len(l.prior[c]))
		}
	}
	for c := range Class(NumClasses) {
		l.hintRef[c] = slices.Clone(t.Values[c])
	}
	return nil
}

// Hint takes what GPU telemetry says of GPU g now: it runs about f times
// slower than its profile for every class (DCGM shows its clock held
// down by f), or, with f at 1, that nothing holds it down any more. A
// hint is a prior, not a measurement, so it is weaker than any job:
//
//   - It raises each class's belief of g to the profile's value times f
//     (the prior's, unless HintRelativeTo) where the belief is lower, marked hinted, whatever jobs showed of g
//     before: a clock held down now says the GPU changed since they ran.
//     So g's GPU-wide bound is forgotten, and the next job to show g at
//     some pace sets it again and, if that is fast, lowers the hinted
//     beliefs of every class (exonerate). The class bounds are left; a
//     job slower than they allow makes the learner forget them, as after
//     any drift.
//   - Any job's observation of g afterwards takes over: a job of the
//     class on g clears the mark (it lowers the belief if g runs faster),
//     a job of another class showing g at its profile's pace lowers it as
//     it lowers a guess (exonerate), and a pin carries over it (spread).
//   - A hint withdrawn (f at 1) or changed puts every belief still marked
//     back where it was before the hint.
//
// The driver calls Hint when what telemetry says of g changes, not at
// every scrape: a hint repeated after jobs showed g fast would undo what
// they showed.
func (l *Learner) Hint(g int, f float64) {
	if g < 0 || g >= len(l.health) || !(f > 0) || math.IsInf(f, 0) {
		return
	}
	tol := l.opts.Tol
	raise := f > 1+tol
	for c := range Class(NumClasses) {
		b := l.belief[c]
		if l.hinted[c][g] {
			b[g], l.hinted[c][g] = l.hintBase[c][g], false
			l.touch(c, g)
		}
		if !raise {
			continue
		}
		if v := l.hintRef[c][g] * f; b[g] < v/(1+tol) {
			l.hintBase[c][g] = b[g]
			b[g], l.hinted[c][g] = v, true
			l.touch(c, g)
		}
	}
	if raise {
		l.hiH[g] = math.Inf(1)
	}
}

// jobSeen is what ObserveJob last saw of a job.
type jobSeen struct {
	c     Class
	first *int // the GPU list's backing array: a moved job has a new list
	n     int
	y     float64
	round int
	set   bool
	// steady: the observation changed nothing, so the same one again
	// may be skipped.
	steady bool
}

// ObserveJob is Observe for a job that has an id: a job showing the same
// class, GPU list and pace as in the previous round is skipped at the cost
// of a lookup (its observation would change nothing, see Observe),
// which keeps a round's learning cost with the jobs that changed. gpus
// must not be changed in place while the job keeps it (a driver replaces
// a moved job's list, as both of PAL's drivers do).
//
// A job on the same GPUs showing a slower pace than in the previous
// round is a GPU changing under it: older bounds stop ruling GPUs out
// (see Learner).
func (l *Learner) ObserveJob(id int, c Class, gpus []int, y float64) {
	var first *int
	if len(gpus) > 0 {
		first = &gpus[0]
	}
	s, ok := l.lookup(id)
	same := ok && s.c == c && s.first == first && s.n == len(gpus)
	if same && s.steady && s.y == y {
		s.round = l.round
		l.store(id, s)
		return
	}
	if same && y > s.y*(1+l.opts.Tol) {
		l.changedAt = l.round
	}
	if !same && !l.opts.OneBlame {
		l.countTrial(c, gpus, y)
	}
	// Only an observation that changed nothing may be skipped when it
	// comes again: a slow job keeps stepping its GPU towards its pace.
	steady := l.observe(c, gpus, y)
	l.store(id, jobSeen{c: c, first: first, n: len(gpus), y: y, round: l.round, set: true, steady: steady})
}

// ObserveTrial is Observe for a job's first observation on its GPU list
// by a driver that keeps no job ids (the cluster learner, which sees each
// gang run once it ends or as it reports progress): besides stepping the
// beliefs it counts the job towards the prevalence estimate, as
// ObserveJob does for a job on a new GPU list. A driver calls it once per
// run and Observe for the run's later reports, so a run reporting often
// counts no more than one that reports once.
func (l *Learner) ObserveTrial(c Class, gpus []int, y float64) {
	if !l.opts.OneBlame {
		l.countTrial(c, gpus, y)
	}
	l.observe(c, gpus, y)
}

// RecountTrial replaces a run's count made by ObserveTrial at pace was
// with one at pace now (same class and GPUs, same learner): a run's later
// reports time it over a longer stretch, so its latest pace says better
// whether it runs off its profile than its first (a first report a few
// seconds in can be 1% off on timestamp rounding alone). The run still
// counts once.
func (l *Learner) RecountTrial(c Class, gpus []int, was, now float64) {
	if l.opts.OneBlame || was == now {
		return
	}
	l.addTrial(c, gpus, was, -1)
	l.addTrial(c, gpus, now, 1)
}

// Prevalence is the share of slow GPUs blame by prevalence last used (see
// Learner): the estimate from the jobs counted so far, taken at the last
// Rebin. 0 until some counted job ran slower than every one of its GPUs'
// priors allows, and with OneBlame.
func (l *Learner) Prevalence() float64 { return l.prev }

// denseIDs bounds the job ids ObserveJob keeps in a slice (traces number
// jobs from 0; the slice is at most 12 MiB); others go to a map.
const denseIDs = 1 << 18

// lookup is ObserveJob's memory of job id: valid when it was seen in the
// round now running or the one before (a job not seen in a round is
// forgotten at its end, lazily: no round sweeps the memory).
func (l *Learner) lookup(id int) (jobSeen, bool) {
	var s jobSeen
	if id >= 0 && id < denseIDs {
		if id < len(l.seenDense) {
			s = l.seenDense[id]
		}
	} else {
		s = l.seen[id]
	}
	return s, s.set && s.round >= l.round-1
}

func (l *Learner) store(id int, s jobSeen) {
	if id >= 0 && id < denseIDs {
		if id >= len(l.seenDense) {
			l.seenDense = append(l.seenDense, make([]jobSeen, id+1-len(l.seenDense))...)
		}
		l.seenDense[id] = s
		return
	}
	if !s.set {
		delete(l.seen, id)
		return
	}
	if l.seen == nil {
		l.seen = map[int]jobSeen{}
	}
	l.seen[id] = s
}

// Observe takes one job's round: class c on gpus ran at pace y (its
// slowdown with the locality penalty divided out: 1.0 is the median GPU).
// Non-positive or non-finite paces are ignored.
func (l *Learner) Observe(c Class, gpus []int, y float64) { l.observe(c, gpus, y) }

// observe is Observe; it reports whether the observation was steady
// (changed no bound and no belief).
func (l *Learner) observe(c Class, gpus []int, y float64) bool {
	if len(gpus) == 0 || !(y > 0) || math.IsInf(y, 0) || c < 0 || c >= NumClasses {
		return false
	}
	l.Observations++
	b, hi, pr := l.belief[c], l.hi[c], l.prior[c]
	tol, a := l.opts.Tol, l.opts.Alpha
	if l.changedAt > 0 {
		// Bounds from before a change seen as it happened: one this pace
		// overturns describes the GPU as it was, and is forgotten.
		for _, g := range gpus {
			if hi[g] < y*(1-tol) && l.hiAt[c][g] < l.changedAt {
				hi[g] = math.Inf(1)
			}
			if l.hiH[g]*pr[g] < y*(1-tol) && l.hiHAt[g] < l.changedAt {
				l.hiH[g] = math.Inf(1)
			}
		}
	}
	allowed := false
	believed := 0.0
	stale := false // some bound or belief this observation changes
	lo, up, hiH := y*(1-tol), y*(1+tol), l.hiH
	for _, g := range gpus {
		h, bg := hi[g], b[g]
		allowed = allowed || h >= lo
		believed = max(believed, bg)
		stale = stale || h > y || bg > up || hiH[g] > y/pr[g] // the same expression that stored it
	}
	if !stale && allowed && y <= believed*(1+tol) {
		// The steady state: a job showing again the pace it showed before
		// changes no bound and no belief.
		return true
	}
	if !allowed {
		// Slower than every GPU's bound: a GPU changed, as surely as when
		// a job that stays put slows (see Learner).
		for _, g := range gpus {
			hi[g] = math.Inf(1)
			l.hiH[g] = math.Inf(1)
		}
		l.Forgot++
		l.changedAt = l.round
	}
	slow := y > believed*(1+tol)
	pinned, suspects := l.explain(c, gpus, y)
	if slow && suspects > 1 {
		l.remember(clause{c: c, y: y, gpus: gpus})
	}
	for _, g := range gpus {
		l.lastSeen[c][g] = l.round + 1
		l.hinted[c][g] = false // the class's own jobs speak for g now
		if y <= hi[g]*(1+tol) {
			l.hiAt[c][g] = l.round
		}
		hi[g] = min(hi[g], y)
		h := y / pr[g]
		if h <= l.hiH[g]*(1+tol) {
			l.hiHAt[g] = l.round
		}
		if h < l.hiH[g] {
			l.hiH[g] = h
			if !l.opts.PerClassOnly {
				l.exonerate(c, g)
			}
		}
		if b[g] > y*(1+tol) {
			b[g] += a * (y - b[g])
			l.touch(c, g)
			l.Lowered++
		}
	}
	if pinned >= 0 && !l.opts.PerClassOnly {
		l.spread(c, pinned)
	}
	return false
}

// clause is a slow observation: some GPU of gpus runs class c at y.
type clause struct {
	c    Class
	y    float64
	gpus []int
	born int // the round it was remembered in
}

func (k *clause) key() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	put(uint64(k.c))
	put(math.Float64bits(k.y))
	for _, g := range k.gpus {
		put(uint64(g))
	}
	return h.Sum64()
}

func (l *Learner) count(k clause, d int32) {
	for _, g := range k.gpus {
		l.inOpen[k.c][g] += d
	}
}

// remember keeps a slow observation (its GPU list copied), once.
func (l *Learner) remember(k clause) {
	key := k.key()
	if l.openKey[key] {
		return
	}
	if l.openKey == nil {
		l.openKey = map[uint64]bool{}
	}
	k.gpus = slices.Clone(k.gpus)
	k.born = l.round
	l.open = append(l.open, k)
	l.openKey[key] = true
	l.count(k, 1)
	if n := len(l.open) - l.opts.Memory; n > 0 {
		for _, old := range l.open[:n] {
			delete(l.openKey, old.key())
			l.count(old, -1)
		}
		l.open = slices.Delete(l.open, 0, n)
	}
}

// explain makes the beliefs account for a job of class c on gpus at pace
// y. The suspects are the GPUs whose class-c upper bound allows y and,
// unless PerClassOnly, whose GPU-wide bound does too (a GPU that ran some
// class at its profile's pace is not GPU-wide slow); when the GPU-wide
// test leaves none, the class bound alone decides. When y exceeds every
// belief of gpus by more than Tol, the suspect believed slowest is raised
// a step towards y. It returns the suspect when there is only one (the
// observation pins it; -1 otherwise) and the number of suspects.
func (l *Learner) explain(c Class, gpus []int, y float64) (pinned, suspects int) {
	b, hi, pr := l.belief[c], l.hi[c], l.prior[c]
	tol := l.opts.Tol
	believed := 0.0
	var s [2]int      // best suspect by tier: 0 class and GPU-wide, 1 class only
	var sv [2]float64 // its score
	var n [2]int
	s[0], s[1] = -1, -1
	top := -1
	for _, g := range gpus {
		if b[g] > believed {
			believed, top = b[g], g
		}
		if hi[g] < y*(1-tol) {
			continue
		}
		v := b[g]
		tier := 1
		if !l.opts.PerClassOnly {
			v = max(v, pr[g]*l.health[g])
			if l.hiH[g]*pr[g] >= y*(1-tol) {
				tier = 0
			}
		}
		for t := tier; t <= 1; t++ {
			n[t]++
			if s[t] < 0 || l.blameFirst(c, g, v, s[t], sv[t]) {
				s[t], sv[t] = g, v
			}
		}
	}
	t := 0
	if n[0] == 0 {
		t = 1
	}
	if top >= 0 && y <= believed*(1+tol) {
		// The GPU that explains the observation: its belief is still
		// needed (see forgetGuesses).
		l.lastSeen[c][top] = l.round + 1
	}
	if n[t] == 0 {
		return -1, 0
	}
	pinned = -1
	if n[t] == 1 {
		pinned = s[t]
	}
	if y > believed*(1+tol) {
		g := s[t]
		l.lastSeen[c][g] = l.round + 1
		if n[t] > 1 && !l.guess[c][g] {
			l.guessed[c] = append(l.guessed[c], g)
			l.base[c][g] = b[g]
		}
		b[g] += l.opts.Alpha * (y - b[g])
		l.guess[c][g] = n[t] > 1
		l.touch(c, g)
		l.Raised++
		if l.prev > 0 && n[t] > 1 {
			l.blameShared(c, gpus, y, g, t, n[t])
		}
	}
	return pinned, n[t]
}

// blameShared raises the suspects of a slow set other than first (the
// one explain blamed) by the posterior weight of a step: the chance
// p / (1 - (1-p)^m) that a given one of m suspects is slow when at least
// one is, each slow with the prevalence p (see Learner). tier is the
// suspects' tier in explain (0: the GPU-wide bound must allow y too).
func (l *Learner) blameShared(c Class, gpus []int, y float64, first, tier, m int) {
	b, hi, pr := l.belief[c], l.hi[c], l.prior[c]
	tol := l.opts.Tol
	w := l.prev / (1 - math.Pow(1-l.prev, float64(m)))
	for _, g := range gpus {
		if g == first || hi[g] < y*(1-tol) || b[g] >= y {
			continue
		}
		if tier == 0 && !l.opts.PerClassOnly && l.hiH[g]*pr[g] < y*(1-tol) {
			continue
		}
		if !l.guess[c][g] {
			l.guessed[c] = append(l.guessed[c], g)
			l.base[c][g] = b[g]
		}
		b[g] += w * l.opts.Alpha * (y - b[g])
		l.guess[c][g] = true
		l.touch(c, g)
	}
}

// maxPrevalence caps the estimated share of slow GPUs: when every job
// placed was off its profile the likelihood keeps rising towards p = 1,
// where every GPU would take a whole step.
const maxPrevalence = 0.5

// maxTrialGang is the largest gang counted for the prevalence: a gang of
// n is off its profile with probability 1 - (1-p)^n, which for 48 GPUs
// is over 0.99 from p = 0.1 on, so large gangs say little about p, and
// on a cluster of few such gangs they are most of the jobs placed.
// Measured (docs/measurements/learner-prevalence-2026-12-04.txt):
// counting every gang moved the random patterns' cells as much, but left
// learning 2.0% above stale on a degradation draw of Sia-Philly 4 where
// the oracle gains, against 0.1% before and 0.3% with this cap.
const maxTrialGang = 8

// countTrial counts a job seen on a new GPU list: off its profile when
// its pace y is slower than every GPU's prior allows. Gangs of more than
// maxTrialGang GPUs are not counted.
func (l *Learner) countTrial(c Class, gpus []int, y float64) { l.addTrial(c, gpus, y, 1) }

// addTrial adds d (1 or -1) to the counts countTrial keeps for the job.
func (l *Learner) addTrial(c Class, gpus []int, y float64, d int) {
	if len(gpus) == 0 || len(gpus) > maxTrialGang || !(y > 0) || math.IsInf(y, 0) || c < 0 || c >= NumClasses {
		return
	}
	if n := len(gpus); n >= len(l.trials) {
		l.trials = append(l.trials, make([]int, n+1-len(l.trials))...)
		l.offProf = append(l.offProf, make([]int, n+1-len(l.offProf))...)
	}
	top := 0.0
	for _, g := range gpus {
		top = max(top, l.prior[c][g])
	}
	l.trials[len(gpus)] += d
	l.counted = true
	if y > top*(1+l.opts.Tol) {
		l.offProf[len(gpus)] += d
	}
}

// prevalence is the maximum-likelihood share p of slow GPUs given the
// jobs counted (countTrial), each GPU slow independently with p, so that
// a gang of n is off its profile with probability 1 - (1-p)^n: the p at
// which the sum over gang sizes of off_n·n·q^n/(1-q^n) equals the sum of
// (trials_n - off_n)·n, q = 1-p, found by bisection (the left side falls
// as p rises). 0 when no job was off its profile, maxPrevalence when
// every job was or the root lies above it.
func (l *Learner) prevalence() float64 {
	off, on := 0, 0
	for n, t := range l.trials {
		off += l.offProf[n]
		on += t - l.offProf[n]
	}
	if off == 0 {
		return 0
	}
	if on == 0 {
		return maxPrevalence
	}
	f := func(p float64) float64 {
		q, d := 1-p, 0.0
		for n, t := range l.trials {
			if t == 0 {
				continue
			}
			o, nf := float64(l.offProf[n]), float64(n)
			qn := math.Pow(q, nf)
			d += o*nf*qn/(1-qn) - (float64(t)-o)*nf
		}
		return d
	}
	lo, hi := 0.0, maxPrevalence
	if f(hi) >= 0 {
		return maxPrevalence
	}
	for range 40 {
		if mid := (lo + hi) / 2; f(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// settle revisits the remembered slow observations: GPUs exonerated
// since (their upper bound is now under the pace) cannot be the slow one,
// so the blame moves to one that can, and an observation only one GPU can
// explain pins it. Observations no GPU can explain any more (the GPUs
// changed), pinned ones once explained, and those older than Expire
// rounds are dropped.
func (l *Learner) settle() {
	kept := l.open[:0]
	for _, k := range l.open {
		if l.round-k.born > l.opts.Expire {
			delete(l.openKey, k.key())
			l.count(k, -1)
			continue
		}
		pinned, suspects := l.explain(k.c, k.gpus, k.y)
		if suspects == 0 {
			delete(l.openKey, k.key())
			l.count(k, -1)
			continue
		}
		if pinned >= 0 {
			if !l.opts.PerClassOnly {
				l.spread(k.c, pinned)
			}
			if l.belief[k.c][pinned] >= k.y/(1+l.opts.Tol) {
				delete(l.openKey, k.key())
				l.count(k, -1)
				continue
			}
		}
		kept = append(kept, k)
	}
	clear(l.open[len(kept):])
	l.open = kept
}

// prune withdraws the guesses that no remembered slow observation needs:
// a guessed GPU each of whose open observations (of its class) is also
// explained by another GPU of the observation (a belief within Tol of its
// pace) goes back to its belief before the guess. The blame is a hitting
// set, and a hitting set with a redundant member is not the fewest slow
// GPUs that explain the slow jobs: after a slow job moves off a wrongly
// blamed GPU and stays slow, the GPU blamed next for it explains both
// observations, and the first is then blamed for nothing. GPUs named by
// fewer observations go first, so the GPUs that most observations name
// are kept.
func (l *Learner) prune() {
	for c := range Class(NumClasses) {
		if len(l.guessed[c]) == 0 {
			continue
		}
		var idx []int // the open observations of class c
		for i := range l.open {
			if l.open[i].c == c {
				idx = append(idx, i)
			}
		}
		cnt := make(map[int]int, len(idx))     // open index -> GPUs explaining it
		top := make(map[int]float64, len(idx)) // open index -> its believed max
		by := map[int][]int{}                  // guessed GPU -> open indices naming it
		b, tol := l.belief[c], l.opts.Tol
		for _, i := range idx {
			k := &l.open[i]
			for _, g := range k.gpus {
				top[i] = max(top[i], b[g])
			}
			for _, g := range k.gpus {
				if b[g]*(1+tol) >= top[i] {
					cnt[i]++
				}
				if l.guess[c][g] {
					by[g] = append(by[g], i)
				}
			}
		}
		order := slices.Clone(l.guessed[c])
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(len(by[x]), len(by[y])) })
		for _, g := range order {
			if !l.guess[c][g] || l.lastSeen[c][g] == l.round {
				continue
			}
			needed := false
			for _, i := range by[g] {
				if b[g]*(1+tol) >= top[i] && cnt[i] <= 1 {
					needed = true
					break
				}
			}
			if needed {
				continue
			}
			for _, i := range by[g] {
				if b[g]*(1+tol) >= top[i] {
					cnt[i]--
				}
			}
			b[g] = min(b[g], l.base[c][g])
			l.guess[c][g] = false
			l.touch(c, g)
			l.Pruned++
		}
	}
}

// forgetGuesses moves guessed beliefs of GPUs that ran no job of their
// class this round a step back towards the prior.
func (l *Learner) forgetGuesses() {
	for c := range Class(NumClasses) {
		kept := l.guessed[c][:0]
		for _, g := range l.guessed[c] {
			if !l.guess[c][g] {
				continue
			}
			if l.lastSeen[c][g] != l.round {
				p := l.prior[c][g]
				l.belief[c][g] -= l.opts.Forget * (l.belief[c][g] - p)
				l.touch(c, g)
				if l.belief[c][g] <= p*(1+l.opts.Tol) {
					l.belief[c][g], l.guess[c][g] = p, false
					continue
				}
			}
			kept = append(kept, g)
		}
		l.guessed[c] = kept
	}
}

// exonerate lowers, in the classes other than c, the beliefs of GPU g
// that stand on a guess or on another class's pin (spread) once g's
// GPU-wide upper bound says g is not that slow.
func (l *Learner) exonerate(c Class, g int) {
	h := max(l.hiH[g], 1)
	for k := range Class(NumClasses) {
		if k == c || !(l.guess[k][g] || math.IsInf(l.hi[k][g], 1) || l.carried[k][g] || l.hinted[k][g]) {
			continue
		}
		if v := l.prior[k][g] * h; l.belief[k][g] > v*(1+l.opts.Tol) {
			l.belief[k][g] = v
			l.guess[k][g], l.hinted[k][g] = false, false
			l.touch(k, g)
			l.Lowered++
		}
	}
	if l.health[g] > h {
		l.health[g] = h
	}
}

// spread carries what class c pinned about GPU g to the other classes:
// thermal limits, power caps and a replaced board slow a GPU for every
// application, so the factor belief / prior is the best guess there is
// for a class until its own jobs say otherwise. The factor is capped by
// g's GPU-wide bound (a job of any class that ran g at some pace says
// how slow g can be), so every class's own upper bound allows it. A
// class that never observed g takes the factor; one that did takes it
// when its belief is lower, marked carried, so that a job showing g fast
// undoes it (exonerate) as it undoes a guess. A class that believes g
// slower keeps what its own jobs said.
//
// A speed-up is not carried. A carried slowdown that is wrong costs a
// class a GPU it avoids until it tries it; a carried speed-up that is
// wrong draws the class's jobs onto the GPU ahead of the classes that
// measured it fast, and they hold it. Measured on the random patterns
// of docs/variability.md (faster than profiled on a random subset of the
// classes, learning from per-GPU paces), carrying speed-ups left two
// workloads' median recovered share at 69% and -35% and ended up to 10%
// above both stale and the oracle; without it every faster cell but one
// (74%) recovers at least 80%, and the slowing families are unchanged.
func (l *Learner) spread(c Class, g int) {
	h := min(l.belief[c][g]/l.prior[c][g], l.hiH[g])
	bit := uint8(1) << c
	l.slowBy[g] &^= bit
	if h > 1+l.opts.Tol {
		l.slowBy[g] |= bit
	}
	if math.Abs(h-l.health[g]) <= l.opts.Tol*l.health[g] && !l.waiting[g] {
		return
	}
	l.health[g] = h
	if h < 1/(1+l.opts.Tol) {
		// Faster: the class's own (see above). The factor still ranks g
		// last among the suspects of a slow set.
		l.waiting[g] = true
		return
	}
	if bits.OnesCount8(l.slowBy[g]) < l.opts.Corroborate && math.Abs(h-1) > l.opts.Tol {
		// One class's word: the GPU is suspect first when blame is
		// placed (health), but the other classes keep their beliefs
		// until a second class's own jobs agree.
		l.waiting[g] = true
		return
	}
	l.waiting[g] = false
	for k := range Class(NumClasses) {
		if k == c {
			continue
		}
		v := l.prior[k][g] * h
		if math.IsInf(l.hi[k][g], 1) {
			l.hinted[k][g] = false // a pin is evidence; a hint was not
			if v != l.belief[k][g] {
				l.belief[k][g] = v
				l.touch(k, g)
			}
		} else if l.belief[k][g] < v/(1+l.opts.Tol) {
			l.belief[k][g] = v
			l.carried[k][g], l.hinted[k][g] = true, false
			l.touch(k, g)
		}
	}
}

// Rebin settles the remembered observations, then bins again every class
// in which some GPU's belief moved by more than Rebin since that GPU was
// last binned, and returns the new scores, or nil when no class needed
// it. Unchanged classes keep their bins. A class is fitted again (K-Means,
// as NewScores) only once more than RefitShare of its GPUs have moved
// since its last fit; until then the moved GPUs are placed in the old
// bins (reassign), which costs a copy rather than a fit: a K-Means of
// 27,648 values takes longer than a placement round. Classes of at most
// RefitBelow GPUs are always fitted again.
func (l *Learner) Rebin() (*Scores, error) {
	for id, s := range l.seen {
		if s.round != l.round {
			delete(l.seen, id) // only ids outside denseIDs, rare
		}
	}
	l.round++
	if l.counted {
		l.prev, l.counted = l.prevalence(), false
	}
	l.forgetGuesses()
	l.settle()
	l.prune()
	if l.round-l.binnedAt < l.opts.Every {
		return nil, nil // the touched GPUs wait for the next binning round
	}
	l.binnedAt = l.round
	var redo []Class
	var dirty [NumClasses][]int
	for c := range Class(NumClasses) {
		for _, g := range l.touched[c] {
			l.isTouched[c][g] = false
			if v := l.belief[c][g]; math.Abs(v-l.snap[c][g]) > l.opts.Rebin*l.snap[c][g] {
				dirty[c] = append(dirty[c], g)
			}
		}
		l.touched[c] = l.touched[c][:0]
		if len(dirty[c]) > 0 {
			redo = append(redo, c)
		}
	}
	if len(redo) == 0 {
		return nil, nil
	}
	ns := *l.cur
	raw := *l.cur.Raw
	ns.Raw = &raw
	changed := false
	for _, c := range redo {
		n := len(l.belief[c])
		l.reassigned[c] += len(dirty[c])
		var bn *Binning
		if n <= l.opts.RefitBelow || float64(l.reassigned[c]) > l.opts.RefitShare*float64(n) {
			vals := slices.Clone(l.belief[c])
			var err error
			if bn, err = Bin(vals, l.opts.Bin); err != nil {
				return nil, fmt.Errorf("learner: class %s: %w", c, err)
			}
			raw.Values[c] = vals
			copy(l.snap[c], vals)
			l.reassigned[c] = 0
			l.sfCount[c] = countScores(bn.SF)
			l.Refits++
		} else {
			bn = reassign(ns.Bins[c], l.belief[c], dirty[c], l.sfCount[c])
			for _, g := range dirty[c] {
				l.snap[c][g] = l.belief[c][g]
			}
			if bn == ns.Bins[c] {
				continue // no GPU changed score: the class's scores stand
			}
		}
		changed = true
		ns.Bins[c], ns.SF[c] = bn, bn.SF
		ns.LV[c] = lxvOfCounts(l.sfCount[c], l.cur.L[c])
	}
	if !changed {
		// Placement reads scores alone (SF and L×V): with none changed a
		// new table would only make the placer index the same one again.
		return nil, nil
	}
	l.cur = &ns
	l.Rebins++
	return &ns, nil
}

// reassign is old with the GPUs of moved placed by their new values
// without fitting again: a GPU above the old outlier threshold keeps its
// own normalised value as its score (as the paper's binning treats
// outliers), any other takes the score of the nearest centroid. Only SF
// is new (a copy): Bin, Counts and the learner's Scores.Raw describe the
// last fit. When no moved GPU changes score it returns old itself.
func reassign(old *Binning, vals []float64, moved []int, count map[float64]int) *Binning {
	score := func(g int) float64 {
		v := vals[g]
		if v > old.Threshold {
			return v / old.Norm
		}
		j, d := 0, math.Inf(1)
		for k, c := range old.RawCentroids {
			if dd := math.Abs(v - c); dd < d {
				j, d = k, dd
			}
		}
		return old.Centroids[j]
	}
	var b *Binning
	for _, g := range moved {
		sf := score(g)
		if sf == old.SF[g] {
			continue // same score: nothing to copy for this GPU
		}
		if b == nil {
			nb := *old
			nb.SF = slices.Clone(old.SF)
			b = &nb
		}
		if count[b.SF[g]]--; count[b.SF[g]] == 0 {
			delete(count, b.SF[g])
		}
		b.SF[g] = sf
		count[sf]++
	}
	if b == nil {
		return old
	}
	return b
}

func countScores(sf []float64) map[float64]int {
	m := map[float64]int{}
	for _, v := range sf {
		m[v]++
	}
	return m
}

// lxvOfCounts is LxV over the distinct scores that some GPU has, in
// order of product, then score, then within before across.
func lxvOfCounts(count map[float64]int, L float64) []LVEntry {
	vs := make([]float64, 0, len(count))
	for v := range count {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	out := make([]LVEntry, 0, 2*len(vs))
	for _, v := range vs {
		out = append(out, LVEntry{V: v, Product: v}, LVEntry{V: v, Across: true, Product: v * L})
	}
	slices.SortStableFunc(out, func(a, b LVEntry) int { return cmp.Compare(a.Product, b.Product) })
	return out
}

// blameFirst reports whether suspect g (scored v) takes a slow set's
// blame before suspect o (scored ov): first a GPU some class has pinned
// slow (its GPU-wide factor above 1, unless PerClassOnly), then the one
// the most remembered slow observations name, then the one believed
// slowest. The pin comes first because it is evidence about the GPU
// itself, where being named is evidence about the sets it ran in: a GPU
// in a large gang that keeps moving is named by most of that gang's slow
// observations whether it is slow or not, and blaming it on that count
// alone hides a good GPU while the known-slow one beside it goes free.
func (l *Learner) blameFirst(c Class, g int, v float64, o int, ov float64) bool {
	if !l.opts.PerClassOnly {
		if pg, po := l.health[g] > 1+l.opts.Tol, l.health[o] > 1+l.opts.Tol; pg != po {
			return pg
		}
	}
	ng, no := l.named(c, g), l.named(c, o)
	return ng > no || (ng == no && v > ov)
}

// named is how many remembered slow observations name GPU g: of every
// class, since a GPU slow for one class is most likely slow for all
// (see spread), or of class c alone with PerClassOnly.
func (l *Learner) named(c Class, g int) int32 {
	if l.opts.PerClassOnly {
		return l.inOpen[c][g]
	}
	var n int32
	for k := range Class(NumClasses) {
		n += l.inOpen[k][g]
	}
	return n
}
