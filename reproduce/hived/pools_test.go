package hived

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// The experiment's own runs (simulate: PerVC order, a fresh placer per
// VC, pods whole) honour pinned cells and leaf types, under each of the
// three intra-VC schedulers, and so does its private reference (perVC,
// which runs a pooled VC through the stage). The cases and their
// hand-derived outcomes are policy/tenant's pools_test.go ones: three
// 4-GPU nodes with n1 pinned as A-PIN (VC A = one node cell + A-PIN), and
// a K80 node and a V100 node in one VC. Every job here waits for cells,
// never for a scheduler's choice, so the three agree. The traces are the
// ones `pal sim` runs in cmd/pal's TestPoolsSim.
func TestPoolsInTheExperiment(t *testing.T) {
	cases := []struct {
		name string
		want map[int]string // start and GPUs
	}{
		{"pools-pinned", map[int]string{0: "0 [4 5]", 1: "0 [6 7]", 2: "0 [0 1 2 3]", 3: "0 [8 9 10 11]", 4: "600 [0 1 2 3]"}},
		{"pools-skus", map[int]string{0: "0 [4 5 6 7]", 1: "0 [0 1]", 2: "0 [2 3]", 3: "600 [4 5 6 7]", 4: "900 [4 5 6 7]"}},
	}
	for _, c := range cases {
		cfg, err := tenancy.LoadFile("../../tenancy/testdata/" + c.name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		tr, err := workload.ReadTraceFile("../../tenancy/testdata/"+c.name+"-trace.csv", nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := tenant.NewLayout(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Validate(tr, true); err != nil {
			t.Fatal(err)
		}
		probe, err := tenancy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		window := [2]float64{0, 60}
		for _, hs := range hivedSchedulers {
			out, err := simulate(l, tr, hs, "hived", 60, window)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.recs {
				if got := fmt.Sprintf("%g %v", r.FirstStart, r.GPUIDs); got != c.want[r.ID] {
					t.Errorf("%s: job %d: %s, want %s", hs.short(), r.ID, got, c.want[r.ID])
				}
			}
			priv, err := perVC(l, tr, hs, "none", 60, window, func(vc string) (*tenant.Layout, error) {
				pcfg, err := probe.PrivateConfig(vc)
				if err != nil {
					return nil, err
				}
				return tenant.NewLayout(pcfg)
			})
			if err != nil {
				t.Fatal(err)
			}
			starts := map[int]float64{}
			for _, r := range out.recs {
				starts[r.ID] = r.FirstStart
			}
			for _, r := range priv.recs {
				if r.FirstStart != starts[r.ID] {
					t.Errorf("%s: job %d starts at %g on its private cluster, %g under hived", hs.short(), r.ID, r.FirstStart, starts[r.ID])
				}
			}
		}
	}
}
