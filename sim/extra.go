package sim

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/workload"
)

// extraGen produces the artifact's background arrivals: job k >= N reuses
// trace row k mod N (rows in file order) and arrives a Poisson gap,
// ceil(-ln(1-U)/rate h), after the previous job. Extras are measured only
// when a --track window covers their ids, as the artifact's id window does.
type extraGen struct {
	rows    []workload.Spec
	rate    float64
	rng     *rand.Rand
	track   *[2]int
	k       int
	last    float64
	nextJob workload.Spec
	ready   bool
	nextID  int
	limit   int // most extras to generate (< 0: none)
	made    int // extras handed out
}

func newExtraGen(rows []workload.Spec, rate float64, rng *rand.Rand, track *[2]int) extraGen {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b workload.Spec) int { return a.Line - b.Line })
	g := extraGen{rows: rows, rate: rate, rng: rng, track: track}
	for _, r := range rows {
		g.last = math.Max(g.last, r.Submit)
		g.nextID = max(g.nextID, r.ID+1)
	}
	g.k = len(rows)
	return g
}

// on says whether more extras may come: the generator exists and has not
// reached its bound.
func (g *extraGen) on() bool { return g.rng != nil && g.made < g.limit }

// capped says whether the bound stopped the generator.
func (g *extraGen) capped() bool { return g.rng != nil && g.made >= g.limit }

// trackedAhead counts the extras a track window will measure; the run
// waits for them, since they are certain to arrive.
// trackedPastLimit is the first tracked id the bounded generator will
// never produce (0, false if none).
func (g *extraGen) trackedPastLimit() (int, bool) {
	last := g.nextID + g.limit - 1 // before any extra is made
	if g.rng == nil || g.track == nil || g.track[1] <= last {
		return 0, false
	}
	return max(g.track[0], last+1), true
}

func (g *extraGen) trackedAhead() int {
	if g.track == nil || g.track[1] < g.nextID {
		return 0
	}
	return g.track[1] - max(g.track[0], g.nextID) + 1
}

func (g *extraGen) peek() float64 {
	if !g.ready {
		gap := math.Ceil(-math.Log(1-g.rng.Float64()) / g.rate * 3600)
		g.last += gap
		s := g.rows[g.k%len(g.rows)]
		s.ID = g.nextID
		s.Submit = g.last
		s.Tracked = g.track != nil && s.ID >= g.track[0] && s.ID <= g.track[1]
		s.Line = 0
		g.nextJob = s
		g.ready = true
		g.k++
		g.nextID++
	}
	return g.nextJob.Submit
}

func (g *extraGen) pop() workload.Spec {
	g.peek()
	g.ready = false
	g.made++
	return g.nextJob
}
