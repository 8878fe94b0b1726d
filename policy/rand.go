package policy

import "math/rand/v2"

// streamPlacement is the placement stream's id among the independent
// random streams a run draws from one seed ("plac"), so that adding draws
// to another stream (say, the extra arrivals) never shifts a placement.
const streamPlacement = 0x706c6163

// PlacementRand is the placement stream a run of this seed hands its
// placer: a tenancy stage that runs one placer per tenant gives each the
// stream the tenant's private run would have, and both drivers draw
// random placements from it.
func PlacementRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, streamPlacement)) }
