package stale

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/intruns"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/reproduce/paper"
)

// PatternsDir is where RunPatternSet writes, under the output directory:
// apart from the stale section's own patterns, so a pooled run never
// overwrites the table the section reports.
const PatternsDir = "stale-patterns"

// sectionPlacement places every run of the stale section: PAL, whose
// bins a stale profile misleads.
const sectionPlacement = "pal"

// PatternSet chooses which random patterns RunPatternSet runs. The
// section's table draws PatternDraws seeds and one held out per family,
// few runs per cell; a set pools as many seeds as asked, so each cell's
// median stands on enough runs to say whether a learner recovers 80% of
// the oracle's gain there.
type PatternSet struct {
	Workloads []string // nil: every workload of the plan
	Families  []string // nil: PatternFamilies
	Seeds     []uint64 // nil: the section's seeds
	// Placement places every run ("": sectionPlacement).
	Placement string
	// Band is how far above stale a learner may end before the run counts
	// as harmed: stale's own spread when its profile is measured again
	// (5.1% of the median on Sia-Philly 4, stale.TestStaleRemeasured). It
	// is printed with the table.
	Band float64
}

// PatternSetResult is every run of a set and the table that pools them.
type PatternSetResult struct {
	Runs     []PatternRun
	Markdown string
}

// RunPatternSet runs set's patterns on plan's workloads under oracle,
// stale and both learners, and writes OUT/PatternsDir/patterns.csv (a
// row a run), patterns.md (the pooled table) and the tables each run
// read.
func RunPatternSet(ctx context.Context, plan paper.Plan, out string, set PatternSet, workers int, log io.Writer) (*PatternSetResult, error) {
	if !(set.Band >= 0) || set.Band > 1 {
		return nil, fmt.Errorf("stale patterns: band %g: want a share of stale in [0, 1]", set.Band)
	}
	for _, f := range set.Families {
		if !slices.Contains(PatternFamilies, f) {
			return nil, fmt.Errorf("stale patterns: unknown family %q (known: %s)", f, strings.Join(PatternFamilies, ", "))
		}
	}
	dir := filepath.Join(out, PatternsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	wls, _, err := patternWorkloads(plan, dir)
	if err != nil {
		return nil, err
	}
	if set.Workloads != nil {
		var names []string
		for _, w := range wls {
			names = append(names, w.name)
		}
		for _, n := range set.Workloads {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("stale patterns: unknown workload %q (known: %s)", n, strings.Join(names, ", "))
			}
		}
		wls = slices.DeleteFunc(wls, func(w patternWorkload) bool { return !slices.Contains(set.Workloads, w.name) })
	}
	placement := set.Placement
	if placement == "" {
		placement = sectionPlacement
	}
	if _, err := place.New(placement); err != nil {
		return nil, fmt.Errorf("stale patterns: %w", err)
	}
	runs, err := runPatterns(ctx, dir, wls, set.Families, set.Seeds, placement, workers, log)
	if err != nil {
		return nil, err
	}
	seeds := set.Seeds
	if seeds == nil {
		seeds = patternSeeds()
	}
	md := pooledMarkdown(runs, seeds, placement, set.Band)
	if err := os.WriteFile(filepath.Join(dir, "patterns.md"), []byte(md), 0o644); err != nil {
		return nil, err
	}
	return &PatternSetResult{Runs: runs, Markdown: md}, nil
}

// ParseSeeds reads a list of seeds and ranges, "1-20,1001".
func ParseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %s: %s is not a seed or a range a-b", quote.Value(s), quote.Value(part))
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("seeds %s: %s is not a range a-b with a <= b", quote.Value(s), quote.Value(part))
			}
		}
		if b-a >= 10000 || len(seeds)+int(b-a) >= 10000 {
			return nil, fmt.Errorf("seeds %s: more than 10,000 seeds", quote.Value(s))
		}
		for i := uint64(0); i <= b-a; i++ { // counted, so b = 2^64-1 cannot wrap x
			if x := a + i; !slices.Contains(seeds, x) {
				seeds = append(seeds, x)
			}
		}
	}
	return seeds, nil
}

// seedList writes seeds back as ranges ("1-20, 1001").
func seedList(seeds []uint64) string {
	s := slices.Clone(seeds)
	slices.Sort(s)
	return intruns.Format(s, ", ")
}

// pooledMarkdown pools runs by workload and family over every seed
// (held-out or not: a set is reported as run, and its seeds are named),
// for both learners: each cell's median recovered share, the cells under
// 80%, and the runs a learner ends more than band above stale, each
// beside the oracle (knowing the truth can cost more than band too: a
// faster GPU changes PAL's bins).
func pooledMarkdown(runs []PatternRun, seeds []uint64, placement string, band float64) string {
	var b strings.Builder
	var wls, fams []string
	type cell struct{ job, gpu []float64 }
	cells := map[string]*cell{}
	for _, r := range runs {
		if !slices.Contains(wls, r.Trace) {
			wls = append(wls, r.Trace)
		}
		if !slices.Contains(fams, r.Family) {
			fams = append(fams, r.Family)
		}
		k := r.Trace + "\x00" + r.Family
		c := cells[k]
		if c == nil {
			c = &cell{}
			cells[k] = c
		}
		m := r.AvgJCT
		if m["stale"]-m["oracle"] >= minGain*m["stale"] {
			c.job = append(c.job, r.Recovered())
			c.gpu = append(c.gpu, recoveredBy(m, "stale+gpu-learning"))
		}
	}
	fmt.Fprintf(&b, "# Random stale patterns pooled: seeds %s, %d workloads x %d families, %d patterns, placement %s\n\n", seedList(seeds), len(wls), len(fams), len(runs), placement)
	fmt.Fprintf(&b, "Runs as the stale section runs them: FIFO, %s placing, the Sia-Philly traces with the artifact's pinned table as the old profile and each Synergy seed with its own drawn table; each pattern's truth is that profile changed as the pattern says (the old profiles and every truth table are written beside this table). The oracle believes the truth, stale the old profile, and the two learners start from the old profile.\n\n", placement)
	fmt.Fprintf(&b, "Each cell: the median recovered share, (stale - learning) / (stale - oracle), over the runs where the oracle gains at least %.0f%% over stale, learning from job paces / from per-GPU paces (runs); - where no run's oracle gains that much. The lower median of an even count.\n\n", 100*minGain)
	b.WriteString("| workload |")
	for _, f := range fams {
		b.WriteString(" " + f + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(fams)) + "\n")
	type low struct {
		what  string
		share float64
	}
	var under [2][]low
	var lowest [2]low // what == "": no cell yet
	counted := 0
	for _, w := range wls {
		b.WriteString("| " + w + " |")
		for _, f := range fams {
			c := cells[w+"\x00"+f]
			if c == nil || len(c.job) == 0 {
				b.WriteString(" - |")
				continue
			}
			counted++
			med := [2]float64{quantile(c.job, 0.5), quantile(c.gpu, 0.5)}
			fmt.Fprintf(&b, " %s / %s (%d) |", sharePct(med[0]), sharePct(med[1]), len(c.job))
			for i, m := range med {
				l := low{fmt.Sprintf("%s %s %s (%d runs)", w, f, sharePct(m), len(c.job)), m}
				if m < 0.8 {
					under[i] = append(under[i], l)
				}
				if lowest[i].what == "" || m < lowest[i].share {
					lowest[i] = l
				}
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n%d cells have a run where the oracle gains at least %.0f%%.\n\n", counted, 100*minGain)
	learners := [2]struct{ name, key string }{{"job paces", "stale+learning"}, {"per-GPU paces", "stale+gpu-learning"}}
	for i, l := range learners {
		fmt.Fprintf(&b, "- %s: %d cells under 80%%", l.name, len(under[i]))
		if len(under[i]) > 0 {
			var ws []string
			for _, u := range under[i] {
				ws = append(ws, u.what)
			}
			fmt.Fprintf(&b, ": %s", strings.Join(ws, "; "))
		} else if lowest[i].what != "" {
			fmt.Fprintf(&b, " (lowest: %s)", lowest[i].what)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nEnding more than %.1f%% (the band) above stale, beside the oracle against stale:\n\n", 100*band)
	for _, l := range learners {
		type harm struct {
			r            PatternRun
			over, oracle float64
		}
		var hs []harm
		oracleToo := 0
		for _, r := range runs {
			m := r.AvgJCT
			over := m[l.key]/m["stale"] - 1
			if over <= band {
				continue
			}
			h := harm{r, over, m["oracle"]/m["stale"] - 1}
			if h.oracle > band {
				oracleToo++
			}
			hs = append(hs, h)
		}
		slices.SortStableFunc(hs, func(a, b harm) int {
			switch {
			case a.over > b.over:
				return -1
			case a.over < b.over:
				return 1
			}
			return 0
		})
		fmt.Fprintf(&b, "- %s: %d of %d runs, the oracle more than the band above stale on %d of them", l.name, len(hs), len(runs), oracleToo)
		say := func(h harm) string {
			return fmt.Sprintf("%+.1f%% %s %s seed %d (oracle %+.1f%%)", 100*h.over, h.r.Trace, h.r.Family, h.r.Pattern.Seed, 100*h.oracle)
		}
		var worst, alone []string
		for i, h := range hs {
			if i < 3 {
				worst = append(worst, say(h))
			}
			if h.oracle <= band {
				alone = append(alone, say(h))
			}
		}
		if len(worst) > 0 {
			fmt.Fprintf(&b, "; worst %s", strings.Join(worst, ", "))
		}
		if len(alone) > 0 {
			fmt.Fprintf(&b, "; where the oracle is not: %s", strings.Join(alone, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}
