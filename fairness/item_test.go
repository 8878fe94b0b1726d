package fairness

import (
	"slices"
	"testing"

	"github.com/palsched/pal/variability"
)

// A ρ tie goes to the app waiting longest since its last allocation. At
// t = 1000 A (arrived 0, last held GPUs at 500) and B (arrived 100, last
// held GPUs at 200) both hold nothing: ρ = +Inf each. f = 0.5, n = 2:
// k = ⌊0.5·2⌋ = 1. B's last allocation (200) is older than A's (500), so
// B bids, although A arrived first.
func TestRhoTieGoesToLongestWaiting(t *testing.T) {
	a := SingleJob("A", 0, 100, 100, 2, Insensitive, nil)
	a.Since = 500
	b := SingleJob("B", 100, 100, 100, 2, Insensitive, nil)
	b.Since = 200
	in := Input{Topo: topo(t, 1, 2), Now: 1000, Apps: []*App{a, b}, Offer: []int{0, 1}}
	r := mustRun(t, in, opts(0.5, true, NoLeftover))
	if r.K != 1 || !slices.Equal(r.Bidders, []int{1}) {
		t.Errorf("k %d bidders %v, want 1 bidder, B (index 1)", r.K, r.Bidders)
	}
}

// Larger bundles are packed first. Machine 0 has 4 GPUs at PM-score 0.9
// (faster), machine 1 has 3 at 1.0. A wants a 4-GPU gang (spread factor
// 0.5), B a 2-GPU gang; B arrived first, so it ranks first. All 7 are
// offered, f = 0, payments off: 4 + 2 <= 7, both get their bids. Packed
// worst-off first, B would take the faster machine 0 (GPUs 0-1) and leave
// A spread over 2 + 3 GPUs at half speed; packed larger first, A takes
// machine 0 (the only one with 4), B the best 2 left: GPUs 4-5.
func TestLargerBundlesPackedFirst(t *testing.T) {
	tp, err := NewTopology([]int{0, 0, 0, 0, 1, 1, 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sf [variability.NumClasses][]float64
	for c := range sf {
		sf[c] = []float64{0.9, 0.9, 0.9, 0.9, 1, 1, 1}
	}
	if tp, err = tp.WithSpeeds(sf); err != nil {
		t.Fatal(err)
	}
	gang := func(name string, arrival float64, n int, s Sensitivity) *App {
		return &App{Name: name, Arrival: arrival, TotalWork: 1000, Demand: n, Sens: s, NAvg: 2,
			Jobs: []Job{{Remaining: 1000, MaxGPUs: n, Gang: true}}}
	}
	in := Input{Topo: tp, Now: 100, Apps: []*App{gang("A", 10, 4, Sensitivity{Machine: 0.5}), gang("B", 0, 2, Insensitive)},
		Offer: []int{0, 1, 2, 3, 4, 5, 6}}
	r := mustRun(t, in, opts(0, false, NoLeftover))
	if !slices.Equal(r.Bidders, []int{1, 0}) {
		t.Fatalf("bidders %v, want [1 0] (B ranks first)", r.Bidders)
	}
	if a, b := r.Apps[0].Final, r.Apps[1].Final; !slices.Equal(a, []int{0, 1, 2, 3}) || !slices.Equal(b, []int{4, 5}) {
		t.Errorf("A %v B %v, want [0 1 2 3] and [4 5]", a, b)
	}
}

// Reauction hands the withheld GPU to the next worst-off app that did not
// pay. T5's auction (A and B bid, C holds GPU 4 and can use one more; 6
// GPUs in all, N_avg 3, t = 0): A keeps [0] of [0 1] (c_A = 0.5, one of two
// 1-GPU grants, exactly), B keeps [2 3] (c_B = 1). GPU 1 is re-auctioned
// among the non-payers that still want GPUs, B and C, ranked on what they
// hold: T_id,B = 100/min(6/3, 4) = 50, ρ_B = (100/2)/50 = 1; T_id,C =
// 10/min(2, 2) = 5, ρ_C = (1/1)/5 = 0.2. k = max(1, ⌊0.7·2⌋) = 1: B bids
// alone and takes GPU 1 (insensitive, 3 GPUs beat 2). Non-bidders first
// gives it to C instead (TestT5LeftoverToNonbidder).
func TestReauctionGoesToNextWorstOff(t *testing.T) {
	apps := append(t4Apps(), SingleJob("C", 0, 1, 10, 2, Insensitive, []int{4}))
	in := Input{Topo: topo(t, 3, 2), Apps: apps, Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, opts(0.3, true, Reauction))
	if !slices.Equal(r.Apps[0].Kept, []int{0}) || !slices.Equal(r.Apps[1].Kept, []int{2, 3}) {
		t.Fatalf("kept A %v B %v, want [0] [2 3]", r.Apps[0].Kept, r.Apps[1].Kept)
	}
	if a, b, c := r.Apps[0].Final, r.Apps[1].Final, r.Apps[2].Final; !slices.Equal(a, []int{0}) || !slices.Equal(b, []int{1, 2, 3}) || !slices.Equal(c, []int{4}) {
		t.Errorf("final A %v B %v C %v, want [0] [1 2 3] [4]", a, b, c)
	}
	if r.Reauctions != 1 {
		t.Errorf("%d re-auction rounds, want 1 (then the pool is empty)", r.Reauctions)
	}
}

// The valuation decides who gets the one offered GPU. One machine of 4 at
// t = 1000, N_avg 1, f = 0 (both bid), payments off. A arrived just now
// (elapsed 0), 300 GPU-s left of 300, demand 3, holds GPUs 0-1; B arrived at
// 0 (elapsed 1000), 100 left of 1000, demand 2, holds GPU 2. GPU 3 is offered.
//
//	1/ρ: T_A = 300/min(4, 3) = 100, u_A(2) = 100/150 = 2/3, u_A(3) = 1;
//	     T_B = 1000/min(4, 2) = 500, u_B(1) = 500/1100, u_B(2) = 500/1050;
//	     to A: 1·0.4545 = 0.4545 > to B: (2/3)·0.4762 = 0.3175 → A.
//	speed-up: to A: 3·1 = 3 < to B: 2·2 = 4 → B.
func TestValuationDecides(t *testing.T) {
	for _, tc := range []struct {
		v    Valuation
		a, b []int
	}{{ValueRho, []int{0, 1, 3}, []int{2}}, {ValueSpeedup, []int{0, 1}, []int{2, 3}}} {
		a := SingleJob("A", 1000, 300, 300, 3, Insensitive, []int{0, 1})
		b := SingleJob("B", 0, 100, 1000, 2, Insensitive, []int{2})
		a.NAvg, b.NAvg = 1, 1
		in := Input{Topo: topo(t, 1, 4), Now: 1000, Apps: []*App{a, b}, Offer: []int{3}}
		o := opts(0, false, NoLeftover)
		o.Valuation = tc.v
		r := mustRun(t, in, o)
		if !slices.Equal(r.Apps[0].Final, tc.a) || !slices.Equal(r.Apps[1].Final, tc.b) {
			t.Errorf("%v: A %v B %v, want %v %v", tc.v, r.Apps[0].Final, r.Apps[1].Final, tc.a, tc.b)
		}
	}
}
