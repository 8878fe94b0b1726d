// Package kube is PAL's Kubernetes driver: a standalone scheduler that
// owns the pods whose spec.schedulerName is its own, and every period runs
// the same round as the simulator (order, placement, round.Plan) on the
// cluster it reads from informers, then binds and evicts pods to make the
// cluster hold the answer.
//
// What it reads and writes on pods is described at the annotation
// constants (AnnGang ...). Its state is the cluster itself: every bound
// pod records its devices and its whole gang's placement, so a restarted
// scheduler rebuilds everything from the pods before its first round.
package kube

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerbatchv1 "k8s.io/client-go/listers/batch/v1"
	listercorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Scheduler is one replica of `pal scheduler`.
type Scheduler struct {
	cfg     Config
	client  kubernetes.Interface
	log     *slog.Logger
	models  *workload.Models
	pol     policies
	rand    policy.Env // Rand stream persists across rounds, from cfg.Seed
	metrics *Metrics
	id      string // leader-election identity

	factory   informers.SharedInformerFactory
	nsFactory informers.SharedInformerFactory
	nodes     listercorev1.NodeLister
	ours      listercorev1.PodLister
	assigned  listercorev1.PodLister
	batchJobs listerbatchv1.JobLister
	cms       listercorev1.ConfigMapLister
	synced    []cache.InformerSynced

	startFactories func(stop <-chan struct{})

	dyn        dynamic.Interface // nil: scheduler-plugins PodGroups are not read
	groups     groupSources
	groupWrote map[string]string // gang -> group status last written (round goroutine)
	boundGangs map[string]bool   // gangs the current round bound whole

	events *eventPoster

	kick  chan struct{}
	ready atomic.Bool

	// Round state (only the round goroutine touches it).
	jobs      *jobTable
	assumed   map[types.UID]assumption
	lastWhy   map[string]string // gang -> last FailedScheduling message
	scoresKey string
	scores    *policy.Scores
	raw       *variability.Table
	told      map[string]bool // nodes already told they run at the median
	lastRound time.Time

	learn *learnStage // nil: learnScores off
	dcgm  *dcgmStage  // nil: no dcgm exporters configured

	ten *tenancyStage // nil: tenancy none
	th  *themisStage  // nil: scheduler is not themis

	binds      atomic.Int64
	killAfter  int64 // test hook: SIGKILL itself after this many binds
	roundCount atomic.Int64
}

// Binds is how many pods this replica has bound.
func (s *Scheduler) Binds() int64 { return s.binds.Load() }

// Rounds is how many rounds this replica has run.
func (s *Scheduler) Rounds() int64 { return s.roundCount.Load() }

// assumption is a bind or eviction the informers have not shown yet.
type assumption struct {
	node    string
	annots  map[string]string
	evicted bool
}

// KillAfterBindsEnv, when set to N > 0, makes the scheduler kill itself
// with SIGKILL right after its N-th successful bind. The crash-recovery
// test uses it to cut a gang's binding off at an exact point; it is not a
// setting for operators.
const KillAfterBindsEnv = "PAL_TEST_KILL_AFTER_BINDS"

// New makes a scheduler; Run starts it. It asks the apiserver's
// discovery which PodGroup APIs it serves (see LabelCoschedPodGroup).
func New(cfg Config, client kubernetes.Interface, log *slog.Logger, opts ...Option) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	models, _ := cfg.models()
	pol, _ := cfg.policies()
	host, _ := os.Hostname()
	s := &Scheduler{
		cfg: cfg, client: client, log: log, models: models, pol: pol,
		rand: policy.Env{Rand: variability.NewRand(cfg.Seed),
			Locality: func(*workload.Spec) float64 { return cfg.LocalityPenalty }},
		metrics: NewMetrics(),
		id:      fmt.Sprintf("%s_%d_%d", host, os.Getpid(), time.Now().UnixNano()),
		kick:    make(chan struct{}, 1),
		jobs:    newJobTable(float64(time.Now().UnixNano()) / 1e9),
		assumed: map[types.UID]assumption{}, lastWhy: map[string]string{}, told: map[string]bool{},
		groupWrote: map[string]string{},
	}
	for _, o := range opts {
		o(s)
	}
	s.jobs.cost = workload.MoveCost{Migration: cfg.MigrationCost.Seconds()}
	if cfg.LearnScores {
		s.learn = newLearnStage()
	}
	if cfg.DCGM.enabled() {
		s.dcgm = newDCGMStage(cfg.DCGM)
		s.metrics.reg.MustRegister(s.dcgm.collectors()...)
	}
	if cfg.Scheduler == registry.SchedulerThemis {
		s.th = newThemisStage(cfg, models)
		s.pol.place = s.th
	}
	if l, _ := cfg.validateTenancy(); l != nil {
		var err error
		mk := cfg.newPlacer
		if s.th != nil {
			mk = s.th.vcPlacer // each VC runs a Themis of its own
		}
		if s.ten, err = newTenancyStage(cfg.Tenancy, l, mk); err != nil {
			return nil, err
		}
	}
	if v := os.Getenv(KillAfterBindsEnv); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive count", KillAfterBindsEnv, v)
		}
		s.killAfter = n
	}
	s.factory = informers.NewSharedInformerFactory(client, 0)
	ours := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", cfg.SchedulerName).String()
	}))
	assigned := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
	}))
	s.nsFactory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace))
	ni := s.factory.Core().V1().Nodes()
	ji := s.factory.Batch().V1().Jobs()
	oi := ours.Core().V1().Pods()
	ai := assigned.Core().V1().Pods()
	ci := s.nsFactory.Core().V1().ConfigMaps()
	s.nodes, s.batchJobs, s.ours, s.assigned, s.cms = ni.Lister(), ji.Lister(), oi.Lister(), ai.Lister(), ci.Lister()
	s.synced = []cache.InformerSynced{ni.Informer().HasSynced, ji.Informer().HasSynced, oi.Informer().HasSynced,
		ai.Informer().HasSynced, ci.Informer().HasSynced}
	_, _ = oi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
			s.poke()
		}
	}})
	startGroups := s.setupGroups()
	s.startFactories = func(stop <-chan struct{}) {
		startGroups(stop)
		s.factory.Start(stop)
		ours.Start(stop)
		assigned.Start(stop)
		s.nsFactory.Start(stop)
	}
	s.events = newEventPoster(client, cfg.SchedulerName, s.metrics)
	return s, nil
}

// UseEventClient makes the scheduler post its events through client, a
// client of their own whose rate limits never slow a bind (call it
// before Run; by default events share the scheduler's client).
func (s *Scheduler) UseEventClient(client kubernetes.Interface) { s.events.client = client }

func (s *Scheduler) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Ready reports whether the informers have synced (what /readyz says).
func (s *Scheduler) Ready() bool { return s.ready.Load() }

// Run starts the informers, waits for them, and runs rounds while this
// replica leads (or always, without leader election) until ctx ends. It
// returns nil on a clean shutdown.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.checkLeaseNamespace(ctx); err != nil {
		return err
	}
	s.events.Start(ctx)
	defer s.events.Stop()
	if s.dcgm != nil {
		// Every replica scrapes: each exports what it saw, and a replica
		// that starts leading has the findings at once.
		go s.dcgm.run(ctx, s.client, s.log)
	}
	s.startFactories(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return ctx.Err()
	}
	s.ready.Store(true)
	s.log.Info("informers synced", "scheduler", s.cfg.SchedulerName, "scheduling", s.cfg.Scheduler, "placement", s.placementName())
	if !s.cfg.LeaderElection.Enabled {
		// It runs rounds as a leader does: dashboards read it as one.
		s.metrics.Leader.Set(1)
		defer s.metrics.Leader.Set(0)
		s.loop(ctx)
		return nil
	}
	le := s.cfg.LeaderElection
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.cfg.Namespace, Name: le.LeaseName},
		Client:     s.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.id},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: le.LeaseName,
		LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration, RetryPeriod: le.RetryPeriod.Duration,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				s.log.Info("leading", "lease", s.cfg.Namespace+"/"+le.LeaseName, "identity", s.id)
				s.metrics.Leader.Set(1)
				s.loop(ctx)
			},
			OnStoppedLeading: func() {
				s.metrics.Leader.Set(0)
				s.log.Info("stopped leading", "identity", s.id)
			},
		},
	})
	if err != nil {
		return err
	}
	// Run returns when leadership is lost or ctx ends; a replica that lost
	// its lease campaigns again rather than binding with a stale view.
	for ctx.Err() == nil {
		elector.Run(ctx)
	}
	return nil
}

// checkLeaseNamespace fails at once, saying what to do, when leader
// election is on and the Lease's namespace does not exist: the elector
// would otherwise retry forever and no round would ever run. A replica
// that may not read namespaces goes on; the elector's own errors then
// tell.
func (s *Scheduler) checkLeaseNamespace(ctx context.Context) error {
	if !s.cfg.LeaderElection.Enabled {
		return nil
	}
	ns := s.cfg.Namespace
	_, err := s.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("leader election needs namespace %q for its Lease %s/%s, and it does not exist: "+
			"create it (kubectl create namespace %s, or kubectl apply -f deploy/namespace.yaml), "+
			"name an existing one in the config's namespace field, or run a single replica with --no-leader-election",
			ns, ns, s.cfg.LeaderElection.LeaseName, ns)
	}
	return nil
}

// loop runs rounds every period (aligned to the wall clock when asked)
// and soon after new pods arrive.
func (s *Scheduler) loop(ctx context.Context) {
	period := s.cfg.Period.Duration
	next := func() time.Time {
		now := time.Now()
		if s.cfg.AlignPeriod {
			return now.Truncate(period).Add(period)
		}
		return now.Add(period)
	}
	defer s.flushLearned()
	// The first round runs at once: it rebuilds state from the pods and
	// completes any gang whose binding a crash cut off.
	s.Round(ctx, time.Now())
	at := next()
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
			if d := s.cfg.ArrivalDelay.Duration; d > 0 && time.Now().Add(d).Before(at) {
				at = time.Now().Add(d)
				timer.Reset(time.Until(at))
			}
		case <-timer.C:
			s.Round(ctx, at)
			at = next()
			timer.Reset(time.Until(at))
		}
	}
}

// Round runs one round: snapshot, order, place, plan, then bind and evict.
func (s *Scheduler) Round(ctx context.Context, start time.Time) {
	t0 := time.Now()
	defer func() { s.metrics.RoundSeconds.Observe(time.Since(t0).Seconds()) }()
	s.roundCount.Add(1)
	elapsed := 0.0
	if !s.lastRound.IsZero() {
		elapsed = start.Sub(s.lastRound).Seconds() * s.cfg.TimeScale
	}
	s.lastRound = start
	s.boundGangs = map[string]bool{}
	now := float64(start.UnixNano())/1e9 - s.jobs.epoch

	nodes, _ := s.nodes.List(labels.Everything())
	ours, _ := s.ours.List(labels.Everything())
	assigned, _ := s.assigned.List(labels.Everything())
	ours = s.applyAssumed(ours)
	var foreign []*corev1.Pod
	for _, p := range assigned {
		if p.Spec.SchedulerName != s.cfg.SchedulerName {
			foreign = append(foreign, p)
		}
	}
	snap, err := buildSnapshot(nodes, ours, foreign, s.models, s.jobGang, s.jobs, s.groups.list()...)
	if err != nil {
		s.log.Error("round: cannot read the cluster", "err", err)
		return
	}
	for _, w := range snap.warnings {
		s.log.Warn(w)
	}
	for _, b := range snap.bad {
		s.wait(b.pod.Namespace+"/pod:"+b.pod.Name, []*corev1.Pod{b.pod}, b.why)
	}
	if snap.cl != nil {
		s.loadScores(snap)
		s.learnRound(ctx, snap, ours, start)
		s.rand.Cluster, s.rand.Scores = snap.cl, s.scores
	}

	// Complete gangs a crash cut off, from their bind-info, before anything
	// else may take their GPUs.
	var order []*workload.Job
	byJob := map[*workload.Job]*gang{}
	for _, g := range snap.gangs {
		switch g.state {
		case gangPartial:
			s.complete(ctx, snap, g)
		case gangWaiting:
			s.wait(g.key, g.pending, g.why)
		case gangQueued, gangRunning:
			j := g.job
			if snap.cl == nil || (g.state == gangRunning && len(g.gpus) != j.GPUs) {
				continue // its node left the cluster: not placeable until it ends
			}
			j.MoveCost = s.jobs.cost
			if g.state == gangRunning {
				j.GPUsHeld = g.gpus
				// Its progress over the last period, as the simulator
				// credits a round: a migration-aware placement weighs a
				// move's gain against the work that is left.
				if j.IterTime > 0 && elapsed > 0 {
					j.PM, j.Loc = s.slowdown(snap, j, g.gpus), 1
					j.Progress(elapsed)
				}
				j.Attained += elapsed
				j.GPUService += elapsed * float64(j.GPUs)
				j.SinceScheduled = 0
				if j.FirstStart < 0 {
					j.FirstStart = now
				}
				if len(g.barePods()) > 0 {
					if !s.cfg.PreemptBarePods && s.ten == nil {
						// Nothing would recreate its pods: it keeps its
						// GPUs until it ends, and the placer does not
						// see them (as another scheduler's pods).
						continue
					}
					// It may be preempted, never migrated: act refuses
					// a move that a placement still makes.
					j.MoveCost.Migration = neverMoves
				}
			} else {
				j.GPUsHeld = nil
				j.SinceScheduled += elapsed
				if g := s.cfg.StarvationGuard.Seconds(); g > 0 && j.SinceScheduled >= g {
					j.Priority = 1
				}
			}
			order = append(order, j)
			byJob[j] = g
		}
	}
	s.jobs.sweep()
	live := map[string]bool{}
	boundPods := 0
	for _, g := range snap.gangs {
		live[g.key] = true
		for _, p := range g.bound {
			if !isTerminal(p) {
				boundPods++
			}
		}
	}
	for _, b := range snap.bad {
		live[b.pod.Namespace+"/pod:"+b.pod.Name] = true
	}
	for k := range s.lastWhy {
		if !live[k] {
			delete(s.lastWhy, k)
		}
	}
	s.metrics.BoundNow.Set(float64(boundPods))

	if s.ten != nil {
		order = s.tenancyOrder(snap, order, byJob)
	}
	pending, inUse := 0, 0
	if len(order) > 0 || s.runsEmpty(snap) {
		// Ties in the policies' keys keep this order (stable sorts), as
		// arrival order is kept in the simulator.
		slices.SortStableFunc(order, func(a, b *workload.Job) int {
			if a.Submit != b.Submit {
				return cmpFloat(a.Submit, b.Submit)
			}
			return strings.Compare(byJob[a].key, byJob[b].key)
		})
		order = s.pol.sched.Order(now, order)
		var alloc [][]int
		if s.ten != nil && s.th != nil {
			alloc = s.th.placeInVCs(s, snap, order, byJob, start)
		} else if s.ten != nil {
			alloc = s.ten.place(&s.rand, snap, order, viewPlacer{s, snap})
		} else if s.th != nil {
			alloc = s.th.place(s, snap, order, byJob, start)
		} else {
			alloc = s.place(snap, order)
		}
		decisions, err := round.Plan(snap.cl, order, alloc)
		if err != nil {
			s.log.Error("round: placer answer rejected; nothing bound this round", "placer", s.pol.place.Name(), "err", err)
			return
		}
		s.act(ctx, snap, byJob, order, decisions, start)
		for i, j := range order {
			if alloc[i] == nil {
				pending++
				g := byJob[j]
				s.wait(g.key, g.pending, fmt.Sprintf("gang of %d pods (%d GPUs) waits at queue position %d under %s/%s: %d GPUs free",
					g.spec.size, j.GPUs, i+1, s.pol.sched.Name(), s.pol.place.Name(), snap.cl.FreeCount()))
			}
		}
	}
	if snap.cl != nil {
		inUse = snap.cl.Size() - snap.cl.FreeCount()
	}
	s.writeGroupStatus(ctx, snap, s.boundGangs)
	s.metrics.PendingGangs.Set(float64(pending))
	s.metrics.GPUsInUse.Set(float64(inUse))
	s.metrics.MeanScore.Set(s.meanScore(snap, order))
}

// place runs the placer on the GPUs it may hand out. Placers take every
// GPU not held by a job in the order as free (in the simulator every
// GPU belongs to such a job), so GPUs of other schedulers' pods, of
// leaving gangs and of partly bound gangs are cut out of the cluster the
// placer sees: it gets a view without them (same bins and L×V order, GPU
// ids renumbered), and its answer is mapped back. With nothing to cut
// out the view is the cluster itself.
func (s *Scheduler) place(snap *snapshot, order []*workload.Job) [][]int {
	inOrder := make(map[int]bool, len(order))
	for _, j := range order {
		inOrder[j.ID] = true
	}
	cl := snap.cl
	toView := make([]int, cl.Size())
	var toReal []int
	var sizes []int
	var names []string
	for n, nd := range cl.Nodes {
		k := 0
		for _, g := range nd.GPUs {
			if o := cl.Owner(g); o != cluster.Free && !inOrder[o] {
				toView[g] = -1
				continue
			}
			toView[g] = len(toReal)
			toReal = append(toReal, g)
			k++
		}
		if k > 0 {
			sizes = append(sizes, k)
			names = append(names, cl.Nodes[n].Name)
		}
	}
	if len(toReal) == cl.Size() {
		return s.pol.place.Place(&s.rand, order)
	}
	if len(toReal) == 0 {
		return make([][]int, len(order))
	}
	view, err := cluster.NewSized(sizes)
	if err != nil {
		s.log.Error("round: building the placer's view", "err", err)
		return make([][]int, len(order))
	}
	for i := range view.Nodes {
		view.Nodes[i].Name = names[i]
	}
	env := policy.Env{Cluster: view, Rand: s.rand.Rand}
	if s.scores != nil {
		sc := &policy.Scores{LV: s.scores.LV}
		for c := range sc.SF {
			sc.SF[c] = make([]float64, len(toReal))
			for v, g := range toReal {
				sc.SF[c][v] = s.scores.SF[c][g]
			}
		}
		env.Scores = sc
	}
	held := make([][]int, len(order))
	for i, j := range order {
		if j.GPUsHeld == nil {
			continue
		}
		held[i] = j.GPUsHeld
		v := make([]int, len(j.GPUsHeld))
		for k, g := range j.GPUsHeld {
			v[k] = toView[g]
		}
		_ = view.Assign(j.ID, v)
		j.GPUsHeld = v
	}
	alloc := s.pol.place.Place(&env, order)
	for i, j := range order {
		if held[i] != nil {
			j.GPUsHeld = held[i]
		}
		if alloc[i] == nil {
			continue
		}
		// toReal is increasing, so an ascending view list maps to an
		// ascending real one.
		r := make([]int, len(alloc[i]))
		for k, v := range alloc[i] {
			r[k] = toReal[v]
		}
		alloc[i] = r
	}
	return alloc
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// act binds launched gangs and evicts preempted or migrated ones. A move
// that would evict a bare pod it may not evict (see movable) is refused:
// the gang keeps its GPUs, and a launch or migration onto them waits.
func (s *Scheduler) act(ctx context.Context, snap *snapshot, byJob map[*workload.Job]*gang, order []*workload.Job, ds []round.Decision, start time.Time) {
	type bind struct {
		pod  *corev1.Pod
		node string
		ann  map[string]string
		g    *gang
	}
	var binds []bind
	byID := make(map[int]*gang, len(snap.gangs))
	for _, g := range snap.gangs {
		if g.job != nil {
			byID[g.job.ID] = g
		}
	}
	pos := make(map[int]int, len(order))
	for i, j := range order {
		pos[j.ID] = i
	}
	// GPUs of gangs that keep them against the plan, by who keeps them.
	kept := map[int]string{}
	refused := map[int]bool{}
	for changed := true; changed; {
		changed = false
		for i, d := range ds {
			if refused[i] || (d.Kind != round.Preempt && d.Kind != round.Migrate) {
				continue
			}
			g := byJob[d.Job]
			var why string
			if !s.movable(g, d.Kind) {
				verb := "migrate"
				if d.Kind == round.Preempt {
					verb = "preempt (preemptBarePods is off)"
				}
				why = fmt.Sprintf("kept on %s: the %s placement would %s it, but its bare pods %s would be deleted and nothing would recreate them",
					snap.devices(d.From), s.pol.place.Name(), verb, strings.Join(g.barePods(), ", "))
			} else if d.Kind == round.Migrate {
				for _, x := range d.To {
					if k := kept[x]; k != "" {
						why = fmt.Sprintf("kept on %s: the %s placement would migrate it to %s, which %s keeps", snap.devices(d.From), s.pol.place.Name(), snap.devices(d.To), k)
						break
					}
				}
			}
			if why == "" {
				continue
			}
			refused[i], changed = true, true
			for _, x := range d.From {
				kept[x] = gangName(g.key)
			}
			s.note(g, why)
		}
	}
	// GPUs of gangs evicted this round stay busy until their pods are
	// gone; a launch onto them waits for a later round (the kubelet would
	// otherwise see two pods on one device).
	vacating := map[int]string{}
	for i, d := range ds {
		if refused[i] || (d.Kind != round.Preempt && d.Kind != round.Migrate) {
			continue
		}
		g := byJob[d.Job]
		s.evict(ctx, g, s.reason(snap, d, byID, pos))
		// The restart costs what the placement weighed (lost progress,
		// paid once the gang runs again), as in pal sim --moves
		// evict-relaunch.
		if d.Kind == round.Migrate {
			d.Job.Debt += d.Job.MoveCost.Migration
		} else {
			d.Job.Debt += d.Job.MoveCost.Preemption
		}
		for _, x := range d.From {
			vacating[x] = gangName(g.key)
		}
	}
	// A launch onto GPUs that are kept or still being vacated waits.
	for _, d := range ds {
		if d.Kind != round.Launch {
			continue
		}
		var busy []int
		var holders []string
		for _, x := range d.To {
			h := kept[x]
			if h == "" {
				h = vacating[x]
			}
			if h != "" {
				busy = append(busy, x)
				if !slices.Contains(holders, h) {
					holders = append(holders, h)
				}
			}
		}
		if len(busy) > 0 {
			g := byJob[d.Job]
			slices.Sort(holders)
			s.wait(g.key, g.pending, fmt.Sprintf("placed on %s, which %s still hold(s); binds once they are free", snap.devices(busy), strings.Join(holders, ", ")))
		}
	}
	for _, d := range ds {
		g := byJob[d.Job]
		switch d.Kind {
		case round.Launch:
			if slices.ContainsFunc(d.To, func(x int) bool { return vacating[x] != "" || kept[x] != "" }) {
				continue // told above
			}
			parts := snap.split(g, d.To)
			if parts == nil {
				// The placer's set does not split into whole pods per node;
				// pack by node instead from what is left free.
				if err := snap.cl.Release(d.Job.ID, d.To); err != nil {
					s.log.Error("round: release", "err", err)
					continue
				}
				alt := snap.packByNode(g)
				if alt == nil || snap.cl.Assign(d.Job.ID, alt) != nil {
					s.wait(g.key, g.pending, fmt.Sprintf("the %s set %v does not split into pods of %d GPUs per node, and no node-packed set is free", s.pol.place.Name(), d.To, g.spec.gpus))
					continue
				}
				s.log.Info("placer's GPU set does not split into pods; packed by node", "gang", g.key, "placer_set", d.To, "used", alt)
				d.To = alt
				parts = snap.split(g, alt)
			}
			info := BindInfo{Gang: g.key, Round: start.UTC().Format(time.RFC3339Nano), Pods: map[string]PodBind{}}
			for i, p := range g.pending {
				info.Pods[p.Name] = parts[i]
			}
			raw := mustJSON(info)
			slow := s.slowdown(snap, d.Job, d.To)
			for i, p := range g.pending {
				binds = append(binds, bind{pod: p, node: parts[i].Node, g: g, ann: s.th.annotate(g.key, map[string]string{
					AnnGPUIndices: FormatIndices(parts[i].GPUs), AnnBindInfo: raw, AnnSlowdown: fmtFloat(slow),
				})})
			}
			delete(s.lastWhy, g.key)
		}
	}
	// Bind concurrently: the apiserver, not this loop, should set the pace.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := make([]bool, len(binds))
	work := make(chan int)
	for range min(s.cfg.BindWorkers, len(binds)) {
		wg.Go(func() {
			for i := range work {
				b := binds[i]
				r := s.bindPod(ctx, b.pod, b.node, b.ann, b.g.key)
				mu.Lock()
				ok[i] = r
				mu.Unlock()
			}
		})
	}
	for i := range binds {
		work <- i
	}
	close(work)
	wg.Wait()
	// One line per gang bound, in launch order.
	for i := 0; i < len(binds); {
		g := binds[i].g
		j := i
		var parts []PodBind
		failed := 0
		for ; j < len(binds) && binds[j].g == g; j++ {
			if !ok[j] {
				failed++
				continue
			}
			idx, _ := ParseIndices(binds[j].ann[AnnGPUIndices])
			parts = append(parts, PodBind{Node: binds[j].node, GPUs: idx})
		}
		s.logGangBound(g, parts, failed)
		if failed == 0 {
			s.boundGangs[g.key] = true
		}
		i = j
	}
}

// bindPod posts one Binding carrying the annotations.
func (s *Scheduler) bindPod(ctx context.Context, p *corev1.Pod, node string, ann map[string]string, gangKey string) bool {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Annotations: ann},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	err := s.client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	if err != nil {
		s.log.Warn("bind failed", "pod", p.Namespace+"/"+p.Name, "node", node, "err", err)
		return false
	}
	s.remember(p.UID, assumption{node: node, annots: ann})
	s.metrics.BoundPods.Inc()
	s.metrics.BoundNow.Inc() // bound now, not at the next round's count
	s.log.Debug("bound", "pod", p.Namespace+"/"+p.Name, "node", node, "gpus", ann[AnnGPUIndices], "gang", gangKey)
	s.events.post(podRef(p), corev1.EventTypeNormal, ReasonScheduled, "Binding", s.scheduledMessage(node, ann[AnnGPUIndices], gangKey))
	if n := s.binds.Add(1); s.killAfter > 0 && n == s.killAfter {
		s.log.Warn("test hook: killing myself after bind", "binds", n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return true
}

// complete binds the missing members of a gang whose binding a crash cut
// off, as its bind-info recorded. Recorded slots whose pod is gone go to
// the gang's unbound pods in name order. If the record cannot be
// followed (no bind-info, or a slot's devices are taken), the bound
// members are evicted so the whole gang queues again.
func (s *Scheduler) complete(ctx context.Context, snap *snapshot, g *gang) {
	var info *BindInfo
	for _, p := range g.bound {
		if bi, err := ParseBindInfo(p.Annotations[AnnBindInfo]); err == nil && bi.Gang == g.key {
			info = bi
			break
		}
	}
	if info == nil || len(info.Pods) != g.spec.size {
		s.evictPartial(ctx, g, "partly bound without a usable "+AnnBindInfo+" for all its pods")
		return
	}
	raw := mustJSON(info)
	used := map[string]bool{}
	for _, p := range g.bound {
		used[p.Name] = true
	}
	for _, n := range g.finished {
		used[n] = true
	}
	var free []string // recorded slots of members that vanished (deleted, to be recreated)
	for name := range info.Pods {
		if !used[name] {
			free = append(free, name)
		}
	}
	slices.Sort(free)
	var todo []*corev1.Pod
	var slots []PodBind
	var rest []*corev1.Pod
	for _, p := range g.pending {
		if pb, ok := info.Pods[p.Name]; ok {
			todo, slots = append(todo, p), append(slots, pb)
			free = slices.DeleteFunc(free, func(n string) bool { return n == p.Name })
		} else {
			rest = append(rest, p)
		}
	}
	for i, p := range rest {
		if i < len(free) {
			todo, slots = append(todo, p), append(slots, info.Pods[free[i]])
		}
	}
	if len(todo) == 0 {
		s.wait(g.key, nil, fmt.Sprintf("gang partly bound (%d of %d): waits for its missing pods to be recreated", len(g.bound), g.spec.size))
		return
	}
	for i := range todo {
		n, ok := snap.nodeIndex[slots[i].Node]
		if !ok {
			s.evictPartial(ctx, g, "partly bound, and its recorded node "+slots[i].Node+" is gone")
			return
		}
		glob := make([]int, len(slots[i].GPUs))
		for k, x := range slots[i].GPUs {
			glob[k] = snap.first[n] + x
		}
		if err := snap.cl.Assign(g.job.ID, glob); err != nil {
			s.evictPartial(ctx, g, "partly bound, and its recorded devices "+slots[i].Node+" GPUs "+FormatIndices(slots[i].GPUs)+" are taken")
			return
		}
	}
	s.log.Info("completing a gang cut off by a crash", "gang", g.key, "bound", len(g.bound), "binding", len(todo))
	for i, p := range todo {
		ann := map[string]string{AnnGPUIndices: FormatIndices(slots[i].GPUs), AnnBindInfo: raw}
		if v := g.bound[0].Annotations[AnnSlowdown]; v != "" {
			ann[AnnSlowdown] = v
		}
		s.bindPod(ctx, p, slots[i].Node, ann, g.key)
	}
}

// evictPartial evicts the bound members of a gang that a crash cut off
// and that cannot be completed, so that the whole gang queues again once
// its controller recreates them. Bare pods would be lost, so a gang with
// one is evicted only under preemptBarePods; otherwise it waits, saying
// what to do.
func (s *Scheduler) evictPartial(ctx context.Context, g *gang, why string) {
	if bare := g.barePods(); len(bare) > 0 && !s.cfg.PreemptBarePods {
		s.wait(g.key, g.pending, fmt.Sprintf("%s %s; its bare pods %s are not evicted, since nothing would recreate them: delete them to queue the gang again",
			gangName(g.key), why, strings.Join(bare, ", ")))
		return
	}
	s.evict(ctx, g, gangName(g.key)+" "+why+"; evicting its bound pods to queue it again whole")
}

// evict evicts every bound member of a gang through the Eviction API; the
// pods' controller recreates them and they queue again. Callers check
// that the gang may be evicted (movable, evictPartial).
func (s *Scheduler) evict(ctx context.Context, g *gang, why string) {
	var names []string
	for _, p := range g.bound {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	s.log.Info("evicting gang", "gang", gangName(g.key), "pods", strings.Join(names, ","), "why", why)
	s.learnEvicted(g.key)
	s.markDisrupted(ctx, g, why)
	for _, p := range g.bound {
		if p.DeletionTimestamp != nil || isTerminal(p) {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		err := s.client.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		if err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("eviction failed", "pod", p.Namespace+"/"+p.Name, "err", err)
			continue
		}
		s.remember(p.UID, assumption{evicted: true})
		s.metrics.Evictions.Inc()
		s.events.post(podRef(p), corev1.EventTypeNormal, ReasonPreempted, "Evicting", fmt.Sprintf("Evicted by %s: %s", s.cfg.SchedulerName, why))
	}
}

// wait tells a waiting gang's pods why, once per distinct reason.
func (s *Scheduler) wait(key string, pods []*corev1.Pod, why string) {
	if s.lastWhy[key] == why {
		return
	}
	s.lastWhy[key] = why
	for _, p := range pods {
		s.events.post(podRef(p), corev1.EventTypeWarning, ReasonFailedScheduling, "Scheduling", why)
	}
	s.log.Info("waiting", "gang", gangName(key), "why", why)
}

// note tells a running gang's pods that a move was refused, once per
// distinct reason.
func (s *Scheduler) note(g *gang, why string) {
	if s.lastWhy[g.key] == why {
		return
	}
	s.lastWhy[g.key] = why
	for _, p := range g.bound {
		s.events.post(podRef(p), corev1.EventTypeNormal, ReasonKept, "Keeping", why)
	}
	s.log.Info("move refused", "gang", gangName(g.key), "why", why)
}

var assumeMu sync.Mutex

func (s *Scheduler) remember(uid types.UID, a assumption) {
	assumeMu.Lock()
	s.assumed[uid] = a
	assumeMu.Unlock()
}

// applyAssumed overlays binds and evictions the informers have not shown
// yet, so that a round never hands out GPUs a previous round just bound.
func (s *Scheduler) applyAssumed(pods []*corev1.Pod) []*corev1.Pod {
	assumeMu.Lock()
	defer assumeMu.Unlock()
	live := make(map[types.UID]bool, len(s.assumed))
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		a, ok := s.assumed[p.UID]
		if !ok {
			out = append(out, p)
			continue
		}
		switch {
		case a.evicted && p.DeletionTimestamp == nil:
			q := p.DeepCopy()
			q.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			out = append(out, q)
			live[p.UID] = true
		case !a.evicted && p.Spec.NodeName == "":
			q := p.DeepCopy()
			q.Spec.NodeName = a.node
			if q.Annotations == nil {
				q.Annotations = map[string]string{}
			}
			for k, v := range a.annots {
				q.Annotations[k] = v
			}
			out = append(out, q)
			live[p.UID] = true
		default:
			out = append(out, p)
		}
	}
	for uid := range s.assumed {
		if !live[uid] {
			delete(s.assumed, uid)
		}
	}
	return out
}

// jobGang reads the gang of a batch/v1 Job's pod: the Job's parallelism.
func (s *Scheduler) jobGang(p *corev1.Pod) (string, int) {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "Job" || !strings.HasPrefix(ref.APIVersion, "batch/") {
		return "", 0
	}
	j, err := s.batchJobs.Jobs(p.Namespace).Get(ref.Name)
	if err != nil || j.UID != ref.UID {
		return "", 0
	}
	return p.Namespace + "/job:" + ref.Name, parallelism(j)
}

func parallelism(j *batchv1.Job) int {
	if j.Spec.Parallelism == nil {
		return 1
	}
	return int(*j.Spec.Parallelism)
}

// loadScores reads the variability ConfigMap for the round's nodes and
// bins it as the simulator bins a pinned GPU table.
func (s *Scheduler) loadScores(snap *snapshot) {
	var rv string
	var ns NodeScores
	cm, err := s.cms.ConfigMaps(s.cfg.Namespace).Get(s.cfg.VariabilityConfigMap)
	if err == nil {
		rv = cm.ResourceVersion
	}
	key := rv + "|" + strings.Join(snap.nodeNames, ",") + "|" + fmt.Sprint(snap.first)
	if key == s.scoresKey && s.scores != nil {
		return
	}
	src := s.cfg.Namespace + "/" + s.cfg.VariabilityConfigMap
	if cm != nil {
		if ns, err = ReadNodeScores("configmap "+src+" key "+ScoresKey, strings.NewReader(cm.Data[ScoresKey])); err != nil {
			s.log.Error("variability ConfigMap unreadable; every GPU runs at the median", "err", err)
			ns = nil
		}
	}
	tab := &variability.Table{}
	for c := range tab.Values {
		tab.Values[c] = make([]float64, snap.cl.Size())
	}
	missing := map[string][]int{}
	for g := range snap.cl.Size() {
		node, idx := snap.device(g)
		v, ok := ns[GPUKey{node, idx}]
		for c := range tab.Values {
			tab.Values[c][g] = 1
			if ok {
				tab.Values[c][g] = v[c]
			}
		}
		if !ok {
			missing[node] = append(missing[node], idx)
		}
	}
	// One warning for all newly unscored nodes (a cluster without the
	// ConfigMap would otherwise log a line per node); each node's own
	// line is at debug level, and its event stays on the node.
	var untold []string
	unscored := 0
	for _, node := range snap.nodeNames {
		if idx := missing[node]; len(idx) > 0 && !s.told[node] {
			s.told[node] = true
			untold = append(untold, node)
			unscored += len(idx)
			msg := fmt.Sprintf("GPUs %s of node %s have no PM-score in ConfigMap %s; they count as median GPUs", FormatIndices(idx), node, src)
			s.log.Debug(msg)
			s.events.post(nodeRef(node), corev1.EventTypeWarning, ReasonNoPMScore, "Scoring", msg)
		}
	}
	if len(untold) > 0 {
		s.log.Warn(unscoredSummary(untold, unscored, src, cm == nil))
	}
	st, _ := variability.ParseKStrategy(s.cfg.KStrategy)
	vs, err := variability.NewScores(tab, variability.BinOptions{Strategy: st, Seed: s.cfg.Seed},
		func(variability.Class) float64 { return s.cfg.LocalityPenalty })
	if err != nil {
		s.log.Error("binning GPU scores failed; placing without variability", "err", err)
		for c := range tab.Values {
			for g := range tab.Values[c] {
				tab.Values[c][g] = 1
			}
		}
		vs, err = variability.NewScores(tab, variability.BinOptions{Strategy: st, Seed: s.cfg.Seed}, nil)
		if err != nil {
			return
		}
	}
	if s.learn != nil {
		tab, vs = s.learnReset(snap, tab, vs)
	}
	s.scores, s.raw, s.scoresKey = policy.ScoresFrom(vs), tab, key
}

// slowdown is the simulator's slowdown of a job on gpus: its slowest GPU
// times the locality penalty when the GPUs span nodes.
func (s *Scheduler) slowdown(snap *snapshot, j *workload.Job, gpus []int) float64 {
	pm := 1.0
	if s.raw != nil {
		v := s.raw.Values[j.Class]
		pm = v[gpus[0]]
		for _, g := range gpus[1:] {
			pm = math.Max(pm, v[g])
		}
	}
	if snap.cl.SpansNodes(gpus) {
		return pm * s.cfg.LocalityPenalty
	}
	return pm
}

// meanScore is the mean binned PM-score over the GPUs of every placed job
// (lower is faster; 1 when there are no scores).
func (s *Scheduler) meanScore(snap *snapshot, order []*workload.Job) float64 {
	if snap.cl == nil || s.scores == nil {
		return 0
	}
	class := make(map[int]variability.Class, len(order))
	for _, j := range order {
		class[j.ID] = j.Class
	}
	sum, n := 0.0, 0
	for g := range snap.cl.Size() {
		if c, ok := class[snap.cl.Owner(g)]; ok {
			sum += s.scores.SF[c][g]
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
