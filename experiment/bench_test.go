package experiment

import (
	"testing"

	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
)

// BenchmarkSiaPhilly simulates one whole Sia-Philly trace (workload 3,
// the artifact's pinned inputs: 160 tracked jobs plus the extra arrivals)
// under each placement. Target: under 20 ms per trace.
func BenchmarkSiaPhilly(b *testing.B) {
	o, _ := Preset("artifact")
	o.Trace = "sia-philly/3"
	in, err := Prepare(o)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range place.Names() {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if _, err := in.Run(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSynthetic256x5000 simulates a 5,000-job Synergy-style trace
// (Poisson arrivals at 12 jobs/hour, Philly GPU demands) on 256 GPUs.
func BenchmarkSynthetic256x5000(b *testing.B) {
	jobs, err := workload.GenerateSynergyEmbedded(workload.SynergyOptions{Rate: 12, Jobs: 5000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	o, _ := Preset("artifact")
	o.Cluster, o.Round, o.Pinned, o.ExtraLoad, o.Trace = "64x4", 300, false, 0, "synergy-12jph-5000"
	in, err := PrepareWith(o, &workload.Trace{Name: o.Trace, Jobs: jobs})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"pal", "pm-first", "packed-sticky", "packed-nonsticky"} {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if _, err := in.Run(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
