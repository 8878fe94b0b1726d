package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

func readyz(t *testing.T, s *Scheduler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// An apiserver that stops answering makes the scheduler unready after two
// failed probes in a row, not one, says since when and why (log, /readyz,
// pal_apiserver_reachable), and ready again at the first answer, with how
// long it was away.
func TestReadyzSaysTheApiserverIsDown(t *testing.T) {
	cs, _ := newFake(t, node("n0", 4))
	var down atomic.Bool
	cs.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	logs := &syncBuf{}
	s, err := New(cfg, cs, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.ready.Store(true) // as Run does once the informers synced
	reachable := func() float64 { return testutil.ToFloat64(s.api.reachable) }
	ctx := context.Background()
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)

	// The time to the next probe: the period, half of it once one has
	// failed, and a second while the outage is declared, so /readyz turns
	// 200 within a second of the apiserver's return rather than ten.
	next := func(what string, want time.Duration) {
		t.Helper()
		if got := s.api.next(); got != want {
			t.Errorf("%s: next probe in %v, want %v", what, got, want)
		}
	}
	s.api.check(ctx, t0)
	next("up", DefaultAPIProbeEvery)
	if code, body := readyz(t, s); code != http.StatusOK || reachable() != 1 {
		t.Fatalf("apiserver up: /readyz %d %q, reachable %v; want 200 and 1", code, body, reachable())
	}
	down.Store(true)
	s.api.check(ctx, t0.Add(10*time.Second))
	next("one failed probe", DefaultAPIProbeEvery/2)
	if code, body := readyz(t, s); code != http.StatusOK || reachable() != 1 || strings.Contains(logs.String(), "cannot be reached") {
		t.Fatalf("one failed probe: /readyz %d %q, reachable %v; want still 200 and 1, nothing logged", code, body, reachable())
	}
	s.api.check(ctx, t0.Add(20*time.Second))
	next("down", time.Second)
	want := "the apiserver cannot be reached since 2026-12-07T08:00:10Z (2 probes of its /readyz failed in a row): dial tcp 10.0.0.1:6443: connect: connection refused"
	if code, body := readyz(t, s); code != http.StatusServiceUnavailable || body != want || reachable() != 0 {
		t.Fatalf("two failed probes: /readyz %d %q, reachable %v; want 503 %q and 0", code, body, reachable(), want)
	}
	if n := strings.Count(logs.String(), "the apiserver cannot be reached"); n != 1 {
		t.Errorf("the outage logged %d times, want once: %s", n, logs)
	}
	s.api.check(ctx, t0.Add(30*time.Second))
	if n := strings.Count(logs.String(), "the apiserver cannot be reached"); n != 1 {
		t.Errorf("a third failed probe logged the outage again (%d lines)", n)
	}
	down.Store(false)
	s.api.check(ctx, t0.Add(40*time.Second))
	next("back", DefaultAPIProbeEvery)
	if code, body := readyz(t, s); code != http.StatusOK || reachable() != 1 {
		t.Fatalf("apiserver back: /readyz %d %q, reachable %v; want 200 and 1", code, body, reachable())
	}
	if !strings.Contains(logs.String(), `msg="the apiserver answers again" unreachable_for=30s`) {
		t.Errorf("the return is not logged with the outage's length: %s", logs)
	}
}

// Before the informers sync, /readyz names the informer whose list fails
// and why (a forbidden list of Jobs would otherwise keep the scheduler
// unready with no word of it), the failure is counted and logged once,
// and a watch that closed normally or outlived its resource version is
// neither.
func TestReadyzNamesInformerErrors(t *testing.T) {
	cs, _ := newFake(t, node("n0", 4))
	cs.PrependReactor("list", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", errors.New("RBAC: not allowed"))
	})
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	logs := &syncBuf{}
	s, err := New(cfg, cs, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.startFactories(ctx.Done())
	want := `informers not synced; jobs: failed to list *v1.Job: jobs.batch is forbidden: RBAC: not allowed`
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if code, body = readyz(t, s); body == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d %q, want 503 %q", code, body, want)
		}
	}
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d, want 503", code)
	}
	if n := testutil.ToFloat64(s.api.watchErrs.WithLabelValues("jobs")); n < 1 {
		t.Errorf("pal_informer_errors_total{informer=jobs} = %v, want at least 1", n)
	}
	if n := strings.Count(logs.String(), "informer=jobs"); n != 1 {
		t.Errorf("the jobs informer's failure logged %d times, want once a minute: %s", n, logs)
	}
	h := s.api.watchHandler("nodes")
	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, apierrors.NewResourceExpired("too old resource version"), apierrors.NewGone("gone")} {
		h(ctx, nil, err)
	}
	if n := testutil.ToFloat64(s.api.watchErrs.WithLabelValues("nodes")); n != 0 {
		t.Errorf("normal watch closes counted as errors: %v", n)
	}
}

// The probe of a real client GETs the apiserver's /readyz (not a path
// under /api/v1), takes a 200 as up, and any other answer, or none, as
// down with what the apiserver said.
func TestAPIProbeAsksReadyz(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	var paths []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if c := int(status.Load()); c != http.StatusOK {
			http.Error(w, "[-]etcd failed: reason withheld", c)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	probe := apiProbe(client)
	ctx := context.Background()
	if err := probe(ctx); err != nil {
		t.Fatalf("apiserver ready: %v", err)
	}
	status.Store(http.StatusInternalServerError)
	if err := probe(ctx); err == nil || !strings.Contains(err.Error(), "500 Internal Server Error: [-]etcd failed") {
		t.Errorf("apiserver unready: %v, want its 500 and what it said", err)
	}
	srv.Close()
	if err := probe(ctx); err == nil {
		t.Error("apiserver gone: no error")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 || paths[0] != "/readyz" || paths[1] != "/readyz" {
		t.Errorf("the probe asked %v, want /readyz twice", paths)
	}
}
