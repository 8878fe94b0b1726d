package fairness

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// bidSizes spreads maxBids sizes over an app's range by rounding each
// q/maxBids share of its GPUs up to the first grant count reaching it.
// Worked by hand:
//   - 10 one-GPU grants, 3 bids: shares ⌈10/3⌉ = 4, ⌈20/3⌉ = 7, 10 →
//     sizes 4, 7, 10 (rounding down would give 3, 6, 10);
//   - 5 two-GPU grants (cum 0, 2, ..., 10), 4 bids: shares ⌈10/4⌉ = 3,
//     ⌈20/4⌉ = 5, ⌈30/4⌉ = 8, 10 → the first p with cum[p] >= share: 2,
//     3, 4, 5 (rounding down: 2, 5, 7, 10 → 1, 3, 4, 5);
//   - fewer sizes than bids, or no cap: every size;
//   - a gang of 8 then 1-GPU grants (cum 0, 8, 9, 10), 2 bids: shares 5
//     and 10 → sizes 1 and 3 (the first grant already passes 5).
func TestBidSizes(t *testing.T) {
	seq := func(n, step int) []int {
		c := make([]int, n+1)
		for p := range c {
			c[p] = p * step
		}
		return c
	}
	for _, tc := range []struct {
		cum     []int
		maxBids int
		want    []int
	}{
		{seq(10, 1), 3, []int{4, 7, 10}},
		{seq(5, 2), 4, []int{2, 3, 4, 5}},
		{seq(3, 1), 4, []int{1, 2, 3}},
		{seq(3, 1), 0, []int{1, 2, 3}},
		{seq(3, 1), 3, []int{1, 2, 3}},
		{[]int{0, 8, 9, 10}, 2, []int{1, 3}},
		{seq(0, 1), 4, []int{}},
	} {
		if got := bidSizes(tc.cum, tc.maxBids); !slices.Equal(got, tc.want) {
			t.Errorf("bidSizes(%v, %d) = %v, want %v", tc.cum, tc.maxBids, got, tc.want)
		}
	}
}

// keepFraction by hand, including the zero factors: a bidder served
// without x but not with x drives c_x to 0 (its utility ratio is 0/u);
// one served with x and without it compares as usual; equal zero counts
// cancel.
func TestKeepFraction(t *testing.T) {
	// Three bidders; x = 0. Options: index = choice.
	tables := [][]option{
		{{0, 0, 0}, {1, 2, 3}},
		{{0, 0, 0}, {1, 1, 2}, {2, 2, 4}},
		{{0, 0, 1}, {1, 1, 2}},
	}
	for _, tc := range []struct {
		name            string
		choice, without []int
		want            float64
	}{
		// j=1: 2/4, j=2: 2/2 → 0.5.
		{"both served", []int{1, 1, 1}, []int{-1, 2, 1}, 0.5},
		// j=1 unserved with x, served without: 0.
		{"one more zero with x", []int{1, 0, 1}, []int{-1, 2, 1}, 0},
		// j=1 unserved either way: its factor drops out; j=2: 1/2.
		{"zero both ways", []int{1, 0, 0}, []int{-1, 0, 1}, 0.5},
		// Capped at 1 against rounding (a better-off choice with x).
		{"capped", []int{1, 2, 1}, []int{-1, 1, 1}, 1},
	} {
		if got := keepFraction(tables, tc.choice, tc.without, 0); got != tc.want {
			t.Errorf("%s: c = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A lease is released only by its holder, and every GPU id is checked
// against the cluster's size, the last one included (an id equal to the
// size is an error, not an index past the end).
func TestLeasesRefuseStrangers(t *testing.T) {
	l := NewLeases(4)
	if err := l.Grant(0, []int{0, 1}, 0, 600); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(1, []int{0}); err == nil || !strings.Contains(err.Error(), "app 1 does not hold GPU 0") {
		t.Errorf("app 1 released app 0's GPU: err %v", err)
	}
	if err := l.Release(0, []int{0, 2}); err == nil {
		t.Error("app 0 released GPU 2, which nobody holds")
	}
	// A refused release changes nothing.
	if got := l.Holder(0, 100); got != 0 {
		t.Errorf("GPU 0 held by %d after refused releases, want app 0", got)
	}
	if got := l.Offer(100); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("offer %v, want [2 3]", got)
	}
	for _, g := range []int{4, 5, -1} {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Grant of GPU %d panicked: %v", g, r)
				}
			}()
			return l.Grant(2, []int{3, g}, 0, 600)
		}()
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("Grant of GPU %d: err %v, want it refused", g, err)
		}
		if err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Release of GPU %d panicked: %v", g, r)
				}
			}()
			return l.Release(0, []int{g})
		}(); err == nil {
			t.Errorf("Release of GPU %d accepted", g)
		}
	}
	// The refused grant took nothing, not even the valid GPU 3.
	if got := l.Holder(3, 100); got != -1 {
		t.Errorf("GPU 3 held by %d after a refused grant", got)
	}
}

// The re-auction ranks ρ ties by the wait since each app last held GPUs
// (App.Since), not by arrival. One 4-GPU machine at t = 1000, every app a
// 2-GPU gang of 100 GPU-s, none holding anything: ρ = +Inf for all.
// P (arrived 50, never held GPUs: since 50), A (arrived 0, last held at
// 500) and B (arrived 100, last held at 200). f = 0.5: the auction's
// n = 3 gives k = ⌊1.5⌋ = 1 bidder, the longest waiting, P, which takes
// GPUs 0-1 and pays nothing (alone, c = 1). The re-auction among A and B
// (k = ⌊0.5·2⌋ = 1) goes to B, waiting since 200, not A, waiting since
// 500 though it arrived first: B gets GPUs 2-3 and A nothing.
func TestReauctionTieBySince(t *testing.T) {
	gang := func(name string, arrival, since float64) *App {
		return &App{Name: name, Arrival: arrival, Since: since, TotalWork: 100, Demand: 2, Sens: Insensitive,
			Jobs: []Job{{Remaining: 100, MaxGPUs: 2, Gang: true}}}
	}
	in := Input{Topo: topo(t, 1, 4), Now: 1000, Apps: []*App{gang("P", 50, 0), gang("A", 0, 500), gang("B", 100, 200)},
		Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, opts(0.5, true, Reauction))
	if !slices.Equal(r.Bidders, []int{0}) {
		t.Fatalf("bidders %v, want [0] (P)", r.Bidders)
	}
	if p, a, b := r.Apps[0].Final, r.Apps[1].Final, r.Apps[2].Final; !slices.Equal(p, []int{0, 1}) || len(a) != 0 || !slices.Equal(b, []int{2, 3}) {
		t.Errorf("final P %v A %v B %v, want [0 1] [] [2 3]", p, a, b)
	}
}

// In a re-auction, an app that gained GPUs in this auction ranks after
// an equally badly off app that did not (it has just been served). One
// 6-GPU machine at t = 100, f = 0.3, payments by floor, speed-up bids.
// X and Y each have two 2-GPU gangs of 100 GPU-s (W = 200, D = 4,
// arrived 0); Y runs one gang on GPUs 0-1, X nothing; W has one 2-GPU
// gang of 100 GPU-s and nothing. N_avg 1: T_id = 200/min(6, 4) = 50.
//   - n = 3 want GPUs, k = ⌊0.7·3⌋ = 2: X and W (ρ = +Inf) bid on 2-5.
//     PF: X 2 and W 2 (speed-ups 2·2 = 4; X 4 and W 0 leaves W at 0).
//     Without X, W still gets 2: c_X = 1. Without W, X gets 4:
//     c_W = 2/4 = 0.5, ⌊0.5·2⌋ = 1 GPU is less than its gang, so W keeps
//     nothing and pays GPUs 4-5 back.
//   - Re-auction among the apps that did not pay and still want GPUs, X
//     (now on 2-3) and Y (on 0-1): ρ = (100 + 200/2)/50 = 4 each, k =
//     ⌊0.7·2⌋ = 1. Y has waited since it arrived; X was served at 100:
//     Y bids and takes 4-5 (X first, by index, would take them).
func TestReauctionTieServedLast(t *testing.T) {
	two := func(name string, held []int) *App {
		return &App{Name: name, TotalWork: 200, Demand: 4, Sens: Insensitive,
			Jobs: []Job{{Remaining: 100, MaxGPUs: 2, Gang: true, Held: held}, {Remaining: 100, MaxGPUs: 2, Gang: true}}}
	}
	w := &App{Name: "W", TotalWork: 100, Demand: 2, Sens: Insensitive, Jobs: []Job{{Remaining: 100, MaxGPUs: 2, Gang: true}}}
	in := Input{Topo: topo(t, 1, 6), Now: 100, Apps: []*App{two("X", nil), two("Y", []int{0, 1}), w}, Offer: []int{2, 3, 4, 5}}
	o := opts(0.3, true, Reauction)
	o.Payment = PayFloor
	r := mustRun(t, in, o)
	if !slices.Equal(r.Bidders, []int{0, 2}) || r.Apps[0].Keep != 1 || r.Apps[2].Keep != 0.5 {
		t.Fatalf("bidders %v, c_X %v, c_W %v; want [0 2], 1, 0.5", r.Bidders, r.Apps[0].Keep, r.Apps[2].Keep)
	}
	if x, y, w := r.Apps[0].Final, r.Apps[1].Final, r.Apps[2].Final; !slices.Equal(x, []int{2, 3}) || !slices.Equal(y, []int{0, 1, 4, 5}) || len(w) != 0 {
		t.Errorf("final X %v Y %v W %v, want [2 3] [0 1 4 5] []", x, y, w)
	}
}

// With fewer than 10 apps wanting GPUs, f = 0.8 leaves one bidder
// (⌊0.2·9⌋ = 1), as in the authors' code: it takes its best bundle with
// no one to pay for (c = 1), so payments on or off give the same auction,
// and so does any f up to 1 − 1/9 (still one bidder). Nine identical apps
// (each can use 4 GPUs, none holding any) on one 4-GPU machine: the first
// bids alone and wins all 4. With a tenth app two bid, PF splits the
// machine 2 + 2 and each keeps c = 0.5 of its half.
func TestOneBidderBelowTenApps(t *testing.T) {
	apps := func(n int) []*App {
		var out []*App
		for i := range n {
			out = append(out, SingleJob(string(rune('A'+i)), 0, 1000, 1000, 4, Insensitive, nil))
		}
		return out
	}
	in := Input{Topo: topo(t, 1, 4), Apps: apps(9), Offer: []int{0, 1, 2, 3}}
	for _, f := range []float64{0.8, 0.85} {
		for _, pay := range []bool{true, false} {
			r := mustRun(t, in, opts(f, pay, Reauction))
			if r.N != 9 || r.K != 1 || r.Apps[0].Keep != 1 || !slices.Equal(r.Apps[0].Final, []int{0, 1, 2, 3}) {
				t.Fatalf("f %v payments %v: n %d k %d, A keeps %v and ends with %v; want 9, 1, 1, all 4", f, pay, r.N, r.K, r.Apps[0].Keep, r.Apps[0].Final)
			}
		}
	}
	in.Apps = apps(10)
	r := mustRun(t, in, opts(0.8, true, NoLeftover))
	if r.K != 2 || r.Apps[0].Keep != 0.5 || r.Apps[1].Keep != 0.5 || len(r.Apps[0].PF) != 2 {
		t.Errorf("10 apps: k %d, c %v and %v, A's PF %v; want 2 bidders at c = 0.5 on 2 GPUs each", r.K, r.Apps[0].Keep, r.Apps[1].Keep, r.Apps[0].PF)
	}
}

// NextExpiry is the first lease end strictly after now: a lease ending
// at now has ended (its GPUs are offered at now), so it is not next.
// GPU 0 leased over [0, 600), GPU 1 over [100, 400).
func TestNextExpiryAfterNow(t *testing.T) {
	l := NewLeases(3)
	if err := l.Grant(0, []int{0}, 0, 600); err != nil {
		t.Fatal(err)
	}
	if err := l.Grant(1, []int{1}, 100, 300); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ now, want float64 }{{0, 400}, {399, 400}, {400, 600}, {599, 600}, {600, math.Inf(1)}} {
		if got := l.NextExpiry(c.now); got != c.want {
			t.Errorf("NextExpiry(%v) = %v, want %v", c.now, got, c.want)
		}
	}
}

// Bidders with ceiling rounding: ⌈(1 − f)·n⌉ at f = 0.8. n = 6: ⌈1.2⌉ =
// 2; n = 10: exactly 2, not 3; n = 11: ⌈2.2⌉ = 3; n = 1: 1. Floor
// rounding gives 1, 2, 2, 1.
func TestBiddersCeilExact(t *testing.T) {
	k, err := NewKnob(0.8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ n, floor, ceil int }{{6, 1, 2}, {10, 2, 2}, {11, 2, 3}, {1, 1, 1}} {
		k.Ceil = false
		f := k.Bidders(c.n)
		k.Ceil = true
		if g := k.Bidders(c.n); f != c.floor || g != c.ceil {
			t.Errorf("n = %d: %d bidders (floor), %d (ceil); want %d and %d", c.n, f, g, c.floor, c.ceil)
		}
	}
}

// A lease may be renewed by its holder before it ends (GPU 0, app 0,
// [0, 600) renewed at 300 for 600: it ends at 900), not taken by another
// app (app 1 at 300 is refused), and taken by anyone once it has ended.
func TestLeaseRenewal(t *testing.T) {
	l := NewLeases(2)
	if err := l.Grant(0, []int{0}, 0, 600); err != nil {
		t.Fatal(err)
	}
	if err := l.Grant(0, []int{0}, 300, 600); err != nil || l.End(0) != 900 {
		t.Errorf("renewal by the holder: %v, ends at %v, want 900", err, l.End(0))
	}
	if err := l.Grant(1, []int{0}, 300, 600); err == nil {
		t.Error("app 1 took GPU 0 from its holder at 300")
	}
	if err := l.Grant(1, []int{0}, 900, 600); err != nil || l.Holder(0, 900) != 1 {
		t.Errorf("app 1 at 900, after the lease ended: %v, holder %d", err, l.Holder(0, 900))
	}
}
