package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
)

// Learning against placement at 27,648 GPUs (6912x4), in one loop so that
// both see the same machine load: each iteration times one PAL placement
// round of the benchmark's loaded cluster (seed 42) and one learning round
// over its running jobs. In the steady state every job shows the pace it
// showed before; in the drifting state one running job per round is 30%
// slower than believed, then back, so a class moves every round (and is
// re-binned every RebinEvery(27,648) = 216 rounds, as pal sim does). With
// learn=off an iteration is the placement round alone, with learn=on the
// placement round and the learning round, so that benchstat -col /learn
// compares the two; learn=on also reports the learning round's time, with
// the placer's indexing of each new score table, as a percentage of the
// placement rounds' in the same iterations (learn-%-of-place), which a
// loaded machine disturbs less, and the same share from the median rounds
// (learn-%-of-place-med), which one stall does not move. Run it with -benchtime 216x (one
// binning, the steady rate) or a multiple of it: fewer rounds than
// RebinEvery leave the drifting share without its re-binning.
func BenchmarkLearningVsPlacement27648(b *testing.B) {
	for _, bc := range []struct {
		name         string
		drift, learn bool
	}{{"state=steady/learn=off", false, false}, {"state=steady/learn=on", false, true},
		{"state=drifting/learn=off", true, false}, {"state=drifting/learn=on", true, true}} {
		drift := bc.drift
		b.Run(bc.name, func(b *testing.B) {
			r, err := NewRound(RoundOptions{Placement: "pal", Nodes: 6912, GPUsPerNode: 4, Seed: 42})
			if err != nil {
				b.Fatal(err)
			}
			profiles, err := variability.LoadProfileSet(variability.DefaultProfile)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := variability.Assign(profiles, r.GPUs(), variability.WithReplacement, variability.NewRand(42), nil)
			if err != nil {
				b.Fatal(err)
			}
			vs, err := variability.NewScores(raw, variability.BinOptions{Seed: 42}, nil)
			if err != nil {
				b.Fatal(err)
			}
			l, err := variability.NewLearner(raw, vs, variability.LearnOptions{Bin: variability.BinOptions{Seed: 42}, Every: variability.RebinEvery(r.GPUs())})
			if err != nil {
				b.Fatal(err)
			}
			type obs struct {
				c    variability.Class
				gpus []int
				y    float64
			}
			var running []obs
			for _, j := range r.order {
				if j.GPUsHeld == nil {
					continue
				}
				y := 0.0
				for _, g := range j.GPUsHeld {
					y = max(y, raw.Values[j.Class][g])
				}
				running = append(running, obs{j.Class, j.GPUsHeld, y})
			}
			// One untimed round: the first observation of every job sets its
			// bounds, which later rounds only confirm.
			for i, o := range running {
				l.ObserveJob(i, o.c, o.gpus, o.y)
			}
			if _, err := l.Rebin(); err != nil {
				b.Fatal(err)
			}
			var place, learn time.Duration
			reindex := 0
			// Per-round times, for the medians (see learn-%-of-place-med):
			// placement rounds, learning rounds that handed placement no
			// new table, and the whole cost of those that did.
			places := make([]time.Duration, 0, b.N)
			quiet := make([]time.Duration, 0, b.N)
			var binning time.Duration
			b.ResetTimer()
			for k := 0; b.Loop(); k++ {
				t0 := time.Now()
				r.Place()
				t1 := time.Now()
				if !bc.learn {
					place += t1.Sub(t0)
					continue
				}
				for i, o := range running {
					y := o.y
					if drift && i == k%len(running) {
						y *= 1.3
					}
					l.ObserveJob(i, o.c, o.gpus, y)
				}
				vs, err := l.Rebin()
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				place += t1.Sub(t0)
				learn += t2.Sub(t1)
				places = append(places, t1.Sub(t0))
				if vs == nil {
					quiet = append(quiet, t2.Sub(t1))
				} else {
					binning += t2.Sub(t1)
				}
				if vs != nil {
					// New scores make the placer index them again: that is
					// learning's cost too, with the conversion to the
					// placer's form. The indexing is timed as the first
					// placement round on the new scores less a second one on
					// the same scores (both extra rounds, outside
					// place-us/round): the difference is what the new table
					// alone costs, not how fast the new bins happen to
					// place.
					t3 := time.Now()
					r.env.Scores = policy.ScoresFrom(vs)
					r.Place()
					t4 := time.Now()
					r.Place()
					idx := max(0, t4.Sub(t3)-time.Since(t4))
					learn += idx
					binning += idx
					reindex++
				}
			}
			b.ReportMetric(float64(place.Microseconds())/float64(b.N), "place-us/round")
			if bc.learn {
				b.ReportMetric(float64(learn.Microseconds())/float64(b.N), "learn-us/round")
				b.ReportMetric(100*float64(learn)/float64(place), "learn-%-of-place")
				b.ReportMetric(float64(reindex), "rebins")
				// The same share with the median placement round and the
				// median learning round in place of the means (the binning
				// rounds still count in full): a stall of the machine, such
				// as the 50 ms in every second that the kernel takes from a
				// real-time task (sched_rt_runtime_us), moves one round's
				// time and so the means, not the medians.
				if len(places) > 0 {
					n := float64(len(places))
					med := func(d []time.Duration) float64 {
						if len(d) == 0 {
							return 0
						}
						slices.Sort(d)
						return float64(d[len(d)/2])
					}
					lq := med(quiet) * float64(len(quiet))
					b.ReportMetric(100*(lq+float64(binning))/(med(places)*n), "learn-%-of-place-med")
				}
			}
			b.Logf("%d running jobs", len(running))
		})
	}
}
