package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/profilebuild"
)

// serveDCGMSample serves the telemetry package's exporter sample, as an
// exporter would, and returns its URL.
func serveDCGMSample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "telemetry", "testdata", "dcgm-exporter-a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(b) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// pal-kube profile dcgm end to end against a served exporter sample: GPU 1 of
// testdata/dcgm-exporter-a100.txt is thermally throttled at 72% of the
// busy median clock (see the telemetry package's test for the numbers).
func TestProfileDCGM(t *testing.T) {
	url := serveDCGMSample(t)
	out, err := run(t, "profile", "dcgm", "--url", url)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "gpu-node-001  1    GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02  1005          0.720        sw_thermal,hw_thermal  yes       1.39") {
		t.Errorf("table:\n%s", out)
	}
	out, err = run(t, "profile", "dcgm", "--url", url, "-o", "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1`) {
		t.Errorf("prometheus:\n%s", out)
	}
}

// pal-kube profile dcgm -o hints: the sample's throttled GPU (gpu-node-001 GPU
// 1, prior 1395/1005 = 1.3881) located in the table pal sim will believe,
// by each of the three ways a table can name it, and the file read back
// by pal sim --gpu-hints.
func TestProfileDCGMHints(t *testing.T) {
	url := serveDCGMSample(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const cols = "PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD"
	rows := func(f func(g int) string) string {
		var sb strings.Builder
		for g := range 8 {
			fmt.Fprintf(&sb, "%d,%d,%s1,1,1,1\n", g, g/4, f(g))
		}
		return sb.String()
	}
	named := write("named.csv", "GPU_ID,Node_ID,node_name,gpu_index,"+cols+"\n"+rows(func(g int) string { return fmt.Sprintf("gpu-node-00%d,%d,", g/4, g%4) }))
	byUUID := write("uuid.csv", "GPU_ID,Node_ID,GPU_UUID,"+cols+"\n"+rows(func(g int) string {
		if g == 6 {
			return "GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02,"
		}
		return fmt.Sprintf("GPU-other-%d,", g)
	}))
	ints := write("ints.csv", "GPU_ID,Node_ID,"+cols+"\n"+rows(func(int) string { return "" }))
	for _, tc := range []struct {
		name  string
		args  []string
		want  string // the data row
		by    string
		error string
	}{
		{"node name and index", []string{"--gpu-scores", named}, "0,5,1.3881", "1 by node_name and gpu_index", ""},
		{"uuid", []string{"--gpu-scores", byUUID, "--at", "3600"}, "3600,6,1.3881", "1 by uuid", ""},
		{"not in the table", []string{"--gpu-scores", ints}, "", "", "flagged GPU gpu-node-001/1"},
		{"no table", nil, "", "", "-o hints needs --gpu-scores"},
		{"negative time", []string{"--gpu-scores", named, "--at", "-1"}, "", "", "--at -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append([]string{"profile", "dcgm", "--url", url, "-o", "hints"}, tc.args...)...)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("error %v, want one containing %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "\ntime_s,gpu,slowdown\n"+tc.want+"\n") || strings.Count(out, "\n") != 4 || !strings.Contains(out, "1 of 4 scraped GPUs flagged") || !strings.Contains(out, tc.by) {
				t.Errorf("hints:\n%s", out)
			}
		})
	}
	if _, err := run(t, "profile", "dcgm", "--url", url, "--gpu-scores", named); err == nil || !strings.Contains(err.Error(), "-o table does not use it") {
		t.Errorf("--gpu-scores without -o hints: %v", err)
	}
	// The file is what pal sim --gpu-hints reads.
	out, err := run(t, "profile", "dcgm", "--url", url, "-o", "hints", "--gpu-scores", byUUID)
	if err != nil {
		t.Fatal(err)
	}
	hints := write("hints.csv", out)
	trace := write("trace.csv", "job_id,num_gpus,submit_time,duration_s\n0,2,0,3600\n")
	o, err := experiment.Preset("artifact")
	if err != nil {
		t.Fatal(err)
	}
	o.Trace, o.Cluster, o.Pinned, o.GPUScores, o.LearnScores, o.GPUHints, o.Placements = trace, "2x4", false, byUUID, true, hints, "pal"
	in, err := experiment.Prepare(o)
	if err != nil {
		t.Fatalf("pal sim's inputs refuse the hints: %v", err)
	}
	if !slices.ContainsFunc(in.Header(), func(i experiment.Input) bool {
		return i.Name == "gpu_hints" && strings.HasPrefix(i.Value, "1 telemetry hint(s) from "+hints)
	}) {
		t.Errorf("pal sim's inputs do not name the hints file: %v", in.Header())
	}
}

// Named nodes end to end: two nodes' runs (class A only, resnet50), built
// and exported. Medians: nb/1 2.0, nb/0 1.0, na/0 1.0, na/1 1.0; their
// median 1.0, so nb/1 is 2 and the others 1 (classes B-D unmeasured: 1).
// Without --map the export places GPUs by the table's node_name and
// gpu_index; -o is the format (kubernetes, the default) and --out the path.
func TestProfileBuildExportNamedNodes(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.csv")
	os.WriteFile(m, []byte("node,gpu_index,gpu_uuid,model,iter_time_s\nnb,1,GPU-d,resnet50,2\nnb,0,GPU-c,resnet50,1\nna,0,GPU-a,resnet50,1\nna,1,GPU-b,resnet50,1\n"), 0o644)
	tbl := filepath.Join(dir, "t.csv")
	var report strings.Builder
	if err := profilebuild.Run(&report, &report, profilebuild.Options{Measurements: m, Out: tbl, ClassMap: "artifact", Output: "table", MinSamples: 1}); err != nil {
		t.Fatal(err)
	}
	y := filepath.Join(dir, "cm.yaml")
	for _, args := range [][]string{
		{"profile", "export", "--gpu-scores", tbl, "--out", y},
		{"profile", "export", "--gpu-scores", tbl, "-o", "kubernetes", "--out", y},
	} {
		if _, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		b, err := os.ReadFile(y)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"nb,1,A,2\n", "nb,0,A,1\n", "na,1,D,1\n", "pal.io/source: " + tbl} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%v: ConfigMap lacks %q:\n%s", args, want, b)
			}
		}
	}
	if _, err := run(t, "profile", "export", "--gpu-scores", tbl, "-o", "yaml"); err == nil || !strings.Contains(err.Error(), `--output "yaml": want kubernetes`) {
		t.Errorf("-o yaml: %v", err)
	}
}

// runSplit runs pal-kube with args and returns stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var o, e bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetArgs(args)
	err = root.Execute()
	return o.String(), e.String(), err
}

// dcgmExporters serves the telemetry sample as each of several nodes'
// exporters, and exporters that fail in each way one can: gone
// (connection refused), hung (answers nothing until the client gives
// up), HTTP 500, a page that is not Prometheus text, and a page with no
// GPU. inFlight and maxInFlight count the requests the good ones serve
// at once.
type dcgmExporters struct {
	good                             []string // gpu-node-001, gpu-node-002, ...
	dead, hung, http500, junk, empty string
	inFlight, maxInFlight            atomic.Int32
}

func newDCGMExporters(t *testing.T, nodes int, delay time.Duration) *dcgmExporters {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "telemetry", "testdata", "dcgm-exporter-a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	x := &dcgmExporters{}
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL + "/metrics"
	}
	for n := range nodes {
		page := strings.ReplaceAll(string(b), "gpu-node-001", fmt.Sprintf("gpu-node-%03d", n+1))
		page = strings.ReplaceAll(page, "GPU-3c4a5b1e", fmt.Sprintf("GPU-%08d", n+1))
		x.good = append(x.good, serve(func(w http.ResponseWriter, _ *http.Request) {
			now := x.inFlight.Add(1)
			defer x.inFlight.Add(-1)
			for {
				m := x.maxInFlight.Load()
				if now <= m || x.maxInFlight.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(delay)
			io.WriteString(w, page)
		}))
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	x.dead = gone.URL + "/metrics"
	gone.Close()
	stop := make(chan struct{})
	x.hung = serve(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	t.Cleanup(func() { close(stop) }) // before the server's Close, which waits for it
	x.http500 = serve(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "dcgm not ready", http.StatusInternalServerError)
	})
	x.junk = serve(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\" 1410\n")
	})
	x.empty = serve(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.5\n")
	})
	return x
}

// TestProfileDCGMPartial: an exporter that cannot be read (gone, hung
// past --timeout, an HTTP error, a page that does not parse, a page
// with no GPU) does not stop the others' GPUs from being assessed. Each
// is named with its error on stderr and as a '# unmeasured:' comment of
// the output, as profile bench names its unmeasured GPUs; the command
// then fails unless --allow-partial, and -o hints (what pal sim
// believes, like bench's --gpu-scores-out) is not written without it.
// An exporter list none of which answers fails whatever the flags, and
// a --url that is not an http(s) URL is refused before any scrape.
func TestProfileDCGMPartial(t *testing.T) {
	x := newDCGMExporters(t, 2, 0)
	dir := t.TempDir()
	table := filepath.Join(dir, "named.csv")
	var sb strings.Builder
	sb.WriteString("GPU_ID,Node_ID,node_name,gpu_index,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n")
	for g := range 8 {
		fmt.Fprintf(&sb, "%d,%d,gpu-node-%03d,%d,1,1,1,1\n", g, g/4, g/4+1, g%4)
	}
	if err := os.WriteFile(table, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	throttled := func(node string) string { return node + "  1    " } // the table row of its throttled GPU
	for _, tc := range []struct {
		name     string
		urls     []string
		args     []string
		bad      map[string]string // URL: what its error says
		allowed  bool              // exits 0 all the same
		rows     []string          // in stdout
		noStdout bool
		stderr   []string
		error    string
	}{
		{name: "all read", urls: x.good, allowed: true, rows: []string{throttled("gpu-node-001"), throttled("gpu-node-002")}},
		{name: "one gone", urls: []string{x.good[0], x.dead, x.good[1]}, bad: map[string]string{x.dead: "connection refused"},
			rows: []string{throttled("gpu-node-001"), throttled("gpu-node-002")}},
		{name: "one gone, allowed", urls: []string{x.good[0], x.dead}, args: []string{"--allow-partial"}, bad: map[string]string{x.dead: "connection refused"},
			allowed: true, rows: []string{throttled("gpu-node-001")}},
		{name: "one hung past --timeout", urls: []string{x.good[0], x.hung, x.good[1]}, args: []string{"--timeout", "300ms"}, bad: map[string]string{x.hung: "deadline exceeded"},
			rows: []string{throttled("gpu-node-001"), throttled("gpu-node-002")}},
		{name: "http error, junk, no GPU", urls: []string{x.http500, x.junk, x.good[1], x.empty},
			bad:  map[string]string{x.http500: "HTTP 500", x.junk: x.junk + ":1: ", x.empty: "no GPU in its page"},
			rows: []string{throttled("gpu-node-002")}},
		{name: "json", urls: []string{x.dead, x.good[0]}, args: []string{"-o", "json"}, bad: map[string]string{x.dead: "connection refused"},
			rows: []string{`"node": "gpu-node-001"`}},
		{name: "prometheus", urls: []string{x.dead, x.good[0]}, args: []string{"-o", "prometheus"}, bad: map[string]string{x.dead: "connection refused"},
			rows: []string{`pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-00000001-0d2f-4e77-9a10-6f1b2c3d4e02"} 1`}},
		{name: "hints not written", urls: []string{x.good[0], x.dead}, args: []string{"-o", "hints", "--gpu-scores", table}, bad: map[string]string{x.dead: "connection refused"},
			noStdout: true, error: "-o hints not written (--allow-partial writes it, naming them in its comments)"},
		{name: "hints, allowed", urls: []string{x.good[0], x.dead}, args: []string{"-o", "hints", "--gpu-scores", table, "--allow-partial"}, bad: map[string]string{x.dead: "connection refused"},
			allowed: true, rows: []string{"\n0,1,1.3881\n"}},
		{name: "none read", urls: []string{x.dead, x.hung}, args: []string{"--allow-partial", "--timeout", "200ms"}, bad: map[string]string{x.dead: "connection refused", x.hung: "deadline exceeded"},
			noStdout: true, error: "none of the 2 DCGM exporters was read"},
		{name: "one exporter under two URLs", urls: []string{x.good[0], strings.Replace(x.good[0], "127.0.0.1", "localhost", 1), x.good[0]}, args: []string{"-o", "prometheus"},
			allowed: true, rows: []string{`pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-00000001-0d2f-4e77-9a10-6f1b2c3d4e02"} 1`},
			stderr: []string{"--url " + x.good[0] + " given twice: scraped once", "4 GPUs reported by two exporters, each assessed as the first reported it: gpu-node-001/0 from http://localhost:"}},
		{name: "no workers", urls: x.good, args: []string{"--concurrency", "0"}, noStdout: true, error: "--concurrency 0: want at least 1"},
		{name: "no time", urls: x.good, args: []string{"--timeout", "0s"}, noStdout: true, error: "--timeout 0s: want a positive duration"},
		{name: "not a URL", urls: []string{"gpu-node-001:9400/metrics"}, noStdout: true, error: `--url "gpu-node-001:9400/metrics": not an http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"profile", "dcgm"}
			for _, u := range tc.urls {
				args = append(args, "--url", u)
			}
			start := time.Now()
			out, errOut, err := runSplit(t, append(args, tc.args...)...)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v", took)
			}
			switch {
			case tc.error != "":
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("error %v, want one containing %q\nstdout:\n%s\nstderr:\n%s", err, tc.error, out, errOut)
				}
			case tc.allowed && err != nil:
				t.Fatalf("error %v\nstderr:\n%s", err, errOut)
			case !tc.allowed:
				if want := fmt.Sprintf("%d of %d DCGM exporters not read", len(tc.bad), len(tc.urls)); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--allow-partial") {
					t.Fatalf("error %v, want one saying %q and naming --allow-partial\nstderr:\n%s", err, want, errOut)
				}
			}
			for _, e := range tc.stderr {
				if !strings.Contains(errOut, e) {
					t.Errorf("stderr lacks %q:\n%s", e, errOut)
				}
			}
			if tc.noStdout && out != "" {
				t.Errorf("stdout written:\n%s", out)
			}
			for _, r := range tc.rows {
				if !strings.Contains(out, r) {
					t.Errorf("stdout lacks %q:\n%s", r, out)
				}
			}
			for u, why := range tc.bad {
				line := regexp.MustCompile(`(?m)^failed: DCGM exporter ` + regexp.QuoteMeta(u) + `: .*` + regexp.QuoteMeta(why))
				if !line.MatchString(errOut) {
					t.Errorf("stderr does not name %s failing with %q:\n%s", u, why, errOut)
				}
				// -o json has no comments; stderr names them.
				if !tc.noStdout && !slices.Contains(tc.args, "json") && !strings.Contains(out, "# unmeasured: DCGM exporter "+u+": its GPUs are not assessed (") {
					t.Errorf("stdout does not name %s unmeasured:\n%s", u, out)
				}
			}
			if len(tc.bad) == 0 && (strings.Contains(out+errOut, "unmeasured") || strings.Contains(errOut, "failed")) {
				t.Errorf("every exporter read, yet:\n%s\n%s", out, errOut)
			}
			if slices.Contains(tc.args, "prometheus") {
				p := expfmt.NewTextParser(model.UTF8Validation)
				if _, err := p.TextToMetricFamilies(strings.NewReader(out)); err != nil {
					t.Errorf("-o prometheus with comments does not parse: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestProfileDCGMConcurrency: the exporters are scraped --concurrency at
// a time (default 16), not one after another, so that a cluster's
// scrape takes its slowest exporters' time, not their sum: 24
// exporters that each take 200 ms answer in well under the 4.8 s one at
// a time would take, never more than --concurrency at once.
func TestProfileDCGMConcurrency(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int32 // the most in flight at once
		maxTime time.Duration
	}{
		{nil, 16, 2 * time.Second},
		{[]string{"--concurrency", "4"}, 4, 3 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			x := newDCGMExporters(t, 24, 200*time.Millisecond)
			args := []string{"profile", "dcgm", "--url", strings.Join(x.good, ",")}
			start := time.Now()
			out, errOut, err := runSplit(t, append(args, tc.args...)...)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if n := strings.Count(out, "GPU-000000"); n != 24*4 {
				t.Errorf("%d GPUs in the table, want 96:\n%s", n, out)
			}
			if m := x.maxInFlight.Load(); m != tc.want || took > tc.maxTime {
				t.Errorf("%d scrapes at once at most, want %d; took %v (at most %v)", m, tc.want, took, tc.maxTime)
			}
		})
	}
}

// dcgmCluster is a fake cluster whose Service gpu-operator/dcgm has an
// EndpointSlice per given endpoint group, and a Service gpu-operator/empty
// with none; pal-kube profile dcgm --service is pointed at it. Endpoint
// addresses are 192.0.2.N, dialled (whatever the port) at the address
// route gives them: an httptest exporter's. asked records each URL
// requested.
type dcgmCluster struct {
	mu    sync.Mutex
	asked []string
}

func (c *dcgmCluster) requested() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

type dcgmEndpoint struct {
	addr, node string
	ready      bool
	to         string // the exporter URL it is dialled at
}

func newDCGMCluster(t *testing.T, slicesOf ...[]dcgmEndpoint) *dcgmCluster {
	t.Helper()
	objs := []runtime.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "dcgm"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "empty"}},
		// Another Service's slice, which must not be scraped.
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "other-x",
			Labels: map[string]string{discoveryv1.LabelServiceName: "other"}}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.250"}}}},
	}
	route := map[string]string{}
	for i, eps := range slicesOf {
		sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: fmt.Sprintf("dcgm-%d", i),
			Labels: map[string]string{discoveryv1.LabelServiceName: "dcgm"}}, AddressType: discoveryv1.AddressTypeIPv4}
		for _, e := range eps {
			ready, node := e.ready, e.node
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.addr}, NodeName: &node,
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
			u, err := url.Parse(e.to)
			if err != nil {
				t.Fatal(err)
			}
			route[e.addr] = u.Host
		}
		objs = append(objs, sl)
	}
	cs := fake.NewClientset(objs...)
	oldClient, oldHTTP := dcgmClientFor, dcgmHTTPClient
	t.Cleanup(func() { dcgmClientFor, dcgmHTTPClient = oldClient, oldHTTP })
	dcgmClientFor = func(string) (kubernetes.Interface, error) { return cs, nil }
	c := &dcgmCluster{}
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if to, ok := route[host]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	dcgmHTTPClient = func() *http.Client {
		return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.mu.Lock()
			c.asked = append(c.asked, r.URL.String())
			c.mu.Unlock()
			return tr.RoundTrip(r)
		})}
	}
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProfileDCGMService: --service NAMESPACE/NAME scrapes each ready
// endpoint of the Service's EndpointSlices at --port and --path, as the
// scheduler's dcgm.service does, and names its GPUs by the endpoint's
// node, not by the exporter's Hostname label (gpu-node-00N here; the
// endpoints run on rack1-a, -b, -c). An endpoint not ready is not
// scraped: it is named, with its node, as an exporter not read is, and
// the command fails unless --allow-partial. A Service that does not
// exist, or has no endpoint, is an error naming it; a bad NAMESPACE/NAME,
// --port or --path is refused naming the flag. --service and --url
// together scrape both, each URL once.
func TestProfileDCGMService(t *testing.T) {
	x := newDCGMExporters(t, 4, 0)
	ep := func(n int, node string, ready bool) dcgmEndpoint {
		return dcgmEndpoint{addr: fmt.Sprintf("192.0.2.%d", n), node: node, ready: ready, to: x.good[n-1]}
	}
	three := [][]dcgmEndpoint{{ep(1, "rack1-a", true), ep(2, "rack1-b", true)}, {ep(3, "rack1-c", true)}}
	notReady := [][]dcgmEndpoint{{ep(1, "rack1-a", true), ep(2, "rack1-b", true), ep(3, "rack1-c", false)}}
	dead := [][]dcgmEndpoint{{ep(1, "rack1-a", true), {addr: "192.0.2.9", node: "rack1-z", ready: true, to: x.dead}}}
	const svc = "--service=gpu-operator/dcgm"
	throttled := func(node string) string { return `(?m)^` + node + ` +1 +GPU-\S+ +1005 ` } // the table row of its throttled GPU
	epURL := func(n int) string { return fmt.Sprintf("http://192.0.2.%d:9400/metrics", n) }
	for _, tc := range []struct {
		name      string
		slices    [][]dcgmEndpoint
		args      []string
		rows      []string // in stdout (regexps)
		unread    []string // '# unmeasured: DCGM exporter ...' lines (the text up to the reason)
		asked     []string // the URLs requested, in any order
		stderr    []string
		error     string
		notOnFail bool // the error is before any scrape: nothing on stdout
	}{
		{name: "three ready", slices: three, args: []string{svc},
			rows:  []string{throttled("rack1-a"), throttled("rack1-b"), throttled("rack1-c")},
			asked: []string{epURL(1), epURL(2), epURL(3)}},
		{name: "one not ready", slices: notReady, args: []string{svc},
			rows:   []string{throttled("rack1-a"), throttled("rack1-b")},
			unread: []string{epURL(3) + " (node rack1-c): its GPUs are not assessed (not ready in Service gpu-operator/dcgm"},
			asked:  []string{epURL(1), epURL(2)},
			error:  "1 of 3 DCGM exporters not read (named above); --allow-partial accepts the rest"},
		{name: "one not ready, allowed", slices: notReady, args: []string{svc, "--allow-partial"},
			rows:   []string{throttled("rack1-a"), throttled("rack1-b")},
			unread: []string{epURL(3) + " (node rack1-c): its GPUs are not assessed (not ready in Service gpu-operator/dcgm"},
			asked:  []string{epURL(1), epURL(2)}},
		{name: "ready, exporter gone", slices: dead, args: []string{svc},
			rows:   []string{throttled("rack1-a")},
			unread: []string{epURL(9) + " (node rack1-z): its GPUs are not assessed ("},
			asked:  []string{epURL(1), epURL(9)},
			stderr: []string{"failed: DCGM exporter " + epURL(9) + " (node rack1-z): "},
			error:  "1 of 2 DCGM exporters not read"},
		{name: "--port and --path", slices: three, args: []string{svc, "--port", "9500", "--path", "/dcgm/metrics"},
			rows:  []string{throttled("rack1-a"), throttled("rack1-b"), throttled("rack1-c")},
			asked: []string{"http://192.0.2.1:9500/dcgm/metrics", "http://192.0.2.2:9500/dcgm/metrics", "http://192.0.2.3:9500/dcgm/metrics"}},
		{name: "with --url: union, each URL once", slices: three, args: []string{svc, "--url", x.good[3], "--url", epURL(2)},
			rows:   []string{throttled("rack1-a"), throttled("rack1-b"), throttled("rack1-c"), throttled("gpu-node-004")},
			asked:  []string{x.good[3], epURL(1), epURL(2), epURL(3)},
			stderr: []string{"--url " + epURL(2) + " is also an endpoint of --service gpu-operator/dcgm (node rack1-b): scraped once"}},
		{name: "no such Service", slices: three, args: []string{"--service", "gpu-operator/nope"}, notOnFail: true,
			error: `--service gpu-operator/nope: no Service "nope" in namespace "gpu-operator"`},
		{name: "no endpoints", slices: three, args: []string{"--service", "gpu-operator/empty"}, notOnFail: true,
			error: "--service gpu-operator/empty: the Service has no endpoints"},
		{name: "not NAMESPACE/NAME", args: []string{"--service", "nvidia-dcgm-exporter"}, notOnFail: true,
			error: `--service "nvidia-dcgm-exporter": not NAMESPACE/NAME of a Service`},
		{name: "not a DNS label", args: []string{"--service", "gpu-operator/Bad_Name"}, notOnFail: true,
			error: `--service "gpu-operator/Bad_Name": not NAMESPACE/NAME of a Service`},
		{name: "bad port", args: []string{svc, "--port", "0"}, notOnFail: true, error: "--port 0: want 1..65535"},
		{name: "bad path", args: []string{svc, "--path", "metrics"}, notOnFail: true, error: `--path "metrics": want a path starting with /`},
		{name: "--port without --service", args: []string{"--url", x.good[0], "--port", "9500"}, notOnFail: true, error: "--port is for --service"},
		{name: "--kubeconfig without --service", args: []string{"--url", x.good[0], "--kubeconfig", "k"}, notOnFail: true, error: "--kubeconfig is for --service"},
		{name: "neither", args: nil, notOnFail: true, error: "--url or --service is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDCGMCluster(t, tc.slices...)
			out, errOut, err := runSplit(t, append([]string{"profile", "dcgm"}, tc.args...)...)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("error %v, want one containing %q\nstdout:\n%s\nstderr:\n%s", err, tc.error, out, errOut)
				}
			} else if err != nil {
				t.Fatalf("error %v\nstderr:\n%s", err, errOut)
			}
			if tc.notOnFail {
				if out != "" || len(c.requested()) > 0 {
					t.Errorf("scraped %v, wrote:\n%s", c.requested(), out)
				}
				return
			}
			for _, r := range tc.rows {
				if !regexp.MustCompile(r).MatchString(out) {
					t.Errorf("stdout lacks %q:\n%s", r, out)
				}
			}
			if strings.Contains(out, "gpu-node-00") && !slices.Contains(tc.args, "--url") {
				t.Errorf("a GPU named by the exporter's Hostname, not the endpoint's node:\n%s", out)
			}
			for _, u := range tc.unread {
				if !strings.Contains(out, "# unmeasured: DCGM exporter "+u) {
					t.Errorf("stdout lacks '# unmeasured: DCGM exporter %s':\n%s", u, out)
				}
				if named, _, _ := strings.Cut(u, ": its GPUs"); !strings.Contains(errOut, "failed: DCGM exporter "+named+": ") {
					t.Errorf("stderr does not name %s:\n%s", u, errOut)
				}
			}
			if len(tc.unread) == 0 && strings.Contains(out+errOut, "unmeasured") {
				t.Errorf("every exporter read, yet:\n%s\n%s", out, errOut)
			}
			for _, e := range tc.stderr {
				if !strings.Contains(errOut, e) {
					t.Errorf("stderr lacks %q:\n%s", e, errOut)
				}
			}
			got := c.requested()
			slices.Sort(got)
			want := slices.Clone(tc.asked)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("requested %v, want %v", got, want)
			}
		})
	}
}
