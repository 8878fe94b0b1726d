package backfill

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// Change is one workload and scheduler: the mean JCT change of a mode
// against strict order, in percent, over the runs that differ by seed.
type Change struct {
	Workload, Scheduler string
	// Exact is easy with exact estimates (one value per Synergy seed;
	// one value elsewhere), Noisy easy with noisy ones (one per noise
	// seed), Greedy greedy's.
	Exact, Noisy, Greedy []float64
}

// Changes are every workload's JCT changes against strict order, in the
// section's order.
func (r *Result) Changes() []Change {
	var out []Change
	idx := map[[2]string]int{}
	strict := map[string]float64{}
	key := func(c Cell) string { return fmt.Sprintf("%s\x00%d\x00%s", c.Workload, c.Seed, c.Scheduler) }
	for _, c := range r.Cells {
		if c.Mode == "none" {
			strict[key(c)] = c.MeanJCT
		}
	}
	for _, c := range r.Cells {
		if c.Mode == "none" {
			continue
		}
		k := [2]string{c.Workload, c.Scheduler}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Change{Workload: c.Workload, Scheduler: c.Scheduler})
		}
		d := 100 * (c.MeanJCT/strict[key(c)] - 1)
		switch {
		case c.Mode == "greedy":
			out[i].Greedy = append(out[i].Greedy, d)
		case c.NoiseSeed > 0:
			out[i].Noisy = append(out[i].Noisy, d)
		default:
			out[i].Exact = append(out[i].Exact, d)
		}
	}
	return out
}

// span renders values as "x" (one) or "mean [min, max]".
func span(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%+.1f%%", xs[0])
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return fmt.Sprintf("%+.1f%% [%+.1f, %+.1f]", s/float64(len(xs)), slices.Min(xs), slices.Max(xs))
}

// mean averages a field over cells (NaN where none has it).
func mean(cs []Cell, f func(Cell) float64) float64 {
	s, n := 0.0, 0
	for _, c := range cs {
		if v := f(c); !math.IsNaN(v) {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func secs(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.0f", x)
}

func (r *Result) markdown() string {
	p := r.Plan
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Backfill and forecasts\n\n")
	fmt.Fprintf(&b, "Not in the paper. Strict order (none: no job starts behind one that waits) against EASY backfill (the first waiting gang that does not fit gets a reservation; a job behind it starts only if it is estimated to end by then or keeps off the reserved GPUs) and greedy (any job that fits starts, no reservation). Placement %s; schedulers %s (tiresias-las is Tiresias' discretised two-dimensional LAS, which preempts). ", p.Placement, strings.Join(p.Schedulers, " and "))
	fmt.Fprintf(&b, "Sia-Philly: workloads %v, the artifact's pinned traces, background arrivals and GPU values on 16x4. Synergy: %d jobs at %g jobs/hour on %s (ids %s measured), seeds %v (the seed draws the trace and the GPU values). Philly: %s on %s shared by every VC, uniform GPUs, %g s rounds. ", p.SiaTraces, p.SynergyJobs, p.SynergyLoad, p.SynergyCluster, p.SynergyTrack, p.SynergySeeds, phillyName(r), p.PhillyCluster, p.PhillyRound)
	fmt.Fprintf(&b, "*Exact* estimates are the simulator's own model of the remaining run time; *noisy* ones are each job's exact estimate times a factor of its own, lognormal of mean 1 and CV %g, fixed per job and noise seed (seeds %v on Sia-Philly and Philly; on Synergy the run's seed). While a job waits, running jobs keep their GPUs (PAL re-places running jobs every round otherwise, and a moved job ends at another time than the reservation read). A backfilled job that overruns its estimate and still holds GPUs the reserved gang needs once the gang's first reservation has come is preempted (it waits again with its progress), so the gang starts then; a job ahead of the gang that overruns delays it, which the late column counts. Big gangs: %d GPUs or more on Sia-Philly and Philly, %d on Synergy (its largest class with more than a few jobs). Plan: %s", p.NoiseCV, p.NoiseSeeds, BigGPUs("sia-philly"), BigGPUs("synergy"), p.Name)
	if p.Name == "default" {
		b.WriteString(", a reduced grid to keep `pal-reproduce` within about a minute of CPU; `pal-reproduce backfill --full` runs Synergy at 4,000 jobs, five noise seeds, a fuller Philly window (jobs from the 75,000th on 48x8) and forecasts under EASY with nine draws")
	}
	b.WriteString(".\n\n")

	b.WriteString("### Mean JCT change against strict order\n\nPer workload and scheduler: easy with exact estimates, easy with noisy ones, greedy; mean over the seeds and [range]. The seeds are Synergy's trace-and-GPU draws for exact and greedy; for noisy, the noise seeds (Synergy: its draws).\n\n")
	b.WriteString("| workload | scheduler | easy exact | easy noisy | greedy |\n|---|---|---|---|---|\n")
	for _, c := range r.Changes() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Workload, c.Scheduler, span(c.Exact), span(c.Noisy), span(c.Greedy))
	}

	b.WriteString("\n### Mean JCT, utilisation, big gangs' wait and reservations\n\nMeans over the seeds; reservation counts summed over them. Reserved: gangs EASY gave a reservation. Overtaken: those a job overtook while they waited (the order put it ahead of them: under Tiresias a newer job, as jobs attain service), with how many of them were late in brackets; that is the order's doing, not a backfilled job's. Late: reserved gangs no job overtook whose first launch from their first reservation on came after it plus one round (max seconds past it). With exact estimates the run fails if one is, or, under FIFO, if any reserved gang is late; with noisy ones they are late because a job ahead of them ran past its estimate, and the run fails if one waited past that time for a backfilled job. Preempted: backfilled jobs stopped because they still held the gang's GPUs when its first reservation came.\n\n")
	b.WriteString("| workload | scheduler | mode | estimates | mean JCT (s) | util | big gangs' wait (s) | reserved | overtaken (late) | late (max s) | preempted |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	type rowKey struct {
		wl, sched, mode string
		noisy           bool
	}
	var order []rowKey
	groups := map[rowKey][]Cell{}
	for _, c := range r.Cells {
		k := rowKey{c.Workload, c.Scheduler, c.Mode, c.NoiseSeed > 0}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, k := range order {
		cs := groups[k]
		est := "exact"
		if k.noisy {
			est = "noisy"
		}
		if k.mode != "easy" {
			est = "-"
		}
		resv, over, late, pre := "-", "-", "-", "-"
		if k.mode == "easy" {
			var sum Cell
			for _, c := range cs {
				sum.Reserved += c.Reserved
				sum.Overtaken += c.Overtaken
				sum.OvertakenLate += c.OvertakenLate
				sum.Late += c.Late
				sum.Preempted += c.Preempted
				sum.MaxLate = max(sum.MaxLate, c.MaxLate)
			}
			resv = fmt.Sprint(sum.Reserved)
			over = fmt.Sprintf("%d (%d)", sum.Overtaken, sum.OvertakenLate)
			late = fmt.Sprint(sum.Late)
			if sum.Late > 0 {
				late += fmt.Sprintf(" (%.0f)", sum.MaxLate)
			}
			pre = fmt.Sprint(sum.Preempted)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.3f | %s | %s | %s | %s | %s |\n", k.wl, k.sched, k.mode, est,
			secs(mean(cs, func(c Cell) float64 { return c.MeanJCT })), mean(cs, func(c Cell) float64 { return c.Util }),
			secs(mean(cs, func(c Cell) float64 { return c.BigWait })), resv, over, late, pre)
	}

	fmt.Fprintf(&b, "\n### Forecast accuracy\n\n|forecast start - actual start| over the jobs waiting at %s of each trace's span of tracked arrivals, under backfill %s: *exact* forecasts with the run's own durations, *noisy* the median of %d forecasts on remaining work drawn as above (seed %d), both with the arrivals after T happening in the run and not in the forecast; *exact-no-arrivals* runs the first workload of each family on the trace cut at T, where a forecast must be exact (a check: its error is 0). Unknown: waiting jobs with no start to compare (a background job the run stopped before starting). Under strict FIFO a job that arrives after T queues behind every job waiting at T, so exact forecasts stay exact with arrivals; under Tiresias newer jobs go ahead, and under EASY they may backfill ahead of jobs behind the head.\n\n",
		fracs(p.ForecastAt), p.ForecastBackfill, p.ForecastDraws, p.NoiseSeeds[0])
	b.WriteString("| family | scheduler | case | jobs | median (s) | p90 (s) | max (s) | unknown |\n|---|---|---|---|---|---|---|---|\n")
	for _, a := range r.Accuracy {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %d |\n", a.Family, a.Scheduler, a.Case, a.N, secs(a.Median), secs(a.P90), secs(a.Max), a.Unknown)
	}
	b.WriteString("\n")
	return b.String()
}

func phillyName(r *Result) string {
	for _, w := range r.Workloads {
		if w.Family == "philly" {
			return w.Name
		}
	}
	return "none"
}

func fracs(fs []float64) string {
	var s []string
	for _, f := range fs {
		s = append(s, fmt.Sprintf("%.0f%%", 100*f))
	}
	return strings.Join(s, ", ")
}

func (r *Result) write() error {
	var runs strings.Builder
	runs.WriteString("family,workload,seed,scheduler,mode,noise_seed,mean_jct_s,utilization,big_jobs,big_mean_wait_s,reserved,overtaken,overtaken_late,late,late_for_backfill,max_late_s,preempted\n")
	for _, c := range r.Cells {
		fmt.Fprintf(&runs, "%s,%s,%d,%s,%s,%d,%.2f,%.4f,%d,%.2f,%d,%d,%d,%d,%d,%.0f,%d\n", c.Family, c.Workload, c.Seed, c.Scheduler, c.Mode, c.NoiseSeed, c.MeanJCT, c.Util, c.BigJobs, c.BigWait, c.Reserved, c.Overtaken, c.OvertakenLate, c.Late, c.LateBackfill, c.MaxLate, c.Preempted)
	}
	var acc strings.Builder
	acc.WriteString("family,scheduler,case,jobs,median_abs_error_s,p90_abs_error_s,max_abs_error_s,unknown\n")
	for _, a := range r.Accuracy {
		fmt.Fprintf(&acc, "%s,%s,%s,%d,%.0f,%.0f,%.0f,%d\n", a.Family, a.Scheduler, a.Case, a.N, a.Median, a.P90, a.Max, a.Unknown)
	}
	for name, body := range map[string]string{"backfill.md": r.Markdown, "runs.csv": runs.String(), "accuracy.csv": acc.String()} {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
