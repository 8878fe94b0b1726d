// Package telemetry reads the GPU telemetry operators already collect,
// NVIDIA DCGM exporter's Prometheus endpoint, and flags GPUs whose clocks
// are being held down (thermal or power slowdown) or run well below their
// peers: a GPU whose measured PM-score will not hold, and a prior for the
// online learner that it is slower than its profile says.
package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/palsched/pal/internal/quote"
)

// The DCGM exporter metrics read. The clock event reasons field was
// called CLOCK_THROTTLE_REASONS before DCGM 3.2; both names are read.
const (
	MetricSMClock        = "DCGM_FI_DEV_SM_CLOCK"    // MHz
	MetricPower          = "DCGM_FI_DEV_POWER_USAGE" // W
	MetricTemp           = "DCGM_FI_DEV_GPU_TEMP"    // C
	MetricUtil           = "DCGM_FI_DEV_GPU_UTIL"    // %
	MetricEventReasons   = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	MetricThrottleReason = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
)

// Reason is one bit of DCGM's clock event reasons bitmask (the values are
// DCGM's DCGM_CLOCKS_EVENT_REASON_*, the same as NVML's).
type Reason uint64

const (
	ReasonGPUIdle       Reason = 0x1
	ReasonClocksSetting Reason = 0x2
	ReasonSWPowerCap    Reason = 0x4
	ReasonHWSlowdown    Reason = 0x8
	ReasonSyncBoost     Reason = 0x10
	ReasonSWThermal     Reason = 0x20
	ReasonHWThermal     Reason = 0x40
	ReasonHWPowerBrake  Reason = 0x80
	ReasonDisplayClocks Reason = 0x100
)

var reasonNames = []struct {
	r    Reason
	name string
}{
	{ReasonGPUIdle, "gpu_idle"}, {ReasonClocksSetting, "clocks_setting"}, {ReasonSWPowerCap, "sw_power_cap"},
	{ReasonHWSlowdown, "hw_slowdown"}, {ReasonSyncBoost, "sync_boost"}, {ReasonSWThermal, "sw_thermal"},
	{ReasonHWThermal, "hw_thermal"}, {ReasonHWPowerBrake, "hw_power_brake"}, {ReasonDisplayClocks, "display_clocks"},
}

// Throttling are the reasons that slow a GPU below what its class of
// GPUs delivers: thermal and power slowdowns. Idle, application clock
// settings, sync boost and display clocks are a GPU's setting, not a
// fault; a software power cap is reported (PowerCapped) but is what a
// busy GPU at its power limit normally shows, so it does not throttle.
const Throttling = ReasonHWSlowdown | ReasonSWThermal | ReasonHWThermal | ReasonHWPowerBrake

// Names lists the reasons set in r, lowest bit first; unknown bits as hex.
func (r Reason) Names() []string {
	var out []string
	left := r
	for _, n := range reasonNames {
		if r&n.r != 0 {
			out = append(out, n.name)
			left &^= n.r
		}
	}
	if left != 0 {
		out = append(out, fmt.Sprintf("0x%x", uint64(left)))
	}
	return out
}

// GPU is one GPU's sample from an exporter. Absent metrics are NaN.
type GPU struct {
	Hostname string
	GPU      int
	UUID     string
	SMClock  float64
	Power    float64
	Temp     float64
	// Util is the share of time a kernel ran, in percent.
	Util    float64
	Reasons Reason
	// HasReasons is false when the exporter does not export the reasons.
	HasReasons bool
}

// Idle reports a GPU that runs nothing: DCGM's gpu_idle reason, or 0%
// utilisation. An idle GPU drops its clock (300 MHz on an idle T4 against
// 1,590 busy), so its clock says nothing about throttling, and an older
// exporter that does not export the reasons says it is idle only by its
// utilisation.
func (g *GPU) Idle() bool { return g.Reasons&ReasonGPUIdle != 0 || g.Util == 0 }

// Key is how a GPU is named in flags and metrics: host and index.
func (g *GPU) Key() string { return fmt.Sprintf("%s/%d", g.Hostname, g.GPU) }

// ParseError locates a problem in an exporter's output.
type ParseError struct {
	Source string
	Line   int
	Msg    string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Source, e.Msg)
}

// Parse reads DCGM exporter output (Prometheus text format) from r;
// source names it in errors. A GPU is identified by its Hostname and
// gpu labels (hostname is defaultHost when the exporter has no Hostname
// label, as older versions); samples of other metrics, and of entities
// without a gpu label, are ignored.
func Parse(source, defaultHost string, r io.Reader) ([]GPU, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		var pe expfmt.ParseError
		// The parser's messages quote what they refused whole: a page
		// of megabytes could make one error of megabytes each scrape.
		if errors.As(err, &pe) {
			return nil, &ParseError{Source: source, Line: pe.Line, Msg: quote.Message(pe.Msg)}
		}
		return nil, &ParseError{Source: source, Msg: quote.Message(err.Error())}
	}
	byKey := map[string]*GPU{}
	get := func(m *dto.Metric) (*GPU, error) {
		var host, uuid, idx string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "Hostname":
				host = l.GetValue()
			case "UUID":
				uuid = l.GetValue()
			case "gpu":
				idx = l.GetValue()
			}
		}
		if idx == "" {
			return nil, nil
		}
		n, err := strconv.Atoi(idx)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("label gpu=%s is not a device index", quote.Value(idx))
		}
		if host == "" {
			host = defaultHost
		}
		k := host + "/" + idx
		g := byKey[k]
		if g == nil {
			g = &GPU{Hostname: host, GPU: n, UUID: uuid, SMClock: math.NaN(), Power: math.NaN(), Temp: math.NaN(), Util: math.NaN()}
			byKey[k] = g
		} else if uuid != "" && g.UUID != "" && uuid != g.UUID {
			return nil, fmt.Errorf("GPU %s is %s in one sample and %s in another", quote.Text(k), quote.Value(g.UUID), quote.Value(uuid))
		} else if g.UUID == "" {
			g.UUID = uuid
		}
		return g, nil
	}
	for _, name := range []string{MetricSMClock, MetricPower, MetricTemp, MetricUtil, MetricThrottleReason, MetricEventReasons} {
		f := fams[name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			g, err := get(m)
			if err != nil {
				return nil, &ParseError{Source: source, Msg: fmt.Sprintf("%s: %v", name, err)}
			}
			if g == nil {
				continue
			}
			v := sampleValue(m)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			switch name {
			case MetricSMClock:
				g.SMClock = v
			case MetricPower:
				g.Power = v
			case MetricTemp:
				g.Temp = v
			case MetricUtil:
				g.Util = v
			default:
				if v < 0 || v != math.Trunc(v) || v >= 1<<53 {
					return nil, &ParseError{Source: source, Msg: fmt.Sprintf("%s for GPU %s: %v is not a bitmask", name, g.Key(), v)}
				}
				g.Reasons |= Reason(v)
				g.HasReasons = true
			}
		}
	}
	out := make([]GPU, 0, len(byKey))
	for _, g := range byKey {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Hostname != out[j].Hostname {
			return out[i].Hostname < out[j].Hostname
		}
		return out[i].GPU < out[j].GPU
	})
	return out, nil
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// MaxScrapeBytes bounds the page Scrape reads. An exporter's page is
// about 9 KB a GPU (a MIG instance counts as one): a megabyte for 16 GPUs
// of 7 instances each. The parser holds about seven times the page
// while it reads it, and the scheduler reads eight pages at once.
const MaxScrapeBytes = 8 << 20

// Scrape fetches and parses one exporter endpoint (its /metrics URL).
// A page over MaxScrapeBytes is an error.
// defaultHost names GPUs of an exporter without a Hostname label.
func Scrape(ctx context.Context, c *http.Client, url, defaultHost string) ([]GPU, error) {
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxScrapeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the page: %w", url, err)
	}
	if len(b) > MaxScrapeBytes {
		return nil, fmt.Errorf("%s: a page over %d bytes, far more than an exporter's; not read", url, MaxScrapeBytes)
	}
	return Parse(url, defaultHost, bytes.NewReader(b))
}

// Finding is what Assess concludes about one GPU.
type Finding struct {
	GPU GPU
	// Throttled lists the throttling reasons set (Throttling).
	Throttled []string
	// PowerCapped is the software power cap reason.
	PowerCapped bool
	// ClockRatio is the GPU's SM clock over the median SM clock of the
	// busy (not idle) GPUs assessed together; NaN without clocks.
	ClockRatio float64
	// LowClock is ClockRatio below the threshold on a busy GPU.
	LowClock bool
	// Prior is the slowdown the clock suggests for compute-bound work
	// (1 / ClockRatio, at least 1) for a flagged busy GPU, 1 otherwise
	// (an idle GPU's clock is its idle clock, whatever else it shows): a
	// prior for the learner, not a measurement.
	Prior float64
}

// Degraded says whether the GPU is flagged.
func (f *Finding) Degraded() bool { return len(f.Throttled) > 0 || f.LowClock }

// Assess flags every GPU: throttling reasons, and an SM clock under
// lowClock (0 means 0.9) times the busy GPUs' median.
func Assess(gpus []GPU, lowClock float64) []Finding {
	if lowClock <= 0 {
		lowClock = 0.9
	}
	var busy []float64
	for _, g := range gpus {
		if !math.IsNaN(g.SMClock) && !g.Idle() && g.SMClock > 0 {
			busy = append(busy, g.SMClock)
		}
	}
	med := math.NaN()
	if len(busy) > 0 {
		slices.Sort(busy)
		n := len(busy)
		med = busy[n/2]
		if n%2 == 0 {
			med = busy[n/2-1]/2 + busy[n/2]/2
		}
	}
	out := make([]Finding, len(gpus))
	for i, g := range gpus {
		f := Finding{GPU: g, ClockRatio: math.NaN(), Prior: 1}
		f.Throttled = (g.Reasons & Throttling).Names()
		f.PowerCapped = g.Reasons&ReasonSWPowerCap != 0
		if !math.IsNaN(g.SMClock) && med > 0 {
			f.ClockRatio = g.SMClock / med
			f.LowClock = !g.Idle() && f.ClockRatio < lowClock
		}
		if f.Degraded() && f.ClockRatio > 0 && !g.Idle() {
			f.Prior = math.Max(1, 1/f.ClockRatio)
		}
		out[i] = f
	}
	return out
}

// Summary is one line per flagged GPU.
func Summary(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		if !f.Degraded() {
			continue
		}
		fmt.Fprintf(&b, "%s (%s):", f.GPU.Key(), f.GPU.UUID)
		if len(f.Throttled) > 0 {
			fmt.Fprintf(&b, " throttled by %s;", strings.Join(f.Throttled, ","))
		}
		if !math.IsNaN(f.ClockRatio) {
			fmt.Fprintf(&b, " SM clock %.0f MHz, %.0f%% of the median busy GPU;", f.GPU.SMClock, 100*f.ClockRatio)
		}
		fmt.Fprintf(&b, " prior slowdown %.2f\n", f.Prior)
	}
	return b.String()
}
