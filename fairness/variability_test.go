package fairness

import (
	"math"
	"slices"
	"testing"

	"github.com/palsched/pal/variability"
)

func withScores(t *testing.T, tp *Topology, a []float64) *Topology {
	t.Helper()
	var sf [variability.NumClasses][]float64
	for c := range sf {
		sf[c] = make([]float64, tp.NumGPUs())
		for g := range sf[c] {
			sf[c][g] = 1
		}
	}
	sf[variability.ClassA] = a
	tp, err := tp.WithSpeeds(sf)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// Variability-aware bids: machine 0's GPUs are 30% slower for class A, so
// a class-A app asking for 2 GPUs takes machine 1; a variability-blind bid
// takes machine 0 (lowest id), and runs 1/1.3 as fast.
func TestVariabilityAwareBids(t *testing.T) {
	tp := withScores(t, topo(t, 2, 2), []float64{1.3, 1.3, 1, 1})
	mk := func() []*App { return []*App{SingleJob("A", 0, 100, 100, 2, Insensitive, nil)} }
	in := Input{Topo: tp, Apps: mk(), Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, DefaultOptions())
	if !slices.Equal(r.Apps[0].Final, []int{2, 3}) {
		t.Errorf("aware: A got %v, want the fast machine [2 3]", r.Apps[0].Final)
	}
	o := DefaultOptions()
	o.VariabilityBlind = true
	r = mustRun(t, in, o)
	if !slices.Equal(r.Apps[0].Final, []int{0, 1}) {
		t.Errorf("blind: A got %v, want [0 1]", r.Apps[0].Final)
	}
	a := mk()[0]
	a.Jobs[0].Held = []int{0, 1}
	if got := Rate(tp, a); math.Abs(got-2/1.3) > 1e-12 {
		t.Errorf("rate on slow GPUs %v, want 2/1.3", got)
	}
	// A gang runs at its slowest GPU: with one slow GPU on a 4-GPU machine,
	// 3 GPUs avoid it.
	tp1 := withScores(t, topo(t, 1, 4), []float64{1, 1.5, 1, 1})
	r = mustRun(t, Input{Topo: tp1, Apps: []*App{SingleJob("A", 0, 100, 100, 3, Insensitive, nil)}, Offer: []int{0, 1, 2, 3}}, DefaultOptions())
	if !slices.Equal(r.Apps[0].Final, []int{0, 2, 3}) {
		t.Errorf("A got %v, want [0 2 3] (skipping the slow GPU 1)", r.Apps[0].Final)
	}
}

// Racks: 4 machines of 2 GPUs in 2 racks; an app needing 4 GPUs with a
// harsh rack factor stays inside rack 1 when rack 0 is partly taken.
func TestRackPlacement(t *testing.T) {
	tp, err := UniformTopology(4, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.Placement([]int{0, 2}, Sensitivity{Machine: 0.9, Rack: 0.5}); got != 0.9 {
		t.Errorf("S across machines in one rack = %v, want 0.9", got)
	}
	if got := tp.Placement([]int{0, 4}, Sensitivity{Machine: 0.9, Rack: 0.5}); got != 0.5 {
		t.Errorf("S across racks = %v, want 0.5", got)
	}
	a := SingleJob("A", 0, 100, 100, 4, Sensitivity{Machine: 0.9, Rack: 0.5}, nil)
	r := mustRun(t, Input{Topo: tp, Apps: []*App{a}, Offer: []int{0, 2, 3, 4, 5, 6, 7}}, DefaultOptions())
	if !slices.Equal(r.Apps[0].Final, []int{4, 5, 6, 7}) {
		t.Errorf("A got %v, want rack 1's [4 5 6 7]", r.Apps[0].Final)
	}
}

// Gavel's denominator: isolated time of done work plus the remaining work
// at min(C/m, D): 16 GPUs, m = 4, D = 8, 48 GPU-h left, 5 h charged:
// T_iso = 5 + 48/4 = 17; with 8 GPUs on one machine at t = 4, ρ = (4 + 6)/17.
func TestGavelMetric(t *testing.T) {
	tp := topo(t, 2, 8)
	a := SingleJob("A", 0, 48, 64, 8, Insensitive, []int{0, 1, 2, 3, 4, 5, 6, 7})
	a.IsoTime = 5
	ctx := Context{Now: 4, ClusterGPUs: 16, ActiveApps: 4}
	if got := (Gavel{}).Ideal(a, ctx); got != 17 {
		t.Errorf("Gavel T_iso = %v, want 17", got)
	}
	if got := RhoHeld(tp, a, ctx, Gavel{}); math.Abs(got-10.0/17) > 1e-12 {
		t.Errorf("Gavel ρ = %v, want 10/17", got)
	}
	if m, err := ParseMetric("gavel"); err != nil || m.Name() != "gavel" {
		t.Errorf("ParseMetric(gavel) = %v, %v", m, err)
	}
	if _, err := ParseMetric("drf"); err == nil {
		t.Error("ParseMetric accepted drf")
	}
}

// Noise is a per-app factor in [1−p, 1+p], fixed by (seed, app) and
// independent of the other apps; p = 0 is the oracle.
func TestNoiseFactor(t *testing.T) {
	if NoiseFactor(0, 1, 5) != 1 {
		t.Error("p = 0 is not the oracle")
	}
	seen := map[float64]bool{}
	for k := range uint64(200) {
		x := NoiseFactor(0.2, 7, k)
		if x < 0.8 || x > 1.2 {
			t.Fatalf("factor %v outside [0.8, 1.2]", x)
		}
		if x != NoiseFactor(0.2, 7, k) {
			t.Fatal("not deterministic")
		}
		seen[x] = true
	}
	if len(seen) < 190 || NoiseFactor(0.2, 7, 3) == NoiseFactor(0.2, 8, 3) {
		t.Error("factors do not vary with the app and the seed")
	}
	a := SingleJob("A", 0, 100, 100, 1, Insensitive, nil)
	a.Noise = 1.1
	if got := a.Remaining(); math.Abs(got-110) > 1e-9 {
		t.Errorf("noisy remaining %v, want 110", got)
	}
}

// Invariants over random auctions: no GPU given twice, only offered GPUs
// given, held GPUs kept, gangs whole, demand respected.
func TestRandomAuctionInvariants(t *testing.T) {
	for seed := range uint64(40) {
		in, err := RandomInput(RandomOptions{Apps: 5 + int(seed%20), Machines: 4 + int(seed%5), GPUsPerMachine: 1 + int(seed%8), HeldShare: float64(seed%3) / 4, Speeds: seed%2 == 0, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []float64{0, 0.5, 0.8, 1} {
			for _, l := range []Leftover{NonbiddersFirst, BiddersOnly, NoLeftover} {
				o := opts(f, seed%2 == 1, l)
				mustRun(t, in, o)
			}
		}
	}
}

// Pack: 3 GPUs from machines holding 1, 3 and 4 free GPUs of a 3×4
// cluster go to the 3-GPU machine (tightest fit); 5 GPUs span the fullest
// machines first (4 + 1).
func TestPack(t *testing.T) {
	tp := topo(t, 3, 4)
	free := []int{0, 4, 5, 6, 8, 9, 10, 11}
	if got := tp.Pack(free, 3); !slices.Equal(got, []int{4, 5, 6}) {
		t.Errorf("Pack 3 = %v, want [4 5 6]", got)
	}
	if got := tp.Pack(free, 5); !slices.Equal(got, []int{4, 8, 9, 10, 11}) {
		t.Errorf("Pack 5 = %v, want [4 8 9 10 11]", got)
	}
}
