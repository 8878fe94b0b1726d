// Package sweep runs a grid of simulations — placements × schedulers ×
// traces × loads × locality penalties × seeds — on every core, and lays the
// results out in grid order so that a sweep's output does not depend on
// which run happened to finish first.
//
// Inputs (trace, GPU values, PM-score bins, L×V order) depend only on the
// trace, load, locality penalty and seed, so they are prepared once per
// such combination and shared, read-only, by every scheduler and
// placement run on them. Identical runs requested by several grids of one
// Run (a figure that reuses another's points) are simulated once.
package sweep

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/workload"
)

// SynergyTrace is the trace name that makes the sweep generate a
// Synergy-style workload (PAL §V-C) per load and seed instead of reading
// a trace.
const SynergyTrace = "synergy"

// DefaultSynergyJobs is how many Synergy jobs are generated when the grid
// does not say: enough that the paper's measured window, ids 2000-3000,
// is the default track and still has a thousand jobs of load behind it.
const DefaultSynergyJobs = 4000

// DefaultSynergyLoads are the artifact's Synergy loads (jobs/hour), used
// for a synergy trace when the grid gives no loads.
var DefaultSynergyLoads = []float64{8, 10, 12, 14}

// Grid is one sweep: every combination of its lists, run on Base.
//
// Load means arrivals per hour. For a synergy trace it is the Poisson
// arrival rate of the generated jobs. For a replayed trace (Sia-Philly or a
// file) it is the rate of the artifact's background arrivals after the
// trace (Options.ExtraLoad); with the artifact preset on 16x4, load 2 is
// the one the artifact ran, and only it uses the artifact's pinned extra
// arrivals. An empty Loads keeps Base.ExtraLoad for replayed traces and
// uses DefaultSynergyLoads for synergy.
type Grid struct {
	// Base holds every option the grid does not vary. Its Trace,
	// Scheduler, Placements, LocalityPenalty, Seed and (for replayed
	// traces) ExtraLoad are replaced per point. For a synergy trace its
	// Track is ignored in favour of Synergy.Track, since the generated
	// trace carries its own tracked column.
	Base       experiment.Options
	Placements []string
	Schedulers []string
	Traces     []string
	Loads      []float64
	// Localities empty means Base.LocalityPenalty; Seeds empty, Base.Seed.
	Localities []float64
	Seeds      []uint64
	Synergy    SynergySpec
	// Keep says which points keep per-job records and per-round stats in
	// Row.Run; the rest drop them once their summary is taken, so a big
	// sweep does not hold millions of records it never reads.
	Keep func(Point) bool
	// Shard, when set, runs only that part of the grid (Partition); rows
	// keep their indices in the whole grid, and Merge joins the parts.
	Shard Shard
}

// SynergySpec shapes the generated Synergy traces.
type SynergySpec struct {
	// Jobs is the trace length (0: DefaultSynergyJobs).
	Jobs int
	// Track is the measured id range; nil means Jobs/2 to 3·Jobs/4, which
	// for the default 4000 jobs is the paper's 2000-3000: a warm cluster
	// before the window and load after it.
	Track *workload.TrackRange
	// Mix assigns models and classes; empty is the artifact's all-class-A.
	Mix workload.ClassMix
}

func (s SynergySpec) jobs() int {
	if s.Jobs > 0 {
		return s.Jobs
	}
	return DefaultSynergyJobs
}

// TrackRange is the measured window of the generated trace.
func (s SynergySpec) TrackRange() workload.TrackRange {
	if s.Track != nil {
		return *s.Track
	}
	n := s.jobs()
	return workload.TrackRange{First: n / 2, Last: max(n/2, 3*n/4)}
}

// Point is one run of a grid. Index is its position in grid order: traces
// outermost, then loads, locality penalties, seeds, schedulers and
// placements innermost, each in the order given.
type Point struct {
	Index           int     `json:"index"`
	Trace           string  `json:"trace"`
	Load            float64 `json:"load_jobs_per_hour"`
	LocalityPenalty float64 `json:"locality_penalty"`
	Seed            uint64  `json:"seed"`
	Scheduler       string  `json:"scheduler"`
	Placement       string  `json:"placement"`
}

// IsSynergy says whether the point's trace is generated.
func (p Point) IsSynergy() bool { return p.Trace == SynergyTrace }

// group is everything but the placement: the runs a placement is
// normalised against.
func (p Point) group() Point {
	p.Index, p.Placement = 0, ""
	return p
}

// Expand lists the grid's points in grid order after checking every name
// and number, so that a typo fails before hours of simulation rather than
// after.
func (g *Grid) Expand() ([]Point, error) {
	if len(g.Traces) == 0 {
		return nil, fmt.Errorf("sweep: no trace given")
	}
	if len(g.Schedulers) == 0 {
		return nil, fmt.Errorf("sweep: no scheduler given")
	}
	if len(g.Placements) == 0 {
		return nil, fmt.Errorf("sweep: no placement given")
	}
	var schedulers []string
	placements, err := place.Canonical(g.Placements) // "tiresias" -> packed-sticky
	if err != nil {
		return nil, fmt.Errorf("--placement: %v", err)
	}
	for _, s := range g.Schedulers {
		sc, err := schedule.New(s)
		if err != nil {
			return nil, fmt.Errorf("--scheduler: %v", err)
		}
		schedulers = append(schedulers, sc.Name())
	}
	locs := g.Localities
	if len(locs) == 0 {
		locs = []float64{g.Base.LocalityPenalty}
	}
	for _, l := range locs {
		if !(l >= 1) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("--locality-penalty %v: want a finite slowdown >= 1", l)
		}
	}
	seeds := g.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{g.Base.Seed}
	}
	for _, l := range g.Loads {
		if !(l >= 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("--load %v: want a finite number of jobs per hour >= 0", l)
		}
	}
	if g.Synergy.Jobs < 0 {
		return nil, fmt.Errorf("--jobs %d: want a positive number of Synergy jobs", g.Synergy.Jobs)
	}
	var pts []Point
	for _, tr := range g.Traces {
		loads := g.Loads
		if len(loads) == 0 {
			if tr == SynergyTrace {
				loads = DefaultSynergyLoads
			} else {
				// A trace file gets no background load unless asked
				// (experiment.Options.Effective), and its point says so.
				o := g.Base
				o.Trace = tr
				loads = []float64{o.Effective().ExtraLoad}
			}
		}
		if tr == SynergyTrace {
			if slices.Contains(loads, 0) {
				return nil, fmt.Errorf("--load 0: a synergy trace needs a positive arrival rate")
			}
			t := g.Synergy.TrackRange()
			if t.First >= g.Synergy.jobs() || t.Last < t.First {
				return nil, fmt.Errorf("--track %s tracks none of the %d generated Synergy jobs", t, g.Synergy.jobs())
			}
		}
		for _, load := range loads {
			for _, l := range locs {
				for _, seed := range seeds {
					for _, s := range schedulers {
						for _, p := range placements {
							pt := Point{Index: len(pts), Trace: tr, Load: load, LocalityPenalty: l, Seed: seed, Scheduler: s, Placement: p}
							if err := g.options(pt).Validate(); err != nil {
								return nil, err
							}
							pts = append(pts, pt)
						}
					}
				}
			}
		}
	}
	return pts, nil
}

// options are the experiment options of a point's inputs: everything but
// scheduler and placement, which do not change what Prepare builds.
func (g *Grid) options(p Point) experiment.Options {
	o := g.Base
	o.Trace = p.Trace
	o.LocalityPenalty = p.LocalityPenalty
	o.Seed = p.Seed
	o.Scheduler, o.Placements = "", ""
	if p.IsSynergy() {
		// The generated trace has a tracked column: ExtraLoad is ignored
		// and Track would only repeat (or contradict) Synergy.Track.
		o.Trace = fmt.Sprintf("synergy-%sjph-seed%d", strconv.FormatFloat(p.Load, 'g', -1, 64), p.Seed)
		o.ExtraLoad, o.Track = 0, ""
	} else {
		// The point's load is decided (Expand applied the defaults).
		o.ExtraLoad = p.Load
		o.Explicit.ExtraLoad = true
	}
	return o
}

// synKey identifies a generated trace; the zero value means "not synergy".
type synKey struct {
	load  float64
	seed  uint64
	jobs  int
	track workload.TrackRange
	mix   string
}

func (g *Grid) synKey(p Point) synKey {
	if !p.IsSynergy() {
		return synKey{}
	}
	return synKey{load: p.Load, seed: p.Seed, jobs: g.Synergy.jobs(), track: g.Synergy.TrackRange(), mix: g.Synergy.Mix.String()}
}

// ExpandTraces turns a --trace list into trace names: "sia-philly/all"
// stands for the eight built-in Sia-Philly traces; anything else is kept.
func ExpandTraces(list []string) []string {
	var out []string
	for _, t := range list {
		t = strings.TrimSpace(t)
		switch t {
		case "":
		case "sia-philly/all", "sia-philly/*":
			for k := 1; k <= 8; k++ {
				out = append(out, "sia-philly/"+strconv.Itoa(k))
			}
		default:
			out = append(out, t)
		}
	}
	return out
}
