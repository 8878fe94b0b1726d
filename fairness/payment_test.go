package fairness

import (
	"math"
	"testing"
)

// roundGrants on cum = [0 1 3 6] (grants of 1, 2 and 3 GPUs), all three
// grants won (6 GPUs):
//   - c = 0.5: target 3 GPUs = cum[2] exactly, so 2 grants whatever the draw;
//   - c = 0.4: target 2.4 lies between cum[1] = 1 and cum[2] = 3, so 2
//     grants with probability (2.4 − 1)/(3 − 1) = 0.7 (draw u < 0.7), else
//     1; E = 0.7·3 + 0.3·1 = 2.4;
//   - c = 0.1: target 0.6 between cum[0] = 0 and cum[1] = 1: 1 grant with
//     probability 0.6;
//   - c = 1 keeps all, c = 0 keeps none.
func TestRoundGrants(t *testing.T) {
	cum := []int{0, 1, 3, 6}
	for _, tc := range []struct {
		c, u float64
		want int
	}{
		{0.5, 0, 2}, {0.5, 0.999, 2},
		{0.4, 0.69, 2}, {0.4, 0.71, 1},
		{0.1, 0.59, 1}, {0.1, 0.61, 0},
		{1, 0.5, 3}, {0, 0, 0},
	} {
		if got := roundGrants(cum, 3, tc.c, tc.u); got != tc.want {
			t.Errorf("c %v u %v: %d grants, want %d", tc.c, tc.u, got, tc.want)
		}
	}
}

// A lone gang bidder keeps its gang with probability c, never 0 GPUs with
// certainty. One machine of 4 + k GPUs, t = 0 (no elapsed time, so
// 1/ρ = T_id·rate/R is linear in the rate); A is one gang of 4, B one
// elastic job of up to 4, both insensitive, both holding nothing, f = 0:
// both bid. Serving both beats serving one (fewest zero utilities), so
// G* = (A: 4, B: k); without A, B takes its 4. c_A = u_B(k)/u_B(4) = k/4
// and c_B = 1 (without B, A still gets its 4). Over 4,000 seeds A keeps
// its gang in a share within 4σ of k/4, σ = √(c(1−c)/4000) ≤ 0.0079.
func TestLoneGangKeepsItsGangWithProbabilityC(t *testing.T) {
	for _, k := range []int{1, 2, 3} {
		c := float64(k) / 4
		tp := topo(t, 1, 4+k)
		offer := make([]int, 4+k)
		for g := range offer {
			offer[g] = g
		}
		mk := func() Input {
			a := &App{Name: "A", TotalWork: 4000, Demand: 4, Sens: Insensitive, Jobs: []Job{{Remaining: 4000, MaxGPUs: 4, Gang: true}}}
			b := SingleJob("B", 0, 4000, 4000, 4, Insensitive, nil)
			a.NAvg, b.NAvg = 2, 2
			return Input{Topo: tp, Apps: []*App{a, b}, Offer: offer}
		}
		const n = 4000
		kept := 0
		for seed := range uint64(n) {
			o := opts(0, true, NoLeftover)
			o.Seed = seed
			r := mustRun(t, mk(), o)
			a := r.Apps[0]
			if len(a.PF) != 4 || !near(a.Keep, c) || r.Apps[1].Keep != 1 || len(r.Apps[1].PF) != k {
				t.Fatalf("k %d: PF A %v (c %v) B %v (c %v); want 4 GPUs at c = %v, B %d at c = 1", k, a.PF, a.Keep, r.Apps[1].PF, r.Apps[1].Keep, c, k)
			}
			switch len(a.Kept) {
			case 4:
				kept++
			case 0:
			default:
				t.Fatalf("k %d seed %d: a gang kept %v", k, seed, a.Kept)
			}
		}
		share := float64(kept) / n
		sigma := math.Sqrt(c * (1 - c) / n)
		if math.Abs(share-c) > 4*sigma || kept == 0 || kept == n {
			t.Errorf("c = %v: gang kept in %d of %d auctions (%.4f), want %.4f ± %.4f", c, kept, n, share, c, 4*sigma)
		}
	}
}

// An elastic winner keeps c·|G*| GPUs in expectation. T3's machine with
// 6 GPUs and B growing to 6: A (up to 6) and B (up to 6) split 3 + 3;
// without A, B takes 6, so c_A = 3/6 = 0.5: 1.5 GPUs of 3 in
// expectation, i.e. 1 or 2 with probability 1/2 each.
func TestElasticKeepsCInExpectation(t *testing.T) {
	tp := topo(t, 1, 6)
	in := Input{Topo: tp, Apps: []*App{
		SingleJob("A", 0, 100, 100, 6, Insensitive, nil),
		SingleJob("B", 0, 100, 100, 6, Insensitive, nil),
	}, Offer: []int{0, 1, 2, 3, 4, 5}}
	const n = 4000
	sum, ones := 0, 0
	for seed := range uint64(n) {
		o := opts(0, true, NoLeftover)
		o.Seed = seed
		r := mustRun(t, in, o)
		a := r.Apps[0]
		if len(a.PF) != 3 || a.Keep != 0.5 {
			t.Fatalf("PF %v c %v, want 3 GPUs at 0.5", a.PF, a.Keep)
		}
		if k := len(a.Kept); k != 1 && k != 2 {
			t.Fatalf("seed %d: kept %d, want 1 or 2", seed, k)
		} else if k == 1 {
			ones++
		}
		sum += len(a.Kept)
	}
	if mean := float64(sum) / n; math.Abs(mean-1.5) > 4*0.5/math.Sqrt(n) {
		t.Errorf("mean kept %.4f, want 1.5 ± %.4f", mean, 4*0.5/math.Sqrt(n))
	}
}

// The payment in lease time: the gang of the first test (k = 2, c = 0.5)
// keeps all 4 GPUs, for half the lease; floor keeps none (the defect);
// off keeps all for the whole lease.
func TestPaymentForms(t *testing.T) {
	tp := topo(t, 1, 6)
	mk := func() Input {
		a := &App{Name: "A", TotalWork: 4000, Demand: 4, Sens: Insensitive, Jobs: []Job{{Remaining: 4000, MaxGPUs: 4, Gang: true}}}
		b := SingleJob("B", 0, 4000, 4000, 4, Insensitive, nil)
		return Input{Topo: tp, Apps: []*App{a, b}, Offer: []int{0, 1, 2, 3, 4, 5}}
	}
	for _, tc := range []struct {
		p     Payment
		kept  int
		share float64
	}{{PayLease, 4, 0.5}, {PayFloor, 0, 1}, {PayOff, 4, 1}} {
		o := opts(0, true, NoLeftover)
		o.Payment = tc.p
		a := mustRun(t, mk(), o).Apps[0]
		if len(a.Kept) != tc.kept || a.LeaseShare != tc.share {
			t.Errorf("%v: kept %v for %v of the lease, want %d GPUs for %v", tc.p, a.Kept, a.LeaseShare, tc.kept, tc.share)
		}
	}
	for _, s := range []string{"on", "random", "lease", "floor", "off"} {
		if _, err := ParsePayment(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParsePayment("yes"); err == nil {
		t.Error("payment form yes accepted")
	}
}
