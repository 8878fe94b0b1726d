package sweep

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
)

// Row is one finished run: its point, the summary over tracked jobs, and
// the multi-GPU slice of it that the paper reports for Synergy.
type Row struct {
	Point
	metrics.Summary
	Rounds int `json:"rounds"`
	// MultiGPUJobs and MultiGPUAvgJCT cover the tracked jobs that ask for
	// more than one GPU, the ones variability and locality hit hardest.
	MultiGPUJobs   int     `json:"multi_gpu_jobs"`
	MultiGPUAvgJCT float64 `json:"multi_gpu_avg_jct_s"`
	// VsPackedSticky is AvgJCT over packed-sticky's (Tiresias, the paper's
	// baseline) at the same trace, load, penalty, seed and scheduler; 0
	// when the grid has no such run.
	VsPackedSticky float64 `json:"-"`
	// VsPackedStickyPct is the same in percent (-10: 10% lower), the way
	// pal sim and every output show it.
	VsPackedStickyPct float64 `json:"avg_jct_vs_packed_sticky_pct,omitempty"`
	// WallMS is the simulation's wall time; it varies run to run, so the
	// CSV leaves it out to stay reproducible.
	WallMS float64 `json:"wall_ms"`
	// Run holds per-job records and per-round stats when Grid.Keep asked
	// for them (nil otherwise).
	Run *experiment.RunResult `json:"-"`
}

// Result is one grid's outcome.
type Result struct {
	Grid *Grid
	// Rows are the finished runs in grid order.
	Rows []Row
	// Total is the number of points; Partial is set when fewer finished
	// (the sweep was cancelled or a run failed).
	Total   int
	Partial bool
}

// Find returns the row of the given point coordinates, if it finished.
func (r *Result) Find(trace string, load, locality float64, seed uint64, scheduler, placement string) (*Row, bool) {
	for i := range r.Rows {
		p := r.Rows[i].Point
		if p.Trace == trace && p.Load == load && p.LocalityPenalty == locality && p.Seed == seed && p.Scheduler == scheduler && p.Placement == placement {
			return &r.Rows[i], true
		}
	}
	return nil, false
}

// Task is work other than a simulation (a benchmark, say) that should share
// the sweep's workers rather than compete with them for cores.
type Task struct {
	// Cost is the estimated run time in the same rough units as the
	// simulations' (see cost); larger tasks start first.
	Cost float64
	Do   func() error
}

// RunOptions tune execution; the zero value uses every core, quietly.
type RunOptions struct {
	// Workers is the number of runs at once (0: runtime.GOMAXPROCS).
	Workers int
	// Progress, if set, is called after every finished run or task, one
	// call at a time, with the count done and the total.
	Progress func(done, total int)
	// Extra tasks run on the same workers.
	Extra []Task
}

// Run runs every grid on one pool of workers. Cancelling ctx stops new
// runs from starting; runs already going are finished and kept (a
// simulation cannot be interrupted part-way), and every Result then says
// Partial. The first failed run stops the sweep the same way and is
// returned as the error, together with the results so far.
//
// Runs start in decreasing estimated cost (longest first), so the last
// run to finish is a short one and cores do not idle at the end; the rows
// come back in grid order regardless.
func Run(ctx context.Context, grids []*Grid, opt RunOptions) ([]*Result, error) {
	type item struct {
		grid, point int
		task        *Task
		cost        float64
		slot        *runSlot
	}
	var items []item
	pts := make([][]Point, len(grids))
	sh := &shared{inputs: map[inputKey]*inputSlot{}, traces: map[synKey]*traceSlot{}, runs: map[runKey]*runSlot{}}
	for gi, g := range grids {
		p, err := g.Points()
		if err != nil {
			return nil, err
		}
		pts[gi] = p
		for pi, pt := range p {
			keep := g.Keep != nil && g.Keep(pt)
			s, fresh := sh.slot(g, pt, keep)
			it := item{grid: gi, point: pi, slot: s}
			if fresh {
				it.cost = cost(g, pt)
			} else {
				it.cost = -1 // a duplicate waits on its twin and costs nothing
			}
			items = append(items, it)
		}
	}
	for i := range opt.Extra {
		items = append(items, item{task: &opt.Extra[i], cost: opt.Extra[i].Cost})
	}
	// Stable: equal costs keep grid order, so launch order is reproducible.
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(b.cost, a.cost) })

	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rows := make([][]*Row, len(grids))
	for gi := range grids {
		rows[gi] = make([]*Row, len(pts[gi]))
	}
	var (
		mu       sync.Mutex
		next     int
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	take := func() (item, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(items) || firstErr != nil || ctx.Err() != nil {
			return item{}, false
		}
		it := items[next]
		next++
		return it, true
	}
	finish := func(it item, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		done++
		if opt.Progress != nil {
			opt.Progress(done, len(items))
		}
	}
	for range min(workers, max(len(items), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, ok := take()
				if !ok {
					return
				}
				if it.task != nil {
					err := it.task.Do()
					finish(it, err)
					continue
				}
				g, pt := grids[it.grid], pts[it.grid][it.point]
				row, err := it.slot.get(sh, g, pt)
				if err == nil {
					r := *row // each grid gets its own copy with its own index
					r.Point = pt
					rows[it.grid][it.point] = &r
				} else {
					err = fmt.Errorf("%s, load %g, L %g, seed %d, %s/%s: %w", pt.Trace, pt.Load, pt.LocalityPenalty, pt.Seed, pt.Scheduler, pt.Placement, err)
				}
				finish(it, err)
			}
		}()
	}
	wg.Wait()

	out := make([]*Result, len(grids))
	for gi, g := range grids {
		res := &Result{Grid: g, Total: len(pts[gi])}
		for _, r := range rows[gi] {
			if r != nil {
				res.Rows = append(res.Rows, *r)
			}
		}
		res.Partial = len(res.Rows) < res.Total
		normalise(res.Rows)
		out[gi] = res
	}
	if firstErr != nil {
		return out, firstErr
	}
	if err := ctx.Err(); err != nil && next < len(items) {
		return out, fmt.Errorf("sweep stopped after %d of %d runs: %w", done, len(items), err)
	}
	return out, nil
}

// cost is a rough run-time estimate, used only to start long runs first:
// a Synergy trace has thousands of jobs on a 256-GPU cluster, and the
// non-sticky placements re-place every job every round (random-nonsticky,
// drawing a fresh sample each time, most of all).
func cost(g *Grid, p Point) float64 {
	// A higher penalty stretches every spread job, and with it the run.
	c := p.LocalityPenalty
	if p.IsSynergy() {
		c = float64(g.Synergy.jobs()) / 100
	}
	switch strings.TrimSuffix(p.Placement, place.MigrationAwareSuffix) {
	case "pal", "pm-first", "packed-nonsticky":
		c *= 3
	case "random-nonsticky":
		c *= 8
	}
	return c
}

// normalise fills VsPackedSticky from the packed-sticky row of each group.
func normalise(rows []Row) {
	base := map[Point]float64{}
	for _, r := range rows {
		if r.Placement == "packed-sticky" && r.AvgJCT > 0 {
			base[r.group()] = r.AvgJCT
		}
	}
	for i := range rows {
		if b, ok := base[rows[i].group()]; ok {
			rows[i].VsPackedSticky = rows[i].AvgJCT / b
			rows[i].VsPackedStickyPct = 100 * (rows[i].VsPackedSticky - 1)
		}
	}
}

// shared caches what several runs need: generated traces, prepared inputs
// and (for runs asked for twice) the run itself. Each is built once, by
// the first worker that needs it, while the others wait.
type shared struct {
	mu     sync.Mutex
	inputs map[inputKey]*inputSlot
	traces map[synKey]*traceSlot
	runs   map[runKey]*runSlot
}

// inputKey identifies prepared inputs: the options in their JSON form
// (Options holds slices, so it cannot be a map key itself) plus the
// generated trace. Two grids with the same settings therefore share inputs
// without any naming convention.
type inputKey struct {
	opts string
	syn  synKey
}

func keyOf(g *Grid, p Point) inputKey {
	b, err := json.Marshal(g.options(p))
	if err != nil {
		panic(fmt.Sprintf("sweep: options do not encode: %v", err)) // plain data; cannot happen
	}
	return inputKey{opts: string(b), syn: g.synKey(p)}
}

type runKey struct {
	in                   inputKey
	scheduler, placement string
}

type inputSlot struct {
	once sync.Once
	in   *experiment.Inputs
	err  error
}

type traceSlot struct {
	once  sync.Once
	trace *workload.Trace
	err   error
}

type runSlot struct {
	once sync.Once
	keep bool
	row  *Row
	err  error
}

// slot returns the run slot of a point, creating it (fresh) on first use.
// A point that asks to keep details upgrades a shared slot.
func (sh *shared) slot(g *Grid, p Point, keep bool) (s *runSlot, fresh bool) {
	k := runKey{in: keyOf(g, p), scheduler: p.Scheduler, placement: p.Placement}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s = sh.runs[k]; s == nil {
		s = &runSlot{}
		sh.runs[k] = s
		fresh = true
	}
	s.keep = s.keep || keep
	return s, fresh
}

func (s *runSlot) get(sh *shared, g *Grid, p Point) (*Row, error) {
	s.once.Do(func() { s.row, s.err = runPoint(sh, g, p, s.keep) })
	return s.row, s.err
}

func (sh *shared) inputsFor(g *Grid, p Point) (*experiment.Inputs, error) {
	k := keyOf(g, p)
	sh.mu.Lock()
	s := sh.inputs[k]
	if s == nil {
		s = &inputSlot{}
		sh.inputs[k] = s
	}
	sh.mu.Unlock()
	s.once.Do(func() {
		var tr *workload.Trace
		if p.IsSynergy() {
			if tr, s.err = sh.trace(k.syn, g.Synergy); s.err != nil {
				return
			}
		}
		s.in, s.err = experiment.PrepareWith(g.options(p), tr)
	})
	return s.in, s.err
}

func (sh *shared) trace(k synKey, spec SynergySpec) (*workload.Trace, error) {
	sh.mu.Lock()
	s := sh.traces[k]
	if s == nil {
		s = &traceSlot{}
		sh.traces[k] = s
	}
	sh.mu.Unlock()
	s.once.Do(func() {
		track := k.track
		jobs, err := workload.GenerateSynergyEmbedded(workload.SynergyOptions{
			Rate: k.load, Jobs: k.jobs, Seed: k.seed, Track: &track, Mix: spec.Mix,
		})
		if err != nil {
			s.err = err
			return
		}
		s.trace = &workload.Trace{
			Name: fmt.Sprintf("synergy (%g jobs/h, %d jobs, seed %d, tracked %s)", k.load, k.jobs, k.seed, k.track),
			Jobs: jobs, HasTracked: true,
		}
	})
	return s.trace, s.err
}

// runPoint simulates one point on the shared inputs. The scheduler is set
// on a shallow copy of the inputs: everything Prepare built is read-only
// and shared, only the scheduler name differs.
func runPoint(sh *shared, g *Grid, p Point, keep bool) (*Row, error) {
	in, err := sh.inputsFor(g, p)
	if err != nil {
		return nil, err
	}
	local := *in
	local.Opts.Scheduler = p.Scheduler
	r, err := local.Run(p.Placement)
	if err != nil {
		return nil, err
	}
	if r.Jobs == 0 {
		return nil, errors.New("no tracked job finished")
	}
	row := &Row{Point: p, Summary: r.Summary, Rounds: r.Rounds, WallMS: r.WallMS}
	sum := 0.0
	for _, j := range r.JobRecords {
		if j.Tracked && j.GPUs > 1 {
			row.MultiGPUJobs++
			sum += j.JCT
		}
	}
	if row.MultiGPUJobs > 0 {
		row.MultiGPUAvgJCT = sum / float64(row.MultiGPUJobs)
	}
	if keep {
		row.Run = r
	}
	return row, nil
}
