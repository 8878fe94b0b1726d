package kube

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// AnnEstimatedStart is written on a waiting gang's pending pods when
// forecasts are on (forecastEvery > 0): when the forecast says the gang
// starts (RFC 3339), or "unknown" when it does not start within the
// forecast.
const AnnEstimatedStart = "pal.io/estimated-start"

// ForecastState is a round's state as a forecast starts from it: the
// GPUs PAL may hand out, the round's gangs as jobs (copies; times in the
// jobs' seconds from the round, so the round is t = 0) with running ones
// on their GPUs of Cluster and their progress, and fresh copies of the
// round's policies. A forecast runs them on with no arrivals
// (package kube/forecast runs the simulator's forward run on it).
type ForecastState struct {
	At        time.Time // the round's start (wall time)
	TimeScale float64   // jobs' seconds per wall second
	// Cluster is the nodes' GPUs without those other schedulers' pods,
	// leaving or partly bound gangs hold (as the placer sees them).
	Cluster *cluster.Cluster
	Jobs    []*workload.Job // running and waiting, in the round's order
	Pending []ForecastGang  // the waiting ones, in queue order
	Round   float64         // the round period in the jobs' seconds

	Scheduler       policy.Scheduler
	Placer          policy.Placer
	Raw             *variability.Table
	Scores          *policy.Scores
	Locality        float64 // slowdown of a gang spread over nodes
	StarvationGuard float64 // seconds; 0: off
	Costs           workload.Costs
	Seed            uint64
	// Names are the round's policies (scheduler/placement, backfill).
	SchedulerName, PlacementName, Backfill string
	// Config is the scheduler's config the policies come from.
	Config Config
	// Kept are the ids of the running jobs of Jobs that stay where they
	// run until they end: gangs the round may not evict (bare pods, a
	// Job an eviction would fail), which under backfill it keeps in its
	// placer's order, held in place (backfill.Placer.Keep), so that a
	// gang needing their GPUs is reserved them when they free. Without
	// backfill they are not in the forecast, their GPUs cut out of
	// Cluster, as the round cuts them out; a what-if that turns backfill
	// off leaves them to the placer as any running gang.
	Kept []int
}

// WithPolicies is st with cfg's scheduler, placement and backfill for
// the forward run: the round's own answer stands, the change takes
// effect from the next round (a what-if "switch now"). cfg must be
// valid and neither themis nor a tenancy.
func (st *ForecastState) WithPolicies(cfg Config) (*ForecastState, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Scheduler == registry.SchedulerThemis || cfg.Tenancy != "" && cfg.Tenancy != "none" {
		return nil, fmt.Errorf("forecast: not with scheduler themis or a tenancy (their leases and cells are not copied)")
	}
	out := *st
	out.Config = cfg
	var err error
	if out.Scheduler, out.Placer, err = forecastPolicies(cfg, nil); err != nil {
		return nil, err
	}
	keepIn(out.Placer, out.Kept)
	out.SchedulerName, out.PlacementName, out.Backfill = out.Scheduler.Name(), out.Placer.Name(), cfg.Backfill
	if out.Backfill == "" {
		out.Backfill = "none"
	}
	return &out, nil
}

// forecastPolicies are fresh copies of cfg's policies for a forecast,
// with the protections live's backfill gives (nil: none) and a backfill
// estimate from the copies' work (+Inf when it is not stated).
func forecastPolicies(cfg Config, live policy.Placer) (policy.Scheduler, policy.Placer, error) {
	pol, err := cfg.policies()
	if err != nil {
		return nil, nil, err
	}
	m, err := cfg.backfillMode()
	if err != nil || m == backfill.None {
		return pol.sched, pol.place, err
	}
	pen := cfg.LocalityPenalty
	est := func(env *policy.Env, j *workload.Job, gpus []int) float64 {
		if math.IsInf(j.Iterations, 1) || !(j.IterTime > 0) {
			return math.Inf(1)
		}
		return workEstimate(env, j, gpus, pen)
	}
	p := backfill.Wrap(pol.place, m, est)
	if b := backfill.Unwrap(live); b != nil {
		p = backfill.Fork(live, pol.place)
		backfill.Unwrap(p).Est = est
		// The forecast's clock starts at 0, the live one's at its own.
		backfill.Rebase(p, b.Now())
	}
	return pol.sched, p, nil
}

// keepIn makes p's backfill placer, if it has one, keep the jobs ids
// names where they run (see ForecastState.Kept).
func keepIn(p policy.Placer, ids []int) {
	b := backfill.Unwrap(p)
	if b == nil || len(ids) == 0 {
		return
	}
	set := make(map[int]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	b.Keep = func(j *workload.Job) bool { return set[j.ID] }
}

// ForecastGang is one waiting gang of a forecast.
type ForecastGang struct {
	Key      string // namespace/name
	JobID    int
	Position int // among the waiting gangs, 1 is the next
	GPUs     int
	Reason   string // why it waits now
	key      string // the state's gang key
	pods     []*corev1.Pod
}

// ForecastRow is what a forecast says of one waiting gang: when it
// starts and ends, in the jobs' seconds from the forecast's round (-1:
// not within the forecast; a gang whose work is not stated has no end).
type ForecastRow struct {
	Gang          string
	Position      int
	GPUs          int
	Start, Finish float64
	Reason        string
}

// Forecaster runs a forecast (package kube/forecast has the simulator's).
type Forecaster func(*ForecastState) ([]ForecastRow, error)

// WithForecaster gives the scheduler its forecast: with forecastEvery
// N > 0, every N-th planned round it runs f and writes the answer on the
// waiting gangs (AnnEstimatedStart, the waiting event, the gauge
// pal_gang_estimated_start_seconds).
func WithForecaster(f Forecaster) Option {
	return func(s *Scheduler) {
		s.fc.run = f
		s.fc.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pal_gang_estimated_start_seconds",
			Help: "When the last forecast says a waiting gang starts (Unix seconds); absent when it does not start within the forecast.",
		}, []string{"gang"})
		s.metrics.reg.MustRegister(s.fc.gauge)
	}
}

// forecastStage is the scheduler's forecast state.
type forecastStage struct {
	run     Forecaster
	gauge   *prometheus.GaugeVec
	planned int64             // planned rounds
	eta     map[string]string // gang -> what its waiting message says of its start
	busy    atomic.Bool       // annotations being written
	last    []ForecastRow
}

// forecastRound runs the forecast every forecastEvery-th planned round
// (the first one included), before the round's waiting messages, which
// then name each gang's estimated start.
func (s *Scheduler) forecastRound(snap *snapshot, order []*workload.Job, alloc [][]int, start time.Time) {
	n := int64(s.cfg.ForecastEvery)
	if s.fc.run == nil || n <= 0 {
		return
	}
	s.fc.planned++
	if (s.fc.planned-1)%n != 0 {
		return
	}
	st, err := s.forecastState(snap, order, alloc, start)
	var rows []ForecastRow
	if err == nil {
		rows, err = s.fc.run(st)
	}
	if err != nil {
		s.log.Error("forecast", "err", err)
		return
	}
	s.fc.last = rows
	s.fc.eta = make(map[string]string, len(rows))
	s.fc.gauge.Reset()
	writes := map[*corev1.Pod]string{}
	for i, r := range rows {
		at := "unknown"
		msg := "; the forecast sees no start"
		if r.Start >= 0 {
			eta := ETA(st, r.Start)
			at = eta.UTC().Format(time.RFC3339)
			msg = "; estimated start " + at
			s.fc.gauge.WithLabelValues(labelValue(r.Gang)).Set(float64(eta.Unix()))
		}
		s.fc.eta[st.Pending[i].key] = msg
		for _, p := range st.Pending[i].pods {
			if p.Annotations[AnnEstimatedStart] != at {
				writes[p] = at
			}
		}
	}
	// While the last forecast's writes are still going, the next
	// refresh writes.
	s.annotateInBackground(&s.fc.busy, AnnEstimatedStart, "forecast: writing "+AnnEstimatedStart, writes)
}

// etaNote is what a waiting message adds from the last forecast.
func (s *Scheduler) etaNote(key string) string { return s.fc.eta[key] }

// LastForecast is the last forecast's rows (nil before the first).
func (s *Scheduler) LastForecast() []ForecastRow { return s.fc.last }

// ETA is the wall time t seconds of the jobs' time after st's round.
func ETA(st *ForecastState, t float64) time.Time {
	return st.At.Add(time.Duration(t / st.TimeScale * float64(time.Second)))
}

// Forecast reads the cluster as a round would (the same state and
// snapshot), orders and places the gangs without acting on the answer,
// and returns the state a forecast starts from. It changes nothing in
// the cluster: `pal-kube forecast` runs it on a scheduler that never
// runs a round.
func (s *Scheduler) Forecast(at time.Time) (*ForecastState, error) {
	if s.th != nil || s.ten != nil {
		return nil, fmt.Errorf("forecast: not with scheduler themis or a tenancy (their leases and cells are not copied)")
	}
	s.state.Sync()
	snap := s.state.Snapshot()
	if snap.Cluster == nil {
		return nil, fmt.Errorf("forecast: the cluster has no GPU nodes")
	}
	if s.evicted.restore {
		s.restoreEvictedWork(context.Background(), false)
	}
	s.loadScores(snap)
	s.rand.Cluster, s.rand.Scores = snap.Cluster, s.scores
	s.byJob = snap.ByJob
	s.kept = s.kept[:0] // a round's, gone with it
	clear(s.keptSet)
	now := float64(at.UnixNano())/1e9 - s.epoch
	var order []*workload.Job
	for _, g := range snap.Gangs {
		j := g.Job
		switch g.State {
		case state.GangRunning:
			if len(g.GPUs) != j.GPUs {
				continue // as a round: its GPUs are not the placer's
			}
			j.GPUsHeld = g.GPUs
			j.PM, j.Loc = s.slowdown(snap, j, g.GPUs), 1
			if why, budget := s.keptBy(g); why != "" && (!s.cfg.PreemptBarePods || budget) {
				s.keep(j) // as a round: out of the order, kept where it runs
				continue
			}
		case state.GangQueued:
			j.GPUsHeld = nil
			if len(s.evictedWork) > 0 {
				s.resumeEvicted(g) // as a round: evicted by the scheduler, its work kept
			}
		default:
			continue
		}
		j.MoveCost = s.moveCost(g)
		order = append(order, j)
	}
	order = s.orderJobs(now, order, snap.ByJob)
	alloc := s.placeOnce(snap, order, snap.ByJob, at)
	return s.forecastState(snap, order, alloc, at)
}

// forecastState turns the round's order and the placer's answer into a
// forecast's starting state.
func (s *Scheduler) forecastState(snap *snapshot, order []*workload.Job, alloc [][]int, at time.Time) (*ForecastState, error) {
	if s.th != nil || s.ten != nil {
		return nil, fmt.Errorf("forecast: not with scheduler themis or a tenancy (their leases and cells are not copied)")
	}
	cl := snap.Cluster
	// Under backfill the gangs the round keeps in place are the
	// forecast's too, on their GPUs (place sees them so as well).
	var kept []int
	if len(s.kept) > 0 && backfill.Unwrap(s.pol.place) != nil {
		n := len(order)
		order = append(slices.Clip(order), s.kept...)
		alloc = slices.Clip(alloc)
		for _, j := range order[n:] {
			alloc = append(alloc, j.GPUsHeld)
			kept = append(kept, j.ID)
		}
	}
	// The view: every GPU but those held by gangs outside the order.
	toView, toReal, sizes, names := cutOutside(cl, order)
	if len(toReal) == 0 {
		return nil, fmt.Errorf("forecast: every GPU is held by pods outside PAL's round")
	}
	view, err := cluster.NewSized(sizes)
	if err != nil {
		return nil, fmt.Errorf("forecast: %v", err)
	}
	for i := range view.Nodes {
		view.Nodes[i].Name = names[i]
	}
	st := &ForecastState{At: at, TimeScale: s.cfg.TimeScale, Cluster: view, Round: s.cfg.Period.Seconds() * s.cfg.TimeScale,
		Locality: s.cfg.LocalityPenalty, StarvationGuard: s.cfg.StarvationGuard.Seconds(),
		Costs: workload.Costs{Default: s.cost}, Seed: s.cfg.Seed,
		SchedulerName: s.pol.sched.Name(), PlacementName: s.pol.place.Name(), Backfill: s.cfg.Backfill}
	if st.Backfill == "" {
		st.Backfill = "none"
	}
	if s.raw != nil {
		st.Raw = &variability.Table{}
		for c := range st.Raw.Values {
			st.Raw.Values[c] = make([]float64, len(toReal))
			for v, g := range toReal {
				st.Raw.Values[c][v] = s.raw.Values[c][g]
			}
		}
	}
	if s.scores != nil {
		st.Scores = &policy.Scores{LV: s.scores.LV}
		for c := range st.Scores.SF {
			st.Scores.SF[c] = make([]float64, len(toReal))
			for v, g := range toReal {
				st.Scores.SF[c][v] = s.scores.SF[c][g]
			}
		}
	}
	st.Config, st.Kept = s.cfg, kept
	if st.Scheduler, st.Placer, err = forecastPolicies(s.cfg, s.pol.place); err != nil {
		return nil, err
	}
	st.Scheduler = tiered(st.Scheduler, order, snap.ByJob)
	keepIn(st.Placer, kept)

	now := float64(at.UnixNano())/1e9 - s.epoch
	free := view.Size()
	for i := range order {
		free -= len(alloc[i])
	}
	mode, _ := s.cfg.backfillMode()
	head := ""
	for i, j := range order {
		c := *j
		c.Submit -= now
		if c.FirstStart >= 0 {
			c.FirstStart -= now
		}
		c.Completion = -1
		c.GPUsHeld = nil
		g := snap.ByJob[j]
		if !(c.IterTime > 0) {
			c.IterTime = 1 // its work is unknown anyway
		}
		if !s.workKnown(j) {
			c.Iterations = math.Inf(1) // it never ends within the forecast
		}
		if a := alloc[i]; a != nil {
			c.GPUsHeld = make([]int, len(a))
			for k, x := range a {
				c.GPUsHeld[k] = toView[x]
			}
			slices.Sort(c.GPUsHeld)
			if !j.Running() || !slices.Equal(j.GPUsHeld, a) || !(c.PM > 0) {
				c.PM, c.Loc = s.slowdown(snap, j, a), 1
			}
			if j.Running() && g != nil && len(g.Bound) > 0 {
				// Its progress and service: what this scheduler
				// credited, or what its bind-info and the time since it
				// was bound give, whichever is more (see creditBound).
				perIter := c.PM * c.Loc * c.IterTime
				if math.IsInf(c.Iterations, 1) {
					perIter = 0 // its work is unknown: only its service counts
				}
				s.creditBound(g, &c, at, perIter)
			}
		} else {
			c.PM, c.Loc = 0, 0
			r := ForecastGang{JobID: j.ID, Position: len(st.Pending) + 1, GPUs: j.GPUs}
			if g != nil {
				r.Key, r.key, r.pods = strings.Replace(g.Key, "/pod:", "/", 1), g.Key, g.Pending
			}
			switch {
			case head == "" || j.GPUs > free:
				r.Reason = fmt.Sprintf("does not fit: needs %d GPUs, %d free", j.GPUs, free)
			case mode == backfill.None:
				r.Reason = fmt.Sprintf("behind %s, which waits (strict order)", head)
			default:
				r.Reason = fmt.Sprintf("would hold GPUs %s's reservation needs past its time", head)
			}
			if head == "" {
				head = gangName(r.key)
			}
			st.Pending = append(st.Pending, r)
		}
		st.Jobs = append(st.Jobs, &c)
	}
	return st, nil
}

// Read starts the informers and waits until they hold the cluster, as
// Run does before its first round, without leading or running a round
// (pal-kube forecast reads with it).
func (s *Scheduler) Read(ctx context.Context) error {
	s.startFactories(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("informers did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// Start starts what rounds need besides the informers (the binder and
// the event poster), for a caller that runs rounds itself; such a caller
// calls Stop when done. The binder ends with ctx.
func (s *Scheduler) Start(ctx context.Context) {
	s.events.Start(ctx)
	s.binder.Start(ctx)
}

// Stop ends what Start started that ctx does not end: the event poster's
// workers drain their queue (for up to eventDrainLimit) and leave, as
// Run's shutdown has them do. Without it each Start left its workers
// behind, which a fuzz worker that builds thousands of schedulers ran
// out of memory on.
func (s *Scheduler) Stop() { s.events.Stop() }
