package kube

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/telemetry"
)

// GPU telemetry (dcgm: in the config). Operators of GPU clusters already
// run NVIDIA's DCGM exporter on every GPU node. The scheduler scrapes it
// every interval, flags the GPUs whose clocks are held down (thermal or
// power slowdown) or run well under their peers (telemetry.Assess), and
// exports that as pal_gpu_* metrics. With learnScores on, a flagged GPU
// is also a prior for the learner (variability.Learner.Hint): its
// believed scores rise by the slowdown its clock suggests before any job
// has run slow on it, and the first job that shows it fast takes that
// back. Jobs are the measurement; telemetry only says where to look.

// DCGMConfig says where the DCGM exporters are. Telemetry is off unless
// urls or service is set.
type DCGMConfig struct {
	// URLs are exporter /metrics URLs. Their GPUs are named by the
	// exporter's Hostname label, which must be the node's name (newer
	// exporters set it from NODE_NAME; older ones, and any without it,
	// give their pod's name: use service then).
	URLs []string `json:"urls"`
	// Service is the exporter's Service as NAMESPACE/NAME: each ready
	// endpoint of its EndpointSlices is scraped at port and path, and its
	// GPUs are named by the endpoint's node, whatever Hostname says.
	Service string `json:"service"`
	Port    int    `json:"port"`
	Path    string `json:"path"`
	// Interval is the time between scrapes, Timeout one scrape's limit.
	Interval Duration `json:"interval"`
	Timeout  Duration `json:"timeout"`
	// LowClock flags a busy GPU whose SM clock is under this share of the
	// busy GPUs' median (telemetry.Assess).
	LowClock float64 `json:"lowClock"`
}

func defaultDCGMConfig() DCGMConfig {
	return DCGMConfig{URLs: []string{}, Port: 9400, Path: "/metrics", Interval: Duration{time.Minute}, Timeout: Duration{10 * time.Second}, LowClock: 0.9}
}

func (c *DCGMConfig) enabled() bool { return len(c.URLs) > 0 || c.Service != "" }

// validateDCGM checks the dcgm fields (only when telemetry is on).
func (c *Config) validateDCGM() error {
	d := &c.DCGM
	if !d.enabled() {
		return nil
	}
	for i, u := range d.URLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("field dcgm.urls[%d]: %s is not an http(s) URL such as http://gpu-node-1:9400/metrics", i, quote.Value(u))
		}
	}
	if d.Service != "" {
		if _, _, err := ParseDCGMService(d.Service); err != nil {
			return fmt.Errorf("field dcgm.service: %s is %v", quote.Value(d.Service), err)
		}
	}
	switch {
	case !DCGMPortOK(d.Port):
		return fmt.Errorf("field dcgm.port: must be 1..65535, got %d", d.Port)
	case !DCGMPathOK(d.Path):
		return fmt.Errorf("field dcgm.path: must start with /, got %s", quote.Value(d.Path))
	case d.Interval.Duration < time.Second:
		return fmt.Errorf("field dcgm.interval: must be at least 1s, got %v", d.Interval)
	case d.Timeout.Duration <= 0 || d.Timeout.Duration > d.Interval.Duration:
		return fmt.Errorf("field dcgm.timeout: must be positive and at most the interval (%v), got %v", d.Interval, d.Timeout)
	case !(d.LowClock > 0 && d.LowClock <= 1):
		return fmt.Errorf("field dcgm.lowClock: must be in (0, 1], got %v", d.LowClock)
	}
	return nil
}

// dcgmStage scrapes the exporters; the round goroutine reads what the
// last scrape found.
type dcgmStage struct {
	cfg       DCGMConfig
	http      *http.Client
	collector *telemetry.Collector
	scrapes   *prometheus.CounterVec // by target result: ok, error
	flagged   prometheus.Gauge

	// lastGood is each target's last good scrape (the scrape goroutine's
	// alone): a target that fails keeps saying what it said, so that an
	// exporter restarting does not withdraw its GPUs' hints.
	lastGood map[string][]telemetry.GPU
	// busyPrior is the prior of each GPU last flagged while busy, for
	// as long as it stays flagged (carryPriors; the scrape goroutine's
	// alone).
	busyPrior map[GPUKey]float64
	// serviceEmpty: the last listing of dcgm.service found no ready
	// endpoint, and that was warned (the scrape goroutine's alone).
	serviceEmpty bool

	mu       sync.Mutex
	findings map[GPUKey]telemetry.Finding
	gen      uint64 // scrapes that finished
}

func newDCGMStage(cfg DCGMConfig) *dcgmStage {
	d := &dcgmStage{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout.Duration}, collector: telemetry.NewCollector(), lastGood: map[string][]telemetry.GPU{}, busyPrior: map[GPUKey]float64{},
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pal_dcgm_scrapes_total",
			Help: "DCGM exporter endpoints scraped, by result (ok, error)."}, []string{"result"}),
		flagged: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pal_dcgm_flagged_gpus",
			Help: "GPUs the last DCGM scrape flagged as throttled or at a low SM clock."}),
	}
	d.scrapes.WithLabelValues("ok")
	d.scrapes.WithLabelValues("error")
	return d
}

func (d *dcgmStage) collectors() []prometheus.Collector {
	return []prometheus.Collector{d.collector, d.scrapes, d.flagged}
}

// last is what the last scrape found, and its number.
func (d *dcgmStage) last() (map[GPUKey]telemetry.Finding, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.findings, d.gen
}

// run scrapes every interval until ctx ends.
func (d *dcgmStage) run(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) {
	for {
		d.scrape(ctx, cs, log)
		t := time.NewTimer(d.cfg.Interval.Duration)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// targets are the configured URLs and the ready endpoints of the
// configured Service (DCGMServiceTargets).
func (d *dcgmStage) targets(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) ([]telemetry.Target, error) {
	var out []telemetry.Target
	for _, u := range d.cfg.URLs {
		out = append(out, telemetry.Target{URL: u})
	}
	if d.cfg.Service == "" {
		return out, nil
	}
	ready, notReady, err := DCGMServiceTargets(ctx, cs, d.cfg.Service, d.cfg.Port, d.cfg.Path)
	if err != nil {
		return out, fmt.Errorf("dcgm.service %s: %w", d.cfg.Service, err)
	}
	// A Service with no ready endpoint gives no telemetry at all, which
	// a scrape that reads nothing would not say: warned once, until one
	// is ready again.
	if empty := len(ready) == 0; empty != d.serviceEmpty {
		d.serviceEmpty = empty
		if empty {
			log.Warn("dcgm.service has no ready endpoint: no GPU telemetry from it until one is ready (is the exporter's Service selector right, and are its pods ready?)",
				"service", d.cfg.Service, "notReady", len(notReady))
		} else {
			log.Info("dcgm.service has ready endpoints again", "service", d.cfg.Service, "ready", len(ready))
		}
	}
	return append(out, ready...), nil
}

// ParseDCGMService splits a Service's NAMESPACE/NAME, each a DNS-1123
// label: dcgm.service's check, and pal-kube profile dcgm --service's.
// The error says what is wanted; the caller names the field and value.
func ParseDCGMService(s string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Label(name)) > 0 {
		return "", "", fmt.Errorf("not NAMESPACE/NAME of a Service, such as gpu-operator/nvidia-dcgm-exporter")
	}
	return namespace, name, nil
}

// DCGMPortOK and DCGMPathOK are dcgm.port's and dcgm.path's checks, and
// pal-kube profile dcgm --port's and --path's.
func DCGMPortOK(port int) bool    { return port >= 1 && port <= 65535 }
func DCGMPathOK(path string) bool { return strings.HasPrefix(path, "/") }

// DCGMServiceTargets are the exporter endpoints of a Service (NAMESPACE/NAME,
// as ParseDCGMService takes it): each endpoint of its EndpointSlices
// with an address, at http://ADDRESS:port/path, its Node the
// endpoint's node (which names its GPUs, whatever the exporter's
// Hostname label says). ready are those to scrape (Ready true, or not
// known: nil, which the API says to take as ready); notReady those the
// Service says are not (an exporter starting, or its node going). Each
// exporter comes once, ready first: one endpoint in two slices, and one
// exporter pod in an IPv4 and an IPv6 slice (a dual-stack Service), are
// one target, at its IPv4 address. Scraped once per family, a cluster's
// exporters would cost twice the requests and the parsing, and every
// GPU would be reported twice. The scheduler's dcgm.service and pal-kube
// profile dcgm --service both list their exporters with it.
func DCGMServiceTargets(ctx context.Context, cs kubernetes.Interface, service string, port int, path string) (ready, notReady []telemetry.Target, err error) {
	ns, name, err := ParseDCGMService(service)
	if err != nil {
		return nil, nil, err
	}
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, nil, fmt.Errorf("listing its EndpointSlices: %w", err)
	}
	slices.SortStableFunc(list.Items, func(a, b discoveryv1.EndpointSlice) int {
		return bit(a.AddressType != discoveryv1.AddressTypeIPv4) - bit(b.AddressType != discoveryv1.AddressTypeIPv4)
	})
	// An endpoint is its exporter pod when the slice names it, else its
	// URL.
	key := func(ep discoveryv1.Endpoint, url string) string {
		if r := ep.TargetRef; r != nil && r.Kind == "Pod" && r.Name != "" {
			return "pod " + r.Namespace + "/" + r.Name
		}
		return url
	}
	seen := map[string]bool{}
	type pending struct {
		key string
		t   telemetry.Target
	}
	var later []pending
	for _, sl := range list.Items {
		for _, ep := range sl.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			t := telemetry.Target{URL: "http://" + net.JoinHostPort(ep.Addresses[0], strconv.Itoa(port)) + path}
			if ep.NodeName != nil {
				t.Node = *ep.NodeName
			}
			k := key(ep, t.URL)
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				later = append(later, pending{k, t})
				continue
			}
			if seen[k] || seen[t.URL] {
				continue // one exporter in two slices
			}
			seen[k], seen[t.URL] = true, true
			ready = append(ready, t)
		}
	}
	for _, p := range later {
		if !seen[p.key] && !seen[p.t.URL] { // not ready in one slice, ready in another: scraped
			seen[p.key], seen[p.t.URL] = true, true
			notReady = append(notReady, p.t)
		}
	}
	return ready, notReady, nil
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dcgmWorkers scrape at once: a node that does not answer holds one of
// them for the timeout, not the whole scrape. A scrape must end within
// the interval (1 minute by default), or the exporters it has not read
// keep their last findings: at 5,000 nodes, 50 exporters that do not
// answer hold 8 workers for 50 x 10 s / 8, about a minute, on their
// own, and 64 workers for 8 s. 64 pages at once are a few MiB.
const dcgmWorkers = 64

// scrape reads every target, assesses their GPUs together (a low clock
// is low against the busy GPUs of the whole cluster) and publishes the
// findings. A target that fails is logged and counted; the others
// still count.
func (d *dcgmStage) scrape(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Interval.Duration)
	defer cancel()
	targets, err := d.targets(ctx, cs, log)
	if err != nil {
		log.Warn("DCGM exporters not all found", "err", err)
	}
	res := telemetry.ScrapeAll(ctx, d.http, targets, dcgmWorkers, d.cfg.Timeout.Duration)
	live := map[string]bool{}
	for i := range res {
		r := &res[i]
		live[r.URL] = true
		if r.Err != nil {
			d.scrapes.WithLabelValues("error").Inc()
			log.Warn("DCGM exporter not read; its last findings stand", "url", r.URL, "err", r.Err, "gpus", len(d.lastGood[r.URL]))
			r.GPUs = d.lastGood[r.URL]
		} else {
			d.scrapes.WithLabelValues("ok").Inc()
			d.lastGood[r.URL] = r.GPUs
		}
	}
	// A GPU reported by two targets is assessed once, as the first
	// target reported it (telemetry.Merge).
	all, dups := telemetry.Merge(res)
	if len(dups) > 0 {
		log.Warn("DCGM exporters report the same GPUs; each is read from the first target that reports it",
			"gpus", len(dups), "first", strings.Join(dups[:min(len(dups), 3)], "; "))
	}
	for u := range d.lastGood {
		if !live[u] {
			delete(d.lastGood, u) // an endpoint gone from the Service
		}
	}
	fs := telemetry.Assess(all, d.cfg.LowClock)
	carryPriors(fs, d.busyPrior)
	d.collector.Set(fs)
	byKey := make(map[GPUKey]telemetry.Finding, len(fs))
	flagged := 0
	for _, f := range fs {
		byKey[GPUKey{Node: f.GPU.Hostname, Index: f.GPU.GPU}] = f
		if f.Degraded() {
			flagged++
		}
	}
	d.flagged.Set(float64(flagged))
	d.mu.Lock()
	d.findings = byKey
	d.gen++
	d.mu.Unlock()
	log.Debug("DCGM scraped", "targets", len(targets), "gpus", len(all), "flagged", flagged)
}

// carryPriors gives a GPU that DCGM flags while it is idle the prior it
// showed when last flagged busy, and records in last the priors of the
// GPUs flagged busy (dropping those no longer flagged or reported). An
// idle GPU's clock is its idle clock, so Assess gives it no prior (1);
// but a GPU that still reports a throttling reason is no faster for
// being idle. Without this, a GPU quarantined on DCGM's word would come
// out of quarantine as soon as the quarantine had emptied it, be given
// a guaranteed job, and go back in under it. A GPU flagged idle that was
// never seen busy has nothing to carry and keeps 1.
func carryPriors(fs []telemetry.Finding, last map[GPUKey]float64) {
	seen := make(map[GPUKey]bool, len(fs))
	for i := range fs {
		f := &fs[i]
		k := GPUKey{Node: f.GPU.Hostname, Index: f.GPU.GPU}
		seen[k] = true
		switch {
		case !f.Degraded():
			delete(last, k)
		case !f.GPU.Idle():
			last[k] = f.Prior
		default:
			if p, ok := last[k]; ok {
				f.Prior = p
			}
		}
	}
	for k := range last {
		if !seen[k] {
			delete(last, k)
		}
	}
}

// learnHints hands the learner what telemetry says of each GPU, when it
// changed since the learner last heard (a new scrape, or a new learner):
// the prior slowdown of a flagged GPU, 1 for one no longer flagged. It
// reports whether any hint changed.
func (s *Scheduler) learnHints() bool {
	L, d := s.learn, s.dcgm
	if d == nil || L.learner == nil {
		return false
	}
	fs, gen := d.last()
	if gen == L.hintGen && L.hintFor == L.learner {
		return false
	}
	if L.hintFor != L.learner {
		L.hintFor, L.hints = L.learner, map[int]float64{}
	}
	L.hintGen = gen
	changed, matched := false, 0
	for g, k := range L.keys {
		f, idle := 1.0, false
		if x, ok := fs[k]; ok {
			matched++
			idle = x.GPU.Idle()
			if x.Degraded() {
				f = x.Prior
				if r, ok := L.restored[k]; ok && r.Source == "dcgm" && idle && f <= 1 {
					// Flagged idle after a restart: the slowdown it was
					// quarantined for stands (carryPriors).
					f = r.Slowdown
				}
			}
		}
		if r, ok := L.restored[k]; ok && r.Source == "dcgm" && (f == 1 || !idle) {
			// No longer flagged, or busy again: DCGM speaks for it now.
			delete(L.restored, k)
		}
		was, ok := L.hints[g]
		if !ok {
			was = 1
		}
		if math.Abs(f-was) <= 0.01*was {
			continue
		}
		L.learner.Hint(g, f)
		L.hints[g], changed = f, true
		s.log.Info("DCGM hint to the learner", "node", k.Node, "gpu", k.Index, "slowdown", fmtFloat(f))
	}
	if len(fs) > 0 && matched == 0 && !L.hintWarned {
		L.hintWarned = true
		var names []string
		for k := range fs {
			names = append(names, k.Node)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		s.log.Warn("no GPU that DCGM reports is a GPU of the cluster: its Hostname labels name no node; set NODE_NAME on the exporter or use dcgm.service",
			"hostnames", strings.Join(names[:min(len(names), 5)], ","))
	}
	return changed
}
