// Package kube is PAL's Kubernetes driver: a standalone scheduler that
// owns the pods whose spec.schedulerName is its own, and every period runs
// the same round as the simulator (order, placement, round.Plan) on the
// cluster it reads from informers, then binds and evicts pods to make the
// cluster hold the answer.
//
// It is three parts. The state (package kube/state) is kept current from
// the informers' events: each pod is read once per change (package
// kube/podspec says what a pod's annotations mean), and a round takes a
// snapshot of it. The planner (this package) runs the round on the
// snapshot. The binder (package kube/bind) posts the round's Bindings and
// Evictions on workers of its own, so a round never waits on the network;
// until the informers show a bind, the state holds its devices.
//
// The cluster itself is the durable record: every bound pod records its
// devices and its whole gang's placement (and, for a gang backfill
// started, the waiting gang it jumped and that gang's promised start), so
// a restarted scheduler rebuilds everything from the pods before its
// first round.
package kube

import (
	"context"
	"fmt"
	"github.com/palsched/pal/policy/backfill"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerbatchv1 "k8s.io/client-go/listers/batch/v1"
	listercorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube/bind"
	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Scheduler is one replica of `pal-kube scheduler`.
type Scheduler struct {
	// byJob is the round's gangs by job, for the backfill estimate.
	byJob map[*workload.Job]*gang
	// kept are the round's running gangs kept out of its order (their
	// eviction would lose them); backfill's reservation reads their ends.
	// pastBudget are the round's running gangs that preemptPastBudgets
	// put in its order although their budgets refuse their eviction
	// (budgets_past.go).
	pastBudget map[*workload.Job]bool

	kept    []*workload.Job
	keptSet map[*workload.Job]bool
	cfg     Config
	client  kubernetes.Interface
	log     *slog.Logger
	models  *workload.Models
	pol     policies
	sel     selectorGate // keeps the answer off nodes a gang's selector rejects
	rand    policy.Env   // Rand stream persists across rounds, from cfg.Seed
	metrics *Metrics
	id      string // leader-election identity

	factory   informers.SharedInformerFactory
	nsFactory informers.SharedInformerFactory
	ours      listercorev1.PodLister // learning reads every pod of ours, finished ones too
	batchJobs listerbatchv1.JobLister
	tight     tightJobs        // the Jobs an eviction might fail (jobs.go)
	budgets   budgets          // the PodDisruptionBudgets an eviction must keep (budgets.go)
	refusedEv refusedEvictions // evictions the API server refused, backing off (evict_refused.go)
	// roundAt is the current round's start (Unix ns): the binder's
	// goroutines date a refused eviction on the rounds' clock with it.
	roundAt atomic.Int64
	cms     listercorev1.ConfigMapLister
	synced  []cache.InformerSynced

	startFactories func(stop <-chan struct{})

	dyn    dynamic.Interface // nil: scheduler-plugins PodGroups are not read
	groups groupSources

	// groupMu guards what the binder's and the status writers' goroutines
	// report to the round: gangs bound whole and group statuses written.
	groupMu    sync.Mutex
	groupWrote map[string]string // gang -> group status last written
	boundGangs map[string]bool   // gangs bound whole since the last status write
	statusWG   sync.WaitGroup    // status writes in the background
	forbidden  sync.Map          // what -> true: a background annotation write refused Forbidden, said at Error
	roundCtx   context.Context   // the current round's (status writes run under it)

	events *eventPoster

	kick  chan struct{}
	ready atomic.Bool
	api   *apiHealth // whether the apiserver answers (what /readyz adds)
	// probeEvery paces api's probe (0: DefaultAPIProbeEvery).
	probeEvery time.Duration
	// term is held by a term's loop: client-go's elector does not wait
	// for the last term's loop to return before it starts the next.
	term sync.Mutex

	reader  *podspec.Reader
	state   *state.Store
	binder  *bind.Binder
	binding bindBook
	epoch   float64 // Unix seconds that are 0 on the jobs' clock
	cost    workload.MoveCost

	// shardsSeen counts changes the ConfigMap informer saw to shards of
	// the variability ConfigMap (LabelShardOf): a sharded profile is read
	// again when one moves, as when the head changes (loadScores' key).
	shardsSeen atomic.Uint64

	// Round state (only the round goroutine touches it).
	lastWhy map[string]string // gang -> last FailedScheduling message

	warnedThemisPriority bool // pod priority under Themis: said once
	// evictedWork is what was credited to each gang this scheduler
	// evicted, by gang key, until its pods are seen again (resumeEvicted).
	evictedWork map[string]evictedWork
	evicted     evictedStore // evictedWork's ConfigMap
	applied     appliedCells // the cells in force, kept for a restart (cells_watch.go)
	whyGen      uint64       // the state generation lastWhy was last cleaned at
	whyLen      int          // and its size then
	scoresKey   string
	scores      *policy.Scores
	raw         *variability.Table
	told        map[string]bool // nodes already told they run at the median (those with a Node object)
	warned      map[string]bool // state warnings already logged
	lastRound   time.Time
	jobTime     float64 // the rounds' elapsed times, scaled: the clock of the estimates
	plan        planner
	pmGen       uint64             // the plan generation running gangs' slowdowns were set at
	pmRaw       *variability.Table // and the scores
	pure        bool               // the placer's answer depends only on its input (policy.Pure)
	actions     int64              // binds, evictions and set-asides handed out, ever
	faulty      map[string]uint64  // gangs whose planning panicked -> the state generation then

	// restoreBackfill: the next round gives the backfill placer what the
	// running gangs' pods record of the promises an earlier process or
	// leader made (set at a start and at each term's start).
	restoreBackfill bool
	// promising: a batch of writePromises' annotations is under way.
	promising atomic.Bool

	learn *learnStage // nil: learnScores off
	dcgm  *dcgmStage  // nil: no dcgm exporters configured

	ten *tenancyStage // nil: tenancy none
	th  *themisStage  // nil: scheduler is not themis
	fc  forecastStage // forecasts (forecastEvery, WithForecaster)

	binds      atomic.Int64
	killAfter  int64 // test hook: SIGKILL itself after this many binds
	roundCount atomic.Int64
}

// Binds is how many pods this replica has bound.
func (s *Scheduler) Binds() int64 { return s.binds.Load() }

// Rounds is how many rounds this replica has run.
func (s *Scheduler) Rounds() int64 { return s.roundCount.Load() }

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
		epoch:   float64(time.Now().UnixNano()) / 1e9,
		cost:    workload.MoveCost{Migration: cfg.MigrationCost.Seconds()},
		lastWhy: map[string]string{}, evictedWork: map[string]evictedWork{}, told: map[string]bool{}, warned: map[string]bool{},
		groupWrote: map[string]string{}, boundGangs: map[string]bool{}, faulty: map[string]uint64{},
	}
	for _, o := range opts {
		o(s)
	}
	if cfg.LearnScores {
		s.learn = newLearnStage()
	}
	if cfg.DCGM.enabled() {
		s.dcgm = newDCGMStage(cfg.DCGM)
		s.metrics.reg.MustRegister(s.dcgm.collectors()...)
	}
	if m, _ := cfg.backfillMode(); m != backfill.None {
		s.pol.place = backfill.Wrap(s.pol.place, m, s.estimate)
		backfill.Unwrap(s.pol.place).Keep = func(j *workload.Job) bool { return s.keptSet[j] }
		s.restoreBackfill = true
	}
	s.evicted.restore = true
	if p, ok := s.pol.place.(policy.Pure); ok {
		s.pure = p.Pure()
	}
	if cfg.Scheduler == registry.SchedulerThemis {
		s.th = newThemisStage(cfg, models)
		s.pol.place = s.th
		s.pure = false
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
			return nil, fmt.Errorf("%s=%s: want a positive count", KillAfterBindsEnv, quote.Value(v))
		}
		s.killAfter = n
	}
	s.factory = informers.NewSharedInformerFactory(client, 0)
	ours := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", cfg.SchedulerName).String()
	}))
	// Other schedulers' bound pods: ours are read by the informer above.
	assigned := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.schedulerName!=" + cfg.SchedulerName + ",spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
	}))
	s.nsFactory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace))
	ni := s.factory.Core().V1().Nodes()
	ji := s.factory.Batch().V1().Jobs()
	oi := ours.Core().V1().Pods()
	ai := assigned.Core().V1().Pods()
	ci := s.nsFactory.Core().V1().ConfigMaps()
	for _, inf := range []cache.SharedIndexInformer{ni.Informer(), oi.Informer(), ai.Informer(), ji.Informer()} {
		_ = inf.SetTransform(dropManagedFields)
	}
	s.api = newAPIHealth(client, log, s.metrics, s.probeEvery)
	for name, inf := range map[string]cache.SharedIndexInformer{"nodes": ni.Informer(), "pods": oi.Informer(),
		"other-pods": ai.Informer(), "jobs": ji.Informer(), "configmaps": ci.Informer()} {
		if err := inf.SetWatchErrorHandlerWithContext(s.api.watchHandler(name)); err != nil {
			return nil, err
		}
	}
	s.batchJobs, s.ours, s.cms = ji.Lister(), oi.Lister(), ci.Lister()
	// The informer holds every ConfigMap of the namespace, the shards of
	// a sharded profile among them; a change to one of them re-reads the
	// profile (loadScores' key).
	shardOf := func(obj any) bool {
		cm, ok := tombstoned(obj).(*corev1.ConfigMap)
		return ok && cfg.VariabilityConfigMap != "" && cm.Labels[LabelShardOf] == cfg.VariabilityConfigMap
	}
	if _, err := ci.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if shardOf(obj) {
				s.shardsSeen.Add(1)
			}
		},
		UpdateFunc: func(old, obj any) {
			if shardOf(old) || shardOf(obj) {
				s.shardsSeen.Add(1)
			}
		},
		DeleteFunc: func(obj any) {
			if shardOf(obj) {
				s.shardsSeen.Add(1)
			}
		},
	}); err != nil {
		return nil, err
	}
	s.synced = []cache.InformerSynced{ni.Informer().HasSynced, ji.Informer().HasSynced, oi.Informer().HasSynced,
		ai.Informer().HasSynced, ci.Informer().HasSynced}
	startGroups := s.setupGroups()
	s.setupBudgets()
	s.reader = &podspec.Reader{Models: models, Job: s.jobGang, Groups: s.groups.list()}
	s.state = state.New(state.Config{SchedulerName: cfg.SchedulerName, Epoch: s.epoch, Reader: s.reader})
	// A round reads the state only once every handler has seen the
	// informers' first lists: a bound pod the state had not seen yet
	// would leave its GPUs looking free.
	hOurs, hBound, hNodes := s.state.Handlers()
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{{oi.Informer(), hOurs}, {ai.Informer(), hBound}, {ni.Informer(), hNodes}, {ji.Informer(), refHandler(s.state, func(obj any) string {
		if j, ok := obj.(*batchv1.Job); ok {
			return podspec.JobRef(j.Namespace, j.Name)
		}
		return ""
	})}} {
		reg, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, err
		}
		s.synced = append(s.synced, reg.HasSynced)
	}
	reg, err := ji.Informer().AddEventHandler(s.tight.handler())
	if err != nil {
		return nil, err
	}
	s.synced = append(s.synced, reg.HasSynced)
	_, _ = oi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
			s.poke()
		}
	}})
	s.startFactories = func(stop <-chan struct{}) {
		startGroups(stop)
		s.factory.Start(stop)
		ours.Start(stop)
		assigned.Start(stop)
		s.nsFactory.Start(stop)
	}
	s.binder = bind.New(client, cfg.BindWorkers, log, s.bindDone)
	s.events = newEventPoster(client, cfg.SchedulerName, s.metrics)
	s.events.binding = func() bool { return s.binder.Pending() > 0 }
	return s, nil
}

// UseEventClient makes the scheduler post its events through client, a
// client of their own whose rate limits never slow a bind (call it
// before Run; by default events share the scheduler's client).
func (s *Scheduler) UseEventClient(client kubernetes.Interface) { s.events.client = client }

// UseBindClient makes the binder post Bindings and Evictions through
// client, whose rate limits (bindQPS, bindBurst) are the binder's own
// (call it before Run; by default the binder shares the scheduler's
// client).
func (s *Scheduler) UseBindClient(client kubernetes.Interface) {
	s.binder = bind.New(client, s.cfg.BindWorkers, s.log, s.bindDone)
}

// dropManagedFields is the informers' transform: the scheduler never
// reads managedFields, which are often the largest part of an object.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
		m.GetObjectMeta().SetManagedFields(nil)
	}
	return obj, nil
}

// tombstoned is obj, or the object a tombstone carries: a delete that
// the informer saw only by a re-list comes as DeletedFinalStateUnknown.
func tombstoned(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// refHandler notes in the state that an object pods' reading depends on
// (a Job, a PodGroup) changed; ref names it as podspec.Refs does.
func refHandler(st *state.Store, ref func(obj any) string) cache.ResourceEventHandler {
	note := func(obj any) {
		if r := ref(tombstoned(obj)); r != "" {
			st.OnRef(r)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }, DeleteFunc: note}
}

func (s *Scheduler) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Ready reports whether the informers have synced (what /readyz asks
// first; see readiness).
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
	go s.api.run(ctx)
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
		LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration, RetryPeriod: electorPoll(le.RetryPeriod.Duration),
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

// electorPollDivisor is how many of client-go's polls fit in one
// configured retryPeriod. retryPeriod is PAL's promise of how long an
// expired Lease may sit before a standby takes it: client-go stretches
// each wait between polls by up to 2.2 times (jitter 1.2), and a standby
// both sees the last renewal and finds it expired one poll late at worst,
// so handing it the whole retryPeriod would let a takeover come 4.4
// retryPeriods after expiry. At a fifth of it the two late polls add at
// most 0.88 of a retryPeriod. The leader then renews five times per
// retryPeriod: one small Lease update every 400 ms at the defaults.
const electorPollDivisor = 5

// electorPoll is the period client-go's elector polls and renews at.
func electorPoll(retry time.Duration) time.Duration { return retry / electorPollDivisor }

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
	s.term.Lock()
	defer s.term.Unlock()
	period := s.cfg.Period.Duration
	next := func() time.Time {
		now := time.Now()
		if s.cfg.AlignPeriod {
			return NextAlignedRound(now, period)
		}
		return now.Add(period)
	}
	defer s.flushLearned()
	s.binder.Start(ctx)
	s.verifyUnsettled()
	// Another leader may have backfilled gangs since this replica last
	// led: their pods say which heads they jumped.
	s.restoreBackfill = backfill.Unwrap(s.pol.place) != nil
	s.evicted.restore = true
	defer s.flushEvictedWork()
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

// NextAlignedRound is when a scheduler that aligns its rounds to period
// (alignPeriod) runs its first round after now. A forecast taken in
// another process starts there: it cannot see the scheduler's timer, and
// starting at now would put every start off by how far into the period
// it was taken.
func NextAlignedRound(now time.Time, period time.Duration) time.Time {
	return now.Truncate(period).Add(period)
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

// configMap reads a ConfigMap of the scheduler's namespace from the
// informer (the shards of a sharded scores table).
func (s *Scheduler) configMap(name string) (*corev1.ConfigMap, error) {
	return s.cms.ConfigMaps(s.cfg.Namespace).Get(name)
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
	key := rv + "|" + strconv.FormatUint(snap.LayoutGeneration, 10) // the nodes and their numbering
	if cm != nil && cm.Annotations[AnnShards] != "" {
		// Sharded: a change to a shard re-reads it too.
		key += "|" + strconv.FormatUint(s.shardsSeen.Load(), 10)
	}
	if key == s.scoresKey && s.scores != nil {
		return
	}
	src := s.cfg.Namespace + "/" + s.cfg.VariabilityConfigMap
	if cm != nil {
		if ns, err = ReadScoresConfigMap(cm, s.configMap); err != nil {
			s.log.Error("variability ConfigMap unreadable; every GPU runs at the median", "err", err)
			ns = nil
		}
	}
	tab := &variability.Table{}
	for c := range tab.Values {
		tab.Values[c] = make([]float64, snap.Cluster.Size())
	}
	missing := map[string][]int{}
	for g := range snap.Cluster.Size() {
		node, idx := snap.Device(g)
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
	for _, node := range snap.NodeNames {
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
	for node := range s.told {
		if s.state.Node(node) == nil {
			delete(s.told, node) // gone: told does not grow with every name seen
		}
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
	if s.learn != nil {
		s.learn.unmarked = s.scores
		s.scores = s.learn.markQuarantined(s.scores) // quarantine outlives a new binning
	}
}
