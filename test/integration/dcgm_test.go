//go:build integration

package integration

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
)

// DCGM telemetry on the dev cluster: a DCGM exporter, served here, sits
// behind a Service without a selector whose EndpointSlice, written as
// the endpoint controller would, puts it on gpu-node-001. The exporter's
// sample shows its GPU 1 held down by thermal slowdown at 1005 MHz
// against a busy median of 1395 (and names itself by its own Hostname,
// which the endpoint's node overrides). With learnScores and
// dcgm.service, the running scheduler's scraper finds the exporter
// through the apiserver, exports pal_gpu_degraded for that GPU, and the
// learner believes it 1395/1005 slow in every class before any job ran.
func TestDCGMHintOnDevCluster(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	sample, err := os.ReadFile("../../telemetry/testdata/dcgm-exporter-a100.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The apiserver refuses loopback endpoints: the exporter listens on
	// the machine's own address, as a node's exporter would.
	ip := hostIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(sample) })}}
	srv.Start()
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, _ := strconv.Atoi(port)

	ns := "gpu-operator"
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dcgm-exporter"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 9400}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, ready, pp := "gpu-node-001", true, int32(p)
	if _, err := e.cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "dcgm-exporter-1", Labels: map[string]string{discoveryv1.LabelServiceName: "dcgm-exporter"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: &pp}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig()
	cfg.LearnScores = true
	cfg.LearnedScoresWriteInterval = kube.Duration{}
	cfg.DCGM.Service, cfg.DCGM.Port = ns+"/dcgm-exporter", p
	cfg.DCGM.Interval, cfg.DCGM.Timeout = kube.Duration{Duration: time.Second}, kube.Duration{Duration: time.Second}
	s, _ := e.runScheduler(cfg, "pal")
	want := []string{
		`pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1`,
		`pal_learned_score{class="B",gpu="1",node="gpu-node-001"} ` + strconv.FormatFloat(1395.0/1005, 'g', -1, 64),
		`pal_learned_score{class="B",gpu="2",node="gpu-node-001"} 1`,
	}
	var last string
	e.eventually(30*time.Second, "the scheduler's /metrics shows the DCGM hint", func() bool {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		last = rec.Body.String()
		for _, w := range want {
			if !strings.Contains(last, w+"\n") {
				return false
			}
		}
		return true
	})
}

// hostIP is a non-loopback IPv4 address of this machine.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("no non-loopback IPv4 address to serve the exporter on: %v", addrs)
	return ""
}
