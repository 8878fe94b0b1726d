// Package backfill is the backfill-and-forecast room of the experiments:
// strict order against EASY and greedy backfill (with exact and with
// noisy estimates of the remaining work), whether a reserved gang starts
// when its reservation said, and how far a forecast's starts land from
// the starts that then happen, on Sia-Philly, Synergy and a window of the
// Philly trace, as `pal-reproduce backfill` writes it.
package backfill

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/palsched/pal/experiment"
	pbf "github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// Dir is the section's directory under the output directory.
const Dir = "backfill"

// Plan is the section's grid.
type Plan struct {
	Name string
	// Sia-Philly workloads (the artifact's pinned traces and GPU values
	// on 16x4, 360 s rounds, background arrivals as the artifact ran).
	SiaTraces []int
	// Schedulers are the orders (fifo, and tiresias-las as Tiresias).
	Schedulers []string
	// Placement places every run.
	Placement string
	// NoiseCV is the noisy estimates' lognormal coefficient of variation,
	// and NoiseSeeds the seeds of their factors (one factor per job).
	NoiseCV    float64
	NoiseSeeds []uint64
	// Synergy: generated traces (Jobs at Load jobs/hour, Track measured)
	// on Cluster, one per seed in SynergySeeds (the seed draws the trace
	// and the GPU values; a noisy run uses it as its noise seed too).
	SynergyCluster string
	SynergyRound   float64
	SynergyL       float64
	SynergyJobs    int
	SynergyTrack   workload.TrackRange
	SynergyLoad    float64
	SynergySeeds   []uint64
	// Philly: jobs PhillyFirst.. of the embedded Philly trace (the large
	// VCs' jobs in arrival order), PhillyJobs of them, on PhillyCluster
	// shared by every VC, PhillyRound rounds, uniform GPUs.
	PhillyCluster string
	PhillyFirst   int
	PhillyJobs    int
	PhillyRound   float64
	// ForecastAt are the forecast times, as fractions of each trace's
	// span of tracked arrivals; ForecastDraws the noisy forecast's draws
	// (its start is their median); ForecastBackfill the backfill mode of
	// the runs forecast.
	ForecastAt       []float64
	ForecastDraws    int
	ForecastBackfill string
}

// DefaultPlan is what `pal-reproduce` runs, about a minute of CPU: every
// Sia-Philly workload, FIFO and Tiresias, three noise seeds; Synergy at
// 14 jobs/hour on 2,000 jobs (1,000-1,500 measured) with three seeds;
// 1,500 Philly jobs from the 50,000th on 64x8 GPUs; forecasts under
// strict order with three noisy draws.
func DefaultPlan(p paper.Plan) Plan {
	return Plan{
		Name:             "default",
		SiaTraces:        []int{1, 2, 3, 4, 5, 6, 7, 8},
		Schedulers:       []string{"fifo", "tiresias-las"},
		Placement:        "pal",
		NoiseCV:          0.5,
		NoiseSeeds:       []uint64{1, 2, 3},
		SynergyCluster:   p.SynergyCluster,
		SynergyRound:     p.SynergyRound,
		SynergyL:         p.SynergyL,
		SynergyJobs:      2000,
		SynergyTrack:     workload.TrackRange{First: 1000, Last: 1500},
		SynergyLoad:      14,
		SynergySeeds:     []uint64{42, 1, 2},
		PhillyCluster:    "64x8",
		PhillyFirst:      50000,
		PhillyJobs:       1500,
		PhillyRound:      300,
		ForecastAt:       []float64{0.2, 0.4, 0.6, 0.8},
		ForecastDraws:    3,
		ForecastBackfill: "none",
	}
}

// FullPlan is the larger grid behind --full (several minutes): Synergy
// at the paper's 4,000 jobs (2,000-3,000 measured), five noise seeds,
// the Philly window from the 75,000th job on 48x8 GPUs (28 big gangs,
// a fuller cluster), and forecasts under EASY with nine draws.
func FullPlan(p paper.Plan) Plan {
	q := DefaultPlan(p)
	q.Name = "full"
	q.NoiseSeeds = []uint64{1, 2, 3, 4, 5}
	q.SynergyJobs, q.SynergyTrack = 4000, workload.TrackRange{First: 2000, Last: 3000}
	q.PhillyCluster, q.PhillyFirst = "48x8", 75000
	q.ForecastDraws, q.ForecastBackfill = 9, "easy"
	return q
}

// QuickPlan is two Sia-Philly workloads, one Synergy seed of 1,000 jobs
// and 600 Philly jobs: every table of the section, in seconds (tests,
// --quick); its numbers are not meaningful.
func QuickPlan(p paper.Plan) Plan {
	q := DefaultPlan(p)
	q.Name = "quick"
	q.SiaTraces = []int{1, 3}
	q.SynergySeeds = []uint64{42}
	q.SynergyJobs, q.SynergyTrack = 1000, workload.TrackRange{First: 500, Last: 750}
	q.PhillyJobs = 600
	q.ForecastAt = []float64{0.3, 0.7}
	return q
}

// BigGPUs is the size from which a gang of a family counts as big:
// Sia-Philly 16 (a quarter of its 64 GPUs), Synergy 8 (its largest class
// with more than a few jobs: two of its 4-GPU nodes), Philly 16 (two of
// its 8-GPU nodes).
func BigGPUs(family string) int {
	if family == "synergy" {
		return 8
	}
	return 16
}

// Workload is one trace the section runs: its family (sia-philly,
// synergy, philly), its name in the tables, and its seed (Synergy's
// trace and GPU draw; 0 elsewhere).
type Workload struct {
	Family, Name string
	Seed         uint64
	in           *experiment.Inputs
}

// Cell is one run: a workload under a scheduler and a backfill mode,
// with exact estimates (NoiseSeed 0) or noisy ones.
type Cell struct {
	Family, Workload string
	Seed             uint64
	Scheduler, Mode  string
	NoiseSeed        uint64
	// Tracked jobs' mean JCT, the run's GPU utilisation, and the big
	// gangs' (BigGPUs of the family or more) mean wait (JCT less run time) and count.
	MeanJCT, Util, BigWait float64
	BigJobs                int
	// Reserved is the jobs EASY gave a reservation, and Overtaken those
	// a job overtook while they waited (the order put it ahead: a newer
	// job under Tiresias). A reserved gang is late when its first launch
	// from the round of its first reservation on came after that
	// reservation plus one round: Late counts those no job overtook
	// (with exact estimates there are none; with noisy ones a job ahead
	// ran past its estimate), MaxLate the most by which one was late
	// (seconds past reservation + round), OvertakenLate the overtaken
	// ones, LateBackfill those that waited past that time for a
	// backfilled job (the run fails if there is one). Preempted is the
	// backfilled jobs stopped because they held a reserved gang's GPUs
	// past its first reservation.
	Reserved, Overtaken, Late, OvertakenLate, LateBackfill, Preempted int
	MaxLate                                                           float64
}

// Accuracy is the forecast error of one family and scheduler in one
// case: |forecast start - actual start| over the jobs waiting at the
// forecast times.
type Accuracy struct {
	Family, Scheduler string
	// Case: exact (the run's own durations, arrivals after T as they
	// happen), noisy (the median of ForecastDraws forecasts on noisy
	// remaining work, same arrivals), or exact-no-arrivals (a run of the
	// trace cut at T: must be 0).
	Case        string
	N           int
	Median, P90 float64
	Max         float64
	// Unknown is the waiting jobs with no start to compare (the forecast
	// or the run gives none: an untracked job the run did not wait for).
	Unknown int
}

// Result is the section's numbers.
type Result struct {
	Dir       string
	Plan      Plan
	Workloads []Workload
	Cells     []Cell
	Accuracy  []Accuracy
	Markdown  string
}

// Run runs the section and writes it under out/Dir (backfill.md,
// runs.csv and accuracy.csv).
func Run(ctx context.Context, p Plan, base experiment.Options, out string, workers int, log io.Writer) (*Result, error) {
	dir := filepath.Join(out, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	wls, err := p.workloads(base)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Plan: p, Workloads: wls}
	type task struct {
		wl        *Workload
		sched     string
		mode      string
		noise     uint64
		accuracy  bool
		cell      Cell
		acc       map[string][]float64
		unknown   map[string]int
		noArrival bool
	}
	var tasks []*task
	for i := range wls {
		w := &wls[i]
		for _, s := range p.Schedulers {
			for _, m := range pbf.Modes() {
				tasks = append(tasks, &task{wl: w, sched: s, mode: string(m)})
			}
			seeds := p.NoiseSeeds
			if w.Family == "synergy" {
				seeds = []uint64{w.Seed}
			}
			for _, ns := range seeds {
				tasks = append(tasks, &task{wl: w, sched: s, mode: string(pbf.EASY), noise: ns})
			}
			tasks = append(tasks, &task{wl: w, sched: s, accuracy: true})
			if first(wls, w) {
				tasks = append(tasks, &task{wl: w, sched: s, accuracy: true, noArrival: true})
			}
		}
	}
	if log != nil {
		fmt.Fprintf(log, "reproduce: backfill and forecasts, %d runs (%s plan)\n", len(tasks), p.Name)
	}
	if workers <= 0 {
		workers = max(1, runtimeProcs())
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		next int
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(tasks) || ferr != nil || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				t := tasks[next]
				next++
				mu.Unlock()
				var err error
				if t.accuracy {
					t.acc, t.unknown, err = p.accuracy(t.wl, t.sched, t.noArrival)
				} else {
					t.cell, err = p.cell(t.wl, t.sched, t.mode, t.noise)
				}
				if err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = fmt.Errorf("backfill: %s %s: %v", t.wl.Name, t.sched, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if ferr != nil {
		return nil, ferr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type accKey struct{ fam, sched, c string }
	errs := map[accKey][]float64{}
	unknown := map[accKey]int{}
	var keys []accKey
	for _, t := range tasks {
		if !t.accuracy {
			res.Cells = append(res.Cells, t.cell)
			continue
		}
		for _, c := range []string{"exact", "noisy", "exact-no-arrivals"} {
			e, ok := t.acc[c]
			if !ok {
				continue
			}
			k := accKey{t.wl.Family, t.sched, c}
			if _, seen := errs[k]; !seen {
				keys = append(keys, k)
				errs[k] = []float64{}
			}
			errs[k] = append(errs[k], e...)
			unknown[k] += t.unknown[c]
		}
	}
	caseOrder := map[string]int{"exact": 0, "noisy": 1, "exact-no-arrivals": 2}
	sort.SliceStable(keys, func(a, b int) bool { return caseOrder[keys[a].c] < caseOrder[keys[b].c] })
	for _, k := range keys {
		e := errs[k]
		slices.Sort(e)
		a := Accuracy{Family: k.fam, Scheduler: k.sched, Case: k.c, N: len(e), Unknown: unknown[k], Median: math.NaN(), P90: math.NaN(), Max: math.NaN()}
		if len(e) > 0 {
			a.Median, a.P90, a.Max = quantile(e, 0.5), quantile(e, 0.9), e[len(e)-1]
		}
		res.Accuracy = append(res.Accuracy, a)
	}
	res.Markdown = res.markdown()
	if err := res.write(); err != nil {
		return nil, err
	}
	return res, nil
}

// first says whether w is the first workload of its family: the one the
// no-arrivals check runs on.
func first(wls []Workload, w *Workload) bool {
	for i := range wls {
		if wls[i].Family == w.Family {
			return &wls[i] == w
		}
	}
	return false
}

// quantile is the nearest-rank quantile of sorted data.
func quantile(sorted []float64, p float64) float64 {
	return sorted[max(0, int(math.Ceil(p*float64(len(sorted))))-1)]
}

// workloads prepares every trace once; runs share the inputs read-only.
func (p Plan) workloads(base experiment.Options) ([]Workload, error) {
	var out []Workload
	for _, k := range p.SiaTraces {
		o := base
		o.Trace = fmt.Sprintf("sia-philly/%d", k)
		o.Placements = p.Placement
		in, err := experiment.Prepare(o)
		if err != nil {
			return nil, err
		}
		out = append(out, Workload{Family: "sia-philly", Name: o.Trace, in: in})
	}
	for _, seed := range p.SynergySeeds {
		track := p.SynergyTrack
		jobs, err := workload.GenerateSynergyEmbedded(workload.SynergyOptions{Rate: p.SynergyLoad, Jobs: p.SynergyJobs, Seed: seed, Track: &track})
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("synergy %g jobs/h", p.SynergyLoad)
		tr := &workload.Trace{Name: fmt.Sprintf("synergy (%g jobs/h, %d jobs, seed %d, tracked %s)", p.SynergyLoad, p.SynergyJobs, seed, track), Jobs: jobs, HasTracked: true}
		o := base
		o.Cluster, o.Round, o.LocalityPenalty, o.Pinned = p.SynergyCluster, p.SynergyRound, p.SynergyL, false
		o.Trace, o.Seed, o.ExtraLoad, o.Track, o.Placements = fmt.Sprintf("synergy-seed%d", seed), seed, 0, "", p.Placement
		in, err := experiment.PrepareWith(o, tr)
		if err != nil {
			return nil, err
		}
		out = append(out, Workload{Family: "synergy", Name: name, Seed: seed, in: in})
	}
	if p.PhillyJobs > 0 {
		tr, err := phillyWindow(p.PhillyFirst, p.PhillyJobs)
		if err != nil {
			return nil, err
		}
		o := base
		o.Cluster, o.Round, o.LocalityPenalty, o.Pinned = p.PhillyCluster, p.PhillyRound, 1, false
		o.Trace, o.ExtraLoad, o.Track, o.Placements = "philly", 0, "", p.Placement
		o.Explicit.ExtraLoad = true
		in, err := experiment.PrepareWith(o, tr)
		if err != nil {
			return nil, err
		}
		out = append(out, Workload{Family: "philly", Name: fmt.Sprintf("philly jobs %d-%d", p.PhillyFirst, p.PhillyFirst+len(tr.Jobs)-1), in: in})
	}
	return out, nil
}

// phillyWindow is jobs first..first+n-1 of the embedded Philly trace
// (the large VCs' jobs, in arrival order), their times from the first's
// arrival, ids from 0, every one tracked, with no VC (one shared queue).
func phillyWindow(first, n int) (*workload.Trace, error) {
	pv, err := workload.EmbeddedPhillyVCTrace(8)
	if err != nil {
		return nil, err
	}
	js := pv.Trace.Jobs
	if first < 0 || first+n > len(js) {
		return nil, fmt.Errorf("philly window %d+%d: the trace has %d jobs", first, n, len(js))
	}
	tr := &workload.Trace{Name: fmt.Sprintf("%s jobs %d-%d", workload.EmbeddedPhillyName, first, first+n-1), HasTracked: true}
	t0 := js[first].Submit
	for i, j := range js[first : first+n] {
		j.ID, j.Submit, j.VC, j.Tracked = i, j.Submit-t0, "", true
		tr.Jobs = append(tr.Jobs, j)
	}
	return tr, nil
}

// config is w's simulator set-up under sched and mode.
func (p Plan) config(w *Workload, sched, mode string) (*experiment.Inputs, sim.Config, error) {
	local := *w.in
	local.Opts.Scheduler, local.Opts.Backfill = sched, mode
	cfg, err := local.Config(p.Placement)
	return &local, cfg, err
}

// launches records, through cfg's Observe, when each job launches (is
// given GPUs while it holds none), and calls also after.
func launches(cfg *sim.Config, also func(T float64)) map[int][]float64 {
	out := map[int][]float64{}
	cfg.Observe = func(T float64, order []*workload.Job, alloc [][]int) {
		for i, j := range order {
			if alloc[i] != nil && !j.Running() {
				out[j.ID] = append(out[j.ID], T)
			}
		}
		if also != nil {
			also(T)
		}
	}
	return out
}

// launchAfter is the first of ls at or after t (-1: none).
func launchAfter(ls []float64, t float64) float64 {
	for _, l := range ls {
		if l >= t {
			return l
		}
	}
	return -1
}

// cell runs w under sched and mode, with noisy estimates when noise > 0.
func (p Plan) cell(w *Workload, sched, mode string, noise uint64) (Cell, error) {
	c := Cell{Family: w.Family, Workload: w.Name, Seed: w.Seed, Scheduler: sched, Mode: mode, NoiseSeed: noise}
	_, cfg, err := p.config(w, sched, mode)
	if err != nil {
		return c, err
	}
	bp := pbf.Unwrap(cfg.Placer)
	if noise > 0 {
		if bp.Est, err = pbf.Noisy(bp.Est, p.NoiseCV, noise); err != nil {
			return c, err
		}
	}
	var g *gangs
	if mode == string(pbf.EASY) {
		g = watchGangs(&cfg, bp)
	}
	res, err := sim.Run(cfg)
	if err != nil {
		return c, err
	}
	c.MeanJCT, c.Util = res.Summary.AvgJCT, res.Summary.Utilization
	wait := 0.0
	for _, j := range res.Jobs {
		if j.Tracked && j.GPUs >= BigGPUs(w.Family) {
			c.BigJobs++
			wait += j.Wait
		}
	}
	c.BigWait = math.NaN()
	if c.BigJobs > 0 {
		c.BigWait = wait / float64(c.BigJobs)
	}
	if g == nil {
		return c, nil
	}
	g.count(&c, cfg.Round)
	return c, c.check(noise > 0)
}

// check is the section's assertion on a run under EASY: with exact
// estimates a reserved gang that no job overtook starts by its first
// reservation plus one round, and under FIFO (whose order nothing
// overtakes) every reserved gang does; with any estimates, no reserved
// gang waits past that time because of a backfilled job.
func (c *Cell) check(noisy bool) error {
	where := fmt.Sprintf("%s %s easy (noise seed %d)", c.Workload, c.Scheduler, c.NoiseSeed)
	if c.LateBackfill > 0 {
		return fmt.Errorf("%s: %d reserved gangs waited past their first reservation plus a round for a backfilled job", where, c.LateBackfill)
	}
	if noisy {
		return nil
	}
	if c.Late > 0 {
		return fmt.Errorf("%s: %d of %d reserved gangs that stayed first in line started after their first reservation plus a round (by up to %.0f s), with exact estimates", where, c.Late, c.Reserved-c.Overtaken, c.MaxLate)
	}
	if c.Scheduler == "fifo" && c.OvertakenLate > 0 {
		return fmt.Errorf("%s: %d reserved gangs overtaken and late under FIFO, with exact estimates", where, c.OvertakenLate)
	}
	return nil
}

// gangs follows, round by round, every gang EASY reserved for: its first
// reservation, its launches, whether a job overtook it (the order put a
// job ahead of it that started or waited in its place while it waited),
// and whether it waited past its first reservation plus a round for a
// backfilled job (the reservation's last awaited end was one).
type gangs struct {
	first     map[int]resv
	launches  map[int][]float64
	overtaken map[int]bool
	blamed    map[int]bool
	preempted int
}

type resv struct{ made, at float64 }

// watchGangs sets cfg's Observe to follow bp's reservations.
func watchGangs(cfg *sim.Config, bp *pbf.Placer) *gangs {
	g := &gangs{first: map[int]resv{}, overtaken: map[int]bool{}, blamed: map[int]bool{}}
	waiting := map[int]bool{}
	round := cfg.Round
	g.launches = launches(cfg, nil)
	launched := cfg.Observe
	cfg.Observe = func(T float64, order []*workload.Job, alloc [][]int) {
		launched(T, order, alloc)
		r := bp.Last
		g.preempted += len(r.Preempted)
		if r.JobID >= 0 && r.GPUs != nil {
			if _, seen := g.first[r.JobID]; !seen {
				g.first[r.JobID] = resv{T, T + r.In}
				waiting[r.JobID] = true
			}
		}
		if len(waiting) == 0 {
			return
		}
		ahead := false // a job ahead in the order started this round
		for i, j := range order {
			if !waiting[j.ID] {
				ahead = ahead || alloc[i] != nil && !j.Running()
				continue
			}
			if alloc[i] != nil {
				delete(waiting, j.ID)
				continue
			}
			if T > g.first[j.ID].made && (ahead || r.JobID != j.ID) {
				g.overtaken[j.ID] = true
			}
			if r.JobID == j.ID && r.ByBackfill && T > g.first[j.ID].at+round+1e-6 {
				g.blamed[j.ID] = true
			}
		}
	}
	return g
}

// count fills c's reservation figures.
func (g *gangs) count(c *Cell, round float64) {
	c.Preempted = g.preempted
	for id, r := range g.first {
		c.Reserved++
		over := g.overtaken[id]
		if over {
			c.Overtaken++
		}
		l := launchAfter(g.launches[id], r.made)
		if !(l > r.at+round+1e-6) {
			continue
		}
		switch {
		case g.blamed[id]:
			c.LateBackfill++
		case over:
			c.OvertakenLate++
		default:
			c.Late++
			c.MaxLate = max(c.MaxLate, l-r.at-round)
		}
	}
}

// forecastTimes are the plan's forecast times on w: fractions of the
// span of its tracked arrivals, from its first.
func (p Plan) forecastTimes(tr *workload.Trace) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, j := range tr.Jobs {
		if j.Tracked {
			lo, hi = min(lo, j.Submit), max(hi, j.Submit)
		}
	}
	var out []float64
	for _, f := range p.ForecastAt {
		out = append(out, lo+f*(hi-lo))
	}
	return out
}

// accuracy runs w under sched with ForecastBackfill, forecasts at every
// forecast time (exact and noisy) and compares each waiting job's
// forecast start with its next launch. With cut, it runs instead, for
// each time T, the trace cut at T (no arrivals after it, every job
// waited for), where the exact forecast must be exact.
func (p Plan) accuracy(w *Workload, sched string, cut bool) (map[string][]float64, map[string]int, error) {
	errs, unknown := map[string][]float64{}, map[string]int{}
	times := p.forecastTimes(w.in.Trace)
	type snap struct {
		T            float64
		ids          []int
		exact, noisy []float64
	}
	one := func(in *experiment.Inputs, cfg sim.Config, times []float64, noisy bool) ([]snap, map[int][]float64, error) {
		var snaps []snap
		var ferr error
		ls := launches(&cfg, nil)
		cfg.SnapshotAt, cfg.SnapshotAlso = times[0], times[1:]
		live := cfg.Placer
		cfg.Snapshot = func(T float64, order []*workload.Job) {
			if ferr != nil {
				return
			}
			rows, err := in.Forecast(p.Placement, live, nil, T, order, experiment.ForecastOptions{})
			if err != nil {
				ferr = err
				return
			}
			s := snap{T: T}
			for _, r := range rows {
				s.ids = append(s.ids, r.JobID)
				s.exact = append(s.exact, r.Start)
			}
			if noisy {
				nr, err := in.Forecast(p.Placement, live, nil, T, order, experiment.ForecastOptions{Draws: p.ForecastDraws, Noise: p.NoiseCV, Seed: p.NoiseSeeds[0]})
				if err != nil {
					ferr = err
					return
				}
				for _, r := range nr {
					s.noisy = append(s.noisy, r.Spread.P50)
				}
			}
			snaps = append(snaps, s)
		}
		if _, err := sim.Run(cfg); err != nil {
			return nil, nil, err
		}
		return snaps, ls, ferr
	}
	add := func(c string, f, actual float64) {
		if f < 0 || actual < 0 {
			unknown[c]++
			return
		}
		errs[c] = append(errs[c], math.Abs(f-actual))
	}
	if !cut {
		in, cfg, err := p.config(w, sched, p.ForecastBackfill)
		if err != nil {
			return nil, nil, err
		}
		snaps, ls, err := one(in, cfg, times, true)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range snaps {
			for i, id := range s.ids {
				a := launchAfter(ls[id], s.T+1e-9)
				add("exact", s.exact[i], a)
				add("noisy", s.noisy[i], a)
			}
		}
		return errs, unknown, nil
	}
	errs["exact-no-arrivals"] = []float64{}
	for _, T := range times {
		in, cfg, err := p.config(w, sched, p.ForecastBackfill)
		if err != nil {
			return nil, nil, err
		}
		tr := &workload.Trace{Name: cfg.Trace.Name, HasTracked: true}
		for _, j := range cfg.Trace.Jobs {
			if j.Submit <= T {
				j.Tracked = true
				tr.Jobs = append(tr.Jobs, j)
			}
		}
		cfg.Trace, cfg.ExtraLoad = tr, 0
		snaps, ls, err := one(in, cfg, []float64{T}, false)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range snaps {
			for i, id := range s.ids {
				add("exact-no-arrivals", s.exact[i], launchAfter(ls[id], s.T+1e-9))
			}
		}
	}
	return errs, unknown, nil
}
