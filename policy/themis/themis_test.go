package themis_test

import (
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
