package themisrun

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/workload"
)

// prepare builds inputs for a generated app workload on a cluster.
func prepare(tb testing.TB, shape string, opt workload.ThemisOptions) *experiment.Inputs {
	tb.Helper()
	jobs, err := workload.GenerateThemisEmbedded(opt)
	if err != nil {
		tb.Fatal(err)
	}
	eo, _ := experiment.Preset("paper")
	eo.Cluster, eo.Trace = shape, "generated"
	eo.Explicit.Preset = true
	in, err := experiment.PrepareWith(eo, &workload.Trace{Name: "generated", Jobs: jobs, HasApp: true})
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// BenchmarkThemisTrace simulates a whole app trace under Themis: the
// target is a 1,000-app trace on 256 GPUs in under 30 s on 2 cores. The
// arrival rate keeps the cluster loaded about 1x (Philly-sized apps of
// 1-100 jobs average ~600 GPU-hours).
func BenchmarkThemisTrace(b *testing.B) {
	for _, apps := range []int{200, 1000} {
		in := prepare(b, "32x8", workload.ThemisOptions{Apps: apps, Rate: 0.4, Seed: 1, MaxJobs: 100, SingleShare: 0.1})
		b.Run(fmt.Sprintf("apps=%d/gpus=256", apps), func(b *testing.B) {
			for b.Loop() {
				r, err := Run(Spec{Inputs: in, Policy: "themis", Themis: themis.Config{Auction: fairness.DefaultOptions()}})
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Violations) > 0 {
					b.Fatal(r.Violations)
				}
			}
		})
	}
}
