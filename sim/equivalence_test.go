package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// randomCase draws a small cluster, a trace and the knobs that make the
// incremental loop's shortcuts matter: long queues behind big gangs,
// ties in every key, starvation guards and Tiresias promotions that fire,
// round lengths whose running sums round, move costs, extra arrivals
// and track windows.
func randomCase(rng *rand.Rand, trial int) (Config, func() policy.Scheduler) {
	nodes, per := 1+rng.IntN(4), 1+rng.IntN(6)
	cl, _ := cluster.New(nodes, per)
	size := cl.Size()
	var jobs []workload.Spec
	tm := 0.0
	n := 5 + rng.IntN(40)
	for i := 0; i < n; i++ {
		if rng.IntN(3) > 0 {
			tm += float64(rng.IntN(600)) // some arrive together
		}
		g := 1 + rng.IntN(size)
		if rng.IntN(2) == 0 {
			g = 1 + rng.IntN(min(size, 2))
		}
		s := spec(i, g, tm, float64(1+rng.IntN(3000)))
		s.Class = variability.Class(rng.IntN(variability.NumClasses))
		s.IterTime = []float64{1, 0.5, 0.17540429367763434, 3.5714}[rng.IntN(4)]
		s.Tracked = rng.IntN(8) > 0 || i == 0
		jobs = append(jobs, s)
	}
	tr := &workload.Trace{Name: fmt.Sprintf("trial-%d", trial), Jobs: jobs, HasTracked: rng.IntN(4) == 0}
	raw, sc := randomScores(rng, size)
	cfg := Config{Cluster: cl, Trace: tr, Round: []float64{300, 360, 100, 0.7 * 300, 1e-3 + 97}[rng.IntN(5)],
		Locality: ConstantLocality(1.5), Raw: raw, Scores: sc, Seed: uint64(trial), MaxRounds: 1500}
	if rng.IntN(3) == 0 {
		cfg.ExtraLoad = float64(1 + rng.IntN(4))
	}
	if rng.IntN(4) == 0 {
		cfg.Costs = workload.Costs{Default: workload.MoveCost{Migration: float64(rng.IntN(400)), Preemption: float64(rng.IntN(400))}}
	}
	if rng.IntN(2) == 0 {
		cfg.StarvationGuard = float64(1 + rng.IntN(5000))
	}
	if rng.IntN(5) == 0 {
		from := rng.IntN(n)
		cfg.Track = &[2]int{from, from + rng.IntN(n)}
	}
	tcfg := schedule.TiresiasConfig{Thresholds: []float64{float64(100 + rng.IntN(2000))}, TwoD: rng.IntN(2) == 0}
	tcfg.Thresholds = append(tcfg.Thresholds, tcfg.Thresholds[0]+float64(1+rng.IntN(5000)))
	if rng.IntN(2) == 0 {
		tcfg.StarvationFactor = 0.5 + 3*rng.Float64()
	}
	return cfg, func() policy.Scheduler { return schedule.NewTiresiasLAS(tcfg) }
}

// TestIncrementalMatchesPlain is the property test of the incremental
// loop: on random traces, every scheduler and placement, the loop with
// kept order and the placement view, stepping every round, and the same
// with dead rounds skipped, give exactly the plain loop's per-job records,
// rounds and summary.
func TestIncrementalMatchesPlain(t *testing.T) {
	trials := 3000
	if testing.Short() {
		trials = 300
	}
	rng := rand.New(rand.NewPCG(12, 12))
	for trial := range trials {
		cfg, tiresias := randomCase(rng, trial)
		scheds := map[string]func() policy.Scheduler{
			"fifo":         func() policy.Scheduler { return schedule.FIFO{} },
			"las":          func() policy.Scheduler { return schedule.LAS{} },
			"srtf":         func() policy.Scheduler { return schedule.SRTF{} },
			"tiresias-las": tiresias,
		}
		// Schedulers take turns; each trace runs a sticky placement, a
		// class-first or packed non-sticky one, and one drawn from all.
		sn := schedule.Names()[trial%len(schedule.Names())]
		pls := []string{
			[]string{"packed-sticky", "random-sticky"}[rng.IntN(2)],
			[]string{"pal", "pm-first", "packed-nonsticky"}[trial%3],
			place.Names()[rng.IntN(len(place.Names()))],
		}
		{
			for _, pn := range pls {
				name := fmt.Sprintf("trial %d %s %s %v round %v guard %v", trial, sn, pn, cfg.Cluster, cfg.Round, cfg.StarvationGuard)
				run := func(plain, noSkip bool, noRecords ...bool) (*Result, string) {
					return runLoop(t, cfg, scheds[sn], pn, plain, noSkip, len(noRecords) > 0)
				}
				want, wantErr := requireLoopsAgree(t, name, cfg, scheds[sn], pn)
				// Without per-job records, round lines and move gains the
				// summary and the round count are the same.
				if brief, err := run(trial%2 == 0, false, true); err == wantErr && err == "" {
					if len(brief.Jobs) != 0 || len(brief.Rounds) != 0 || !reflect.DeepEqual(brief.Summary, want.Summary) {
						t.Fatalf("%s: without records: %d records, %d rounds, summary\n got %+v\nwant %+v", name, len(brief.Jobs), len(brief.Rounds), brief.Summary, want.Summary)
					}
					if brief.NumRounds != len(want.Rounds) || want.NumRounds != len(want.Rounds) {
						t.Fatalf("%s: without records: %d rounds counted, %d with them, %d lines", name, brief.NumRounds, want.NumRounds, len(want.Rounds))
					}
				} else if err != wantErr {
					t.Fatalf("%s: without records: error %q, want %q", name, err, wantErr)
				}
			}
		}
	}
}

// runLoop runs cfg with a fresh scheduler and placer through the plain
// loop or the incremental one (stepping every round, or skipping dead
// ones); the error comes back as text so that runs compare with ==.
func runLoop(t *testing.T, cfg Config, sched func() policy.Scheduler, pn string, plain, noSkip, noRecords bool) (*Result, string) {
	t.Helper()
	cfg.Scheduler, cfg.Placer = sched(), mustPlacer(t, pn)
	cfg.Plain, cfg.noSkip = plain, noSkip
	cfg.NoRecords, cfg.NoRoundStats, cfg.NoMoveGains = noRecords, noRecords, noRecords
	res, err := Run(cfg)
	if err != nil {
		return nil, err.Error()
	}
	return res, ""
}

// requireLoopsAgree fails unless the incremental loop, stepping and
// skipping, gives exactly the plain loop's error or results; it returns
// the plain run.
func requireLoopsAgree(t *testing.T, name string, cfg Config, sched func() policy.Scheduler, pn string) (*Result, string) {
	t.Helper()
	want, wantErr := runLoop(t, cfg, sched, pn, true, false, false)
	for _, noSkip := range []bool{true, false} {
		got, err := runLoop(t, cfg, sched, pn, false, noSkip, false)
		if err != wantErr {
			t.Fatalf("%s, skipping %v: error %q, want %q", name, !noSkip, err, wantErr)
		}
		if err == "" {
			if d := sameResult(want, got); d != "" {
				t.Fatalf("%s, skipping %v: %s", name, !noSkip, d)
			}
		}
	}
	return want, wantErr
}

func sameResult(want, got *Result) string {
	if len(want.Jobs) != len(got.Jobs) {
		return fmt.Sprintf("%d finished jobs, want %d", len(got.Jobs), len(want.Jobs))
	}
	for i := range want.Jobs {
		if !reflect.DeepEqual(want.Jobs[i], got.Jobs[i]) {
			return fmt.Sprintf("job record\n got %+v\nwant %+v", got.Jobs[i], want.Jobs[i])
		}
	}
	if !reflect.DeepEqual(want.Rounds, got.Rounds) {
		for i := range min(len(want.Rounds), len(got.Rounds)) {
			if want.Rounds[i] != got.Rounds[i] {
				return fmt.Sprintf("round %d: got %+v, want %+v", i, got.Rounds[i], want.Rounds[i])
			}
		}
		return fmt.Sprintf("%d rounds, want %d", len(got.Rounds), len(want.Rounds))
	}
	if !reflect.DeepEqual(want.Summary, got.Summary) {
		return fmt.Sprintf("summary\n got %+v\nwant %+v", got.Summary, want.Summary)
	}
	return ""
}

// The order tree compares packed keys; they must order as OrderKey.Compare.
func TestPackedKeysOrderAsKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []float64{math.NaN(), math.Inf(-1), -1e300, -3.5, -1e-300, math.Copysign(0, -1), 0, 1e-300, 0.5, 300, 1e300, math.Inf(1)}
	key := func() policy.OrderKey {
		return policy.OrderKey{Priority: []int{-5, 1, 999, math.MaxInt32}[rng.IntN(4)], Level: rng.IntN(3), Value: vals[rng.IntN(len(vals))]}
	}
	for range 20000 {
		a, b := key(), key()
		ah, al := packKey(a)
		bh, bl := packKey(b)
		got := cmp.Compare(ah, bh)
		if got == 0 {
			got = cmp.Compare(al, bl)
		}
		if want := a.Compare(b); got != want {
			t.Fatalf("%+v vs %+v: packed %d, keys %d", a, b, got, want)
		}
	}
}

// The look-ahead reads waiting jobs' keys back from their items: a key
// read back must compare with every key as the key itself does.
func TestUnpackedKeysCompareAsKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := []float64{math.NaN(), math.Inf(-1), -1e300, -3.5, -1e-300, math.Copysign(0, -1), 0, 1e-300, 0.5, 300, 1e300, math.Inf(1)}
	key := func() policy.OrderKey {
		return policy.OrderKey{Priority: []int{math.MinInt32, -5, 1, 999, math.MaxInt32}[rng.IntN(5)], Level: []int{math.MinInt32, 0, 2, math.MaxInt32}[rng.IntN(4)], Value: vals[rng.IntN(len(vals))]}
	}
	for range 20000 {
		a, b := key(), key()
		back := unpackKey(packKey(a))
		if back.Priority != a.Priority || back.Level != a.Level {
			t.Fatalf("%+v read back as %+v", a, back)
		}
		if got, want := back.Compare(b), a.Compare(b); got != want {
			t.Fatalf("%+v (read back as %+v) vs %+v: %d, want %d", a, back, b, got, want)
		}
		if got, want := b.Compare(back), b.Compare(a); got != want {
			t.Fatalf("%+v vs %+v (read back as %+v): %d, want %d", b, a, back, got, want)
		}
	}
}

// randomScores draws every GPU's true value (0.9-1.2) and binned score
// (one of three levels) per class, with an L×V order over the levels
// (each within a node, then across at 1.5 times).
func randomScores(rng *rand.Rand, size int) (*variability.Table, *policy.Scores) {
	raw := &variability.Table{}
	sc := &policy.Scores{}
	levels := []float64{0.95, 1.0, 2.5}
	for c := range raw.Values {
		for g := 0; g < size; g++ {
			raw.Values[c] = append(raw.Values[c], 0.9+0.3*rng.Float64())
			sc.SF[c] = append(sc.SF[c], levels[rng.IntN(3)])
		}
		for _, v := range levels {
			sc.LV[c] = append(sc.LV[c], policy.LVStep{V: v}, policy.LVStep{V: v * 1.5, Across: true})
		}
	}
	return raw, sc
}
