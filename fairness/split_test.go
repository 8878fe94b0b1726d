package fairness

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// splitFlat indexes runs by length when there are at most 64; the split
// it gives must be the plain scans' exactly, on best bundles (few runs,
// one per machine) and on the same GPUs shuffled (a run per GPU, most of
// them shorter than the jobs), for gangs and elastic jobs.
func TestSplitRunIndexMatchesScans(t *testing.T) {
	defer func(m int) { maxFastRuns = m }(maxFastRuns)
	checked := 0
	for _, elastic := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			in, err := RandomInput(RandomOptions{Apps: 30, Machines: 40, GPUsPerMachine: 4, HeldShare: 0.3, Speeds: true, Elastic: elastic, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			pl := newPool(in.Topo, in.Offer)
			ctx := Context{Now: in.Now, ClusterGPUs: in.Topo.NumGPUs(), ActiveApps: len(in.Apps)}
			rng := rand.New(rand.NewPCG(seed, 9))
			for i, a := range in.Apps {
				b := newBidder(a, i, ctx, Themis{}, pl.size, a.Sens, true, nil, nil)
				for p := 1; p < len(b.cum); p++ {
					bundle, _ := b.best(pl, p)
					if bundle == nil {
						continue
					}
					shuffled := slices.Clone(bundle)
					rng.Shuffle(len(shuffled), func(x, y int) { shuffled[x], shuffled[y] = shuffled[y], shuffled[x] })
					for _, bu := range [][]int{slices.Clone(bundle), shuffled} {
						maxFastRuns = 64
						got := cloneLists(b.split(in.Topo, p, bu))
						maxFastRuns = 0
						want := cloneLists(b.split(in.Topo, p, bu))
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("seed %d app %d p %d bundle %v: split %v, plain scans %v", seed, i, p, bu, got, want)
						}
						checked++
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d splits compared", checked)
	}
}
