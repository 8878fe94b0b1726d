package fairness

import (
	"math"
	"slices"
	"testing"
)

func topo(t *testing.T, m, g int) *Topology {
	t.Helper()
	tp, err := UniformTopology(m, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func near(a, b float64) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b))
}

// T1: ρ with placement on 4×4 GPUs, N_avg = 4, W = 64 GPU-h, D_max = 8,
// 48 GPU-h left at t = 4 h, S = 0.8 across machines.
func TestT1RhoWithPlacement(t *testing.T) {
	tp := topo(t, 4, 4)
	ctx := Context{Now: 4, ClusterGPUs: 16, ActiveApps: 4}
	for _, tc := range []struct {
		name string
		held []int
		want float64
	}{
		{"4 GPUs on one machine", []int{0, 1, 2, 3}, 1.0},
		{"8 GPUs on two machines", []int{0, 1, 2, 3, 4, 5, 6, 7}, 0.71875},
		{"no GPUs", nil, math.Inf(1)},
	} {
		a := SingleJob("A", 0, 48, 64, 8, Sensitivity{Machine: 0.8}, tc.held)
		a.NAvg = 4
		if got := RhoHeld(tp, a, ctx, Themis{}); !near(got, tc.want) {
			t.Errorf("%s: ρ = %v, want %v", tc.name, got, tc.want)
		}
	}
	a := SingleJob("A", 0, 48, 64, 8, Sensitivity{Machine: 0.8}, nil)
	a.NAvg = 4
	if got := (Themis{}).Ideal(a, ctx); got != 16 {
		t.Errorf("T_id = %v, want 16", got)
	}
}

// T2: the knob's bidder count, exact in integers, and the tie rule.
func TestT2KnobCount(t *testing.T) {
	for _, tc := range []struct {
		f       float64
		n, want int
		ceil    bool
	}{
		{0.8, 10, 2, false},
		{0.8, 7, 1, false},
		{0.8, 7, 2, true},
		{0.8, 3, 1, false},
		{0.0, 5, 5, false},
		{1.0, 5, 1, false},
		{0.8, 0, 0, false},
		{0.3, 3, 2, false},
	} {
		k, err := NewKnob(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		k.Ceil = tc.ceil
		if got := k.Bidders(tc.n); got != tc.want {
			t.Errorf("f=%v n=%d ceil=%v: k = %d, want %d", tc.f, tc.n, tc.ceil, got, tc.want)
		}
	}
	// The float64 trap the integer form avoids.
	f, n := 0.8, 10.0 // variables: Go folds constants exactly
	if naive := int(math.Floor((1 - f) * n)); naive != 1 {
		t.Fatalf("float64 floor of (1-0.8)*10 = %d; the trap this test documents is gone", naive)
	}
	for _, f := range []float64{-0.1, 1.1, math.NaN(), 0.1234567} {
		if _, err := NewKnob(f); err == nil {
			t.Errorf("NewKnob(%v) accepted", f)
		}
	}
	// Tie at the cutoff: apps 3 and 7 both at ρ = 2, k = 1, nobody above.
	rho := []float64{1, 1, 1, 2, 1, 1, 1, 2}
	arr := make([]float64, 8)
	if got := WorstOff(rho, arr, 1); !slices.Equal(got, []int{3}) {
		t.Errorf("equal arrivals: worst-off = %v, want [3] (ids ascending)", got)
	}
	arr[7] = -5
	if got := WorstOff(rho, arr, 1); !slices.Equal(got, []int{7}) {
		t.Errorf("app 7 earlier: worst-off = %v, want [7] (earlier arrival first)", got)
	}
}

func mustRun(t *testing.T, in Input, opt Options) *Result {
	t.Helper()
	r, err := Run(in, opt)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, in, r)
	return r
}

// checkResult asserts the auction's invariants: no GPU given twice, only
// offered GPUs given, held GPUs kept, kept ⊆ PF, leftover = offer − given.
func checkResult(t *testing.T, in Input, r *Result) {
	t.Helper()
	offered := map[int]bool{}
	for _, g := range in.Offer {
		offered[g] = true
	}
	given := map[int]string{}
	for i, ar := range r.Apps {
		a := in.Apps[i]
		for _, g := range ar.Gained {
			if !offered[g] {
				t.Fatalf("app %s gained GPU %d, which was not offered", a.Name, g)
			}
			if o, dup := given[g]; dup {
				t.Fatalf("GPU %d given to %s and %s", g, o, a.Name)
			}
			given[g] = a.Name
		}
		for _, g := range ar.Kept {
			if !slices.Contains(ar.PF, g) {
				t.Fatalf("app %s kept %d outside its PF bundle %v", a.Name, g, ar.PF)
			}
		}
		for _, g := range a.Held() {
			if !slices.Contains(ar.Final, g) {
				t.Fatalf("app %s lost held GPU %d", a.Name, g)
			}
		}
		if got := len(ar.Final); got > a.Demand {
			t.Fatalf("app %s ends with %d GPUs, demand %d", a.Name, got, a.Demand)
		}
		n := 0
		for j, js := range ar.Jobs {
			n += len(js)
			if a.Jobs[j].Gang && len(js) != 0 && len(js)+len(a.Jobs[j].Held) != a.Jobs[j].MaxGPUs {
				t.Fatalf("app %s job %d: gang of %d got %d", a.Name, j, a.Jobs[j].MaxGPUs, len(js))
			}
		}
		if n != len(ar.Gained) {
			t.Fatalf("app %s: jobs got %d GPUs, app gained %d", a.Name, n, len(ar.Gained))
		}
	}
	for _, g := range r.Leftover {
		if _, ok := given[g]; ok || !offered[g] {
			t.Fatalf("leftover GPU %d was given or not offered", g)
		}
	}
	if len(given)+len(r.Leftover) != len(in.Offer) {
		t.Fatalf("%d given + %d leftover != %d offered", len(given), len(r.Leftover), len(in.Offer))
	}
}

func opts(f float64, payments bool, l Leftover) Options {
	o := DefaultOptions()
	o.Knob, _ = NewKnob(f)
	if !payments {
		o.Payment = PayOff
	}
	o.Leftover = l
	return o
}

// T3: symmetric PA on one 4-GPU machine: PF (2, 2), c = 0.5 each, each
// keeps 1, 2 left over.
func TestT3SymmetricPA(t *testing.T) {
	in := Input{Topo: topo(t, 1, 4), Apps: []*App{
		SingleJob("A", 0, 100, 100, 4, Insensitive, nil),
		SingleJob("B", 0, 100, 100, 4, Insensitive, nil),
	}, Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, opts(0, true, NoLeftover))
	if r.K != 2 {
		t.Fatalf("bidders %d, want 2", r.K)
	}
	for i, a := range r.Apps {
		if len(a.PF) != 2 || a.Keep != 0.5 || len(a.Kept) != 1 {
			t.Errorf("app %d: PF %v c %v kept %v; want 2 GPUs, c = 0.5, 1 kept", i, a.PF, a.Keep, a.Kept)
		}
	}
	if len(r.Leftover) != 2 {
		t.Errorf("leftover %v, want 2 GPUs", r.Leftover)
	}
	// Payments off: each keeps its PF bundle.
	r = mustRun(t, in, opts(0, false, NoLeftover))
	if len(r.Apps[0].Kept) != 2 || len(r.Apps[1].Kept) != 2 || len(r.Leftover) != 0 {
		t.Errorf("payments off: kept %v %v leftover %v", r.Apps[0].Kept, r.Apps[1].Kept, r.Leftover)
	}
}

func t4Apps() []*App {
	return []*App{
		SingleJob("A", 0, 100, 100, 4, Sensitivity{Machine: 0.5}, nil),
		SingleJob("B", 0, 100, 100, 4, Insensitive, nil),
	}
}

// T4: PA with placement on 2 + 2 GPUs: A (S = 0.5 spread) and B (S = 1)
// each get one machine; c_A = 0.5 (A keeps 1), c_B = 1 (B keeps 2); the
// leftover is on A's machine, which is machine 0 (A ranks first).
func TestT4PlacementPA(t *testing.T) {
	in := Input{Topo: topo(t, 2, 2), Apps: t4Apps(), Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, opts(0, true, NoLeftover))
	a, b := r.Apps[0], r.Apps[1]
	if !slices.Equal(a.PF, []int{0, 1}) || !slices.Equal(b.PF, []int{2, 3}) {
		t.Errorf("PF A %v B %v, want [0 1] [2 3]", a.PF, b.PF)
	}
	if a.Keep != 0.5 || b.Keep != 1 {
		t.Errorf("c_A %v c_B %v, want 0.5 and 1", a.Keep, b.Keep)
	}
	if !slices.Equal(a.Kept, []int{0}) || !slices.Equal(b.Kept, []int{2, 3}) {
		t.Errorf("kept A %v B %v, want [0] [2 3]", a.Kept, b.Kept)
	}
	if !slices.Equal(r.Leftover, []int{1}) {
		t.Errorf("leftover %v, want [1]", r.Leftover)
	}
	// The work-conserving deviation: with no non-bidder the leftover goes
	// back to the highest-ρ bidder, A.
	r = mustRun(t, in, opts(0, true, NonbiddersFirst))
	if !slices.Equal(r.Apps[0].Final, []int{0, 1}) || len(r.Leftover) != 0 {
		t.Errorf("nonbidders-first without C: A final %v leftover %v, want [0 1] []", r.Apps[0].Final, r.Leftover)
	}
}

// T5: T4 plus a non-bidding C that holds GPU 4 and can use one more: the
// leftover goes to C.
func TestT5LeftoverToNonbidder(t *testing.T) {
	apps := append(t4Apps(), SingleJob("C", 0, 1, 10, 2, Insensitive, []int{4}))
	in := Input{Topo: topo(t, 3, 2), Apps: apps, Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, opts(0.3, true, NonbiddersFirst))
	if r.N != 3 || r.K != 2 || r.Apps[2].Bidder {
		t.Fatalf("n %d k %d C bidder %v; want 3, 2, false", r.N, r.K, r.Apps[2].Bidder)
	}
	if !slices.Equal(r.Apps[2].Final, []int{1, 4}) || len(r.Leftover) != 0 {
		t.Errorf("C final %v leftover %v, want [1 4] []", r.Apps[2].Final, r.Leftover)
	}
	if !slices.Equal(r.Apps[0].Final, []int{0}) || !slices.Equal(r.Apps[1].Final, []int{2, 3}) {
		t.Errorf("A final %v B final %v, want [0] [2 3]", r.Apps[0].Final, r.Apps[1].Final)
	}
	// bidders-only skips C: the GPU goes back to A.
	r = mustRun(t, in, opts(0.3, true, BiddersOnly))
	if !slices.Equal(r.Apps[0].Final, []int{0, 1}) || !slices.Equal(r.Apps[2].Final, []int{4}) {
		t.Errorf("bidders-only: A %v C %v, want [0 1] [4]", r.Apps[0].Final, r.Apps[2].Final)
	}
}

// T7: leases are never revoked early. A wins 4 GPUs at t = 0 (lease
// 600 s); B arrives at 100 with the cluster full and gets nothing until
// 600, when all 4 are offered again; if A finishes at 300, they are
// offered at once.
func TestT7LeasesNotRevoked(t *testing.T) {
	tp := topo(t, 1, 4)
	l := NewLeases(4)
	a := SingleJob("A", 0, 3600, 3600, 4, Insensitive, nil)
	r := mustRun(t, Input{Topo: tp, Apps: []*App{a}, Offer: l.Offer(0)}, DefaultOptions())
	if !slices.Equal(r.Apps[0].Final, []int{0, 1, 2, 3}) {
		t.Fatalf("A won %v, want all 4", r.Apps[0].Final)
	}
	if err := l.Grant(0, r.Apps[0].Final, 0, 600); err != nil {
		t.Fatal(err)
	}
	a.Jobs[0].Held = r.Apps[0].Final
	b := SingleJob("B", 100, 3600, 3600, 4, Insensitive, nil)
	for _, now := range []float64{100, 300, 599.999} {
		offer := l.Offer(now)
		r := mustRun(t, Input{Topo: tp, Now: now, Apps: []*App{a, b}, Offer: offer}, DefaultOptions())
		if len(offer) != 0 || len(r.Apps[1].Final) != 0 {
			t.Fatalf("t=%v: offer %v, B got %v; want nothing before 600", now, offer, r.Apps[1].Final)
		}
		if err := l.Grant(1, []int{0}, now, 600); err == nil {
			t.Fatalf("t=%v: granting A's GPU to B succeeded", now)
		}
	}
	if got := l.NextExpiry(100); got != 600 {
		t.Errorf("next expiry %v, want 600", got)
	}
	if got := l.Offer(600); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("offer at 600: %v, want all 4", got)
	}
	// A finishing early frees its GPUs for an immediate auction.
	if err := l.Release(0, []int{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got := l.Offer(300); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("offer after A finished: %v, want all 4", got)
	}
	if err := l.Grant(0, []int{0}, 0, -1); err == nil {
		t.Error("negative lease accepted")
	}
}

// T9: water-fill inside an app: jobs with 30 and 10 GPU-h left on 4 GPUs
// split (3, 1), both finishing in 10 h; (2, 2) would take 15 h.
func TestT9WaterFill(t *testing.T) {
	a := &App{Name: "A", TotalWork: 40, Demand: 8, Sens: Insensitive, Jobs: []Job{
		{Remaining: 30, MaxGPUs: 4}, {Remaining: 10, MaxGPUs: 4},
	}}
	if got := WaterFill(a, 4); !slices.Equal(got, []int{3, 1}) {
		t.Fatalf("split %v, want [3 1]", got)
	}
	in := Input{Topo: topo(t, 1, 4), Apps: []*App{a}, Offer: []int{0, 1, 2, 3}}
	r := mustRun(t, in, DefaultOptions())
	j := r.Apps[0].Jobs
	if len(j[0]) != 3 || len(j[1]) != 1 {
		t.Fatalf("auction split %v, want 3 and 1 GPUs", j)
	}
	finish := max(30/float64(len(j[0])), 10/float64(len(j[1])))
	if finish != 10 {
		t.Errorf("app finishes in %v h, want 10", finish)
	}
	// Gangs: a 2-GPU gang with more work goes first; a doomed job gets
	// nothing.
	g := &App{Name: "G", TotalWork: 100, Demand: 8, Sens: Insensitive, Jobs: []Job{
		{Remaining: 10, MaxGPUs: 2, Gang: true}, {Remaining: 50, MaxGPUs: 2, Gang: true}, {Remaining: 99, MaxGPUs: 1, Doomed: true},
	}}
	if got := WaterFill(g, 3); !slices.Equal(got, []int{0, 2, 0}) {
		t.Errorf("gang split %v, want [0 2 0]", got)
	}
	if got := WaterFill(g, 4); !slices.Equal(got, []int{2, 2, 0}) {
		t.Errorf("gang split %v, want [2 2 0]", got)
	}
}

// T10: apps already at their demand, or with no work left, are not
// counted in n and do not bid.
func TestT10SatisfiedAppsExcluded(t *testing.T) {
	apps := []*App{
		SingleJob("full", 0, 100, 100, 2, Insensitive, []int{0, 1}),
		SingleJob("done", 0, 0, 100, 2, Insensitive, nil),
		SingleJob("X", 0, 100, 100, 2, Insensitive, []int{2}),
		SingleJob("Y", 0, 100, 100, 2, Insensitive, nil),
	}
	in := Input{Topo: topo(t, 2, 4), Apps: apps, Offer: []int{3, 4, 5, 6, 7}}
	r := mustRun(t, in, opts(0.5, true, NoLeftover))
	if r.N != 2 || r.K != 1 {
		t.Fatalf("n %d k %d, want 2 and 1", r.N, r.K)
	}
	if r.Apps[0].Wants || r.Apps[1].Wants || r.Apps[0].Bidder || r.Apps[1].Bidder {
		t.Errorf("satisfied apps counted: %+v %+v", r.Apps[0], r.Apps[1])
	}
	if !r.Apps[3].Bidder {
		t.Errorf("Y (ρ = +Inf) should be the one bidder; bidders %v", r.Bidders)
	}
}

// Post-run ρ: two apps on 8 GPUs. A: [0, 10] h, 40 GPU-h, D = 4. B:
// [5, 15] h, 80 GPU-h, D = 8. Both alive for 5 of A's 10 h: N_avg(A) =
// (5·1 + 5·2)/10 = 1.5, share min(8/1.5, 4) = 4, T_id = 10, ρ_A = 1.
// N_avg(B) = 1.5 too, share min(5.33, 8) = 16/3, T_id = 15, ρ_B = 2/3.
func TestAppStats(t *testing.T) {
	st := AppStats([]AppRun{
		{Name: "A", Arrival: 0, Finish: 10, Work: 40, Demand: 4},
		{Name: "B", Arrival: 5, Finish: 15, Work: 80, Demand: 8},
	}, 8)
	if !near(st[0].NAvg, 1.5) || !near(st[0].Rho, 1) || !near(st[1].NAvg, 1.5) || !near(st[1].Rho, 2.0/3) {
		t.Fatalf("got %+v", st)
	}
	s := Summarize(st)
	// Jain = (5/3)² / (2·(1 + 4/9)) = (25/9)/(26/9) = 25/26.
	if s.MaxRho != 1 || !near(s.MeanRho, 5.0/6) || !near(s.Jain, 25.0/26) {
		t.Errorf("summary %+v", s)
	}
}

// T_id never undercuts the app's longest job: 10 jobs, one of 50 h and
// nine of 1 h on 1 GPU each (W = 59 GPU-h, D = 10) alone on 16 GPUs: the
// share is 10 GPUs, W/share = 5.9 h, but the app cannot end before 50 h.
func TestIdealTimeCriticalPath(t *testing.T) {
	if got := IdealTime(59, 50, 10, 1, 16); got != 50 {
		t.Errorf("T_id = %v, want 50", got)
	}
	if got := IdealTime(64, 8, 8, 4, 16); got != 16 {
		t.Errorf("T_id = %v, want 16 (T1: the critical path does not bind)", got)
	}
}

// Per-job ρ on 2 GPUs: J1 (2 GPUs, 0-10 s, ideal 10 s) and J2 (2 GPUs,
// 0-20 s, ideal 10 s). Demand is 4 GPUs on [0, 10) and 2 on [10, 20), so
// max(1, D/C) is 2 then 1: J1's N_avg = 2, ρ = 10/(10·2) = 0.5; J2's
// N_avg = (2·10 + 1·10)/20 = 1.5, ρ = 20/(10·1.5) = 4/3.
func TestJobRhos(t *testing.T) {
	got := JobRhos([]JobRun{{0, 10, 10, 2}, {0, 20, 10, 2}}, 2)
	if !near(got[0], 0.5) || !near(got[1], 4.0/3) {
		t.Errorf("job ρ %v, want [0.5 1.333…]", got)
	}
	// p95 by nearest rank and the count above 2: ρ 1..20 → p95 = the
	// 19th smallest = 19; 18 apps above 2.
	var st []AppStat
	for i := 1; i <= 20; i++ {
		st = append(st, AppStat{Rho: float64(i)})
	}
	if s := Summarize(st); s.P95Rho != 19 || s.Over2 != 18 {
		t.Errorf("p95 %v over2 %d, want 19 and 18", s.P95Rho, s.Over2)
	}
}
