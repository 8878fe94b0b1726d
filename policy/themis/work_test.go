package themis_test

import (
	"math/rand/v2"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/workload"
)

// A job whose iteration time a driver corrects between auctions (as the
// Kubernetes driver does when a gang's measured pace contradicts its
// claim) counts in its app's W and T_id at the corrected figure: app A's
// 2-GPU job of 1000 iterations at 1 s is W = 2000 GPU-s and a longest
// job of 1000 s at the first auction; at 0.5 s per iteration, 1000 and
// 500 at the next (B's arrival at 60 s), B's 1-GPU job of 300 adding
// 300 to its own app only.
func TestCorrectedWorkCounts(t *testing.T) {
	cl, err := cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	type fig struct{ work, critical float64 }
	var seen []map[string]fig
	p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions(),
		OnAuction: func(in fairness.Input, _ *fairness.Result) {
			m := map[string]fig{}
			for _, a := range in.Apps {
				m[a.Name] = fig{a.TotalWork, a.Critical}
			}
			seen = append(seen, m)
		}})
	if err != nil {
		t.Fatal(err)
	}
	a := workload.NewJob(spec(0, 2, 0, 1000, "A"))
	b := workload.NewJob(spec(1, 1, 60, 300, "B"))
	env := &policy.Env{Cluster: cl, Rand: rand.New(rand.NewPCG(1, 2))}
	p.Place(env, p.Order(0, []*workload.Job{a}))
	a.IterTime = 0.5
	p.Place(env, p.Order(60, []*workload.Job{a, b}))
	want := []map[string]fig{{"A": {2000, 1000}}, {"A": {1000, 500}, "B": {300, 300}}}
	if len(seen) != len(want) {
		t.Fatalf("%d auctions, want %d: %v", len(seen), len(want), seen)
	}
	for i := range want {
		for app, w := range want[i] {
			if seen[i][app] != w {
				t.Errorf("auction %d: app %s has W %v and longest job %v s, want %v and %v", i, app, seen[i][app].work, seen[i][app].critical, w.work, w.critical)
			}
		}
	}
}
