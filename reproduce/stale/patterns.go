package stale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/data"
	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
	"github.com/palsched/pal/variability"
)

// A learner tuned on one way of going stale proves little: the section's
// main table degrades a fifth of the GPUs by x1.5 for every class from
// the start, and a learner can be shaped to exactly that. Random patterns
// draw how a profile goes stale from families that each stress another
// assumption of the learner:
//
//	uniform    some GPUs slower for every class, from the start (the
//	           main table's kind, with random count and factor)
//	one-class  some GPUs slower for one class only: the GPU-wide factor
//	           and GPU-wide exoneration are wrong here
//	faster     some GPUs faster than profiled for some classes (a board
//	           replaced by a better one, a power cap lifted): beliefs must
//	           rise, which no slow observation ever asks for
//	step       some GPUs slow down for every class partway through the
//	           run: what was learnt right must be learnt again
//	drift      some GPUs slow down a little more every so often: a moving
//	           target, never far from the last belief
var PatternFamilies = []string{"uniform", "one-class", "faster", "step", "drift"}

// Pattern is one drawn way a profile went stale: which GPUs, which
// classes, by what factor and when. Steps > 1 spreads the change over
// Steps equal steps from Start to End (drift); Start = 0 with Steps = 1
// is a change from the beginning, which the truth table carries; later
// changes are GPU events.
type Pattern struct {
	Family  string
	Seed    uint64
	GPUs    []int
	Classes []variability.Class // the classes the change applies to
	Factor  float64             // the final value is the profile's x Factor
	Start   float64             // seconds
	End     float64             // seconds; = Start for one step
	Steps   int
}

// DrawPattern draws one pattern of family for a cluster of n GPUs whose
// trace arrives over span seconds. Counts run from one GPU to 30% of the
// cluster; slowdowns from x1.1 to x2.0; speed-ups to x0.6-0.9.
func DrawPattern(family string, seed uint64, n int, span float64) (Pattern, error) {
	if n < 1 || !(span > 0) {
		return Pattern{}, fmt.Errorf("stale pattern: %d GPUs over %g s", n, span)
	}
	rng := variability.NewRand(seed)
	p := Pattern{Family: family, Seed: seed, Steps: 1}
	k := 1 + rng.IntN(max(1, int(math.Round(0.3*float64(n)))))
	p.GPUs = rng.Perm(n)[:k]
	slices.Sort(p.GPUs)
	all := []variability.Class{0, 1, 2, 3}
	p.Classes = all
	p.Factor = 1.1 + 0.9*rng.Float64()
	switch family {
	case "uniform":
	case "one-class":
		p.Classes = []variability.Class{variability.Class(rng.IntN(variability.NumClasses))}
	case "faster":
		p.Factor = 0.6 + 0.3*rng.Float64()
		p.Classes = nil
		for len(p.Classes) == 0 {
			for _, c := range all {
				if rng.IntN(2) == 0 {
					p.Classes = append(p.Classes, c)
				}
			}
		}
	case "step":
		p.Start = span * (0.1 + 0.5*rng.Float64())
		p.End = p.Start
	case "drift":
		p.Start = span * 0.3 * rng.Float64()
		p.End = p.Start + span*(0.2+0.3*rng.Float64())
		p.Steps = 5
	default:
		return Pattern{}, fmt.Errorf("stale pattern family %q: want one of %s", family, strings.Join(PatternFamilies, ", "))
	}
	return p, nil
}

// Apply is what the GPUs do under p when old is the profile: the true
// table at time 0 and the GPU events after it, in time order. Step i of
// Steps sets the value to old x (1 + (Factor-1) x i/Steps), at
// Start + (End-Start) x (i-1)/(Steps-1).
func (p Pattern) Apply(old *variability.Table) (*variability.Table, []variability.GPUEvent) {
	truth := &variability.Table{}
	for c := range truth.Values {
		truth.Values[c] = slices.Clone(old.Values[c])
	}
	var events []variability.GPUEvent
	for i := 1; i <= p.Steps; i++ {
		f := 1 + (p.Factor-1)*float64(i)/float64(p.Steps)
		t := p.Start
		if p.Steps > 1 {
			t += (p.End - p.Start) * float64(i-1) / float64(p.Steps-1)
		}
		for _, g := range p.GPUs {
			for _, c := range p.Classes {
				v := old.Values[c][g] * f
				if t == 0 {
					truth.Values[c][g] = v
					continue
				}
				events = append(events, variability.GPUEvent{T: t, GPU: g, Class: c, Score: v})
			}
		}
	}
	return truth, events
}

// String says the pattern in one line, for the tables' files.
func (p Pattern) String() string {
	cs := make([]string, len(p.Classes))
	for i, c := range p.Classes {
		cs[i] = c.String()
	}
	when := "from the start"
	switch {
	case p.Steps > 1:
		when = fmt.Sprintf("in %d steps from %.0f s to %.0f s", p.Steps, p.Start, p.End)
	case p.Start > 0:
		when = fmt.Sprintf("from %.0f s", p.Start)
	}
	return fmt.Sprintf("%s seed %d: %d GPUs x%.2f on class %s %s", p.Family, p.Seed, len(p.GPUs), p.Factor, strings.Join(cs, ""), when)
}

// writeEvents is events as a --gpu-events file.
func writeEvents(events []variability.GPUEvent, comment string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\ntime_s,gpu,class,new_score\n", comment)
	for _, e := range events {
		fmt.Fprintf(&b, "%g,%d,%s,%g\n", e.T, e.GPU, e.Class, e.Score)
	}
	return b.String()
}

// Random patterns per family and workload: PatternDraws tuned against
// (seeds 1..PatternDraws, the ones looked at while the learner's rules
// were chosen) and PatternHeldOut never looked at before they were
// reported (seeds from HeldOutSeed on).
const (
	PatternDraws   = 4
	PatternHeldOut = 1
	HeldOutSeed    = 1001
)

// patternVariants are the runs of one pattern: the oracle is told the
// truth at every change (--gpu-events-known for changes after the
// start), stale believes the old profile throughout, learning learns
// from job paces, and gpu-learning from each GPU's own pace (--learn-from
// gpu: the step times workers report in pal.io/step-time). The last is
// what a learner can know once a job has run on a GPU, so it tells the
// families job paces cannot show apart from those a rule could learn.
var patternVariants = []string{"oracle", "stale", "stale+learning", "stale+gpu-learning"}

// PatternRun is one pattern on one workload.
type PatternRun struct {
	Family, Trace string
	Pattern       Pattern
	HeldOut       bool
	AvgJCT        map[string]float64
}

// Recovered is (stale - learning) / (stale - oracle), NaN when the
// oracle gains nothing over stale.
func (r PatternRun) Recovered() float64 { return recovered(r.AvgJCT) }

// Harm is how much worse than stale learning ends, as a share of
// stale (0 when it ends at or below stale).
func (r PatternRun) Harm() float64 { return r.harmBy("stale+learning") }

func (r PatternRun) harmBy(learner string) float64 {
	return max(0, r.AvgJCT[learner]/r.AvgJCT["stale"]-1)
}

// patternWorkload is one workload the patterns run on: its grid (trace,
// cluster, seeds), old profile file and table, GPUs and arrival span.
type patternWorkload struct {
	name  string
	grid  sweep.Grid
	old   string
	table *variability.Table
	per   int
	span  float64
}

// patternWorkloads are plan's workloads as the section runs them, FIFO:
// the Sia-Philly traces on 16x4 with the artifact's pinned table as the
// old profile, and Synergy's seeds, each with its own drawn table as the
// old profile. The old profiles are written into dir. sia is the
// Sia-Philly old profile and run options, which the degradation draws
// share.
func patternWorkloads(plan paper.Plan, dir string) (wls []patternWorkload, sia patternWorkload, err error) {
	base, err := plan.Base()
	if err != nil {
		return nil, sia, err
	}
	b, err := fs.ReadFile(data.Reference, "reference/pal-artifact-gpu-pmscores.csv")
	if err != nil {
		return nil, sia, err
	}
	pinned, err := variability.ReadGPUScores("pal-artifact-gpu-pmscores.csv", bytes.NewReader(b))
	if err != nil {
		return nil, sia, err
	}
	siaOld := filepath.Join(dir, "sia-profile.csv")
	if err := writeTable(siaOld, pinned.Table, 4, []string{"old profile: the artifact's pinned seed-42 table"}); err != nil {
		return nil, sia, err
	}
	sia = patternWorkload{name: "sia-philly", old: siaOld, table: pinned.Table, per: 4}
	sia.grid.Base = base
	sia.grid.Base.Scheduler = "fifo"
	for _, name := range paper.SiaNames(plan.SiaTraces) {
		o := sia.grid.Base
		o.Trace = name
		in, err := experiment.Prepare(o)
		if err != nil {
			return nil, sia, err
		}
		wls = append(wls, patternWorkload{name: strings.ReplaceAll(name, "/", "-"), grid: sweep.Grid{Base: sia.grid.Base, Traces: []string{name}, Schedulers: []string{"fifo"}},
			old: siaOld, table: pinned.Table, per: 4, span: arrivalSpan(in.Trace)})
	}
	syn := base
	syn.Cluster, syn.Round, syn.LocalityPenalty, syn.Pinned = plan.SynergyCluster, plan.SynergyRound, plan.SynergyL, false
	_, per, err := cluster.ParseShape(plan.SynergyCluster)
	if err != nil {
		return nil, sia, err
	}
	track := plan.SynergyTrack
	for _, seed := range plan.SynergySeeds {
		o := syn
		o.Seed = seed
		o.Trace = "sia-philly/1" // only its GPU draw is used here
		in, err := experiment.Prepare(o)
		if err != nil {
			return nil, sia, err
		}
		old := filepath.Join(dir, fmt.Sprintf("synergy-seed%d-profile.csv", seed))
		if err := writeTable(old, in.Raw, per, []string{"old profile: " + in.RawFrom}); err != nil {
			return nil, sia, err
		}
		synGrid := sweep.Grid{Base: syn, Traces: []string{sweep.SynergyTrace}, Loads: []float64{plan.MigrationLoad},
			Seeds: []uint64{seed}, Schedulers: []string{"fifo"}, Synergy: sweep.SynergySpec{Jobs: plan.SynergyJobs, Track: &track}}
		wls = append(wls, patternWorkload{name: fmt.Sprintf("synergy-seed%d", seed), grid: synGrid, old: old, table: in.Raw, per: per,
			span: float64(plan.SynergyJobs) / plan.MigrationLoad * 3600})
	}
	return wls, sia, nil
}

// patternSeeds are the seeds every family draws: PatternDraws tuned
// against, then PatternHeldOut held out.
func patternSeeds() []uint64 {
	var seeds []uint64
	for i := range PatternDraws {
		seeds = append(seeds, uint64(1+i))
	}
	for i := range PatternHeldOut {
		seeds = append(seeds, uint64(HeldOutSeed+i))
	}
	return seeds
}

// runPatterns runs the patterns of families (nil: every family) drawn
// with seeds (nil: patternSeeds) on every workload, every run placed by
// placement, and returns the runs in (workload, family, seed) order. A subset is for tuning a rule on
// the runs where it fails without waiting for the rest.
func runPatterns(ctx context.Context, dir string, wls []patternWorkload, families []string, seeds []uint64, placement string, workers int, log io.Writer) ([]PatternRun, error) {
	pdir := filepath.Join(dir, "patterns")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, err
	}
	if families == nil {
		families = PatternFamilies
	}
	if seeds == nil {
		seeds = patternSeeds()
	}
	var runs []PatternRun
	var grids []*sweep.Grid
	for _, w := range wls {
		for _, fam := range families {
			for _, seed := range seeds {
				p, err := DrawPattern(fam, seed, w.table.NumGPUs(), w.span)
				if err != nil {
					return nil, err
				}
				truth, events := p.Apply(w.table)
				base := filepath.Join(pdir, fmt.Sprintf("%s-%s-%d", w.name, fam, seed))
				tru := base + "-truth.csv"
				if err := writeTable(tru, truth, w.per, []string{"truth: " + p.String(), fmt.Sprintf("GPUs: %v", p.GPUs)}); err != nil {
					return nil, err
				}
				ev := ""
				if len(events) > 0 {
					ev = base + "-events.csv"
					if err := os.WriteFile(ev, []byte(writeEvents(events, "what changes after the start: "+p.String())), 0o644); err != nil {
						return nil, err
					}
				}
				runs = append(runs, PatternRun{Family: fam, Trace: w.name, Pattern: p, HeldOut: seed >= HeldOutSeed, AvgJCT: map[string]float64{}})
				for _, v := range patternVariants {
					g := w.grid
					g.Placements = []string{placement}
					g.Base.GPUScores, g.Base.ActualGPUScores, g.Base.GPUEvents, g.Base.LearnScores = w.old, tru, ev, false
					switch v {
					case "oracle":
						g.Base.GPUScores, g.Base.ActualGPUScores = tru, ""
						g.Base.GPUEventsKnown = ev != ""
					case "stale+learning":
						g.Base.LearnScores = true
					case "stale+gpu-learning":
						g.Base.LearnScores, g.Base.LearnFrom = true, "gpu"
					}
					grids = append(grids, &g)
				}
			}
		}
	}
	if log != nil {
		fmt.Fprintf(log, "reproduce: stale profiles, %d random patterns, %d runs\n", len(runs), len(grids))
	}
	results, err := sweep.Run(ctx, grids, sweep.RunOptions{Workers: workers})
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		if len(r.Rows) != 1 {
			return nil, fmt.Errorf("stale patterns: run %d has %d rows, want 1", i, len(r.Rows))
		}
		runs[i/len(patternVariants)].AvgJCT[patternVariants[i%len(patternVariants)]] = r.Rows[0].AvgJCT
	}
	var b strings.Builder
	b.WriteString("workload,family,seed,held_out,pattern,oracle_avg_jct_s,stale_avg_jct_s,learning_avg_jct_s,recovered,gpu_learning_avg_jct_s,gpu_recovered\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "%s,%s,%d,%t,%q,%.2f,%.2f,%.2f,%.4f,%.2f,%.4f\n", r.Trace, r.Family, r.Pattern.Seed, r.HeldOut, r.Pattern.String(),
			r.AvgJCT["oracle"], r.AvgJCT["stale"], r.AvgJCT["stale+learning"], r.Recovered(),
			r.AvgJCT["stale+gpu-learning"], recoveredBy(r.AvgJCT, "stale+gpu-learning"))
	}
	return runs, os.WriteFile(filepath.Join(dir, "patterns.csv"), []byte(b.String()), 0o644)
}

// minGain is the oracle's least gain over stale, as a share of stale,
// for a run's recovered share to mean something: below it the gap is
// within what one placement reshuffling the queue moves (a pattern of
// one GPU a little slower can leave stale where the truth would be).
// Such runs still count for harm.
const minGain = 0.02

// PatternStats summarises one family on one workload.
type PatternStats struct {
	Trace, Family string
	HeldOut       bool
	Runs          int
	// Shares are the recovered shares of runs where the oracle gains at
	// least minGain over stale.
	Shares []float64
	// Harmed counts runs where learning ends above stale; WorstHarm is
	// the largest, as a share of stale.
	Harmed    int
	WorstHarm float64
	// GPUShares, GPUHarmed and GPUWorstHarm are the same for learning
	// from each GPU's own pace.
	GPUShares    []float64
	GPUHarmed    int
	GPUWorstHarm float64
}

// patternStats groups runs by workload, family and held-out, in order.
func patternStats(runs []PatternRun) []PatternStats {
	var out []PatternStats
	idx := map[string]int{}
	for _, r := range runs {
		k := fmt.Sprintf("%s\x00%s\x00%t", r.Trace, r.Family, r.HeldOut)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, PatternStats{Trace: r.Trace, Family: r.Family, HeldOut: r.HeldOut})
		}
		s := &out[i]
		s.Runs++
		m := r.AvgJCT
		if m["stale"]-m["oracle"] >= minGain*m["stale"] {
			s.Shares = append(s.Shares, r.Recovered())
			s.GPUShares = append(s.GPUShares, recoveredBy(m, "stale+gpu-learning"))
		}
		if h := r.Harm(); h > 0 {
			s.Harmed++
			s.WorstHarm = max(s.WorstHarm, h)
		}
		if h := r.harmBy("stale+gpu-learning"); h > 0 {
			s.GPUHarmed++
			s.GPUWorstHarm = max(s.GPUWorstHarm, h)
		}
	}
	return out
}

// quantile is the q-quantile of xs by the nearest rank (NaN if empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

func patternsMarkdown(b *strings.Builder, runs []PatternRun) {
	fmt.Fprintf(b, "### Random patterns of going stale\n\n")
	fmt.Fprintf(b, "Each workload runs %d patterns per family drawn with seeds 1-%d (the ones the learner's rules were checked against) and %d held out (seeds from %d, never looked at before this table). Families: uniform (GPUs slower for every class from the start), one-class (slower for one class only), faster (faster than profiled on some classes), step (slower for every class from a time partway through), drift (slower in 5 steps over part of the run). 1 GPU to 30%% of the cluster, x1.1-2.0 slower or x0.6-0.9 faster. The oracle is told every change as it happens. Recovered = (stale - learning) / (stale - oracle), over the runs where the oracle gains at least %.0f%% over stale; harm = learning's average JCT above stale's. Learning is from job paces (the slowest of a job's GPUs); the last two columns learn from each GPU's own pace instead (--learn-from gpu, the step times workers report), what a learner can know once a job has run on a GPU. Every run is in %s/patterns.csv.\n\n",
		PatternDraws, PatternDraws, PatternHeldOut, HeldOutSeed, 100*minGain, StaleDir)
	b.WriteString("| workload | family | recovered: median / p10 / worst (runs) | held out: recovered | learning above stale: runs, worst | per-GPU paces: recovered, median (held out) | per-GPU paces above stale: runs, worst |\n|---|---|---|---|---|---|---|\n")
	stats := patternStats(runs)
	held := map[string]PatternStats{}
	for _, s := range stats {
		if s.HeldOut {
			held[s.Trace+"\x00"+s.Family] = s
		}
	}
	pct := func(x float64) string { return sharePct(x) }
	for _, s := range stats {
		if s.HeldOut {
			continue
		}
		h := held[s.Trace+"\x00"+s.Family]
		hs := "n/a"
		if len(h.Shares) > 0 {
			hs = pct(quantile(h.Shares, 0.5))
		}
		harm := harmCell(s.Harmed+h.Harmed, s.Runs+h.Runs, max(s.WorstHarm, h.WorstHarm))
		tune := "n/a (oracle gains < 2% on every run)"
		gpu := "n/a"
		if len(s.Shares) > 0 {
			tune = fmt.Sprintf("%s / %s / %s (%d of %d)", pct(quantile(s.Shares, 0.5)), pct(quantile(s.Shares, 0.1)), pct(slices.Min(s.Shares)), len(s.Shares), s.Runs)
			gpu = pct(quantile(s.GPUShares, 0.5))
		}
		if len(h.GPUShares) > 0 {
			gpu += " (" + pct(quantile(h.GPUShares, 0.5)) + ")"
		}
		gpuHarm := harmCell(s.GPUHarmed+h.GPUHarmed, s.Runs+h.Runs, max(s.GPUWorstHarm, h.GPUWorstHarm))
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", s.Trace, s.Family, tune, hs, harm, gpu, gpuHarm)
	}
	b.WriteString("\n")
}

// harmCell says how many of runs a learner ended above stale, and by how
// much at worst (a share of stale).
func harmCell(n, runs int, worst float64) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d of %d, +%.1f%%", n, runs, 100*worst)
}
