package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// An apiserver that cannot be reached stops every bind, yet nothing in the
// scheduler failed: the informers retry in silence and /readyz kept
// answering ok. apiHealth makes the outage visible. A probe asks the
// apiserver's own /readyz every DefaultAPIProbeEvery; after apiProbeFails
// failures in a row the scheduler logs that it cannot reach the
// apiserver, /readyz says so (503), and pal_apiserver_reachable is 0,
// until a probe answers again. The informers' list and watch errors are
// counted and logged too (at most once per informer a minute): before the
// first sync they are the only word of why it does not come (a forbidden
// list, say).
type apiHealth struct {
	log   *slog.Logger
	probe func(ctx context.Context) error
	every time.Duration

	reachable prometheus.Gauge
	watchErrs *prometheus.CounterVec

	mu        sync.Mutex
	fails     int       // probes failed in a row
	downSince time.Time // the first failed probe of the outage (zero: up)
	lastErr   string    // the last failed probe's error
	told      bool      // the outage was logged
	watchErr  map[string]string
	watchLog  map[string]time.Time
}

// DefaultAPIProbeEvery, apiProbeTimeout and apiProbeFails pace the probe:
// an outage shows within about half a minute, and one slow answer does
// not make the scheduler unready. A probe is one GET of a few bytes.
const (
	DefaultAPIProbeEvery = 10 * time.Second
	apiProbeTimeout      = 5 * time.Second
	apiProbeFails        = 2
)

// WithAPIProbeEvery makes the scheduler probe the apiserver every d
// rather than every DefaultAPIProbeEvery (tests that take an apiserver
// down for a few seconds).
func WithAPIProbeEvery(d time.Duration) Option { return func(s *Scheduler) { s.probeEvery = d } }

// watchLogEvery is how often one informer's list or watch errors are
// logged while they go on.
const watchLogEvery = time.Minute

func newAPIHealth(client kubernetes.Interface, log *slog.Logger, m *Metrics, every time.Duration) *apiHealth {
	if every <= 0 {
		every = DefaultAPIProbeEvery
	}
	h := &apiHealth{log: log, probe: apiProbe(client), every: every, watchErr: map[string]string{}, watchLog: map[string]time.Time{}}
	h.reachable, h.watchErrs = m.APIReachable, m.InformerErrors
	return h
}

// apiProbe asks the apiserver's /readyz (readable by every client: the
// system:public-info-viewer role), which fails too when the apiserver is
// up but its etcd is not. It goes through the client's authenticated
// transport but not its rate limiter: binds that use up the client's QPS
// must not make the probe wait past its timeout and read as an outage. A
// client without a REST client of its own (a fake in tests) is asked its
// version.
func apiProbe(client kubernetes.Interface) func(ctx context.Context) error {
	if rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil && rc.Client != nil {
		url := rc.Get().AbsPath("/readyz").URL().String()
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := rc.Client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
			}
			return nil
		}
	}
	return func(context.Context) error {
		_, err := client.Discovery().ServerVersion()
		return err
	}
}

// run probes until ctx ends, next() from the start of one probe to the
// start of the next: a probe that hangs to its timeout (an apiserver
// stopped, not refusing) does not stretch the period.
func (h *apiHealth) run(ctx context.Context) {
	t := time.NewTimer(h.every)
	defer t.Stop()
	for {
		start := time.Now()
		h.check(ctx, start)
		t.Reset(max(0, h.next()-time.Since(start)))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// apiProbeDownDiv divides the probe period while the apiserver counts as
// unreachable: at the full period /readyz said 503 for up to 10 s after
// the apiserver was back (an operator trial), so a rollout or a load
// balancer waiting on it waited for nothing. Probing faster only while
// down or suspected costs nothing in the healthy case.
const apiProbeDownDiv = 10

// next is the time from one probe's start to the next's: the period; half
// of it after a failure, so that an outage is declared within a period
// and a half of its first failed probe (two failures, the second at most
// a timeout late: an apiserver that hangs took 23.5 s to show, one that
// refuses 15); a tenth of it (at least a second, at most the period)
// while the outage is declared.
func (h *apiHealth) next() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.told:
		return min(h.every, max(h.every/apiProbeDownDiv, time.Second))
	case h.fails > 0:
		return h.every / 2
	}
	return h.every
}

// check probes once and takes the answer.
func (h *apiHealth) check(ctx context.Context, now time.Time) {
	pctx, cancel := context.WithTimeout(ctx, apiProbeTimeout)
	err := h.probe(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not the apiserver's fault
	}
	h.took(err, now)
}

func (h *apiHealth) took(err error, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		if h.told {
			h.log.Info("the apiserver answers again", "unreachable_for", now.Sub(h.downSince).Round(time.Second).String())
		}
		h.fails, h.downSince, h.lastErr, h.told = 0, time.Time{}, "", false
		h.reachable.Set(1)
		return
	}
	if h.fails == 0 {
		h.downSince = now
	}
	h.fails++
	h.lastErr = err.Error()
	if h.fails >= apiProbeFails && !h.told {
		h.told = true
		h.reachable.Set(0)
		h.log.Warn("the apiserver cannot be reached: no pod is bound or evicted until it answers; /readyz says not ready meanwhile",
			"since", h.downSince.UTC().Format(time.RFC3339), "failed_probes", h.fails, "err", h.lastErr)
	}
}

// down says why the apiserver counts as unreachable, or "".
func (h *apiHealth) down() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.told {
		return ""
	}
	return fmt.Sprintf("the apiserver cannot be reached since %s (%d probes of its /readyz failed in a row): %s",
		h.downSince.UTC().Format(time.RFC3339), h.fails, h.lastErr)
}

// watchHandler is informer name's watch error handler: it counts and
// logs the error, then leaves the retry to the reflector (as client-go's
// default handler does, which only logs). A watch that closed normally,
// or whose resource version was compacted away, is no fault: the
// reflector lists again, and it is neither counted nor logged.
func (h *apiHealth) watchHandler(name string) cache.WatchErrorHandlerWithContext {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		if err == io.EOF || err == io.ErrUnexpectedEOF || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		h.watchErrs.WithLabelValues(name).Inc()
		now := time.Now()
		h.mu.Lock()
		h.watchErr[name] = err.Error()
		logIt := now.Sub(h.watchLog[name]) >= watchLogEvery
		if logIt {
			h.watchLog[name] = now
		}
		h.mu.Unlock()
		if logIt {
			h.log.Warn("an informer's list or watch failed; it retries", "informer", name, "err", err.Error())
		}
	}
}

// watchErrors are the informers' last list or watch errors, by name: what
// /readyz gives as the reason the informers have not synced.
func (h *apiHealth) watchErrors() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := ""
	for _, name := range slices.Sorted(maps.Keys(h.watchErr)) {
		s += fmt.Sprintf("; %s: %s", name, h.watchErr[name])
	}
	return s
}
