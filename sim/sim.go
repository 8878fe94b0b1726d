// Package sim is the trace-driven, round-based driver: it replays
// arrivals, asks the policies for each round's decisions, and models
// progress under per-GPU slowdown and locality, with the PAL artifact's
// semantics by default:
//
//   - Rounds are fixed (Config.Round; 360 s in the artifact's Sia runs,
//     300 s in the paper text). At each boundary T the order is: credit
//     progress for (T-R, T], complete and free finished jobs, admit jobs
//     with arrival <= T (inclusive), order, place, apply.
//   - A running job gains R / (PM x Loc x iter_time) iterations per round,
//     fractional (an elastic job's Loc also carries GPUs/held: on more
//     GPUs than its minimum it runs proportionally faster). PM is the maximum raw per-GPU value of its class over
//     its GPUs (not the binned score); Loc is 1 inside one node and the
//     locality penalty across nodes. Both are fixed at launch.
//   - A job completes at the boundary where its iterations reach the
//     total: completion is quantised to rounds, and JCT = completion -
//     unrounded arrival.
//   - Preemption and migration are free by default (Config.Costs zero).
//     With costs, a job pays its MoveCost once per move: a migration adds
//     MoveCost.Migration seconds to its debt, a preemption
//     MoveCost.Preemption (the restart is paid when it runs again). A
//     running job pays its debt first: in a round it pays d = min(debt, R)
//     and progresses only for R - d; it still holds its GPUs, so d x GPUs
//     is GPU time lost (JobRecord.LostGPUSeconds).
//   - Extra load: after the trace's last row more jobs keep arriving
//     (Poisson, ExtraLoad jobs/hour, rows reused cyclically); they compete
//     for GPUs but are never measured. A trace with a tracked column
//     carries its own extras instead. The run ends when every tracked job
//     has finished. Extras are bounded (Config.MaxExtras): a tracked job
//     that runs for years would otherwise pull in extras without end.
//   - Horizon: a run has at most MaxRounds rounds. A job that arrives
//     after the horizon, or cannot finish before it even alone on the
//     fastest GPUs, is an error before the first round, naming its file,
//     line and field.
//   - Starvation guard: a job waiting StarvationGuard seconds (1000 h in
//     Blox) gets priority 1 and jumps the queue.
//
// Each quirk is a field of Config so that the paper's reading is one
// option away (see the preset package).
//
// Two loops give these semantics. The plain one (Config.Plain) is the
// reading above done literally: every round, the whole queue sorted and
// handed to the placer. The default, incremental one (incremental.go)
// pays per round for what changed: it keeps the order across rounds,
// hands the placer only the jobs it can act on and skips rounds in which
// nothing can change. A property test holds the two to identical results.
package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// LocalityFunc gives the slowdown of a job whose GPUs span nodes.
type LocalityFunc func(j *workload.Spec) float64

// PlacementFunc gives the slowdown (>= 1) of a job on a set of GPUs.
type PlacementFunc func(j *workload.Spec, gpus []int) float64

// ConstantLocality is the artifact's single --locality-penalty.
func ConstantLocality(l float64) LocalityFunc { return func(*workload.Spec) float64 { return l } }

// Config is one simulation.
type Config struct {
	Cluster   *cluster.Cluster
	Trace     *workload.Trace
	Scheduler policy.Scheduler
	Placer    policy.Placer
	Admitter  policy.Admitter // nil: accept all
	// Tenancy, if set, sits between order and placement (VCs, quotas).
	Tenancy policy.Tenancy
	// CheckInvariants runs the tenancy stage's checker every round; a
	// violation stops the run with an error.
	CheckInvariants bool
	// NodeEvents take nodes down and up (in time order); at each round
	// boundary the events due are applied before scheduling. They need a
	// tenancy stage that tracks node health (NodeHealth).
	NodeEvents []NodeEvent
	// StageEvents change the tenancy stage at their times (in time
	// order), after the node events due.
	StageEvents []StageEvent

	Round    float64
	Locality LocalityFunc
	// Placement, when set, replaces Locality with a slowdown that sees
	// the job's GPUs (the Themis authors' slot / machine / rack levels):
	// 1 inside the tightest level, 1/S(G) otherwise.
	Placement PlacementFunc
	// Raw per-GPU values (time-like) drive the slowdown; nil means every
	// GPU runs at the median speed.
	Raw *variability.Table
	// Scores drive variability-aware placement.
	Scores *policy.Scores
	// Hook, if set, may update Scores and Raw as the run goes (online
	// PM-score learning, GPU drift; see ScoreHook). It forces Plain.
	Hook ScoreHook
	// Costs prices every migration and preemption (zero: free, as in the
	// artifact).
	Costs workload.Costs
	// Moves is how a migration is carried out: MovesInPlace (""), the
	// job switches GPUs at the round boundary, or MovesEvictRelaunch, as
	// the Kubernetes driver does it (see round.Evictions).
	Moves MoveModel

	ExtraLoad       float64 // jobs/hour after the trace; ignored when the trace has a tracked column
	Seed            uint64
	StarvationGuard float64 // seconds; 0 disables
	// Track, if set, overrides which ids are measured: [from, to] inclusive.
	Track *[2]int
	// MaxRounds stops a run that would never end (0: DefaultMaxRounds);
	// MaxRounds x Round is the horizon Validate checks every job against.
	MaxRounds int
	// MaxExtras bounds the generated extra arrivals (0: DefaultMaxExtras
	// for the trace; negative: none). Result.ExtrasCapped says whether
	// the bound was reached.
	MaxExtras int
	// Progress, if set, is called after every round with where the run
	// stands; it must be cheap (a terminal reporter throttles itself).
	Progress func(Status)
	// Observe, if set, sees every round's order and the placer's answer
	// before it is applied (tests check invariants with it). On the
	// incremental path the order is the part placement can act on: every
	// running job and the waiting ones up to the first whose demand, with
	// the waiting ones before it, exceeds the cluster (see buildView).
	Observe func(T float64, order []*workload.Job, alloc [][]int)
	// Plain runs the reference loop: every round stepped, the whole queue
	// sorted and handed to the placer. Results are identical either way
	// (sim's property test compares the two); the default keeps the order
	// across rounds, places only the prefix that can get GPUs and skips
	// rounds in which nothing can change (see incremental.go). Schedulers
	// that are not policy.KeyedScheduler, admitters other than AcceptAll
	// and a tenancy stage always run plain.
	Plain bool
	// NoRecords leaves Result.Jobs empty: a finished job is kept only as
	// the few numbers the summary needs, so a run of a million jobs holds
	// tens of megabytes of history rather than hundreds. The summary is
	// the same either way.
	NoRecords bool
	// NoMoveGains leaves what the placer expected each migration to save
	// unpriced: RoundStat.MoveGain and MinMoveMargin and the records'
	// MoveGain and MinMoveMargin stay zero, and no MoveJudge is asked.
	// The summary is the same either way; only --jobs-out and
	// --rounds-out print those columns, and on a run of a million jobs
	// the question, asked of every one of its hundreds of millions of
	// moves, is a fifth of the time.
	NoMoveGains bool
	// NoRoundStats leaves Result.Rounds empty: a run keeps only how many
	// rounds it ran (Result.NumRounds). A 20,000-job trace on 64 GPUs
	// runs 120,000 rounds; only --rounds-out and the apps' fairness read
	// them one by one.
	NoRoundStats bool
	// Pipeline places a round and applies its answer on two goroutines
	// when the round places at least two policy.StreamChunk jobs with a
	// policy.Streamer placer and there are two processors: the answer's
	// first lines are applied while later jobs are still placed. The
	// results are the same either way. It is off by default: on the
	// shared 2-core virtual machine of the scale records the pipelined
	// run of the 100,000-job trace used 65% more CPU and took 19% longer
	// (the applier reads, from the other core, every job and line the
	// placer has just written; see docs/performance.md).
	Pipeline bool
	// noSkip keeps the incremental path but steps every round (tests).
	noSkip bool

	// Snapshot, if set, is called once, at the first round boundary at or
	// after SnapshotAt, after that round's placement is applied, with the
	// time and the scheduler's order (every active job): what a forecast
	// starts from (see Forward). It must copy what it keeps. It forces
	// the plain loop.
	SnapshotAt float64
	Snapshot   func(T float64, order []*workload.Job)
	// SnapshotAlso are more times (ascending, after SnapshotAt) at whose
	// first round boundary Snapshot is called again: one run, several
	// forecasts. Times that share a boundary give one call.
	SnapshotAlso []float64
}

// NodeEvent is a node going down or coming back at time T.
type NodeEvent struct {
	T    float64
	Node int
	Up   bool
}

// NodeHealth is a tenancy stage that tracks bad hardware: a node going
// down keeps its running jobs but takes no new ones.
type NodeHealth interface {
	SetNodeHealth(node int, up bool) error
}

// Clocked is a tenancy stage or a placer that keeps time: the simulator
// tells it each round's time before it places (a tenancy stage: a
// preempted job's termination takes its preemption cost in time, during
// which its GPUs stay taken; a backfill placer: when a reserved gang's
// promised start has come).
type Clocked interface {
	SetNow(T float64)
}

// StageEvent is a timed change of the tenancy stage (a cells config
// applied under running jobs): at the first round boundary at or after T,
// before scheduling, Apply runs; an error stops the run. What names it in
// that error.
type StageEvent struct {
	T     float64
	What  string
	Apply func() error
}

// MoveModel is how the simulator carries out a migration.
type MoveModel string

const (
	// MovesInPlace: a migrated job runs on its new GPUs from the round
	// it moves (the artifact's model; the default).
	MovesInPlace MoveModel = "in-place"
	// MovesEvictRelaunch: what the Kubernetes driver does. A migrated job
	// is stopped (its pods evicted) and placed again from the next round,
	// like any waiting job; a launch onto GPUs that a job stopped this
	// round held waits a round, as its pods would still be shutting down.
	MovesEvictRelaunch MoveModel = "evict-relaunch"
)

// ParseMoveModel reads a --moves value.
func ParseMoveModel(s string) (MoveModel, error) {
	switch MoveModel(s) {
	case "", MovesInPlace:
		return MovesInPlace, nil
	case MovesEvictRelaunch:
		return MovesEvictRelaunch, nil
	}
	return "", fmt.Errorf("--moves must be %s or %s, got %s", MovesInPlace, MovesEvictRelaunch, quote.Value(s))
}

// RoundStat is the cluster after a round's placement, with the round's
// migrations: how many, the time the placer expected them to save in
// all, and the smallest gain minus migration cost among them (only
// meaningful when Migrations > 0).
type RoundStat struct {
	T             float64 `json:"t"`
	GPUsInUse     int     `json:"gpus_in_use"`
	Running       int     `json:"running"`
	Queued        int     `json:"queued"`
	Migrations    int     `json:"migrations"`
	MoveGain      float64 `json:"move_gain_s"`
	MinMoveMargin float64 `json:"min_move_margin_s"`
}

// Status is a running simulation's position, for progress reports.
type Status struct {
	T           float64 // simulated time reached, seconds
	Rounds      int     // rounds simulated
	Horizon     float64 // MaxRounds x Round, seconds
	Done        int     // jobs finished, tracked or not
	TrackedLeft int     // tracked jobs not yet finished
	Tracked     int     // tracked jobs in all
	Active      int     // jobs arrived and not finished
}

// Result is everything a run produced.
type Result struct {
	Jobs []metrics.JobRecord
	// Rounds is every round's line (none under Config.NoRoundStats);
	// NumRounds counts them either way.
	Rounds    []RoundStat
	NumRounds int
	Summary   metrics.Summary
	// Extras is the number of generated extra arrivals that entered the
	// run; ExtrasCapped says the generator stopped at MaxExtras.
	Extras       int
	ExtrasCapped bool
}

// DefaultMaxRounds bounds a run's length: 2 million rounds is 23 years
// of 360 s rounds, against about 10,500 rounds for the longest artifact
// run (workload 3).
const DefaultMaxRounds = 2_000_000

// DefaultMaxExtras is the bound on generated extra arrivals for a trace
// of n rows: 20 per row. Extras reuse the trace's rows, so they are as
// long as its jobs; unbounded, one very long tracked job would pull in
// copies of itself for as long as it runs and the queue would grow
// without end. The artifact's longest run (workload 3, 160 rows, 2 jobs/h)
// drew about 2,100 extras, so 3,200 never binds there.
func DefaultMaxExtras(n int) int { return 20 * n }

// Stream ids for the independent random streams drawn from one seed, so
// that adding draws to one (say, a random placement) never shifts another
// (the extra arrivals). The placement stream's id lives in package policy
// (policy.PlacementRand).
const streamArrivals = 0x61727276 // "arrv"

// PlacementRand is the placement stream a run of this seed hands its
// placer (policy.PlacementRand, which tenancy stages and the Kubernetes
// driver call without importing the simulator).
func PlacementRand(seed uint64) *rand.Rand { return policy.PlacementRand(seed) }

// Validate checks a config against its trace; errors name the trace file,
// line and field.
func (c *Config) Validate() error {
	_, err := c.validate()
	return err
}

// validate is Validate, counting the trace's measured rows on the way
// (a streamed trace is read once for both).
func (c *Config) validate() (tracked int, err error) {
	if c.Cluster == nil || c.Trace == nil || c.Scheduler == nil || c.Placer == nil {
		return 0, errors.New("sim: cluster, trace, scheduler and placer are required")
	}
	if c.Trace.Streamed() && extrasOn(c) {
		return 0, fmt.Errorf("sim: %s is streamed, but extra arrivals (%g jobs/h) reuse its rows, which needs them held whole", c.Trace.Name, c.ExtraLoad)
	}
	if !(c.Round > 0) || math.IsInf(c.Round*float64(c.maxRounds()), 0) {
		return 0, fmt.Errorf("sim: round length must be positive and keep the clock finite, got %v", c.Round)
	}
	if !(c.StarvationGuard >= 0) || math.IsInf(c.StarvationGuard, 0) {
		return 0, fmt.Errorf("sim: starvation guard must be >= 0 seconds, got %v", c.StarvationGuard)
	}
	size := c.Cluster.Size()
	horizon := c.Round * float64(c.maxRounds())
	fastest := 1.0
	if c.Raw != nil {
		for _, v := range c.Raw.Values {
			for _, x := range v {
				fastest = math.Min(fastest, x)
			}
		}
	}
	// A streamed trace's first reading bounds every row's checks below:
	// when none can fail, its tracked rows are its count (no Track range)
	// and the file need not be read once more (a pass was a few per cent
	// of a 20,000-row run). Submit <= Submit + need <= Submit +
	// IdealRuntime <= end, as fastest <= 1 and no row's IdealRuntime is
	// negative (else Bounds is not ok).
	if most, end, ok := c.Trace.Bounds(); ok && c.Track == nil && most <= size && end < horizon {
		tracked = c.Trace.TrackedCount()
	} else {
		tracked, err = c.checkRows(size, horizon, fastest)
		if err != nil {
			return 0, err
		}
	}
	if c.Raw != nil && c.Raw.NumGPUs() != size {
		return 0, fmt.Errorf("sim: the GPU score table covers %d GPUs but the cluster has %d", c.Raw.NumGPUs(), size)
	}
	if c.Scores != nil {
		for k := range c.Scores.SF {
			if len(c.Scores.SF[k]) != size {
				return 0, fmt.Errorf("sim: placement scores for class %v cover %d GPUs, cluster has %d", variability.Class(k), len(c.Scores.SF[k]), size)
			}
		}
	}
	for i, e := range c.StageEvents {
		if c.Tenancy == nil || e.Apply == nil || !(e.T >= 0) || (i > 0 && e.T < c.StageEvents[i-1].T) {
			return 0, fmt.Errorf("sim: stage event %d (%s, t = %g) has no tenancy stage, or is out of range or out of time order", i, e.What, e.T)
		}
	}
	if len(c.NodeEvents) > 0 {
		if _, ok := c.Tenancy.(NodeHealth); !ok {
			return 0, errors.New("sim: node events need a tenancy stage that tracks node health (--tenancy hived)")
		}
		for i, e := range c.NodeEvents {
			if e.Node < 0 || e.Node >= c.Cluster.NumNodes() || !(e.T >= 0) || (i > 0 && e.T < c.NodeEvents[i-1].T) {
				return 0, fmt.Errorf("sim: node event %d (t = %g, node %d) is out of range or out of time order", i, e.T, e.Node)
			}
		}
	}
	if !(c.ExtraLoad >= 0) || math.IsInf(c.ExtraLoad, 0) {
		return 0, fmt.Errorf("sim: extra load must be a finite number of jobs/hour >= 0, got %v", c.ExtraLoad)
	}
	return tracked, c.Costs.Default.Validate("sim")
}

// checkRows reads every row of the trace for validate: the tracked rows
// it counts, and the first row that needs more GPUs than size or arrives
// or ends (alone, on the fastest GPUs) past horizon.
func (c *Config) checkRows(size int, horizon, fastest float64) (tracked int, err error) {
	err = c.Trace.Each(func(j *workload.Spec) error {
		if c.tracks(j) {
			tracked++
		}
		if j.Most() > size {
			if j.Elastic() && j.GPUs <= size {
				return fmt.Errorf("%s:%d: field \"max_gpus\": job %d can use %d GPUs but the cluster (%s) has %d",
					j.Source, j.Line, j.ID, j.MaxGPUs, c.Cluster, size)
			}
			return fmt.Errorf("%s:%d: field \"num_gpus\": job %d asks for %d GPUs but the cluster (%s) has %d",
				j.Source, j.Line, j.ID, j.GPUs, c.Cluster, size)
		}
		if j.Submit >= horizon {
			return fmt.Errorf("%s:%d: field \"submit_time\": job %d arrives at %g s, after the simulation horizon of %g s (%d rounds of %g s)",
				j.Source, j.Line, j.ID, j.Submit, horizon, c.maxRounds(), c.Round)
		}
		// Alone, on the fastest GPU values, inside one node: no run
		// finishes it sooner.
		if need := j.Iterations * j.IterTime * fastest; j.Submit+need >= horizon {
			return fmt.Errorf("%s:%d: field %q: job %d runs %s on a median GPU, %.6g s even on the fastest GPUs, past the simulation horizon of %g s (%d rounds of %g s)%s",
				j.Source, j.Line, j.DurationField(), j.ID, j.DurationText(), need, horizon, c.maxRounds(), c.Round, j.DurationHint())
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return tracked, nil
}

func (c *Config) maxRounds() int {
	if c.MaxRounds > 0 {
		return c.MaxRounds
	}
	return DefaultMaxRounds
}

// Run simulates until every tracked job has finished.
func Run(cfg Config) (*Result, error) {
	tracked, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s, err := newState(&cfg, tracked)
	defer s.rows.close()
	if err != nil {
		return nil, err
	}
	if err := s.startable(); err != nil {
		return nil, err
	}
	_, whole := cfg.Placer.(interface{ WholeQueue() bool })
	whole = whole || cfg.Snapshot != nil
	// The incremental loop keeps round numbers in 32 bits.
	if ks, ok := cfg.Scheduler.(policy.KeyedScheduler); ok && !cfg.Plain && !whole && cfg.Hook == nil && cfg.Tenancy == nil && s.acceptsAll() && s.maxRound <= math.MaxInt32 {
		return s.runIncremental(ks)
	}
	return s.run()
}

func (s *state) acceptsAll() bool {
	_, ok := s.admit.(policy.AcceptAll)
	return ok
}

// startable refuses runs that could never finish their tracked jobs.
func (s *state) startable() error {
	if s.tracked == 0 {
		return fmt.Errorf("sim: no tracked jobs in %s (check --track)", s.cfg.Trace.Name)
	}
	if id, ok := s.extra.trackedPastLimit(); ok {
		return fmt.Errorf("sim: --track %d-%d measures extra arrival %d, but extras stop after %d (the bound on generated arrivals)",
			s.cfg.Track[0], s.cfg.Track[1], id, s.extra.limit)
	}
	return nil
}

type state struct {
	cfg        *Config
	cl         *cluster.Cluster
	env        policy.Env
	admit      policy.Admitter
	rows       rows // trace rows in arrival order, the next to arrive first
	extra      extraGen
	active     []*workload.Job
	order      []*workload.Job
	done       []metrics.JobRecord // Config.NoRecords: only briefs, losts and folded
	briefs     []brief
	losts      []lostBrief
	folded     folded
	finished   int
	tracked    int // tracked jobs not yet finished
	trackedAll int
	busy       int64       // GPU-rounds held: utilisation never depends on summation order
	rounds     []RoundStat // Config.NoRoundStats: none
	nRounds    int
	lastT      float64 // the last round's time
	arrived    []*workload.Job
	maxRound   int
	nextEvent  int
	nextStage  int
	freeMoves  bool // Config.Costs prices no move of any job
	applier    round.Applier
	hookBuf    []*workload.Job // Config.Hook's running jobs, reused
	// allocBuf is the outer list of each round's answer: it lives only
	// for the round (the jobs keep its inner lists), so one serves all.
	allocBuf [][]int
	// judge prices moves when the placer can (nil otherwise); moves is
	// this round's tally of migrations.
	judge policy.MoveJudge
	moves RoundStat
	// evict is set under MovesEvictRelaunch.
	evict *round.Evictions
}

// extrasOn says whether the run generates extra arrivals.
func extrasOn(cfg *Config) bool { return !cfg.Trace.HasTracked && cfg.ExtraLoad > 0 }

// newState starts a run of cfg, whose trace has tracked measured rows (as
// Validate counts them). The trace is read, never copied: a million rows
// held whole are a fifth of a gigabyte, and a streamed trace is read row
// by row as the clock reaches it (see rows); a --track window applies as
// each row arrives.
func newState(cfg *Config, tracked int) (*state, error) {
	s := &state{cfg: cfg, cl: cfg.Cluster.Clone(), admit: cfg.Admitter}
	if s.admit == nil {
		s.admit = policy.AcceptAll{}
	}
	s.env = policy.Env{Cluster: s.cl, Scores: cfg.Scores, Locality: cfg.Locality,
		Rand: PlacementRand(cfg.Seed)}
	if !cfg.NoMoveGains {
		s.judge, _ = cfg.Placer.(policy.MoveJudge)
	}
	if cfg.Moves == MovesEvictRelaunch {
		s.evict = &round.Evictions{}
	}
	// Each trace row usually finishes and leaves one brief; sized up
	// front, the list is written once instead of copied as it grows
	// (a quarter of a 20,000-job FIFO run's bytes).
	if cfg.NoRecords {
		s.briefs = make([]brief, 0, tracked)
		s.folded.first, s.folded.last = math.Inf(1), math.Inf(-1)
	}
	s.tracked = tracked
	if extrasOn(cfg) {
		// Validate refuses extras on a streamed trace: they reuse the rows.
		s.extra = newExtraGen(cfg.Trace.Jobs, cfg.ExtraLoad, rand.New(rand.NewPCG(cfg.Seed, streamArrivals)), cfg.Track)
		s.extra.limit = cfg.MaxExtras
		if s.extra.limit == 0 {
			s.extra.limit = DefaultMaxExtras(len(cfg.Trace.Jobs))
		}
		s.tracked += s.extra.trackedAhead()
	}
	s.maxRound = cfg.maxRounds()
	s.freeMoves = cfg.Costs.Free()
	s.trackedAll = s.tracked
	return s, s.rows.open(cfg.Trace)
}

// run is the reference loop (Config.Plain).
func (s *state) run() (*Result, error) { return s.runFrom(0) }

// runFrom is the reference loop from round first on.
func (s *state) runFrom(first int) (*Result, error) {
	R := s.cfg.Round
	snap := s.cfg.Snapshot != nil
	snapAt, also := s.cfg.SnapshotAt, s.cfg.SnapshotAlso
	for round := first; ; round++ {
		if round >= s.maxRound {
			return nil, s.tooLong(round)
		}
		T := float64(round) * R
		s.progress(T, R)
		if s.tracked == 0 {
			break
		}
		s.arrive(T)
		if s.rows.err != nil {
			return nil, s.rows.err
		}
		if err := s.nodeEvents(T); err != nil {
			return nil, err
		}
		s.scoreRound(T)
		s.schedule(T, R)
		if snap && T >= snapAt {
			s.cfg.Snapshot(T, s.order)
			for len(also) > 0 && also[0] <= T {
				also = also[1:]
			}
			snap = len(also) > 0
			if snap {
				snapAt = also[0]
			}
		}
		if s.cfg.CheckInvariants && s.cfg.Tenancy != nil {
			if err := s.cfg.Tenancy.Check(); err != nil {
				return nil, fmt.Errorf("sim: round %d (t = %g s): tenancy invariant broken: %w", round, T, err)
			}
		}
		s.report(round, len(s.active))
	}
	return s.result(s.active), nil
}

func (s *state) tooLong(round int) error {
	return tooLongError(fmt.Sprintf("sim: %d tracked jobs still unfinished after %d rounds; stopping", s.tracked, round))
}

// tooLongError is what a run that reaches its round limit fails with.
type tooLongError string

func (e tooLongError) Error() string { return string(e) }

// report feeds Config.Progress after a round.
func (s *state) report(round, active int) {
	if s.cfg.Progress != nil {
		s.cfg.Progress(Status{T: float64(round) * s.cfg.Round, Rounds: round + 1, Horizon: s.cfg.Round * float64(s.maxRound),
			Done: s.finished, TrackedLeft: s.tracked, Tracked: s.trackedAll, Active: active})
	}
}

// credit gives a running job the round (T-R, T].
func credit(j *workload.Job, R float64) {
	gpus := j.GPUs
	if j.MaxGPUs > 0 {
		gpus = len(j.GPUsHeld) // an elastic job holds what it was given
	}
	if paid := j.Progress(R); paid > 0 {
		j.LostGPUSeconds += paid * float64(gpus)
	}
	j.Attained += R
	j.GPUService += R * float64(gpus)
	j.RoundsRun++
}

// finish completes a job at T: frees its GPUs and records it.
func (s *state) finish(j *workload.Job, T float64) {
	j.Completion = T
	if err := s.cl.Release(j.ID, j.GPUsHeld); err != nil {
		panic("sim: " + err.Error()) // our own bookkeeping, not input
	}
	j.LastGPUs = j.GPUsHeld
	j.GPUsHeld = nil
	s.finished++
	if s.cfg.NoRecords {
		s.brief(j)
	} else {
		s.done = append(s.done, s.record(j))
	}
	if j.Tracked {
		s.tracked--
	}
	if f, ok := s.cfg.Scheduler.(interface{ Forget(id int) }); ok {
		f.Forget(j.ID)
	}
	if s.cfg.Tenancy != nil {
		s.cfg.Tenancy.Finish(j)
	}
}

// nodeEvents applies the node events due at T.
func (s *state) nodeEvents(T float64) error {
	for s.nextEvent < len(s.cfg.NodeEvents) && s.cfg.NodeEvents[s.nextEvent].T <= T {
		e := s.cfg.NodeEvents[s.nextEvent]
		if err := s.cfg.Tenancy.(NodeHealth).SetNodeHealth(e.Node, e.Up); err != nil {
			return fmt.Errorf("sim: node event at t = %g: %w", e.T, err)
		}
		s.nextEvent++
	}
	for s.nextStage < len(s.cfg.StageEvents) && s.cfg.StageEvents[s.nextStage].T <= T {
		e := s.cfg.StageEvents[s.nextStage]
		if err := e.Apply(); err != nil {
			return fmt.Errorf("sim: %s at t = %g: %w", e.What, e.T, err)
		}
		s.nextStage++
	}
	return nil
}

// progress credits the round (T-R, T] to running jobs and completes those
// that reached their total.
func (s *state) progress(T, R float64) {
	kept := s.active[:0]
	for _, j := range s.active {
		if j.Running() {
			s.busy += int64(len(j.GPUsHeld))
			credit(j, R)
			if j.Executed >= j.Iterations {
				s.finish(j, T)
				continue
			}
		}
		kept = append(kept, j)
	}
	clear(s.active[len(kept):])
	s.active = kept
}

// tracks says whether a trace row is measured.
func (s *state) tracks(sp *workload.Spec) bool { return s.cfg.tracks(sp) }

func (c *Config) tracks(sp *workload.Spec) bool {
	if t := c.Track; t != nil {
		return sp.ID >= t[0] && sp.ID <= t[1]
	}
	return sp.Tracked
}

// nextArrival is the submit time of the next job to arrive, trace rows
// first, then extras; +Inf when none will.
func (s *state) nextArrival() float64 {
	if sp := s.rows.peek(); sp != nil {
		return sp.Submit
	}
	if s.extra.on() {
		return s.extra.peek()
	}
	return math.Inf(1)
}

// arrive admits every job with arrival <= T, trace rows and extras merged
// in arrival order (extras only ever follow the trace).
func (s *state) arrive(T float64) {
	s.arrived = s.arrived[:0]
	for sp := s.rows.peek(); sp != nil && sp.Submit <= T; sp = s.rows.peek() {
		j := workload.NewJob(*sp)
		j.Tracked = s.tracks(&j.Spec)
		s.arrived = append(s.arrived, j)
		s.rows.pop()
	}
	if s.rows.done() {
		for s.extra.on() && s.extra.peek() <= T {
			s.arrived = append(s.arrived, workload.NewJob(s.extra.pop()))
		}
	}
	for _, j := range s.arrived {
		j.MoveCost = s.cfg.Costs.For(&j.Spec)
	}
	if len(s.arrived) > 0 {
		s.active = append(s.active, s.admit.Admit(T, s.arrived, s.active, s.cl)...)
	}
}

func (s *state) schedule(T, R float64) {
	guard := s.cfg.StarvationGuard
	s.order = append(s.order[:0], s.active...)
	for _, j := range s.order {
		if guard > 0 && !j.Running() && j.SinceScheduled >= guard {
			j.Priority = 1
		}
	}
	order := s.cfg.Scheduler.Order(T, s.order)
	s.order = order
	if c, ok := s.cfg.Placer.(Clocked); ok {
		c.SetNow(T)
	}
	var alloc [][]int
	if s.cfg.Tenancy != nil {
		if c, ok := s.cfg.Tenancy.(Clocked); ok {
			c.SetNow(T)
		}
		alloc = s.cfg.Tenancy.Place(&s.env, order, s.cfg.Placer)
	} else if sp, ok := s.cfg.Placer.(policy.Streamer); ok && s.cfg.Observe == nil {
		// A streaming placer's Place is PlaceTo into a fresh list; an
		// observer may keep the answer, so it gets a fresh one.
		alloc = s.answer(len(order))
		sp.PlaceTo(&s.env, order, alloc, nil)
	} else {
		alloc = s.cfg.Placer.Place(&s.env, order)
	}
	if s.cfg.Observe != nil {
		s.cfg.Observe(T, order, alloc)
	}
	s.carryOut(order, alloc)
	inUse, running, _ := s.apply(order, alloc, T, R)
	s.addRound(s.roundStat(T, inUse, running, len(order)-running))
}

// answer is allocBuf cleared to n empty lines.
func (s *state) answer(n int) [][]int {
	clear(s.allocBuf)
	s.allocBuf = slices.Grow(s.allocBuf[:0], n)[:n]
	return s.allocBuf
}

// carryOut rewrites the answer for the move model (see MoveModel) and
// starts the round's tally of migrations.
func (s *state) carryOut(order []*workload.Job, alloc [][]int) {
	s.moves = RoundStat{}
	if s.evict != nil {
		s.evict.Rewrite(s.cl.Size(), order, alloc)
	}
}

// addRound counts a round and keeps its line unless Config.NoRoundStats.
func (s *state) addRound(st RoundStat) {
	s.nRounds++
	s.lastT = st.T
	if !s.cfg.NoRoundStats {
		s.rounds = append(s.rounds, st)
	}
}

// roundStat is the round's line, with its migrations.
func (s *state) roundStat(T float64, inUse, running, queued int) RoundStat {
	st := s.moves
	st.T, st.GPUsInUse, st.Running, st.Queued = T, inUse, running, queued
	return st
}

// apply makes the placer's answer happen. round.Apply is the reading of
// the answer both drivers share (here as a round.Applier, which visits
// each job as it reads it: the visit reads no owner); the simulator's part
// is the progress model of each launched job. It returns the GPUs in use,
// the running jobs, and whether any job was launched, moved or preempted.
func (s *state) apply(order []*workload.Job, alloc [][]int, T, R float64) (inUse, running int, changed bool) {
	err := s.applier.Apply(s.cl, order, alloc, func(i int, k round.Kind) {
		g := alloc[i]
		changed = changed || k.Changes()
		if s.applyAt(i, order[i], g, k, T) {
			inUse += len(g)
			running++
		} else {
			order[i].SinceScheduled += R
		}
	})
	if err != nil {
		s.placerBug(err)
	}
	return inUse, running, changed
}

// applyJob is one line of round.Applier's visit: it moves j to g (what the
// round does to it is k) and reports whether j runs. A job that waits
// has its waiting time left to the caller.
//
// It touches the head of the job (see workload.Job) unless the job
// starts or stops: a migration reads no cost when moves are free (adding
// a cost of zero leaves the debt as it is), and LastGPUs is written when
// a job stops rather than at every move. Its parts (preempt, launch,
// migrate) are what the incremental loop's visit calls for each kind.
func (s *state) applyJob(j *workload.Job, g []int, k round.Kind, T float64) bool {
	switch k {
	case round.Wait:
		return false
	case round.Preempt:
		s.preempt(j)
		return false
	case round.Launch:
		s.launch(j, g, T)
	case round.Migrate:
		s.migrate(j, g)
	}
	j.SinceScheduled = 0
	return true
}

// preempt stops a running job: it pays its preemption cost when it runs
// again.
func (s *state) preempt(j *workload.Job) {
	j.Preemptions++
	j.Debt += j.MoveCost.Preemption
	j.LastGPUs = j.GPUsHeld
	j.GPUsHeld = nil
}

// launch starts a waiting job on g at T (its SinceScheduled is the
// caller's to clear).
func (s *state) launch(j *workload.Job, g []int, T float64) {
	if j.FirstStart < 0 {
		j.FirstStart = T
	}
	s.hold(j, g)
}

// migrate moves a running job to g, a different set (its SinceScheduled
// is the caller's to clear).
func (s *state) migrate(j *workload.Job, g []int) {
	s.noteMove(j, j.GPUsHeld, g)
	j.Migrations++
	if !s.freeMoves {
		j.Debt += j.MoveCost.Migration
	}
	s.hold(j, g)
}

// hold gives j the GPUs g and the slowdown factors they set.
func (s *state) hold(j *workload.Job, g []int) {
	j.GPUsHeld = g
	j.PM = s.pm(j, g)
	// A rigid job on one GPU without a placement model has
	// locality 1 (one GPU spans no nodes): most of the jobs a
	// large run moves every round, so it is found without a call.
	if len(g) == 1 && j.MaxGPUs == 0 && s.cfg.Placement == nil {
		j.Loc = 1
	} else {
		j.Loc = s.cfg.loc(s.cl, j, g)
	}
}

// applyAt is applyJob for line i of the round's answer, which under
// MovesEvictRelaunch may be a migration carried out as a stop: the job
// pays its migration cost and waits to be placed again.
func (s *state) applyAt(i int, j *workload.Job, g []int, k round.Kind, T float64) bool {
	if k != round.Preempt || s.evict == nil || s.evict.Moved[i] == nil {
		return s.applyJob(j, g, k, T)
	}
	s.noteMove(j, j.GPUsHeld, s.evict.Moved[i])
	j.Migrations++
	if !s.freeMoves {
		j.Debt += j.MoveCost.Migration
	}
	j.LastGPUs = j.GPUsHeld
	j.GPUsHeld = nil
	return false
}

// noteMove counts j's move from one GPU set to another and records what
// the placer expected it to save (before Migrations counts it). It is
// small enough to inline: a run without a judge only counts.
func (s *state) noteMove(j *workload.Job, from, to []int) {
	s.moves.Migrations++
	if s.judge != nil {
		s.judgeMove(j, from, to)
	}
}

// judgeMove is noteMove's record of the move's expected gain.
func (s *state) judgeMove(j *workload.Job, from, to []int) {
	gain := s.judge.MoveGain(&s.env, j, from, to)
	m := gain
	if !s.freeMoves {
		m -= j.MoveCost.Migration // gain - 0 is gain: a free move reads no cost
	}
	if j.Migrations == 0 || m < j.MinMoveMargin {
		j.MinMoveMargin = m
	}
	j.MoveGain += gain
	if s.moves.Migrations == 1 || m < s.moves.MinMoveMargin {
		s.moves.MinMoveMargin = m
	}
	s.moves.MoveGain += gain
}

func (s *state) placerBug(err error) {
	panic(fmt.Sprintf("sim: placer %s: %v", s.cfg.Placer.Name(), err)) // a placer bug, not input
}

// loc is the locality factor of j on g, elastic speed-up included.
func (c *Config) loc(cl *cluster.Cluster, j *workload.Job, g []int) float64 {
	loc := 1.0
	if c.Placement != nil {
		loc = c.Placement(&j.Spec, g)
	} else if cl.SpansNodes(g) {
		loc = c.Locality(&j.Spec)
	}
	if j.MaxGPUs > 0 && len(g) != j.GPUs {
		// An elastic job's iterations are counted on its minimum
		// GPUs: on len(g) it runs len(g)/GPUs times as fast.
		loc *= float64(j.GPUs) / float64(len(g))
	}
	return loc
}

// pm is the slowdown of a job on gpus: its slowest GPU sets the pace of
// every synchronous iteration.
func (s *state) pm(j *workload.Job, gpus []int) float64 { return pmOf(s.cfg.Raw, j, gpus) }

func pmOf(raw *variability.Table, j *workload.Job, gpus []int) float64 {
	if raw == nil {
		return 1
	}
	v := raw.Values[j.Class]
	if len(gpus) == 1 {
		return v[gpus[0]]
	}
	m := v[gpus[0]]
	for _, g := range gpus[1:] {
		m = max(m, v[g]) // math.Max's rules (NaN, signed zeros), inlined
	}
	return m
}

// nodesOf lists the distinct nodes of a GPU list, ascending.
func (s *state) nodesOf(gpus []int) []int {
	var out []int
	for _, g := range gpus {
		n := s.cl.GPUs[g].Node
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// brief is what the summary needs of a finished tracked job under
// Config.NoRecords beyond what folded holds: the figures it sums in id
// order (floats added in another order can differ in the last bit), 24
// bytes where a record is over 200.
type brief struct {
	id        int
	jct, wait float64
}

// lostBrief is a finished job's lost GPU time, summed in id order too;
// only a job that lost some has one (adding zero leaves a sum as it is).
type lostBrief struct {
	id   int
	lost float64
}

// folded is what the summary needs of every finished job that does not
// depend on the order they are taken in: counts, and the first arrival
// and last completion of the tracked ones.
type folded struct {
	preemptions, migrations int
	first, last             float64
}

// brief keeps what the summary needs of a job finished under
// Config.NoRecords.
func (s *state) brief(j *workload.Job) {
	s.folded.preemptions += j.Preemptions
	s.folded.migrations += j.Migrations
	if j.LostGPUSeconds != 0 {
		s.losts = append(s.losts, lostBrief{j.ID, j.LostGPUSeconds})
	}
	if !j.Tracked {
		return
	}
	jct := j.Completion - j.Submit
	run := float64(j.RoundsRun) * s.cfg.Round
	s.briefs = append(s.briefs, brief{id: j.ID, jct: jct, wait: math.Max(0, jct-run)})
	s.folded.first = math.Min(s.folded.first, j.Submit)
	s.folded.last = math.Max(s.folded.last, j.Completion)
}

// tallyBriefs adds the briefs to t as the records they stand for would
// be, in id order: the counts first (an untracked record of them all),
// then each job that lost GPU time or is tracked. Every tracked record
// carries the run's first arrival and last completion, which is all the
// tally reads of those two.
func (s *state) tallyBriefs(t *metrics.Tally) {
	if !s.cfg.NoRecords {
		return
	}
	t.Add(&metrics.JobRecord{Preemptions: s.folded.preemptions, Migrations: s.folded.migrations})
	slices.SortFunc(s.briefs, func(a, b brief) int { return cmp.Compare(a.id, b.id) })
	slices.SortFunc(s.losts, func(a, b lostBrief) int { return cmp.Compare(a.id, b.id) })
	losts := s.losts
	for _, b := range s.briefs {
		for len(losts) > 0 && losts[0].id < b.id {
			t.Add(&metrics.JobRecord{ID: losts[0].id, LostGPUSeconds: losts[0].lost})
			losts = losts[1:]
		}
		r := metrics.JobRecord{ID: b.id, Tracked: true, Arrival: s.folded.first, Completion: s.folded.last, JCT: b.jct, Wait: b.wait}
		if len(losts) > 0 && losts[0].id == b.id {
			r.LostGPUSeconds = losts[0].lost
			losts = losts[1:]
		}
		t.Add(&r)
	}
	for _, l := range losts {
		t.Add(&metrics.JobRecord{ID: l.id, LostGPUSeconds: l.lost})
	}
}

// record is a finished job's line in the result.
func (s *state) record(j *workload.Job) metrics.JobRecord {
	run := float64(j.RoundsRun) * s.cfg.Round
	jct := j.Completion - j.Submit
	return metrics.JobRecord{
		ID: j.ID, Model: j.Model, Class: j.Class.String(), GPUs: j.GPUs, Tracked: j.Tracked,
		Arrival: j.Submit, FirstStart: j.FirstStart, Completion: j.Completion,
		JCT: jct, Run: run, GPUSeconds: j.GPUService, Wait: math.Max(0, jct-run),
		Preemptions: j.Preemptions, Migrations: j.Migrations, LostGPUSeconds: j.LostGPUSeconds,
		MoveGain: j.MoveGain, MinMoveMargin: j.MinMoveMargin,
		VC: j.VC, Priority: j.VCPriority, GPUIDs: j.LastGPUs, Nodes: s.nodesOf(j.LastGPUs),
	}
}

// result summarises the run; unfinished are the jobs still active, in
// arrival order.
func (s *state) result(unfinished []*workload.Job) *Result {
	res := &Result{Rounds: s.rounds, NumRounds: s.nRounds, Extras: s.extra.made, ExtrasCapped: s.extra.capped(), Jobs: s.done}
	slices.SortFunc(res.Jobs, func(a, b metrics.JobRecord) int { return a.ID - b.ID })
	var t metrics.Tally
	for i := range res.Jobs {
		t.Add(&res.Jobs[i])
	}
	s.tallyBriefs(&t)
	end := float64(s.nRounds) * s.cfg.Round
	res.Summary = t.Summary(float64(s.busy)*s.cfg.Round, end*float64(s.cl.Size()))
	// Preemptions and migrations count every job, including background
	// jobs still queued or running when the last tracked job finished.
	for _, j := range unfinished {
		res.Summary.Preemptions += j.Preemptions
		res.Summary.Migrations += j.Migrations
		res.Summary.LostGPUSeconds += j.LostGPUSeconds
	}
	return res
}
