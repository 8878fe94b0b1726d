package kube

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
)

// Online PM-scores (learnScores: true). When a gang ends, its run tells
// how fast its GPUs ran it: the time from the start of its last pod to
// the end of its last pod, over pal.io/iterations, is its time per
// iteration; divided by the model's median iteration time and, when the
// gang spans nodes, by the locality penalty, it is the pace y of its
// slowest GPU (1 is the median GPU), exactly what the simulator's
// --learn-scores hands the same estimator (variability.Learner). The
// learner's beliefs become the placement's scores when they move, and are
// kept in a ConfigMap so that a restarted scheduler starts from them.

const (
	// DefaultLearnedScoresConfigMap is where learned beliefs are kept.
	DefaultLearnedScoresConfigMap = "pal-learned-scores"
	// DefaultLearnedScoresWriteInterval throttles the ConfigMap writes:
	// beliefs move with every gang that ends, the ConfigMap at most this
	// often (and once more at shutdown).
	DefaultLearnedScoresWriteInterval = 30 * time.Second
	// DefaultLearnForgetAfter is how long a node may be absent from the
	// cluster (no Node object) before what was learned of it is dropped:
	// a week outlasts a reboot, a repair or an RMA round trip over a
	// weekend, and still bounds the learned ConfigMap and /metrics of a
	// cluster whose autoscaler names nodes after their addresses to the
	// nodes of the last week.
	DefaultLearnForgetAfter = 7 * 24 * time.Hour
	// learnedWriteTimeout bounds one write of the learned ConfigMap
	// (its reads and retries on a conflict included); one that fails is
	// tried again at the next interval.
	learnedWriteTimeout = 30 * time.Second

	// AnnLearnedThrough, on the learned ConfigMap, is the end of the last
	// gang run its beliefs include (RFC 3339): a restarted scheduler does
	// not count the runs up to it again.
	AnnLearnedThrough = "pal.io/learned-through"
	// AnnLearnedObservations, on the learned ConfigMap, is how many gang
	// runs its beliefs were learned from (all replicas and restarts).
	AnnLearnedObservations = "pal.io/learned-observations"

	// AnnProgress is what a running pod may report of its run:
	// "ITERATIONS@TIME", the iterations this run has done by TIME (RFC
	// 3339), counted from the pod's start (not a global step restored
	// from a checkpoint). With learnScores on, each newer report of a
	// running gang is an observation, as its end is.
	AnnProgress = "pal.io/progress"

	// AnnStepTime is what a running pod may report of its own GPUs:
	// "SECONDS@TIME", its own compute time per iteration (the step
	// without the wait for the other workers at the all-reduce) as
	// measured by TIME (RFC 3339). A gang's pace is its slowest GPU's,
	// and which GPU that is the pace does not say; a pod's own step time
	// is its own GPUs' alone, so each newer report is an observation of
	// those GPUs (of one GPU: it pins it), with no locality penalty (the
	// step leaves the communication out). It is what `pal sim
	// --learn-from gpu` simulates.
	AnnStepTime = "pal.io/step-time"

	// ReasonLearnedScoresUnreadable is the warning event on a learned
	// ConfigMap the scheduler cannot read (it starts from the profile).
	ReasonLearnedScoresUnreadable = "LearnedScoresUnreadable"
	// ReasonLearnReportRejected is the warning event on a pod whose run
	// or report the learner was not given (see MaxReportedPace), once per
	// pod.
	ReasonLearnReportRejected = "LearnReportRejected"
)

// What workers report can be wrong, and one wrong report would move a
// belief (a fast one bounds every GPU of its gang from above): a step
// time in milliseconds, a pal.io/iterations that counts the global step
// of a run restarted from a checkpoint, a job stalled on its input, a
// worker's clock far ahead. Three checks keep such reports from the
// learner; each one refused is logged, counted in
// pal_learned_reports_rejected_total and posted once as a warning event
// on its pod.
const (
	// MaxReportedPace bounds what one observation may say of a GPU: a
	// pace more than this many times the model's median iteration time,
	// or less than its inverse, is not a GPU of the model's cluster
	// (the largest iso-architecture spread the PAL paper cites is 3.5x;
	// a step time in milliseconds is 1000x off).
	MaxReportedPace = 10.0
	// StepTimeSlack: a pod's step time leaves out the wait at the
	// all-reduce, so it is at most its gang's time per iteration. That is
	// known from the gang's freshest progress report, averaged since its
	// last pod started, and lags a GPU that slowed since; a step time up
	// to this many times it is taken (a GPU that halves its speed mid-run
	// is refused only until the average catches up).
	StepTimeSlack = 1.5
	// MaxReportAhead: a report is dated by its worker's clock, and one
	// dated more than this after the round's time is a clock or
	// reporting error, not a measurement. Taken, its date would become
	// the learned ConfigMap's pal.io/learned-through, and a restarted
	// scheduler would count every run up to it as already learned. The
	// allowance covers a round that runs a little after its time and
	// clocks that drift apart.
	MaxReportAhead = time.Minute
)

// Sources and reasons of a refused report (the labels of
// pal_learned_reports_rejected_total).
const (
	sourceRun      = "run"      // a finished run, timed over pal.io/iterations
	sourceProgress = "progress" // pal.io/progress
	sourceStepTime = "step-time"
	rejectPace     = "implausible_pace"
	rejectGang     = "slower_than_gang"
	rejectAhead    = "dated_ahead"
)

// validateLearn checks the learning fields.
func (c *Config) validateLearn() error {
	if err := c.validateQuarantine(); err != nil {
		return err
	}
	if !c.LearnScores {
		return nil
	}
	switch {
	case c.LearnedScoresConfigMap == "":
		return fmt.Errorf("field learnedScoresConfigMap: must not be empty with learnScores: true")
	case c.LearnedScoresConfigMap == c.VariabilityConfigMap:
		return fmt.Errorf("field learnedScoresConfigMap: %s is the variabilityConfigMap; the scheduler would overwrite the profile it was given", quote.Value(c.LearnedScoresConfigMap))
	case c.LearnedScoresWriteInterval.Duration < 0:
		return fmt.Errorf("field learnedScoresWriteInterval: must be >= 0, got %v", c.LearnedScoresWriteInterval)
	case c.LearnForgetAfter.Duration < 0:
		return fmt.Errorf("field learnForgetAfter: must be >= 0 (0: never forget), got %v", c.LearnForgetAfter)
	}
	return nil
}

// learnStage is the round goroutine's learning state (nil: learning off).
type learnStage struct {
	learner *variability.Learner
	keys    []GPUKey // the learner's GPU numbering: the snapshot's when it was made
	// known are the beliefs by device: read from the ConfigMap at start,
	// then the learner's, kept for devices whose node left: a node that
	// comes back (a reboot, a repair, a drain and delete) keeps what was
	// learned of it, until it has been absent for learnForgetAfter
	// (learn_forget.go).
	known   NodeScores
	loaded  bool
	loadErr error
	// done marks finished pods whose run was taken (or could not be),
	// evicted the gangs this replica evicted: their next run restarts from
	// a checkpoint and does fewer than pal.io/iterations iterations, so it
	// is not a measurement of them.
	done    map[types.UID]bool
	evicted map[string]time.Time // when
	// through is the end of the last run learned (what the ConfigMap
	// says), loadedThrough what it said at start: runs that ended by then
	// were counted by the replica before (a run whose end is seen a round
	// late is still counted while this replica runs). count is how many
	// observations the beliefs stand on; dirty says the ConfigMap is
	// behind.
	through       time.Time
	loadedThrough time.Time
	count         int
	dirty         bool
	lastWrite     time.Time
	// write is the ConfigMap write in flight (nil: none): a round hands
	// it what to write and goes on, and a later round reads its outcome
	// (settleWrite). One at a time, so an older content never lands over
	// a newer one.
	write *learnedWrite
	// progressAt is the time of the last progress report learned from,
	// by run (gang key @ bind round).
	progressAt map[string]time.Time
	// trialed are the runs (gang key @ bind round) already counted towards
	// the learner's prevalence estimate (Learner.ObserveTrial), by an
	// earlier progress report, and the pace each is counted at: a run is
	// one trial however often it reports, counted at its latest pace
	// (Learner.RecountTrial). A run leaves it when its end is learned
	// from, or when no pod of it runs or has succeeded any more.
	trialed map[string]float64
	// stepAt is the time of the last step-time report learned from, by
	// pod run (pod key @ bind round).
	stepAt map[string]time.Time
	// hints are the slowdowns last handed to the learner by GPU (absent:
	// 1), from DCGM scrape hintGen, for learner hintFor (see learnHints);
	// hintWarned says the Hostname mismatch was logged.
	hints      map[int]float64
	hintGen    uint64
	hintFor    *variability.Learner
	hintWarned bool
	// warned are the pods that got a ReasonLearnReportRejected event
	// (one each), by UID.
	warned map[types.UID]bool
	// observed are the last round's observations (logs, tests), and
	// rejected the reports refused in it.
	observed []observation
	rejected []rejection
	// moved are the GPUs whose beliefs changed since the last syncKnown
	// (Learner.TakeMoved), gaugeDirty those whose gauges are behind, and
	// gauges the gauges' handles: a round copies and sets only what moved,
	// which at 27,648 GPUs is the difference between tens of milliseconds
	// a round and microseconds (BenchmarkLearnBookkeeping27648). knownFor
	// and gaugeFor are the learner known and the gauges were last filled
	// from in full.
	moved, gaugeDirty  []int
	gauges             [][variability.NumClasses]prometheus.Gauge
	knownFor, gaugeFor *variability.Learner
	// profile is what a slowdown is measured against, quarantined the
	// GPUs in quarantine and why, and unmarked the learner's scores
	// before quarantine marked them (quarantine.go).
	profile     *variability.Table
	quarantined map[GPUKey]quarantineEntry
	unmarked    *policy.Scores
	// restored is the quarantine the learned ConfigMap recorded when
	// this replica started (loadLearned): a GPU DCGM put in keeps its
	// slowdown while DCGM still flags it idle, as carryPriors keeps it
	// within one replica, and one that goes back in keeps its date.
	restored map[GPUKey]quarantineEntry
	// qFor is the learner every GPU was last checked against in full,
	// and qgen counts the quarantine's changes (the tenancy stage
	// follows them).
	qFor *variability.Learner
	qgen uint64
	// absent are the nodes the state above names that have no Node
	// object, by when they were first found so (forgetAbsent; read from
	// AnnAbsentSince at start), and sweptLayout and sweptAt the layout
	// generation and time of the last sweep.
	absent      map[string]time.Time
	sweptLayout uint64
	sweptAt     time.Time
	// ids are the nodes' hardware identities by name (nodeIdentity; read
	// from AnnNodeIDs at start, then as the nodes are found), and idGen
	// the store's NodeInfoGeneration they were last checked at
	// (learnNodeIDs).
	ids   map[string]string
	idGen uint64
}

func newLearnStage() *learnStage {
	return &learnStage{known: NodeScores{}, quarantined: map[GPUKey]quarantineEntry{}, done: map[types.UID]bool{}, evicted: map[string]time.Time{}, progressAt: map[string]time.Time{}, trialed: map[string]float64{}, stepAt: map[string]time.Time{}, warned: map[types.UID]bool{}, absent: map[string]time.Time{}, ids: map[string]string{}}
}

// rejection is a report the learner was not given.
type rejection struct {
	Pod, Source, Reason string
	Y                   float64 // the pace it would have given (0: none, dated_ahead)
}

// observation is one finished gang run as the learner receives it.
type observation struct {
	Gang       string
	Class      variability.Class
	GPUs       []int // global ids, ascending
	Start, End time.Time
	Run        float64 // job seconds from Start to End (wall x timeScale)
	Iterations float64
	IterTime   float64 // the model's median seconds per iteration
	Locality   float64 // 1, or the penalty when the gang spans nodes
	Y          float64 // Run / Iterations / IterTime / Locality
}

// learnMetrics are what learning exports.
type learnMetrics struct {
	observations prometheus.Counter
	updates      prometheus.Counter
	score        *prometheus.GaugeVec
	writes       *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	quarantined  *prometheus.GaugeVec
	prevalence   prometheus.Gauge
}

func newLearnMetrics() (*learnMetrics, []prometheus.Collector) {
	m := &learnMetrics{
		observations: prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_learned_observations_total",
			Help: "Finished gang runs the PM-score learner took (learnScores: true)."}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_learned_score_updates_total",
			Help: "Times learning gave placement new binned PM-scores."}),
		score: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pal_learned_score",
			Help: "Believed PM value of each GPU and class (1 is the median GPU; higher is slower)."}, []string{"node", "gpu", "class"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_learned_scores_writes_total",
			Help: "Writes of the learned-scores ConfigMap, by result (ok, error)."}, []string{"result"}),
	}
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_learned_reports_rejected_total",
		Help: "Gang runs and worker reports the PM-score learner refused, by source (run, progress, step-time) and reason (implausible_pace, slower_than_gang, dated_ahead)."},
		[]string{"source", "reason"})
	m.quarantined = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pal_gpu_quarantined",
		Help: "1 while a GPU is quarantined (quarantineAbove: its believed slowdown reached the threshold), 0 once it is back."}, []string{"node", "gpu"})
	m.prevalence = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_learned_prevalence",
		Help: "Share of GPUs the learner estimates run slower than their prior, from the gang runs of at most 8 GPUs it counted since it started; a slow gang's suspects beyond the first are raised by it (blame by prevalence). 0 until a counted run was slower than every one of its GPUs' priors."})
	m.writes.WithLabelValues("ok")
	m.writes.WithLabelValues("error")
	for _, src := range []string{sourceRun, sourceProgress, sourceStepTime} {
		m.rejected.WithLabelValues(src, rejectPace)
	}
	for _, src := range []string{sourceRun, sourceProgress, sourceStepTime} {
		m.rejected.WithLabelValues(src, rejectAhead)
	}
	m.rejected.WithLabelValues(sourceStepTime, rejectGang)
	return m, []prometheus.Collector{m.observations, m.updates, m.score, m.writes, m.rejected, m.quarantined, m.prevalence}
}

func (s *Scheduler) learnedSource() string {
	return s.cfg.Namespace + "/" + s.cfg.LearnedScoresConfigMap
}

// learnReset makes a learner for the round's GPU numbering, from tab (the
// profile) with what was learned of each device laid over it, and returns
// the believed table and its scores. loadScores calls it whenever it bins
// anew (the profile or the node set changed).
func (s *Scheduler) learnReset(snap *snapshot, tab *variability.Table, vs *variability.Scores) (*variability.Table, *variability.Scores) {
	L := s.learn
	L.syncKnown()
	if !L.loaded {
		L.loaded = true
		s.loadLearned()
	}
	n := snap.Cluster.Size()
	keys := make([]GPUKey, n)
	prior := &variability.Table{}
	for c := range prior.Values {
		prior.Values[c] = slices.Clone(tab.Values[c])
	}
	learned := 0
	for g := range n {
		node, idx := snap.Device(g)
		keys[g] = GPUKey{node, idx}
		if v, ok := L.known[keys[g]]; ok {
			for c := range prior.Values {
				prior.Values[c][g] = v[c]
			}
			learned++
		}
	}
	st, _ := variability.ParseKStrategy(s.cfg.KStrategy)
	bin := variability.BinOptions{Strategy: st, Seed: s.cfg.Seed}
	if learned > 0 {
		nv, err := variability.NewScores(prior, bin, func(variability.Class) float64 { return s.cfg.LocalityPenalty })
		if err != nil {
			s.log.Error("binning learned scores failed; starting from the profile", "configmap", s.learnedSource(), "err", err)
			prior = tab
		} else {
			vs = nv
		}
	}
	l, err := variability.NewLearner(prior, vs, variability.LearnOptions{Bin: bin, Every: variability.RebinEvery(n)})
	if err != nil {
		s.log.Error("score learning off: no learner", "err", err)
		L.learner, L.keys = nil, nil
		return tab, vs
	}
	// DCGM's slowdowns are against the profile: the prior may hold the
	// same slowdown, learnt from jobs while the GPU was throttled.
	if err := l.HintRelativeTo(tab); err != nil {
		s.log.Error("DCGM hints relative to the learned scores, not the profile", "err", err)
	}
	L.learner, L.keys = l, keys
	clear(L.trialed) // counted by the learner this one replaces
	L.profile, L.unmarked = tab, nil
	s.setLearnedGauges()
	return prior, vs
}

// syncKnown copies the learner's beliefs into known, without DCGM's
// hints (Learner.Measured): known is what the ConfigMap keeps and what a
// new learner starts from, and the hints are handed to it again.
func (L *learnStage) syncKnown() {
	if L.learner == nil {
		return
	}
	copyRow := func(g int) {
		var row [variability.NumClasses]float64
		for c := range row {
			row[c] = L.learner.Measured(variability.Class(c), g)
		}
		L.known[L.keys[g]] = row
	}
	L.moved = L.learner.TakeMoved(L.moved[:0])
	if L.knownFor != L.learner {
		// A new learner: every device, once.
		L.knownFor = L.learner
		for g := range L.keys {
			copyRow(g)
		}
	} else {
		for _, g := range L.moved {
			copyRow(g)
		}
	}
	// The gauges follow at the next setLearnedGauges (of this learner:
	// a new one sets them all).
	L.gaugeDirty = append(L.gaugeDirty, L.moved...)
}

// loadLearned reads the learned ConfigMap once, at the first binning. A
// missing ConfigMap, or one without the key, means nothing was learned
// yet; an unreadable one is reported (log and a warning event on it) and
// the scheduler starts from the profile; its next write replaces it.
func (s *Scheduler) loadLearned() {
	L := s.learn
	src := s.learnedSource()
	cm, err := s.cms.ConfigMaps(s.cfg.Namespace).Get(s.cfg.LearnedScoresConfigMap)
	if apierrors.IsNotFound(err) {
		s.log.Info("no learned scores yet; learning from the profile", "configmap", src)
		return
	}
	if err != nil {
		L.loadErr = err
		s.log.Error("learned scores ConfigMap not read; learning from the profile", "configmap", src, "err", err)
		return
	}
	data, ok := cm.Data[ScoresKey]
	if !ok || strings.TrimSpace(data) == "" {
		s.log.Info("learned scores ConfigMap holds no "+ScoresKey+" yet; learning from the profile", "configmap", src)
		return
	}
	ns, err := readLearned(src, cm, s.configMap)
	if err != nil {
		L.loadErr = err
		msg := fmt.Sprintf("%v; starting from the profile (ConfigMap %s/%s), and the next write of learned scores replaces it", err, s.cfg.Namespace, s.cfg.VariabilityConfigMap)
		s.log.Error("learned scores ConfigMap unreadable", "err", msg)
		s.events.post(corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID},
			corev1.EventTypeWarning, ReasonLearnedScoresUnreadable, "Learning", msg)
		return
	}
	L.known = ns.scores
	L.through, L.loadedThrough, L.count = ns.through, ns.through, ns.count
	L.restored = ns.quarantined
	for _, err := range ns.annErrs {
		s.log.Warn("learned ConfigMap's annotation not read; the learned scores are", "err", err)
	}
	if ns.absentErr != nil {
		s.log.Warn("learned ConfigMap's absence clocks not read; the absent nodes' clocks start now", "err", ns.absentErr)
	} else if ns.absent != nil {
		L.absent = ns.absent
	}
	if ns.idsErr != nil {
		s.log.Warn("learned ConfigMap's node identities not read; each node's is recorded as found, and none is checked against an earlier one", "err", ns.idsErr)
	} else if ns.ids != nil {
		L.ids = ns.ids
	}
	s.log.Info("starting from learned scores", "configmap", src, "gpus", len(ns.scores), "observations", ns.count, "through", ns.through.Format(time.RFC3339))
}

// learned is a learned ConfigMap's content.
type learned struct {
	scores      NodeScores
	through     time.Time
	count       int
	quarantined map[GPUKey]quarantineEntry
	// annErrs say which of the annotations above did not read, and what
	// was taken instead (quarantined: none).
	annErrs []error
	// absent is AnnAbsentSince (nil: none); absentErr says why it was
	// not read (the clocks then start again: a bad annotation costs no
	// belief).
	absent    map[string]time.Time
	absentErr error
	// ids is AnnNodeIDs (nil: none); idsErr says why it was not read
	// (the nodes' identities are recorded afresh: a bad annotation costs
	// no belief).
	ids    map[string]string
	idsErr error
}

// readLearned reads a learned ConfigMap: the scores table under ScoresKey,
// with its shards' when it is sharded (ReadScoresConfigMap; errors name
// the ConfigMap, key, line and field), and its annotations.
func readLearned(src string, cm *corev1.ConfigMap, get shardGetter) (learned, error) {
	var out learned
	ns, err := ReadScoresConfigMap(cm, get)
	if err != nil {
		return out, err
	}
	out.scores = ns
	// A bad annotation costs what it says, not the beliefs (annErrs):
	// an unreadable learned-through time is taken as now (no run that
	// ended before is counted twice; some may not be counted at all),
	// an unreadable count as 0.
	if v, ok := cm.Annotations[AnnLearnedThrough]; ok {
		if out.through, err = time.Parse(time.RFC3339Nano, v); err != nil {
			out.through = time.Now()
			out.annErrs = append(out.annErrs, fmt.Errorf("configmap %s annotation %s=%s: want an RFC 3339 time; taken as now", src, AnnLearnedThrough, quote.Value(v)))
		}
	}
	if v, ok := cm.Annotations[AnnLearnedObservations]; ok {
		if out.count, err = strconv.Atoi(v); err != nil || out.count < 0 {
			out.count = 0
			out.annErrs = append(out.annErrs, fmt.Errorf("configmap %s annotation %s=%s: want a count >= 0; taken as 0", src, AnnLearnedObservations, quote.Value(v)))
		}
	}
	if v, ok := cm.Annotations[AnnQuarantined]; ok {
		if out.quarantined, err = parseQuarantined(v); err != nil {
			// It costs the carried quarantines only, not the beliefs: a
			// learned quarantine comes back from them at the first full
			// check, and DCGM's with its next scrape.
			out.quarantined = nil
			out.annErrs = append(out.annErrs, fmt.Errorf("configmap %s annotation %s: %w; the learned quarantines come back at the first full check, DCGM's with its next scrape", src, AnnQuarantined, err))
		}
	}
	if v, ok := cm.Annotations[AnnAbsentSince]; ok {
		if out.absent, err = parseAbsent(v); err != nil {
			out.absentErr = fmt.Errorf("configmap %s annotation %s: %w", src, AnnAbsentSince, err)
		}
	}
	if v, ok := cm.Annotations[AnnNodeIDs]; ok {
		if out.ids, err = parseNodeIDs(v); err != nil {
			out.idsErr = fmt.Errorf("configmap %s annotation %s: %w", src, AnnNodeIDs, err)
		}
	}
	return out, nil
}

// observeRun hands the learner a gang run's observation: the run's first
// one (by this replica and learner) also counts towards the prevalence
// estimate, which blame by prevalence reads (variability.Learner), and
// each later one moves that count to its own pace, timed over a longer
// stretch. A pod's step time (learnStepTimes) is an observation of part
// of a run already counted, so it goes to Observe.
//
// The counts start again with each learner (learnReset), whose prior is
// what was learned so far: a run is off its profile when it is slower
// than that prior allows, and runs counted against an older prior would
// overstate how many GPUs are still off.
func (L *learnStage) observeRun(run string, o observation) {
	if was, ok := L.trialed[run]; ok {
		L.learner.RecountTrial(o.Class, o.GPUs, was, o.Y)
		L.learner.Observe(o.Class, o.GPUs, o.Y)
	} else {
		L.learner.ObserveTrial(o.Class, o.GPUs, o.Y)
	}
	L.trialed[run] = o.Y
}

// evictedForget is how long an evicted gang may be absent before its
// mark is forgotten: longer than a controller takes to make its pods
// again (a Job's failure backoff is at most 6 minutes).
const evictedForget = 15 * time.Minute

// forgetEvicted drops the marks of evicted gangs that are gone for good
// (deleted, never made again): no run of theirs will end to clear it,
// and the record would grow with every such gang.
func (L *learnStage) forgetEvicted(snap *snapshot, now time.Time) {
	old := false
	for _, at := range L.evicted {
		old = old || now.Sub(at) > evictedForget
	}
	if !old {
		return
	}
	present := make(map[string]bool, len(snap.Gangs))
	for _, g := range snap.Gangs {
		present[g.Key] = true
	}
	maps.DeleteFunc(L.evicted, func(k string, at time.Time) bool {
		return now.Sub(at) > evictedForget && !present[k]
	})
}

// learnEvicted notes a gang this replica evicts (see learnStage.evicted).
func (s *Scheduler) learnEvicted(key string) {
	if s.learn != nil {
		s.learn.evicted[key] = time.Now()
	}
}

// learnRound takes the runs of gangs that ended since the last round,
// feeds them to the learner, hands placement the new scores when they
// moved, and writes the ConfigMap when it is due.
func (s *Scheduler) learnRound(ctx context.Context, snap *snapshot, ours []*corev1.Pod, now time.Time) {
	L := s.learn
	if L == nil || L.learner == nil || snap.Cluster == nil {
		return
	}
	L.observed, L.rejected = L.observed[:0], L.rejected[:0]
	byName := make(map[string]*corev1.Pod, len(ours))
	runs := map[string]*BindInfo{}
	live := map[types.UID]bool{}
	for _, p := range ours {
		byName[p.Namespace+"/"+p.Name] = p
		if L.warned[p.UID] {
			live[p.UID] = true
		}
		if p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName == "" {
			continue
		}
		live[p.UID] = true
		if L.done[p.UID] {
			continue
		}
		bi, err := ParseBindInfo(p.Annotations[AnnBindInfo])
		if err != nil || !strings.HasPrefix(bi.Gang, p.Namespace+"/") {
			L.done[p.UID] = true // not bound by a PAL round: nothing to time
			continue
		}
		if _, ok := runs[bi.Gang+"@"+bi.Round]; !ok {
			runs[bi.Gang+"@"+bi.Round] = bi
		}
	}
	for uid := range L.done {
		if !live[uid] {
			delete(L.done, uid)
		}
	}
	for uid := range L.warned {
		if !live[uid] {
			delete(L.warned, uid)
		}
	}
	keys := make([]string, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		bi := runs[k]
		members, finished := runMembers(bi, byName)
		if !finished {
			continue // a member still runs: the run has not ended
		}
		for _, p := range members {
			if p != nil {
				L.done[p.UID] = true
			}
		}
		o, why := s.observeRun(snap, bi, members)
		if at, ok := L.evicted[bi.Gang]; ok {
			// A run bound after the eviction is the restart; an earlier
			// one is the evicted run itself (it failed or is gone).
			if rs, err := time.Parse(time.RFC3339Nano, bi.Round); err != nil || rs.After(at) {
				delete(L.evicted, bi.Gang)
				if why == "" {
					why = "restarted after an eviction: this run did fewer than " + AnnIterations + " iterations"
				}
			}
		}
		if why == "" && !o.End.After(L.loadedThrough) {
			why = "ended before the learned ConfigMap's " + AnnLearnedThrough + ": already counted"
		}
		if why != "" {
			s.log.Debug("gang run not learned from", "gang", gangName(bi.Gang), "why", why)
			continue
		}
		if datedAhead(o.End, now) {
			s.rejectReport(members[0], sourceRun, rejectAhead, 0, aheadMsg("its gang's run's end, by its node's clock,", o.End, now))
			continue
		}
		if !plausiblePace(o.Y) {
			s.rejectReport(members[0], sourceRun, rejectPace, o.Y, fmt.Sprintf("its gang's run of %s s over %s iterations (%s) is %s times the model's %s s per iteration on the median GPU; %s",
				fmtFloat(o.Run), fmtFloat(o.Iterations), AnnIterations, fmtFloat(o.Y), fmtFloat(o.IterTime), implausible))
			continue
		}
		L.observeRun(k, o)
		delete(L.trialed, k)
		L.observed = append(L.observed, o)
		L.count++
		s.metrics.learn.observations.Inc()
		s.log.Info("learned from a finished gang", "gang", gangName(bi.Gang), "class", o.Class.String(), "gpus", snap.Devices(o.GPUs),
			"run_s", fmtFloat(o.Run), "iterations", fmtFloat(o.Iterations), "pace", fmtFloat(o.Y))
	}
	L.forgetEvicted(snap, now)
	hinted := s.learnHints()
	s.learnProgress(snap, now)
	for run := range L.trialed {
		// Still running (its progress is tracked) or partly succeeded
		// (its end is still to come): the run keeps its one trial.
		if _, ok := L.progressAt[run]; !ok && runs[run] == nil {
			delete(L.trialed, run)
		}
	}
	s.learnStepTimes(snap, now)
	if len(L.observed) > 0 || hinted {
		for _, o := range L.observed {
			if o.End.After(L.through) {
				L.through = o.End
			}
		}
		vs, err := L.learner.Rebin()
		if err != nil {
			s.log.Error("re-binning learned scores failed; placement keeps the old ones", "err", err)
		} else if vs != nil {
			s.scores = policy.ScoresFrom(vs)
			L.unmarked = s.scores
			s.metrics.learn.updates.Inc()
			s.log.Info("placement uses learned scores", "rebins", L.learner.Rebins)
		}
		s.raw = L.learner.Beliefs()
		L.syncKnown()
		L.dirty = true
		s.setLearnedGauges()
		s.quarantineRound(now, vs != nil)
	} else if L.qFor != L.learner {
		s.quarantineRound(now, false) // a new learner: every GPU once
	}
	s.forgetAbsent(snap, now)
	L.settleWrite(false)
	if L.dirty && L.write == nil && now.Sub(L.lastWrite) >= s.cfg.LearnedScoresWriteInterval.Duration {
		s.startWrite(ctx, now)
	}
}

// runMembers finds a run's pods by the names its bind-info records. The
// run has ended when no member still runs; members are the pods found
// (a member gone, or a pod of its name from another run, is left out,
// and observeRun then refuses the run).
func runMembers(bi *BindInfo, byName map[string]*corev1.Pod) (members []*corev1.Pod, finished bool) {
	ns, _, _ := strings.Cut(bi.Gang, "/")
	names := make([]string, 0, len(bi.Pods))
	for n := range bi.Pods {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := byName[ns+"/"+n]
		if p == nil {
			continue // gone: observeRun refuses the run
		}
		if other, err := ParseBindInfo(p.Annotations[AnnBindInfo]); err != nil || other.Gang != bi.Gang || other.Round != bi.Round {
			continue // a pod of that name from another run
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return nil, false
		}
		members = append(members, p)
	}
	return members, true
}

// observeRun is a finished run's observation, or why there is none.
func (s *Scheduler) observeRun(snap *snapshot, bi *BindInfo, members []*corev1.Pod) (observation, string) {
	if len(members) != len(bi.Pods) {
		return observation{Gang: bi.Gang}, "a member is gone or belongs to another run"
	}
	for _, p := range members {
		if p.Status.Phase != corev1.PodSucceeded {
			return observation{Gang: bi.Gang}, "a member failed"
		}
	}
	o, why := s.runSetup(snap, bi, members[0])
	if why != "" {
		return o, why
	}
	if _, ok := members[0].Annotations[AnnIterations]; !ok {
		return o, "no " + AnnIterations + " annotation: its time per iteration is unknown"
	}
	for i, p := range members {
		st, ok1 := podStart(p)
		en, ok2 := podEnd(p)
		if !ok1 || !ok2 {
			return o, "pod " + p.Name + " records no start or end time"
		}
		if i == 0 || st.After(o.Start) {
			o.Start = st
		}
		if i == 0 || en.After(o.End) {
			o.End = en
		}
	}
	return o, o.pace(s.cfg.TimeScale)
}

// pace sets Run and Y from Start, End and Iterations, or says why not.
func (o *observation) pace(timeScale float64) string {
	o.Run = o.End.Sub(o.Start).Seconds() * timeScale
	if !(o.Run > 0) {
		return "it ran no measurable time"
	}
	o.Y = o.Run / o.Iterations / o.IterTime / o.Locality
	if !(o.Y > 0) || math.IsInf(o.Y, 0) {
		return "its pace is not a positive number"
	}
	return ""
}

// runSetup is what a run's annotations and bind-info say: its class,
// iterations, median iteration time, GPUs and locality (p0 is a member).
func (s *Scheduler) runSetup(snap *snapshot, bi *BindInfo, p0 *corev1.Pod) (observation, string) {
	o := observation{Gang: bi.Gang}
	spec, err := s.reader.Read(p0)
	if err != nil {
		return o, err.Error()
	}
	if !(spec.IterTime > 0) {
		return o, "no " + AnnModel + " with an iteration time: its pace against the median GPU is unknown"
	}
	for _, pb := range bi.Pods {
		n, ok := snap.NodeIndex[pb.Node]
		if !ok {
			return o, "its node " + pb.Node + " is no longer a GPU node of the cluster"
		}
		for _, x := range pb.GPUs {
			if x >= len(snap.Cluster.Nodes[n].GPUs) {
				return o, fmt.Sprintf("device %d beyond node %s's GPUs", x, pb.Node)
			}
			o.GPUs = append(o.GPUs, snap.First[n]+x)
		}
	}
	slices.Sort(o.GPUs)
	o.Class, o.Iterations, o.IterTime, o.Locality = spec.Class, spec.Iters, spec.IterTime, 1
	if snap.Cluster.SpansNodes(o.GPUs) {
		o.Locality = s.cfg.LocalityPenalty
	}
	return o, ""
}

// podStart is when the pod's containers last started (a container's
// startedAt, else the pod's startTime); podEnd when the last of them
// ended.
func podStart(p *corev1.Pod) (time.Time, bool) {
	var t time.Time
	for _, c := range p.Status.ContainerStatuses {
		for _, v := range []*metav1.Time{startedAt(c.State.Terminated), runningAt(c.State.Running)} {
			if v != nil && !v.IsZero() && v.After(t) {
				t = v.Time
				break
			}
		}
	}
	if t.IsZero() && p.Status.StartTime != nil {
		t = p.Status.StartTime.Time
	}
	return t, !t.IsZero()
}

func startedAt(s *corev1.ContainerStateTerminated) *metav1.Time {
	if s == nil {
		return nil
	}
	return &s.StartedAt
}

func runningAt(s *corev1.ContainerStateRunning) *metav1.Time {
	if s == nil {
		return nil
	}
	return &s.StartedAt
}

func podEnd(p *corev1.Pod) (time.Time, bool) {
	var t time.Time
	for _, c := range p.Status.ContainerStatuses {
		if st := c.State.Terminated; st != nil && st.FinishedAt.After(t) {
			t = st.FinishedAt.Time
		}
	}
	return t, !t.IsZero()
}

// setLearnedGauges exports every belief of the learner's devices.
func (s *Scheduler) setLearnedGauges() {
	L := s.learn
	set := func(g int) {
		for c := range variability.Class(variability.NumClasses) {
			if L.gauges[g][c] == nil {
				k := L.keys[g]
				L.gauges[g][c] = s.metrics.learn.score.WithLabelValues(k.Node, strconv.Itoa(k.Index), c.String())
			}
			L.gauges[g][c].Set(L.learner.Belief(c, g))
		}
	}
	if L.gaugeFor != L.learner {
		// A new learner (a new GPU numbering): every gauge, once.
		L.gaugeFor = L.learner
		L.gauges = make([][variability.NumClasses]prometheus.Gauge, len(L.keys))
		for g := range L.keys {
			set(g)
		}
	} else {
		for _, g := range L.gaugeDirty {
			set(g)
		}
	}
	L.gaugeDirty = L.gaugeDirty[:0]
	s.metrics.learn.prevalence.Set(L.learner.Prevalence())
}

// learnedCSV is the learned ConfigMap's table: every known device, by
// node name and index.
func (L *learnStage) learnedCSV() string {
	keys := make([]GPUKey, 0, len(L.known))
	for k := range L.known {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, GPUKey.Compare)
	var b bytes.Buffer
	_ = WriteNodeScores(&b, keys, L.known)
	return b.String()
}

// learnedWrite is a write of the learned ConfigMap under way beside the
// rounds.
type learnedWrite struct {
	done chan struct{} // closed when it has ended
	err  error         // its outcome, set before done is closed
}

// learnedContent is what the learned ConfigMap is to hold now: its
// scores table and the learned annotations.
func (L *learnStage) learnedContent() (data string, ann map[string]string) {
	L.syncKnown()
	ann = map[string]string{AnnLearnedObservations: strconv.Itoa(L.count), AnnQuarantined: L.quarantineText(), AnnAbsentSince: formatAbsent(L.absent, absentSinceBytes),
		AnnNodeIDs: formatNodeIDs(L.nodeIDsOf(), nodeIDsBytes)}
	if !L.through.IsZero() {
		ann[AnnLearnedThrough] = L.through.UTC().Format(time.RFC3339Nano)
	}
	return L.learnedCSV(), ann
}

// startWrite writes the learned ConfigMap beside the rounds: the round
// does not wait on the apiserver (a write held for a minute held every
// round behind it for that minute). The next round reads the outcome.
func (s *Scheduler) startWrite(ctx context.Context, now time.Time) {
	L := s.learn
	L.lastWrite, L.dirty = now, false
	data, ann := L.learnedContent()
	w := &learnedWrite{done: make(chan struct{})}
	L.write = w
	go func() {
		defer close(w.done)
		wctx, cancel := context.WithTimeout(ctx, learnedWriteTimeout)
		defer cancel()
		w.err = s.putLearned(wctx, data, ann)
	}()
}

// settleWrite takes the outcome of the write in flight, if it has ended
// (or, with wait, once it has): one that failed leaves the ConfigMap
// behind, and it is written again at the next interval.
func (L *learnStage) settleWrite(wait bool) {
	w := L.write
	if w == nil {
		return
	}
	if !wait {
		select {
		case <-w.done:
		default:
			return
		}
	}
	<-w.done
	L.write = nil
	if w.err != nil {
		L.dirty = true
	}
}

// writeLearned writes the beliefs to the learned ConfigMap and waits for
// the outcome (flushLearned).
func (s *Scheduler) writeLearned(ctx context.Context, now time.Time) error {
	L := s.learn
	L.settleWrite(true)
	L.lastWrite = now
	data, ann := L.learnedContent()
	if err := s.putLearned(ctx, data, ann); err != nil {
		return err
	}
	L.dirty = false
	return nil
}

// putLearned writes data and ann to the learned ConfigMap: created when
// missing; otherwise only its ScoresKey and the learned annotations
// change (other keys and labels are kept), by an Update on the version
// just read, retried on a conflict. A table too big for one ConfigMap is
// sharded (SplitScoresCSV): the new generation's shards are written
// first, then the head (the commit point: until then a reader reads the
// previous generation whole), then the shards of other generations are
// deleted (best effort: a leftover is never read, and the next write
// deletes it). It touches no learning state: it runs beside the rounds
// (startWrite).
func (s *Scheduler) putLearned(ctx context.Context, data string, ann map[string]string) error {
	name, ns := s.cfg.LearnedScoresConfigMap, s.cfg.Namespace
	parts, err := SplitScoresCSV(data, MaxConfigMapDataBytes, ShardDataBytes)
	var gen string
	var headAnn map[string]string
	var shards []*corev1.ConfigMap
	if err == nil {
		gen, headAnn, shards, err = ShardConfigMaps(ns, name, parts)
	}
	if err == nil {
		err = s.putShards(ctx, shards)
	}
	if err != nil {
		s.metrics.learn.writes.WithLabelValues("error").Inc()
		s.log.Warn("learned scores not written; retried at the next interval", "configmap", s.learnedSource(), "err", err)
		return err
	}
	size := len(data)
	data = parts[0]
	ann = maps.Clone(ann)
	maps.Copy(ann, headAnn)
	err = s.upsertConfigMap(ctx, name, ann, map[string]string{ScoresKey: data}, func(cm *corev1.ConfigMap) {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		for k, v := range ann {
			cm.Annotations[k] = v
		}
		if gen == "" {
			// Whole: no longer sharded, if it was.
			delete(cm.Annotations, AnnShards)
			delete(cm.Annotations, AnnShardGeneration)
		}
	})
	if err != nil {
		s.metrics.learn.writes.WithLabelValues("error").Inc()
		s.log.Warn("learned scores not written; retried at the next interval", "configmap", s.learnedSource(), "err", err)
		return err
	}
	s.metrics.learn.writes.WithLabelValues("ok").Inc()
	s.log.Debug("learned scores written", "configmap", s.learnedSource(), "bytes", size, "configmaps", len(parts), "observations", ann[AnnLearnedObservations])
	s.dropShards(ctx, name, gen)
	return nil
}

// upsertConfigMap writes the scheduler's ConfigMap name (in its
// namespace): created with ann and data, labelled as the scheduler's,
// when missing; otherwise data's keys are set and edit (may be nil) makes
// its other changes on the version just read, and it is updated only if
// that changed it. A conflict (another writer, or a creation that
// raced) reads it again.
func (s *Scheduler) upsertConfigMap(ctx context.Context, name string, ann, data map[string]string, edit func(*corev1.ConfigMap)) error {
	ns := s.cfg.Namespace
	cms := s.client.CoreV1().ConfigMaps(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "pal-scheduler"}},
				Data: data,
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another writer made it first: read it and update.
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		next := cm.DeepCopy()
		if next.Data == nil {
			next.Data = map[string]string{}
		}
		maps.Copy(next.Data, data)
		if edit != nil {
			edit(next)
		}
		if equality.Semantic.DeepEqual(cm, next) {
			return nil
		}
		_, err = cms.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
}

// putShards creates a generation's shards (ShardConfigMaps). A shard's
// name is its content's hash, so one already there of that name is kept
// when it holds the same; one that does not (changed by hand) is
// replaced.
func (s *Scheduler) putShards(ctx context.Context, shards []*corev1.ConfigMap) error {
	for _, sh := range shards {
		cms := s.client.CoreV1().ConfigMaps(sh.Namespace)
		sh.Labels["app.kubernetes.io/managed-by"] = "pal-scheduler"
		_, err := cms.Create(ctx, sh, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("configmap %s/%s: %w", sh.Namespace, sh.Name, err)
			}
			continue
		}
		old, err := cms.Get(ctx, sh.Name, metav1.GetOptions{})
		if err == nil && old.Data[ScoresKey] == sh.Data[ScoresKey] && old.Annotations[AnnShardGeneration] == sh.Annotations[AnnShardGeneration] {
			continue
		}
		if err == nil || apierrors.IsNotFound(err) {
			err = cms.Delete(ctx, sh.Name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		}
		if err == nil {
			_, err = cms.Create(ctx, sh, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("configmap %s/%s: %w", sh.Namespace, sh.Name, err)
		}
	}
	return nil
}

// dropShards deletes the shards of head other than those of generation
// gen ("" when the table is whole now: all of them) and of the
// generation the head names now (another writer's, committed since:
// a replica that just lost the lead). It is best effort: a shard left
// behind is never read (a reader reads the head's generation only), and
// the next write deletes it.
func (s *Scheduler) dropShards(ctx context.Context, head, gen string) {
	cms := s.client.CoreV1().ConfigMaps(s.cfg.Namespace)
	keep := map[string]bool{gen: true}
	if cm, err := cms.Get(ctx, head, metav1.GetOptions{}); err == nil {
		keep[cm.Annotations[AnnShardGeneration]] = true
	} else {
		s.log.Warn("old shards of the learned scores not deleted; the next write deletes them", "configmap", s.learnedSource(), "err", err)
		return
	}
	l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: LabelShardOf + "=" + head})
	if err != nil {
		s.log.Warn("old shards of the learned scores not listed; the next write deletes them", "configmap", s.learnedSource(), "err", err)
		return
	}
	for i := range l.Items {
		cm := &l.Items[i]
		if g := cm.Labels[LabelShardGeneration]; cm.Labels[LabelShardOf] != head || g != "" && keep[g] {
			continue
		}
		if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("an old shard of the learned scores not deleted; the next write deletes it", "configmap", s.cfg.Namespace+"/"+cm.Name, "err", err)
		}
	}
}

// flushLearned writes what the ConfigMap lacks when rounds stop (this
// replica stops leading, or shuts down), then forgets the learning state:
// if it leads again, another leader may have learned meanwhile, so it
// starts again from the ConfigMap.
func (s *Scheduler) flushLearned() {
	if s.learn == nil {
		return
	}
	s.learn.settleWrite(true) // a write in flight ends with the rounds' context
	if s.learn.dirty {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.writeLearned(ctx, time.Now())
	}
	s.learn = newLearnStage()
	s.scoresKey = "" // the next round bins again, from the ConfigMap
}

// ParseProgress reads AnnProgress: "ITERATIONS@TIME".
func ParseProgress(v string) (float64, time.Time, error) {
	return parseAt(AnnProgress, v, "ITERATIONS@TIME, such as 1200@2026-03-01T12:30:00Z", "a positive iteration count", 1e15)
}

// ParseStepTime reads AnnStepTime: "SECONDS@TIME".
func ParseStepTime(v string) (float64, time.Time, error) {
	return parseAt(AnnStepTime, v, "SECONDS@TIME, such as 0.21@2026-03-01T12:30:00Z", "a positive number of seconds", 1e6)
}

// parseAt reads "NUMBER@TIME": a positive number up to limit, and an RFC
// 3339 time.
func parseAt(ann, v, want, what string, limit float64) (float64, time.Time, error) {
	num, at, ok := strings.Cut(strings.TrimSpace(v), "@")
	if !ok {
		return 0, time.Time{}, fmt.Errorf("annotation %s=%s: want %s", ann, quote.Value(v), want)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || !(n > 0) || n > limit {
		return 0, time.Time{}, fmt.Errorf("annotation %s=%s: %s is not %s", ann, quote.Value(v), quote.Value(num), what)
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || t.IsZero() {
		return 0, time.Time{}, fmt.Errorf("annotation %s=%s: %s is not an RFC 3339 time", ann, quote.Value(v), quote.Value(at))
	}
	return n, t, nil
}

// learnableRuns are the running gangs whose reports may be learned from,
// with their bind-info: every member bound, by a PAL round that the
// bind-info names, and not evicted by this replica (a run restarted from
// a checkpoint would look fast).
func (s *Scheduler) learnableRuns(snap *snapshot) iter.Seq2[*gang, *BindInfo] {
	return func(yield func(*gang, *BindInfo) bool) {
		for _, g := range snap.Gangs {
			if _, ev := s.learn.evicted[g.Key]; g.State != state.GangRunning || len(g.Bound) == 0 || ev {
				continue
			}
			bi, err := ParseBindInfo(g.Bound[0].Annotations[AnnBindInfo])
			if err != nil || bi.Gang != g.Key {
				continue
			}
			if !yield(g, bi) {
				return
			}
		}
	}
}

// gangProgress is a running gang's freshest progress report
// (AnnProgress) and the start of its last pod, from which the report
// counts; ok is false when no member reports or one has no start.
func (s *Scheduler) gangProgress(g *gang) (iters float64, at, start time.Time, ok bool) {
	for _, p := range g.Bound {
		v, has := p.Annotations[AnnProgress]
		if !has {
			continue
		}
		n, t, err := ParseProgress(v)
		if err != nil {
			s.log.Debug("progress not read", "pod", p.Namespace+"/"+p.Name, "err", err)
			continue
		}
		if t.After(at) {
			iters, at = n, t
		}
	}
	if at.IsZero() {
		return 0, at, start, false
	}
	for i, p := range g.Bound {
		st, has := podStart(p)
		if !has {
			return 0, at, start, false
		}
		if i == 0 || st.After(start) {
			start = st
		}
	}
	return iters, at, start, true
}

// learnProgress takes the progress running gangs report (AnnProgress):
// each report newer than the last one learned from is an observation of
// the run so far, timed from the start of its last pod to the report.
// now is the round's time (see MaxReportAhead).
func (s *Scheduler) learnProgress(snap *snapshot, now time.Time) {
	L := s.learn
	live := map[string]bool{}
	for g, bi := range s.learnableRuns(snap) {
		run := bi.Gang + "@" + bi.Round
		live[run] = true
		iters, at, start, ok := s.gangProgress(g)
		if !ok || !at.After(L.progressAt[run]) || !at.After(L.loadedThrough) {
			continue
		}
		if len(g.Bound) != len(bi.Pods) {
			continue
		}
		o, why := s.runSetup(snap, bi, g.Bound[0])
		if why != "" {
			continue
		}
		L.progressAt[run] = at
		if datedAhead(at, now) {
			s.rejectReport(g.Bound[0], sourceProgress, rejectAhead, 0, aheadMsg("its gang's "+AnnProgress+" report", at, now))
			continue
		}
		o.Start, o.End, o.Iterations = start, at, iters
		if o.pace(s.cfg.TimeScale) != "" {
			continue
		}
		if !plausiblePace(o.Y) {
			s.rejectReport(g.Bound[0], sourceProgress, rejectPace, o.Y, fmt.Sprintf("its gang's %s of %s iterations in %s s is %s times the model's %s s per iteration on the median GPU; %s",
				AnnProgress, fmtFloat(o.Iterations), fmtFloat(o.Run), fmtFloat(o.Y), fmtFloat(o.IterTime), implausible))
			continue
		}
		L.count++
		L.observeRun(run, o)
		L.observed = append(L.observed, o)
		s.metrics.learn.observations.Inc()
		s.log.Info("learned from a running gang's progress", "gang", gangName(g.Key), "class", o.Class.String(), "gpus", snap.Devices(o.GPUs),
			"run_s", fmtFloat(o.Run), "iterations", fmtFloat(o.Iterations), "pace", fmtFloat(o.Y))
	}
	for run := range L.progressAt {
		if !live[run] {
			delete(L.progressAt, run)
		}
	}
}

// implausible ends the message of a report refused for its pace.
var implausible = fmt.Sprintf("beyond %g times either way that is a reporting error (seconds, iterations counted from a checkpoint's step, a stalled input), not a GPU, and the learner does not take it", MaxReportedPace)

// datedAhead: a report dated at is from the future of a round at now
// (see MaxReportAhead).
func datedAhead(at, now time.Time) bool { return at.After(now.Add(MaxReportAhead)) }

// aheadMsg is the message of a report (what) refused for its date.
func aheadMsg(what string, at, now time.Time) string {
	return fmt.Sprintf("%s is dated %s, more than %v after the scheduler's clock (%s): a report from the future is a clock or reporting error, not a measurement, and the learner does not take it",
		what, at.UTC().Format(time.RFC3339Nano), MaxReportAhead, now.UTC().Format(time.RFC3339Nano))
}

// plausiblePace: see MaxReportedPace.
func plausiblePace(y float64) bool { return y <= MaxReportedPace && y >= 1/MaxReportedPace }

// rejectReport refuses a run or report of pod p: logged, counted, and a
// warning event on p the first time one of its reports is refused (a
// worker that reports every minute would otherwise post an event a
// minute).
func (s *Scheduler) rejectReport(p *corev1.Pod, source, reason string, y float64, why string) {
	L := s.learn
	name := p.Namespace + "/" + p.Name
	L.rejected = append(L.rejected, rejection{Pod: name, Source: source, Reason: reason, Y: y})
	s.metrics.learn.rejected.WithLabelValues(source, reason).Inc()
	s.log.Warn("report not learned from", "pod", name, "source", source, "reason", reason, "why", why)
	if !L.warned[p.UID] {
		L.warned[p.UID] = true
		s.events.post(podRef(p), corev1.EventTypeWarning, ReasonLearnReportRejected, "Learning", why)
	}
}

// learnStepTimes takes the step times the pods of running gangs report
// (AnnStepTime): each report newer than the last one taken from that pod
// is an observation of the pod's own GPUs at its step time over the
// model's median iteration time. now is the round's time (see
// MaxReportAhead).
func (s *Scheduler) learnStepTimes(snap *snapshot, now time.Time) {
	L := s.learn
	live := map[string]bool{}
	for g, bi := range s.learnableRuns(snap) {
		if len(g.Bound) != len(bi.Pods) {
			continue
		}
		var setup observation
		ready := false
		// The gang's time per iteration so far (job seconds; 0: unknown)
		// bounds its pods' step times.
		perIter := 0.0
		if iters, at, start, ok := s.gangProgress(g); ok && at.After(start) && !datedAhead(at, now) {
			perIter = at.Sub(start).Seconds() * s.cfg.TimeScale / iters
		}
		for _, p := range g.Bound {
			v, ok := p.Annotations[AnnStepTime]
			if !ok {
				continue
			}
			run := p.Namespace + "/" + p.Name + "@" + bi.Round
			live[run] = true
			sec, at, err := ParseStepTime(v)
			if err != nil {
				s.log.Debug("step time not read", "pod", p.Namespace+"/"+p.Name, "err", err)
				continue
			}
			pb, ok := bi.Pods[p.Name]
			if !ok || !at.After(L.stepAt[run]) || !at.After(L.loadedThrough) {
				continue
			}
			if !ready {
				var why string
				if setup, why = s.runSetup(snap, bi, p); why != "" {
					s.log.Debug("step times not learned from", "gang", gangName(bi.Gang), "why", why)
					break
				}
				ready = true
			}
			if datedAhead(at, now) {
				L.stepAt[run] = at
				s.rejectReport(p, sourceStepTime, rejectAhead, 0, aheadMsg("its "+AnnStepTime+"="+quote.Value(v), at, now))
				continue
			}
			n, ok := snap.NodeIndex[pb.Node]
			if !ok {
				continue
			}
			o := observation{Gang: bi.Gang, Class: setup.Class, IterTime: setup.IterTime, Locality: 1, Iterations: 1, Start: at, End: at}
			for _, x := range pb.GPUs {
				o.GPUs = append(o.GPUs, snap.First[n]+x)
			}
			slices.Sort(o.GPUs)
			o.Run = sec * s.cfg.TimeScale
			o.Y = o.Run / o.IterTime
			L.stepAt[run] = at
			if len(o.GPUs) == 0 || !(o.Y > 0) || math.IsInf(o.Y, 0) {
				continue
			}
			if !plausiblePace(o.Y) {
				s.rejectReport(p, sourceStepTime, rejectPace, o.Y, fmt.Sprintf("its %s of %s s is %s times the model's %s s per iteration on the median GPU; %s",
					AnnStepTime, fmtFloat(sec), fmtFloat(o.Y), fmtFloat(o.IterTime), implausible))
				continue
			}
			if perIter > 0 && o.Run > StepTimeSlack*perIter {
				s.rejectReport(p, sourceStepTime, rejectGang, o.Y, fmt.Sprintf("its %s of %s s is more than %g times its gang's %s s per iteration so far (%s); a pod's own step, which leaves out the wait for the other workers, is never slower than its gang's, so the learner does not take it",
					AnnStepTime, fmtFloat(sec), StepTimeSlack, fmtFloat(perIter/s.cfg.TimeScale), AnnProgress))
				continue
			}
			L.count++
			L.learner.Observe(o.Class, o.GPUs, o.Y)
			L.observed = append(L.observed, o)
			s.metrics.learn.observations.Inc()
			s.log.Info("learned from a pod's step time", "pod", p.Namespace+"/"+p.Name, "class", o.Class.String(), "gpus", snap.Devices(o.GPUs),
				"step_s", fmtFloat(o.Run), "pace", fmtFloat(o.Y))
		}
	}
	for run := range L.stepAt {
		if !live[run] {
			delete(L.stepAt, run)
		}
	}
}
