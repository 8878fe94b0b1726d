package experiment

import (
	"fmt"
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

// scaleInputs prepares a generated Synergy trace (every job tracked, no
// extra load, 300 s rounds, the artifact's other settings) on a cluster.
func scaleInputs(b *testing.B, cluster, sched string, rate float64, jobs int) *Inputs {
	b.Helper()
	specs, err := workload.GenerateSynergyEmbedded(workload.SynergyOptions{Rate: rate, Jobs: jobs, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	o, _ := Preset("artifact")
	o.Cluster, o.Round, o.Pinned, o.ExtraLoad, o.Scheduler = cluster, 300, false, 0, sched
	o.Trace = fmt.Sprintf("synergy-%gjph-%d", rate, jobs)
	in, err := PrepareWith(o, &workload.Trace{Name: o.Trace, Jobs: specs})
	if err != nil {
		b.Fatal(err)
	}
	in.noRecords = true   // as pal sim without --jobs-out
	in.noMoveGains = true // nor --rounds-out
	in.noRoundStats = true
	return in
}

// BenchmarkScale20k is the long-queue scale run: 20,000 Synergy jobs at
// 12 jobs/hour (about 120,000 rounds of 300 s; thousands wait at once)
// on 16x4 GPUs, under each scheduler and placement. Targets: under 2 s
// per run with PAL; other placements no slower than before.
func BenchmarkScale20k(b *testing.B) {
	for _, sched := range []string{"fifo", "las", "srtf", "tiresias-las"} {
		in := scaleInputs(b, "16x4", sched, 12, 20000)
		for _, p := range place.Names() {
			b.Run(sched+"/"+p, func(b *testing.B) {
				for b.Loop() {
					if _, err := in.Run(p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkScale100k is 100,000 Synergy jobs at 1,000 jobs/hour (about
// what 27,648 GPUs complete) on 4,608x6 GPUs under FIFO: packed
// non-sticky must be no slower than PAL.
func BenchmarkScale100k(b *testing.B) {
	in := scaleInputs(b, "4608x6", "fifo", 1000, 100000)
	for _, p := range []string{"pal", "packed-nonsticky"} {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if _, err := in.Run(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
