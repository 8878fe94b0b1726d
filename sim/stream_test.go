package sim

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// checkedStreamer passes a streaming placer through, counts the answers
// it hands over in parts (a ready before the last line) and checks every
// line it calls final against ref's answer (the same placer on its own
// index; nil: not checked), at the moment ready is called: a line
// announced before it is written fails here, however the two goroutines
// happen to run.
type checkedStreamer struct {
	policy.Streamer
	ref   policy.Placer
	early *atomic.Int64
	t     *testing.T
}

// MoveGain passes the wrapped placer's pricing of moves on.
func (c checkedStreamer) MoveGain(env *policy.Env, j *workload.Job, from, to []int) float64 {
	return c.Streamer.(policy.MoveJudge).MoveGain(env, j, from, to)
}

func (c checkedStreamer) PlaceTo(env *policy.Env, order []*workload.Job, alloc [][]int, ready func(int)) {
	if ready == nil {
		// The caller does not stream (no Pipeline): nor does the placer.
		c.Streamer.PlaceTo(env, order, alloc, nil)
		return
	}
	var want [][]int
	if c.ref != nil {
		want = c.ref.Place(env, order)
	}
	done := 0
	c.Streamer.PlaceTo(env, order, alloc, func(n int) {
		for i := done; i < n && want != nil; i++ {
			if !slices.Equal(alloc[i], want[i]) || (alloc[i] == nil) != (want[i] == nil) {
				c.t.Errorf("line %d announced as %v, the answer is %v", i, alloc[i], want[i])
			}
		}
		done = max(done, n)
		if n < len(order) {
			c.early.Add(1)
		}
		ready(n)
	})
}

// TestStreamedRunMatchesPlain runs traces whose rounds place over a
// thousand jobs, so the incremental loop, asked to pipeline, applies the
// first lines while the placer still works on later ones (on two
// cores), and requires the plain loop's results exactly, with the
// pipeline and without it (the default, which must not stream). Run it with -race: the placer and the
// model share the jobs and the cluster.
func TestStreamedRunMatchesPlain(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("streaming needs two cores (GOMAXPROCS >= 2)")
	}
	cl, err := cluster.New(300, 6)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var jobs []workload.Spec
	tm := 0.0
	for i := range 3000 {
		g := []int{1, 1, 1, 1, 1, 1, 2, 4, 8}[rng.IntN(9)]
		s := spec(i, g, tm, float64(300+rng.IntN(20000)))
		tm += float64(rng.IntN(20))
		jobs = append(jobs, s)
	}
	tr := &workload.Trace{Name: "stream", Jobs: jobs}
	raw := &variability.Table{}
	sc := &policy.Scores{}
	levels := []float64{0.9, 0.95, 1.0, 1.1, 2.5}
	for c := range raw.Values {
		for range cl.Size() {
			raw.Values[c] = append(raw.Values[c], 0.9+0.3*rng.Float64())
			sc.SF[c] = append(sc.SF[c], levels[rng.IntN(len(levels))])
		}
		for _, v := range levels {
			sc.LV[c] = append(sc.LV[c], policy.LVStep{V: v}, policy.LVStep{V: v * 1.7, Across: true})
		}
	}
	// Random draws from the round's stream, so a second placer would
	// take the draws: its lines are not checked as announced, only the
	// results.
	// The migration-aware variants, with a price on moves, stream from
	// their own frame (one class: the order is the visiting order).
	for _, pn := range []string{"pal", "pm-first", "packed-nonsticky", "random-nonsticky", "pal-ma", "pm-first-ma", "packed-nonsticky-ma", "random-nonsticky-ma"} {
		cfg := Config{Cluster: cl, Trace: tr, Round: 300, Locality: ConstantLocality(1.7), Raw: raw, Scores: sc, Seed: 1}
		if strings.HasSuffix(pn, "-ma") {
			cfg.Costs = workload.Costs{Default: workload.MoveCost{Migration: 120, Preemption: 30}}
		}
		var early atomic.Int64
		stream := func() policy.Placer {
			c := checkedStreamer{Streamer: mustPlacer(t, pn).(policy.Streamer), early: &early, t: t}
			if !strings.HasPrefix(pn, "random-nonsticky") {
				c.ref = mustPlacer(t, pn)
			}
			return c
		}
		cfg.Scheduler, cfg.Placer, cfg.Plain = schedule.FIFO{}, mustPlacer(t, pn), true
		want, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Without Pipeline (the default) the answer is placed whole.
		cfg.Scheduler, cfg.Placer, cfg.Plain = schedule.FIFO{}, stream(), false
		got, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := sameResult(want, got); d != "" {
			t.Fatalf("%s, not pipelined: %s", pn, d)
		}
		if n := early.Load(); n != 0 {
			t.Fatalf("%s: %d rounds handed their answer over in parts without Pipeline", pn, n)
		}
		cfg.Scheduler, cfg.Placer, cfg.Pipeline = schedule.FIFO{}, stream(), true
		got, err = Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := sameResult(want, got); d != "" {
			t.Fatalf("%s: %s", pn, d)
		}
		if early.Load() == 0 {
			t.Fatalf("%s: no round handed its answer over in parts", pn)
		}
	}
}
