package place

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// TestPMFirstSpansOnlyWhenPickSpans checks the invariant the migration
// rule relies on: whenever pmFirstSpans says a pinned job's PM-First
// pick spans nodes, the pick made after lending the job its own GPUs
// (what moveFrame does) does span. Random clusters (some past 64 nodes
// a bin), random reservations and takes, the job's own GPUs on one node
// or scattered; it also checks the answer is not vacuous (it says so for
// most of the picks that span).
func TestPMFirstSpansOnlyWhenPickSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	said, spanned, picks := 0, 0, 0
	for trial := range 3000 {
		c, x := randomIndex(t, rng, trial, false)
		if x.maxPer < 2 {
			continue
		}
		cl := rng.IntN(variability.NumClasses)
		var live [variability.NumClasses]bool
		live[cl] = true
		x.reset(live)
		n := 2 + rng.IntN(x.maxPer-1)
		var held []int
		if nd := c.Nodes[rng.IntN(len(c.Nodes))]; rng.IntN(2) == 0 && len(nd.GPUs) >= n {
			held = slices.Clone(nd.GPUs[:n])
		} else {
			held = rng.Perm(c.Size())[:n]
		}
		slices.Sort(held)
		x.take(held)
		var others []int
		for _, g := range rng.Perm(c.Size()) {
			if x.isFree(g) && rng.IntN(3) > 0 {
				others = append(others, g)
			}
		}
		x.take(others[:rng.IntN(len(others)+1)])
		if rng.IntN(2) == 0 {
			x.load(cl) // the structures a revive leaves
		}
		j := &workload.Job{Spec: workload.Spec{GPUs: n, Class: variability.Class(cl)}, GPUsHeld: held}
		pred := x.pmFirstSpans(j)
		x.lend(j)
		g := x.pmFirst(cl, n, len(x.cls[cl].vals)-1, PMFirstArtifact)
		if g == nil {
			t.Fatalf("trial %d: no pick for %d GPUs with the job's own lent back", trial, n)
		}
		picks++
		sp := c.SpansNodes(g)
		if pred && !sp {
			t.Fatalf("trial %d: class %d, %d GPUs held %v: pmFirstSpans says the pick spans, pick %v is on one node", trial, cl, n, held, g)
		}
		if sp {
			spanned++
			if pred {
				said++
			}
		}
	}
	if spanned == 0 || 2*said < spanned {
		t.Fatalf("pmFirstSpans said so for %d of %d spanning picks (of %d)", said, spanned, picks)
	}
	t.Logf("pmFirstSpans said so for %d of %d spanning picks (of %d)", said, spanned, picks)
}
