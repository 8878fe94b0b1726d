package kube

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/palsched/pal/telemetry"
	"github.com/palsched/pal/variability"
)

// exporter serves a DCGM exporter's /metrics; set changes what it serves.
func exporter(t *testing.T, body string) (url string, set func(string)) {
	t.Helper()
	var cur atomic.Pointer[string]
	cur.Store(&body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(*cur.Load()))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics", func(b string) { cur.Store(&b) }
}

// a100Sample is telemetry's exporter sample: gpu-node-001's GPU 1 is
// held down by thermal slowdown at 1005 MHz against the busy GPUs'
// median of 1395, a prior slowdown of 1395/1005.
func a100Sample(t *testing.T) string {
	b, err := os.ReadFile("../telemetry/testdata/dcgm-exporter-a100.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cooled is the sample with GPU 1's slowdown over: no reasons, 1400 MHz.
func cooled(sample string) string {
	var out []string
	for _, l := range strings.Split(sample, "\n") {
		if strings.Contains(l, `gpu="1"`) {
			switch {
			case strings.HasPrefix(l, "DCGM_FI_DEV_SM_CLOCK{"):
				l = l[:strings.LastIndex(l, " ")] + " 1400"
			case strings.HasPrefix(l, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{"):
				l = l[:strings.LastIndex(l, " ")] + " 0"
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func metricsText(t *testing.T, s *Scheduler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// A GPU that DCGM shows throttled is believed slower in every class from
// the next round on, before any job ran on it, and back at its profile
// once the throttling ends; the learned ConfigMap never keeps the hint
// (a restarted scheduler would count it twice). No profile: every GPU
// starts at 1.
func TestDCGMHintsReachTheLearner(t *testing.T) {
	sample := a100Sample(t)
	u, set := exporter(t, sample)
	cfg := learnCfg()
	cfg.DCGM.URLs = []string{u}
	cs, _ := newFake(t, node("gpu-node-001", 4), node("gpu-node-002", 4))
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0) // the first round bins and makes the learner
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(10*time.Second))
	prior := 1395.0 / 1005
	for g := range 8 {
		want := 1.0
		if g == 1 {
			want = prior
		}
		for c := range variability.Class(variability.NumClasses) {
			if b := s.learn.learner.Belief(c, g); math.Abs(b-want) > 1e-12 {
				t.Errorf("GPU %d class %s believed %v, want %v", g, c, b, want)
			}
		}
	}
	m := metricsText(t, s)
	for _, w := range []string{
		`pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1`,
		`pal_dcgm_scrapes_total{result="ok"} 1`,
		`pal_dcgm_flagged_gpus 1`,
		`pal_learned_score{class="A",gpu="1",node="gpu-node-001"} ` + strconv.FormatFloat(prior, 'g', -1, 64),
	} {
		if !strings.Contains(m, w+"\n") {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	ns, err := ReadNodeScores("learned", strings.NewReader(learnedCM(t, cs).Data[ScoresKey]))
	if err != nil {
		t.Fatal(err)
	}
	if v := ns[GPUKey{"gpu-node-001", 1}]; v[variability.ClassA] != 1 {
		t.Errorf("the learned ConfigMap keeps %v for the hinted GPU, want its measured 1", v)
	}

	// The same scrape again hands nothing new, and neither does one
	// the exporter fails (its last findings stand); the slowdown's end
	// does.
	s.dcgm.scrape(ctx, cs, s.log)
	if s.learnHints() {
		t.Errorf("an unchanged scrape changed a hint")
	}
	set("not the exposition format {")
	s.dcgm.scrape(ctx, cs, s.log)
	if s.learnHints() || s.learn.learner.Belief(variability.ClassA, 1) != prior {
		t.Errorf("a failed scrape changed a hint: GPU 1 at %v", s.learn.learner.Belief(variability.ClassA, 1))
	}
	if m := metricsText(t, s); !strings.Contains(m, `pal_dcgm_scrapes_total{result="error"} 1`+"\n") {
		t.Errorf("the failed scrape is not counted")
	}
	set(cooled(sample))
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(20*time.Second))
	if b := s.learn.learner.Belief(variability.ClassA, 1); b != 1 {
		t.Errorf("after the throttling ended GPU 1 is believed %v, want 1", b)
	}
	if m := metricsText(t, s); !strings.Contains(m, "pal_dcgm_flagged_gpus 0\n") {
		t.Errorf("/metrics does not say 0 GPUs flagged")
	}
}

// With dcgm.service the exporters are the ready endpoints of its
// EndpointSlices, and each one's GPUs are named by the endpoint's node
// whatever the exporter's Hostname label says (an exporter without
// NODE_NAME gives its pod's name). The sample says gpu-node-001; the
// endpoint runs on gpu-node-002, so gpu-node-002's device 1 (global
// GPU 5) is the hinted one. A not-ready endpoint is not scraped.
func TestDCGMServiceEndpoints(t *testing.T) {
	u, _ := exporter(t, a100Sample(t))
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(u, "/metrics"), "http://"))
	p, _ := strconv.Atoi(port)
	yes, no := true, false
	n2, n1 := "gpu-node-002", "gpu-node-001"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "dcgm-abc", Namespace: "gpu-operator", Labels: map[string]string{discoveryv1.LabelServiceName: "dcgm"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{host}, NodeName: &n2, Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"192.0.2.1"}, NodeName: &n1, Conditions: discoveryv1.EndpointConditions{Ready: &no}},
		},
	}
	cfg := learnCfg()
	cfg.DCGM.Service, cfg.DCGM.Port = "gpu-operator/dcgm", p
	cs, _ := newFake(t, []runtime.Object{node(n1, 4), node(n2, 4), slice}...)
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0)
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(10*time.Second))
	for g, want := range map[int]float64{1: 1, 5: 1395.0 / 1005} {
		if b := s.learn.learner.Belief(variability.ClassA, g); math.Abs(b-want) > 1e-12 {
			t.Errorf("GPU %d believed %v, want %v", g, b, want)
		}
	}
	if m := metricsText(t, s); !strings.Contains(m, `pal_dcgm_scrapes_total{result="ok"} 1`+"\n") || !strings.Contains(m, `pal_dcgm_scrapes_total{result="error"} 0`+"\n") {
		t.Errorf("want one target scraped, none failed:\n%s", m)
	}
}

func TestDCGMConfigErrors(t *testing.T) {
	for _, c := range []struct {
		set  func(*DCGMConfig)
		want string
	}{
		{func(d *DCGMConfig) { d.URLs = []string{"gpu-node-1:9400/metrics"} }, "field dcgm.urls[0]"},
		{func(d *DCGMConfig) { d.Service = "nvidia-dcgm-exporter" }, "field dcgm.service"},
		{func(d *DCGMConfig) { d.Service = "gpu-operator/Bad_Name" }, "field dcgm.service"},
		{func(d *DCGMConfig) { d.Service, d.Port = "a/b", 70000 }, "field dcgm.port"},
		{func(d *DCGMConfig) { d.Service, d.Path = "a/b", "metrics" }, "field dcgm.path"},
		{func(d *DCGMConfig) { d.Service, d.Interval = "a/b", Duration{0} }, "field dcgm.interval"},
		{func(d *DCGMConfig) { d.Service, d.Timeout = "a/b", Duration{2 * time.Minute} }, "field dcgm.timeout"},
		{func(d *DCGMConfig) { d.Service, d.LowClock = "a/b", 1.5 }, "field dcgm.lowClock"},
	} {
		cfg := DefaultConfig()
		c.set(&cfg.DCGM)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s", cfg.DCGM, err, c.want)
		}
	}
	cfg := DefaultConfig()
	cfg.DCGM.Port = 0 // telemetry off: its fields are not checked
	if err := cfg.Validate(); err != nil {
		t.Errorf("dcgm off: %v", err)
	}
}

// A restarted scheduler whose learned ConfigMap already has the throttled
// GPU at 1.4 (learnt from jobs while it was throttled; the profile says
// 1) does not count DCGM's 1395/1005 on top: the hint is against the
// profile, so the GPU stays at 1.4, not 1.4 x 1.388.
func TestDCGMHintNotCountedTwice(t *testing.T) {
	u, _ := exporter(t, a100Sample(t))
	cfg := learnCfg()
	cfg.DCGM.URLs = []string{u}
	cs, _ := newFake(t, node("gpu-node-001", 4),
		learnedConfigMap(allClasses("gpu-node-001,0", "1", "gpu-node-001,1", "1.4", "gpu-node-001,2", "1", "gpu-node-001,3", "1"), nil))
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0)
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(10*time.Second))
	for c := range variability.Class(variability.NumClasses) {
		if b := s.learn.learner.Belief(c, 1); b != 1.4 {
			t.Errorf("class %s: the learned, still throttled GPU believed %v, want 1.4", c, b)
		}
	}
}

// One exporter reached by two targets (its node's exporter listed both by
// name and by address, or two ready pods of the DaemonSet on one node in a
// rolling update with surge) reports the same GPUs twice. Each GPU is
// assessed and exported once: a second series with the same labels made
// every /metrics answer an error 500, the scheduler's own metrics with it.
func TestDCGMSameGPUFromTwoTargets(t *testing.T) {
	u, _ := exporter(t, a100Sample(t))
	cfg := learnCfg()
	cfg.DCGM.URLs = []string{u, strings.Replace(u, "127.0.0.1", "localhost", 1)}
	cs, _ := newFake(t, node("gpu-node-001", 4), node("gpu-node-002", 4))
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0)
	s.dcgm.scrape(ctx, cs, s.log)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics answered %d: %.300s", rec.Code, rec.Body.String())
	}
	m := rec.Body.String()
	for _, w := range []string{`pal_dcgm_scrapes_total{result="ok"} 2`, `pal_dcgm_flagged_gpus 1`, `pal_round_duration_seconds_count 1`} {
		if !strings.Contains(m, w+"\n") {
			t.Errorf("/metrics lacks %s", w)
		}
	}
	if n := strings.Count(m, `pal_gpu_degraded{gpu="1",node="gpu-node-001"`); n != 1 {
		t.Errorf("GPU gpu-node-001/1 exported %d times, want once", n)
	}
}

// DCGMServiceTargets, which the scheduler's dcgm.service and pal-kube
// profile dcgm --service share: each endpoint of the Service's
// EndpointSlices at port and path, named by its node; ready ones to
// scrape, the others (Ready false) apart, each URL once, and nothing of
// another Service's slices. An endpoint whose readiness is not known
// (Ready nil) is ready, as the API asks.
func TestDCGMServiceTargets(t *testing.T) {
	yes, no := true, false
	nodeName := func(s string) *string { return &s }
	ep := func(addr, node string, ready *bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		if addr != "" {
			e.Addresses = []string{addr}
		}
		if node != "" {
			e.NodeName = nodeName(node)
		}
		return e
	}
	podEP := func(addr, node, pod string, ready *bool) discoveryv1.Endpoint {
		e := ep(addr, node, ready)
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "gpu-operator", Name: pod}
		return e
	}
	slice := func(ns, name, svc string, af discoveryv1.AddressType, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: af, Endpoints: eps}
	}
	show := func(ts []telemetry.Target) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.URL+"@"+t.Node)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name            string
		objs            []runtime.Object
		service         string
		port            int
		path            string
		ready, notReady string
	}{
		{name: "three ready", service: "gpu-operator/dcgm", port: 9400, path: "/metrics",
			objs: []runtime.Object{slice("gpu-operator", "dcgm-a", "dcgm", discoveryv1.AddressTypeIPv4,
				ep("10.0.0.1", "n1", &yes), ep("10.0.0.2", "n2", nil), ep("10.0.0.3", "n3", &yes))},
			ready: "http://10.0.0.1:9400/metrics@n1 http://10.0.0.2:9400/metrics@n2 http://10.0.0.3:9400/metrics@n3"},
		{name: "one not ready, port and path", service: "gpu-operator/dcgm", port: 9500, path: "/dcgm",
			objs: []runtime.Object{slice("gpu-operator", "dcgm-a", "dcgm", discoveryv1.AddressTypeIPv4,
				ep("10.0.0.1", "n1", &yes), ep("10.0.0.2", "n2", &no))},
			ready: "http://10.0.0.1:9500/dcgm@n1", notReady: "http://10.0.0.2:9500/dcgm@n2"},
		{name: "two slices, one endpoint in both, IPv6, no address, no node", service: "gpu-operator/dcgm", port: 9400, path: "/metrics",
			objs: []runtime.Object{
				slice("gpu-operator", "dcgm-a", "dcgm", discoveryv1.AddressTypeIPv4, ep("10.0.0.1", "n1", &yes), ep("", "n9", &yes)),
				slice("gpu-operator", "dcgm-b", "dcgm", discoveryv1.AddressTypeIPv4, ep("10.0.0.1", "n1", &yes), ep("10.0.0.4", "", &yes)),
				slice("gpu-operator", "dcgm-c", "dcgm", discoveryv1.AddressTypeIPv6, ep("fd00::2", "n2", &no)),
			},
			ready: "http://10.0.0.1:9400/metrics@n1 http://10.0.0.4:9400/metrics@", notReady: "http://[fd00::2]:9400/metrics@n2"},
		{name: "dual-stack: each exporter pod once, at its IPv4 address", service: "gpu-operator/dcgm", port: 9400, path: "/metrics",
			objs: []runtime.Object{
				slice("gpu-operator", "dcgm-a", "dcgm", discoveryv1.AddressTypeIPv6,
					podEP("fd00::1", "n1", "dcgm-x1", &yes), podEP("fd00::2", "n2", "dcgm-x2", &yes), podEP("fd00::3", "n3", "dcgm-x3", &no)),
				slice("gpu-operator", "dcgm-b", "dcgm", discoveryv1.AddressTypeIPv4,
					podEP("10.0.0.1", "n1", "dcgm-x1", &yes), podEP("10.0.0.2", "n2", "dcgm-x2", &yes), podEP("10.0.0.3", "n3", "dcgm-x3", &no)),
			},
			ready:    "http://10.0.0.1:9400/metrics@n1 http://10.0.0.2:9400/metrics@n2",
			notReady: "http://10.0.0.3:9400/metrics@n3"},
		{name: "another Service's and another namespace's slices", service: "gpu-operator/dcgm", port: 9400, path: "/metrics",
			objs: []runtime.Object{
				slice("gpu-operator", "other-a", "other", discoveryv1.AddressTypeIPv4, ep("10.0.0.1", "n1", &yes)),
				slice("default", "dcgm-a", "dcgm", discoveryv1.AddressTypeIPv4, ep("10.0.0.2", "n2", &yes)),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := newFake(t, tc.objs...)
			ready, notReady, err := DCGMServiceTargets(context.Background(), cs, tc.service, tc.port, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if show(ready) != tc.ready || show(notReady) != tc.notReady {
				t.Errorf("ready %q, not ready %q; want %q, %q", show(ready), show(notReady), tc.ready, tc.notReady)
			}
		})
	}
}

// ParseDCGMService is dcgm.service's check, and pal-kube profile dcgm
// --service's: NAMESPACE/NAME, each a DNS-1123 label.
func TestParseDCGMService(t *testing.T) {
	for in, ok := range map[string]bool{"gpu-operator/nvidia-dcgm-exporter": true, "a/b": true,
		"nvidia-dcgm-exporter": false, "gpu-operator/Bad_Name": false, "/dcgm": false, "gpu-operator/": false, "a/b/c": false, "": false} {
		ns, name, err := ParseDCGMService(in)
		if (err == nil) != ok {
			t.Errorf("%q: %v, want ok %v", in, err, ok)
		}
		if ok && ns+"/"+name != in {
			t.Errorf("%q: namespace %q, name %q", in, ns, name)
		}
	}
}

// A dcgm.service with no ready endpoint gives no telemetry, and a scrape
// that reads nothing says nothing: the scheduler warns once, says so
// again when endpoints are back, and does not repeat either.
func TestDCGMServiceEmptyWarnsOnce(t *testing.T) {
	no := false
	n1 := "gpu-node-001"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "dcgm-abc", Namespace: "gpu-operator", Labels: map[string]string{discoveryv1.LabelServiceName: "dcgm"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}, NodeName: &n1, Conditions: discoveryv1.EndpointConditions{Ready: &no}}},
	}
	cfg := learnCfg()
	cfg.DCGM.Service = "gpu-operator/dcgm"
	cs, _ := newFake(t, node(n1, 4), slice)
	d := newDCGMStage(cfg.DCGM)
	buf := &syncBuf{}
	log := slog.New(slog.NewTextHandler(buf, nil))
	ctx := context.Background()
	count := func(s string) int { return strings.Count(buf.String(), s) }
	const empty, back = "dcgm.service has no ready endpoint", "dcgm.service has ready endpoints again"
	for i := range 3 {
		if _, err := d.targets(ctx, cs, log); err != nil {
			t.Fatal(err)
		}
		if count(empty) != 1 || count(back) != 0 {
			t.Fatalf("listing %d: %d warnings and %d all-clears, want 1 and 0:\n%s", i+1, count(empty), count(back), buf)
		}
	}
	if !strings.Contains(buf.String(), "notReady=1") {
		t.Errorf("the warning does not say how many endpoints are not ready:\n%s", buf)
	}
	yes := true
	slice.Endpoints[0].Conditions.Ready = &yes
	if _, err := cs.DiscoveryV1().EndpointSlices("gpu-operator").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if ts, err := d.targets(ctx, cs, log); err != nil || len(ts) != 1 {
			t.Fatalf("targets %v, %v; want the one ready endpoint", ts, err)
		}
	}
	if count(empty) != 1 || count(back) != 1 {
		t.Errorf("after the endpoint became ready: %d warnings and %d all-clears, want 1 and 1:\n%s", count(empty), count(back), buf)
	}
}
