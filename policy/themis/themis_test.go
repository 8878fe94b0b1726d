package themis_test

import (
	"math"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

func spec(id, gpus int, submit, seconds float64, app string) workload.Spec {
	return workload.Spec{ID: id, GPUs: gpus, Submit: submit, Iterations: seconds, Model: "synergy", IterTime: 1, Tracked: true, App: app}
}

// run simulates jobs on machines×per GPUs under Themis with 60 s rounds
// and returns each job's first start and the policy's statistics.
func run(t *testing.T, machines, per int, jobs []workload.Spec, cfg themis.Config) (map[int]float64, themis.Stats) {
	t.Helper()
	cl, err := cluster.New(machines, per)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auction.Metric == nil {
		cfg.Auction = fairness.DefaultOptions()
	}
	p, err := themis.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1})
	if err != nil {
		t.Fatal(err)
	}
	start := map[int]float64{}
	for _, r := range res.Jobs {
		start[r.ID] = r.FirstStart
	}
	return start, p.Stats()
}

// T7 in the simulator: A wins all 4 GPUs at t = 0 with a 600 s lease; B
// arrives at 100 and waits until the lease expires at 600, when the GPUs
// are auctioned again (B, holding nothing, is the worst off and wins).
// If A finishes at 300, B starts at 300.
func TestT7LeaseInSimulator(t *testing.T) {
	start, st := run(t, 1, 4, []workload.Spec{spec(0, 4, 0, 3000, "A"), spec(1, 4, 100, 3000, "B")}, themis.Config{Lease: 600})
	if start[0] != 0 || start[1] != 600 {
		t.Errorf("starts A %v B %v, want 0 and 600", start[0], start[1])
	}
	if len(st.Violations) != 0 {
		t.Errorf("violations: %v", st.Violations)
	}
	start, _ = run(t, 1, 4, []workload.Spec{spec(0, 4, 0, 300, "A"), spec(1, 4, 100, 3000, "B")}, themis.Config{Lease: 600})
	if start[1] != 300 {
		t.Errorf("B starts at %v, want 300 (A finished)", start[1])
	}
	// A longer lease holds B off longer.
	start, _ = run(t, 1, 4, []workload.Spec{spec(0, 4, 0, 3000, "A"), spec(1, 4, 100, 3000, "B")}, themis.Config{Lease: 1200})
	if start[1] != 1200 {
		t.Errorf("lease 1200: B starts at %v, want 1200", start[1])
	}
	if _, err := themis.New(themis.Config{Lease: -5}); err == nil {
		t.Error("negative lease accepted")
	}
}

// Invariants on generated app workloads: no lease taken back early, no GPU
// given twice, gangs whole (the simulator's round reader rejects the last
// two outright), and the same seed gives the same run.
func TestInvariantsOnGeneratedApps(t *testing.T) {
	jobs, err := workload.GenerateThemisEmbedded(workload.ThemisOptions{Apps: 25, Rate: 6, Seed: 4, MaxJobs: 12, SingleShare: 0.1, Kill: 0.3, MaxSeconds: 6 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []fairness.Options{fairness.DefaultOptions(), {Knob: fairness.DefaultKnob, Leftover: fairness.NoLeftover}} {
		a, st := run(t, 4, 4, jobs, themis.Config{Auction: o})
		if len(st.Violations) != 0 {
			t.Fatalf("violations: %v", st.Violations)
		}
		if st.Auctions == 0 || st.PlacementScore <= 0 || st.PlacementScore > 1 {
			t.Errorf("stats %+v", st)
		}
		b, _ := run(t, 4, 4, jobs, themis.Config{Auction: o})
		keys := func(m map[int]float64) []float64 {
			var out []float64
			for i := range len(jobs) {
				out = append(out, m[i])
			}
			return out
		}
		if !slices.Equal(keys(a), keys(b)) {
			t.Error("same inputs, different runs")
		}
	}
}

// A job whose app wins back only part of its GPUs keeps them all when a
// move would gain it nothing. 2×2 GPUs; A runs a 3-GPU gang (on [0 1 2])
// and a 1-GPU gang (on [3]) from t = 0 (all 4 GPUs, lease 600 s); B (one
// 1-GPU job) arrives at 100 and waits. At 600 every lease expires and all
// 4 GPUs are offered: n = 2 apps want GPUs, k = max(1, ⌊0.2·2⌋) = 1, and
// B (ρ = +Inf, holding nothing) bids alone; its best 1-GPU bundle is on
// the tightest machine, lowest id on the tie: GPU 0. A, the non-bidder,
// takes the leftover 3 GPUs [1 2 3]; its water-fill gives them to the
// 3-GPU gang (both jobs hold nothing, so the tie goes to more remaining
// work). The auction's plan moved the gang to [1 2 3], as spread over
// the two machines as [0 1 2]: a move without gain (each costs a restart,
// on Kubernetes an eviction). No move without gain: the gang keeps
// [0 1 2] and B, as fast on any GPU, takes GPU 3 instead. B starts at
// 600 on GPU 3, and no invariant breaks.
func TestPartialWinBackKeepsTheJob(t *testing.T) {
	cl, err := cluster.New(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []workload.Spec{spec(0, 3, 0, 5000, "A"), spec(1, 1, 0, 5000, "A"), spec(2, 1, 100, 3000, "B")}
	var bAt600 []int
	var aAt600 []int
	changesAt600 := -1
	var statsAt600 themis.Stats
	res, err := sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
		Observe: func(now float64, order []*workload.Job, alloc [][]int) {
			if now != 600 {
				return
			}
			statsAt600 = p.Stats()
			changesAt600 = statsAt600.LeaseChanges
			for i, j := range order {
				switch j.ID {
				case 2:
					bAt600 = slices.Clone(alloc[i])
				case 0:
					aAt600 = slices.Clone(alloc[i])
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	start := map[int]float64{}
	for _, r := range res.Jobs {
		start[r.ID] = r.FirstStart
	}
	if start[2] != 600 || !slices.Equal(bAt600, []int{3}) {
		t.Errorf("B starts at %v on %v, want 600 on [3]", start[2], bAt600)
	}
	if !slices.Equal(aAt600, []int{0, 1, 2}) {
		t.Errorf("A's 3-GPU gang at 600 on %v, want [0 1 2] (kept: [1 2 3] gains it nothing)", aAt600)
	}
	// Lease changes by 600: A's two launches at 0 (B's arrival at 120
	// frees nothing: both A jobs are leased), then B's launch. The gang
	// is leased again where it runs; A's 1-GPU job, stopped, takes no
	// lease.
	if changesAt600 != 3 {
		t.Errorf("lease changes by 600: %d, want 3", changesAt600)
	}
	if st := statsAt600; st.KeptWithoutGain != 1 || st.MovesWithoutGain != 0 {
		t.Errorf("by 600: kept without gain %d, moved without gain %d; want 1 and 0", st.KeptWithoutGain, st.MovesWithoutGain)
	}
	if v := p.Stats().Violations; len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// N_avg of a late app counts only the contention since the policy first
// saw it. 1×4 GPUs, 60 s rounds, lease 600 s: A (4 GPUs) from t = 0; B
// arrives at 100 and is first seen at the 120 s round, when the
// contention integral is 1 app × 120 s = 120. At the 600 s auction the
// integral is 120 + 2 × (600 − 120) = 1080, so
//
//	A: N_avg = 1080 / 600 = 1.8
//	B: N_avg = (1080 − 120) / (600 − 120) = 2 (not 1080/480 = 2.25 from
//	   the start of time, nor 960/500 = 1.92 from its arrival);
//
// at 120 itself B, seen just then, counts the apps alive: 2.
func TestLateAppNAvgCountsOnlyContentionSinceSeen(t *testing.T) {
	got := map[float64]map[string]float64{}
	cfg := themis.Config{Lease: 600, Auction: fairness.DefaultOptions(), OnAuction: func(in fairness.Input, _ *fairness.Result) {
		m := map[string]float64{}
		for _, a := range in.Apps {
			m[a.Name] = a.NAvg
		}
		got[in.Now] = m
	}}
	run(t, 1, 4, []workload.Spec{spec(0, 4, 0, 3000, "A"), spec(1, 4, 100, 3000, "B")}, cfg)
	for _, tc := range []struct {
		now     float64
		app     string
		want    float64
		present bool
	}{{120, "B", 2, true}, {600, "A", 1.8, true}, {600, "B", 2, true}} {
		v, ok := got[tc.now][tc.app]
		if !ok || math.Abs(v-tc.want) > 1e-12 {
			t.Errorf("auction at %v: %s's N_avg %v (seen %v), want %v", tc.now, tc.app, v, ok, tc.want)
		}
	}
}

// Payments in lease time end the winner's lease early. 1×6 GPUs, f = 0
// (both apps bid), lease 600 s: A is one 4-GPU gang, B four 1-GPU jobs,
// all long, all at t = 0. Speed-up bids: A {0, 4}, B {0, 1, 2, 3, 4};
// serving both beats serving one, so G* = (A 4, B 2); without A, B takes
// 4, so c_A = 2/4 = 0.5 and c_B = 1 (B then also takes the 2 left over).
// In lease time A keeps its 4 GPUs for 300 s, so an auction at 300 offers
// them; kept in expectation instead, no lease ends before 600.
func TestLeasePaymentEndsTheLeaseEarly(t *testing.T) {
	jobs := []workload.Spec{spec(0, 4, 0, 5000, "A"), spec(1, 1, 0, 5000, "B"), spec(2, 1, 0, 5000, "B"), spec(3, 1, 0, 5000, "B"), spec(4, 1, 0, 5000, "B")}
	for _, tc := range []struct {
		pay   fairness.Payment
		first float64 // first auction after 0 that offers GPUs
	}{{fairness.PayLease, 300}, {fairness.PayOff, 600}} {
		o := fairness.DefaultOptions()
		o.Knob, _ = fairness.NewKnob(0)
		o.Payment = tc.pay
		first := -1.0
		var keep float64
		cfg := themis.Config{Lease: 600, Auction: o, OnAuction: func(in fairness.Input, r *fairness.Result) {
			if in.Now == 0 {
				keep = r.Apps[0].Keep
			}
			if in.Now > 0 && len(in.Offer) > 0 && first < 0 {
				first = in.Now
			}
		}}
		_, st := run(t, 1, 6, jobs, cfg)
		if keep != 0.5 || first != tc.first || len(st.Violations) != 0 {
			t.Errorf("%v: c_A %v, first re-offer at %v (violations %v); want 0.5 and %v", tc.pay, keep, first, st.Violations, tc.first)
		}
	}
}
