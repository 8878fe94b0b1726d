package stale

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint64
		err  string
	}{
		{in: "1-4,1001", want: []uint64{1, 2, 3, 4, 1001}},
		{in: "7", want: []uint64{7}},
		{in: " 3 , 1-2 ,2", want: []uint64{3, 1, 2}},
		{in: "5-5", want: []uint64{5}},
		{in: "18446744073709551614-18446744073709551615", want: []uint64{18446744073709551614, 18446744073709551615}},
		{in: "", err: `"" is not a seed`},
		{in: "4-2", err: `"4-2" is not a range`},
		{in: "1-x", err: `"1-x" is not a range`},
		{in: "-3", err: `"-3" is not a seed`},
		{in: "1-20000", err: "more than 10,000"},
		{in: "0-18446744073709551615", err: "more than 10,000"},
		{in: "0-10000", err: "more than 10,000"},
		{in: "1-9999,20000,20001", err: "more than 10,000"},
	} {
		got, err := ParseSeeds(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSeeds(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// The bound itself is allowed: 10,000 seeds.
	for _, in := range []string{"1-10000", "1-9999,20000"} {
		if got, err := ParseSeeds(in); err != nil || len(got) != 10000 {
			t.Errorf("ParseSeeds(%q) = %d seeds, %v; want 10,000", in, len(got), err)
		}
	}
}

// FuzzParseSeeds: any input gives seeds or an error, never a panic, and
// never more than the bound, each seed once.
func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"1-20", "1,2,3", "1001", "9-3", "1-18446744073709551615", ",", "1--2"} {
		f.Add(s)
	}
	// A long flag value of invalid bytes, each of which %q writes as four.
	f.Add("1-2," + strings.Repeat("\xff", 8000))
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err != nil {
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		if len(seeds) == 0 || len(seeds) > 10000 {
			t.Fatalf("ParseSeeds(%q): %d seeds", s, len(seeds))
		}
		c := slices.Clone(seeds)
		slices.Sort(c)
		if len(slices.Compact(c)) != len(seeds) {
			t.Fatalf("ParseSeeds(%q) repeats a seed: %v", s, seeds)
		}
	})
}

func TestSeedList(t *testing.T) {
	if got := seedList([]uint64{1001, 3, 1, 2, 5}); got != "1-3, 5, 1001" {
		t.Fatalf("seedList = %q", got)
	}
}

// TestPooledMarkdown pools hand-made runs: the cells' medians (lower
// median of an even count, runs where the oracle gains under 2% left out
// of the shares but not of harm), the cells under 80% for each learner,
// and harm beyond the band told apart by whether the oracle is beyond it
// too.
func TestPooledMarkdown(t *testing.T) {
	run := func(wl, fam string, seed uint64, oracle, stale, job, gpu float64) PatternRun {
		return PatternRun{Trace: wl, Family: fam, Pattern: Pattern{Family: fam, Seed: seed},
			AvgJCT: map[string]float64{"oracle": oracle, "stale": stale, "stale+learning": job, "stale+gpu-learning": gpu}}
	}
	runs := []PatternRun{
		// w1 uniform: job shares 0.5, 0.9, 1.0 -> median 90%; per-GPU
		// 1, 1, 0.7 -> 100%.
		run("w1", "uniform", 1, 90, 100, 95, 90),
		run("w1", "uniform", 2, 80, 100, 82, 80),
		run("w1", "uniform", 3, 90, 100, 90, 93),
		// w1 faster: job shares 0, 0.6 -> the lower median, 0%; per-GPU
		// 1, 0.8 -> 80% (not under 80%).
		run("w1", "faster", 4, 90, 100, 100, 90),
		run("w1", "faster", 5, 90, 100, 94, 92),
		// The oracle loses 3% (w2 uniform) and 8% (seed 7): no share,
		// but harm counts. Job paces end 9%, 10% and 10% above stale; the
		// oracle is beyond the band only on seed 7.
		run("w2", "uniform", 6, 103, 100, 109, 100),
		run("w2", "faster", 7, 108, 100, 110, 100),
		run("w2", "faster", 8, 90, 100, 110, 100),
	}
	got := pooledMarkdown(runs, []uint64{1, 2, 3, 4, 5, 6, 7, 8}, "pal", 0.05)
	hasAll(t, got,
		"seeds 1-8, 2 workloads x 2 families, 8 patterns, placement pal\n",
		"| workload | uniform | faster |",
		"| w1 | 90% / 100% (3) | 0% / 80% (2) |",
		"| w2 | - | -100% / 0% (1) |",
		"3 cells have a run",
		"- job paces: 2 cells under 80%: w1 faster 0% (2 runs); w2 faster -100% (1 runs)",
		"- per-GPU paces: 1 cells under 80%: w2 faster 0% (1 runs)",
		"- job paces: 3 of 8 runs, the oracle more than the band above stale on 1 of them; worst +10.0% w2 faster seed 7 (oracle +8.0%), +10.0% w2 faster seed 8 (oracle -10.0%), +9.0% w2 uniform seed 6 (oracle +3.0%); where the oracle is not: +10.0% w2 faster seed 8 (oracle -10.0%), +9.0% w2 uniform seed 6 (oracle +3.0%)",
		"- per-GPU paces: 0 of 8 runs, the oracle more than the band above stale on 0 of them\n",
	)

	// At the band exactly is within it, for a learner and for the oracle
	// (125/100 - 1 is 0.25 exactly); a run whose oracle gains 1% gives
	// no share.
	edge := []PatternRun{
		run("w1", "step", 1, 125, 100, 125, 126),
		run("w1", "step", 2, 70, 100, 85, 70),
		run("w1", "step", 3, 99, 100, 100, 100),
	}
	got = pooledMarkdown(edge, []uint64{1, 2, 3}, "pal", 0.25)
	hasAll(t, got,
		"| w1 | 50% / 100% (1) |",
		"- job paces: 0 of 3 runs, the oracle more than the band above stale on 0 of them\n",
		"- per-GPU paces: 1 of 3 runs, the oracle more than the band above stale on 0 of them; worst +26.0% w1 step seed 1 (oracle +25.0%); where the oracle is not: +26.0% w1 step seed 1 (oracle +25.0%)\n",
	)

	// No cell under 80%: each learner's lowest cell is named, even where
	// learning beats the oracle in every cell (a share above 100%).
	good := []PatternRun{
		run("w1", "uniform", 1, 90, 100, 89, 91),
		run("w2", "uniform", 2, 80, 100, 78, 79),
	}
	got = pooledMarkdown(good, []uint64{1, 2}, "pal", 0.05)
	hasAll(t, got,
		"- job paces: 0 cells under 80% (lowest: w1 uniform 110% (1 runs))\n",
		"- per-GPU paces: 0 cells under 80% (lowest: w1 uniform 90% (1 runs))\n",
	)
}

// hasAll fails t for each of wants that the pooled table got lacks.
func hasAll(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("pooled table lacks %q; got:\n%s", want, got)
		}
	}
}
