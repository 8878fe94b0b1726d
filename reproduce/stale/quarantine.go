package stale

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The quarantine variant: GPUs that turn slow mid-run under tenancy.
// The synthetic 96-GPU tenants (three VCs of four 8-GPU nodes, FIFO,
// hived-speed, packed-sticky inside each VC) at each of QuarantineLoads
// over QuarantineDays, for each of QuarantineSeeds (the trace's seed and the
// draw of the slow GPUs); at a quarter of the arrival span QuarantineSlow
// GPUs start running QuarantineFactor times slower for every class, and
// at 60% of the span the first half of them are back. Each seed runs
// with learning alone (--learn-scores), learning and --quarantine-above
// QuarantineAbove, and the same two told of each change
// (--gpu-events-known), which separates what learning misattributes
// from what quarantine itself does: mean JCT and each VC's mean wait.
const (
	QuarantineDays   = 2.0
	QuarantineSlow   = 6
	QuarantineFactor = 2.0
	QuarantineAbove  = 1.5
)

// QuarantineSeeds and QuarantineLoads are the variant's settings.
var (
	QuarantineSeeds = []uint64{1, 2, 3, 4, 5}
	QuarantineLoads = []float64{0.5, 0.9}
)

// QuarantineRow is one variant's run.
type QuarantineRow struct {
	Load    float64
	Seed    uint64
	Variant string
	MeanJCT float64
	VCWait  map[string]float64 // mean wait by VC
	VCs     []string           // VC order
	// Quarantine is what the rule did (nil without it).
	Quarantine *experiment.QuarantineFigures
}

// QuarantineResult is the variant's runs, seed by seed in variant order.
type QuarantineResult struct {
	Rows []QuarantineRow
	// Slow and Back are, by seed, the GPUs slowed and those of them that
	// come back (the same at every load: the draw is the seed's).
	Slow, Back map[uint64][]int
}

var quarantineVariants = []string{"learning", "learning+quarantine", "told", "told+quarantine"}

// runQuarantine runs the variant, writing its cells and events under dir.
func runQuarantine(ctx context.Context, dir string, workers int, log io.Writer) (*QuarantineResult, error) {
	res := &QuarantineResult{Slow: map[uint64][]int{}, Back: map[uint64][]int{}}
	type task struct {
		load float64
		seed uint64
		v    string
		o    experiment.Options
		tr   *workload.Trace
	}
	var tasks []task
	for _, load := range QuarantineLoads {
		for _, seed := range QuarantineSeeds {
			o, tr, slow, back, err := quarantineInputs(dir, load, seed)
			if err != nil {
				return nil, err
			}
			res.Slow[seed], res.Back[seed] = slow, back
			for _, v := range quarantineVariants {
				vo := o
				vo.LearnScores = strings.HasPrefix(v, "learning")
				vo.GPUEventsKnown = !vo.LearnScores
				if strings.HasSuffix(v, "+quarantine") {
					vo.QuarantineAbove = QuarantineAbove
				}
				tasks = append(tasks, task{load, seed, v, vo, tr})
			}
		}
	}
	if log != nil {
		fmt.Fprintf(log, "reproduce: stale profiles, quarantine variant, %d runs\n", len(tasks))
	}
	res.Rows = make([]QuarantineRow, len(tasks))
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, workers))
	for i, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			in, err := experiment.PrepareWith(t.o, t.tr)
			if err != nil {
				errs[i] = err
				return
			}
			r, err := in.Run("packed-sticky")
			if err != nil {
				errs[i] = fmt.Errorf("quarantine variant %s load %g seed %d: %w", t.v, t.load, t.seed, err)
				return
			}
			row := QuarantineRow{Load: t.load, Seed: t.seed, Variant: t.v, MeanJCT: r.Summary.AvgJCT, VCWait: map[string]float64{}, Quarantine: r.Quarantine}
			for _, f := range r.VCs {
				row.VCs = append(row.VCs, f.VC)
				row.VCWait[f.VC] = f.MeanWait
			}
			res.Rows[i] = row
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// quarantineInputs writes one seed's cells and events and returns its
// options (learning and quarantine left to the variant), trace, slowed
// GPUs and those that come back.
func quarantineInputs(dir string, load float64, seed uint64) (experiment.Options, *workload.Trace, []int, []int, error) {
	var o experiment.Options
	cells, tr := paper.SyntheticHived(load, QuarantineDays, seed)
	cellsPath := filepath.Join(dir, "quarantine-cells.yaml") // the same cells at every load and seed
	var b strings.Builder
	if err := tenancy.WriteYAML(&b, cells); err != nil {
		return o, nil, nil, nil, err
	}
	if err := os.WriteFile(cellsPath, []byte(b.String()), 0o644); err != nil {
		return o, nil, nil, nil, err
	}
	o, err := experiment.Preset("artifact")
	if err != nil {
		return o, nil, nil, nil, err
	}
	o.Trace, o.Cells, o.Tenancy, o.Scheduler = "synthetic-96", cellsPath, "hived-speed", "fifo"
	o.Placements, o.LearnScores = "packed-sticky", true
	probe, err := experiment.PrepareWith(o, tr)
	if err != nil {
		return o, nil, nil, nil, err
	}
	span := arrivalSpan(probe.Trace)
	at, backAt := 0.25*span, 0.6*span
	slow := variability.NewRand(seed).Perm(probe.Cluster.Size())[:QuarantineSlow]
	slices.Sort(slow)
	back := slow[:QuarantineSlow/2]
	var ev strings.Builder
	fmt.Fprintf(&ev, "# seed %d: GPUs turning %gx slower at %.0f s, the first half back at %.0f s\ntime_s,gpu,class,new_score\n", seed, QuarantineFactor, at, backAt)
	for _, g := range slow {
		for c := range variability.Class(variability.NumClasses) {
			fmt.Fprintf(&ev, "%.0f,%d,%s,%g\n", at, g, c, probe.Raw.Values[c][g]*QuarantineFactor)
		}
	}
	for _, g := range back {
		for c := range variability.Class(variability.NumClasses) {
			fmt.Fprintf(&ev, "%.0f,%d,%s,%g\n", backAt, g, c, probe.Raw.Values[c][g])
		}
	}
	o.GPUEvents = filepath.Join(dir, fmt.Sprintf("quarantine-events-load%g-seed%d.csv", load, seed))
	if err := os.WriteFile(o.GPUEvents, []byte(ev.String()), 0o644); err != nil {
		return o, nil, nil, nil, err
	}
	return o, tr, slow, back, nil
}

// quarantineMarkdown writes the variant's section: per load and variant,
// the geomean over seeds of the mean JCT and the mean over seeds of each
// VC's mean wait, beside learning alone.
func quarantineMarkdown(b *strings.Builder, r *QuarantineResult) {
	fmt.Fprintf(b, "### Quarantine under tenancy\n\n")
	fmt.Fprintf(b, "GPUs that turn slow mid-run, under tenancy. The synthetic 96-GPU tenants (three VCs of four 8-GPU nodes as node cells, every node reserved; FIFO, hived-speed, packed-sticky inside each VC), %g days, seeds %v; at a quarter of the arrival span %d GPUs (drawn per seed) run %gx slower for every class, and at 60%% of it the first half of them are back. learning: `--learn-scores`; told: `--gpu-events-known`; +quarantine: `--quarantine-above %g` (out again below %g). JCT: geomean over the seeds of the mean JCT; waits: mean over the seeds of each VC's mean wait, in seconds; vs learning: the same figure over learning alone's. Every run is in %s/quarantine.csv.\n\n",
		QuarantineDays, QuarantineSeeds, QuarantineSlow, QuarantineFactor, QuarantineAbove, variability.DefaultQuarantineBelow(QuarantineAbove), StaleDir)
	var vcs []string
	if len(r.Rows) > 0 {
		vcs = r.Rows[0].VCs
	}
	b.WriteString("| load | variant | mean JCT | vs learning |")
	for _, vc := range vcs {
		fmt.Fprintf(b, " %s wait | vs learning |", vc)
	}
	b.WriteString(" quarantine changes (GPUs ever in, in at the end), summed |\n|---|---|---|---|")
	for range vcs {
		b.WriteString("---|---|")
	}
	b.WriteString("---|\n")
	for _, load := range QuarantineLoads {
		agg := map[string]quarantineAgg{}
		for _, v := range quarantineVariants {
			agg[v] = aggregate(r.Rows, load, v, vcs)
		}
		base := agg["learning"]
		for _, v := range quarantineVariants {
			a := agg[v]
			fmt.Fprintf(b, "| %g | %s | %.0f | %s |", load, v, a.jct, ratio(a.jct, base.jct))
			for _, vc := range vcs {
				fmt.Fprintf(b, " %.0f | %s |", a.wait[vc], ratio(a.wait[vc], base.wait[vc]))
			}
			if a.quarantined {
				fmt.Fprintf(b, " %d (%d, %d) |\n", a.changes, a.gpus, a.atEnd)
			} else {
				b.WriteString(" - |\n")
			}
		}
	}
	b.WriteString("\n")
}

type quarantineAgg struct {
	jct                  float64
	wait                 map[string]float64
	quarantined          bool
	changes, gpus, atEnd int
}

func aggregate(rows []QuarantineRow, load float64, v string, vcs []string) quarantineAgg {
	a := quarantineAgg{wait: map[string]float64{}}
	var jct []float64
	n := 0
	for _, row := range rows {
		if row.Load != load || row.Variant != v {
			continue
		}
		n++
		jct = append(jct, row.MeanJCT)
		for _, vc := range vcs {
			a.wait[vc] += row.VCWait[vc]
		}
		if q := row.Quarantine; q != nil {
			a.quarantined = true
			a.changes += q.Changes
			a.gpus += len(q.GPUs)
			a.atEnd += q.AtEnd
		}
	}
	for _, vc := range vcs {
		a.wait[vc] /= float64(max(1, n))
	}
	a.jct = metrics.GeoMean(jct)
	return a
}

func ratio(x, base float64) string {
	if !(base > 0) {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f%%", 100*(x/base-1))
}

// quarantineCSV is every run of the variant, one line each.
func quarantineCSV(r *QuarantineResult) string {
	var b strings.Builder
	b.WriteString("load,seed,variant,mean_jct_s,vc,mean_wait_s,quarantine_changes,quarantined_gpus,quarantined_at_end\n")
	for _, row := range r.Rows {
		for _, vc := range row.VCs {
			ch, gpus, end := "", "", ""
			if q := row.Quarantine; q != nil {
				ch, end = fmt.Sprint(q.Changes), fmt.Sprint(q.AtEnd)
				gpus = strings.Trim(strings.ReplaceAll(fmt.Sprint(q.GPUs), " ", ";"), "[]")
			}
			fmt.Fprintf(&b, "%g,%d,%s,%.2f,%s,%.2f,%s,%s,%s\n", row.Load, row.Seed, row.Variant, row.MeanJCT, vc, row.VCWait[vc], ch, gpus, end)
		}
	}
	return b.String()
}
