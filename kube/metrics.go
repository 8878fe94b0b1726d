package kube

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are what /metrics exports.
type Metrics struct {
	reg          *prometheus.Registry
	RoundSeconds prometheus.Histogram
	PendingGangs prometheus.Gauge
	BoundPods    prometheus.Counter
	BoundNow     prometheus.Gauge
	Evictions    prometheus.Counter
	// EvictionsRefused counts the evictions the API server refused
	// (evict_refused.go).
	EvictionsRefused prometheus.Counter
	GPUsInUse        prometheus.Gauge
	MeanScore        prometheus.Gauge
	Leader           prometheus.Gauge
	// RoundErrors counts the faults a round recovered from, by stage
	// (see faults.go); BindsInFlight the binder's tasks not settled yet;
	// BindErrors the binds that did not land.
	RoundErrors   *prometheus.CounterVec
	BindsInFlight prometheus.Gauge
	BindErrors    prometheus.Counter
	// Scheduler themis (fairness.go).
	AppRho           *prometheus.GaugeVec
	LeaseRevocations prometheus.Counter
	// EventsPosted and EventsDropped count the events the scheduler
	// posted and those it could not post, by why (see eventPoster).
	EventsPosted  prometheus.Counter
	EventsDropped *prometheus.CounterVec
	// learn is what learnScores exports (learn.go); LearnedScore is its
	// per-GPU belief.
	learn        *learnMetrics
	LearnedScore *prometheus.GaugeVec
	// EvictedWork counts the evicted gangs whose credited work is kept
	// for their pods' return; EvictedWorkWrites the writes of its
	// ConfigMap, by result (evicted_store.go).
	EvictedWork       prometheus.Gauge
	EvictedWorkWrites *prometheus.CounterVec
	// APIReachable and InformerErrors say whether the apiserver answers
	// (apihealth.go).
	APIReachable   prometheus.Gauge
	InformerErrors *prometheus.CounterVec
}

// NewMetrics registers the scheduler's metrics on a registry of its own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.RoundSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pal_round_duration_seconds",
		Help: "Time one scheduling round takes (snapshot, order, place, bind, evict).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)})
	m.PendingGangs = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_pending_gangs", Help: "Gangs placed in the queue but not given GPUs in the last round."})
	m.BoundPods = prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_bound_pods_total", Help: "Pods bound through pods/binding."})
	m.BoundNow = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_bound_pods", Help: "Our pods bound and not finished: counted at each round's start, raised at each bind."})
	m.Evictions = prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_evictions_total", Help: "Pods evicted for preemption or migration."})
	m.EvictionsRefused = prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_evictions_refused_total",
		Help: "Evictions the apiserver refused (a disruption budget, a webhook, RBAC): the pod runs on and its gang is not tried again until a backoff ends."})
	m.GPUsInUse = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_gpus_in_use", Help: "GPUs held after the last round (ours and other schedulers')."})
	m.MeanScore = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_mean_placement_score", Help: "Mean binned PM-score of the GPUs held by placed gangs (lower is faster)."})
	m.Leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_leader", Help: "1 while this replica runs rounds: it holds the leader lease, or runs without leader election."})
	m.RoundErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_round_errors_total",
		Help: "Faults the scheduler recovered from, by stage: plan (placing; the gang at fault is set aside), complete (a gang cut off by a crash), bind (a launch, or a bind worker), round (anything else in a round)."},
		[]string{"stage"})
	for _, st := range []string{"plan", "complete", "bind", "round"} {
		m.RoundErrors.WithLabelValues(st) // exported at 0 from the start
	}
	m.BindsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_binds_in_flight",
		Help: "Binds and evictions handed to the binder whose outcome is not known yet (their GPUs stay held)."})
	m.BindErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_bind_errors_total",
		Help: "Binds that did not land: the apiserver refused them, or the pod was gone or bound elsewhere (its GPUs are free again)."})
	m.reg.MustRegister(m.RoundErrors, m.BindsInFlight, m.BindErrors)
	m.EvictedWork = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_evicted_work_gangs",
		Help: "Evicted gangs whose credited work the scheduler keeps (in memory and evictedWorkConfigMap) until their pods come back, after the last round."})
	m.EvictedWorkWrites = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_evicted_work_writes_total",
		Help: "Writes of evictedWorkConfigMap, by result (ok, error)."}, []string{"result"})
	m.EvictedWorkWrites.WithLabelValues("ok")
	m.EvictedWorkWrites.WithLabelValues("error")
	m.reg.MustRegister(m.EvictedWork, m.EvictedWorkWrites)
	m.reg.MustRegister(themisMetrics(m)...)
	var lc []prometheus.Collector
	m.learn, lc = newLearnMetrics()
	m.LearnedScore = m.learn.score
	m.reg.MustRegister(lc...)
	m.EventsPosted = prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_events_posted_total", Help: "Events (events.k8s.io/v1) the scheduler posted."})
	m.EventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_events_dropped_total",
		Help: "Events the scheduler did not post: queue_full (more waiting than its queue holds), api_error (the apiserver refused it, or kept failing), shutdown (still queued when it stopped)."},
		[]string{"reason"})
	for _, r := range []string{dropQueueFull, dropAPIError, dropShutdown} {
		m.EventsDropped.WithLabelValues(r) // exported at 0 from the start
	}
	m.APIReachable = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_apiserver_reachable",
		Help: "1 while the apiserver answers the scheduler's probe of its /readyz, 0 after two probes in a row failed."})
	m.APIReachable.Set(1)
	m.InformerErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_informer_errors_total",
		Help: "Failed lists and watches of the scheduler's informers, by informer."}, []string{"informer"})
	m.reg.MustRegister(m.APIReachable, m.InformerErrors)
	m.reg.MustRegister(m.RoundSeconds, m.PendingGangs, m.BoundPods, m.BoundNow, m.Evictions, m.EvictionsRefused, m.GPUsInUse, m.MeanScore, m.Leader,
		m.EventsPosted, m.EventsDropped,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves /metrics, /healthz (the process is up) and /readyz (the
// informers have synced and the apiserver answers; see apiHealth). A
// replica that is not ready says why: the informers' last list or watch
// errors, or the apiserver's outage.
func (s *Scheduler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := s.readiness(); !ok {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// readiness is what /readyz answers.
func (s *Scheduler) readiness() (bool, string) {
	if !s.Ready() {
		return false, "informers not synced" + s.api.watchErrors()
	}
	if why := s.api.down(); why != "" {
		return false, why
	}
	return true, ""
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings and ints
	}
	return string(b)
}

// fmtFloat writes the shortest decimal that reads back as the same float.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// labelValue is a label value read from a pod (an app or gang name, from
// an annotation or an owner's name) made valid UTF-8: the Prometheus
// client panics on any other, and that panic cost a whole round its
// placement (FuzzRoundPods: an owner named "\x98K" under themis).
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
