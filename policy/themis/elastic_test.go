package themis_test

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// elastic runs jobs on one machine of 4 GPUs under Themis (60 s rounds,
// 600 s leases) and returns each job's completion and the GPU-seconds in
// use over the run.
func elastic(t *testing.T, jobs []workload.Spec, onAuction ...func(fairness.Input, *fairness.Result)) (map[int]float64, float64) {
	t.Helper()
	cl, err := cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := themis.Config{Lease: 600, Auction: fairness.DefaultOptions()}
	if len(onAuction) > 0 {
		cfg.OnAuction = onAuction[0]
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
	if v := p.Stats().Violations; len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
	done := map[int]float64{}
	for _, r := range res.Jobs {
		done[r.ID] = r.Completion
	}
	busy := 0.0
	for _, r := range res.Rounds {
		busy += float64(r.GPUsInUse) * themis.DefaultRound
	}
	return done, busy
}

// An elastic job (1..4 GPUs) alone on 4 GPUs is given all 4 and runs 4x
// as fast as its 1-GPU length: 4000 s of work end after 1000 s, at the
// round boundary 1020; rigid, the same job ends at 4020.
func TestElasticAloneTakesAllGPUs(t *testing.T) {
	j := spec(0, 1, 0, 4000, "A")
	j.MaxGPUs = 4
	done, busy := elastic(t, []workload.Spec{j})
	if done[0] != 1020 || busy != 4*1020 {
		t.Errorf("elastic: done %v busy %v GPU-s, want 1020 and 4080", done[0], busy)
	}
	j.MaxGPUs = 0
	done, busy = elastic(t, []workload.Spec{j})
	if done[0] != 4020 || busy != 4020 {
		t.Errorf("rigid: done %v busy %v GPU-s, want 4020 and 4020", done[0], busy)
	}
}

// Elastic A (1..4 GPUs, 3200 s on one GPU) holds all 4 until its lease
// ends at 600; B (a 2-GPU gang) arrived at 100 and, holding nothing, is
// the one bidder then: it wins 2 GPUs and the other 2 are re-auctioned to
// A, which shrinks to 2. A did 2400 s of its work by 600 and the 800 s
// left take 400 s on 2 GPUs: it ends at 1000, the boundary 1020.
func TestElasticShrinksAtLeaseEnd(t *testing.T) {
	a := spec(0, 1, 0, 3200, "A")
	a.MaxGPUs = 4
	done, busy := elastic(t, []workload.Spec{a, spec(1, 2, 100, 3000, "B")})
	if done[0] != 1020 {
		t.Errorf("A done at %v, want 1020", done[0])
	}
	// B runs 600..3600 on 2 GPUs; A 4 GPUs for 600 s, then 2 for 420 s;
	// after A, B may not grow (a gang).
	if done[1] != 3600 || busy != 4*600+2*420+2*(3600-600) {
		t.Errorf("B done at %v, busy %v GPU-s, want 3600 and %v", done[1], busy, 4*600+2*420+2*(3600-600))
	}
}

// And grows again at its next lease end: A as above but 6000 s long, B
// 600 s long. B runs 600..1200 on 2 GPUs beside A's 2; at 1200 B is done
// and A's lease (granted at 600) ends, so all 4 GPUs are auctioned and A,
// alone, wins all of them: its 2 old GPUs and 2 more. A job whose app
// wins back its old GPUs keeps them only when it wins as many as it
// holds; A won 4, so it runs on 4 from 1200. It did 2400 s by 600 and
// 1200 more by 1200, and the 2400 left take 600 s on 4 GPUs: it ends at
// 1800 (on its old 2 it would end at 2400).
func TestElasticGrowsAtLeaseEnd(t *testing.T) {
	a := spec(0, 1, 0, 6000, "A")
	a.MaxGPUs = 4
	done, _ := elastic(t, []workload.Spec{a, spec(1, 2, 100, 600, "B")})
	if done[1] != 1200 || done[0] != 1800 {
		t.Errorf("B done at %v, A at %v; want 1200 and 1800", done[1], done[0])
	}
}

// A leased elastic job asks the auction for nothing beyond what it holds:
// it may neither grow nor shrink until its lease ends, so a GPU it won
// would sit idle however much another app needed it. A (1..4 GPUs, 6000
// s) and B (a 2-GPU gang, 100 s, arriving at 100) as in
// TestElasticShrinksAtLeaseEnd: from 600 A holds 2 GPUs on a lease to
// 1200 and B the other 2. B ends at 700, the round 720, and its 2 GPUs
// are auctioned: A alone is active and wants none of them (N = 0), so
// both are left over. A did 2400 s by 600 and 1200 by 1200; alone on all
// 4 from then, its 2400 left end at 1800.
func TestLeasedElasticJobWantsNothingMore(t *testing.T) {
	a := spec(0, 1, 0, 6000, "A")
	a.MaxGPUs = 4
	seen := false
	done, _ := elastic(t, []workload.Spec{a, spec(1, 2, 100, 100, "B")}, func(in fairness.Input, r *fairness.Result) {
		if in.Now != 720 {
			return
		}
		seen = true
		if len(in.Apps) != 1 || len(in.Apps[0].Jobs) != 1 || len(in.Offer) != 2 {
			t.Fatalf("auction at 720: %d apps, offer %v; want A alone and B's 2 GPUs", len(in.Apps), in.Offer)
		}
		if j := in.Apps[0].Jobs[0]; len(j.Held) != 2 || j.MaxGPUs != 2 {
			t.Errorf("A's job at 720: holds %v, asks for at most %d; want 2 held and at most 2", j.Held, j.MaxGPUs)
		}
		if r.N != 0 || len(r.Apps[0].Gained) != 0 || len(r.Leftover) != 2 {
			t.Errorf("auction at 720: N %d, A gained %v, left over %v; want 0, none and both", r.N, r.Apps[0].Gained, r.Leftover)
		}
	})
	if !seen {
		t.Fatal("no auction at 720")
	}
	if done[1] != 720 || done[0] != 1800 {
		t.Errorf("B done at %v, A at %v; want 720 and 1800", done[1], done[0])
	}
}
