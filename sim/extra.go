package sim

import (
	"math"
	"math/rand/v2"

	"github.com/palsched/pal/workload"
)

// extraGen produces the artifact's background arrivals: job k >= N reuses
// trace row k mod N and arrives a Poisson gap, ceil(-ln(1-U)/rate h), after
// the previous job.
type extraGen struct {
	rows    []workload.Spec
	rate    float64
	rng     *rand.Rand
	k       int
	last    float64
	nextJob workload.Spec
	ready   bool
	nextID  int
}

func newExtraGen(rows []workload.Spec, rate float64, rng *rand.Rand) extraGen {
	g := extraGen{rows: rows, rate: rate, rng: rng}
	for _, r := range rows {
		g.last = math.Max(g.last, r.Submit)
		g.nextID = max(g.nextID, r.ID+1)
	}
	g.k = len(rows)
	return g
}

func (g *extraGen) on() bool { return g.rng != nil }

func (g *extraGen) peek() float64 {
	if !g.ready {
		gap := math.Ceil(-math.Log(1-g.rng.Float64()) / g.rate * 3600)
		g.last += gap
		s := g.rows[g.k%len(g.rows)]
		s.ID = g.nextID
		s.Submit = g.last
		s.Tracked = false // background load is never measured
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
	return g.nextJob
}
