package telemetry

import (
	"math"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the latest findings as pal_gpu_* metrics, labelled
// node, gpu (device index) and uuid:
//
//	pal_gpu_degraded         1 when throttled or at a low clock, else 0
//	pal_gpu_throttled        1 per throttling reason set (label reason)
//	pal_gpu_clock_ratio      SM clock / median busy GPU's (absent without clocks)
//	pal_gpu_prior_slowdown   the slowdown prior Assess derives
type Collector struct {
	mu       sync.Mutex
	findings []Finding

	degraded, throttled, ratio, prior *prometheus.Desc
}

// NewCollector makes an empty collector; Set fills it.
func NewCollector() *Collector {
	l := []string{"node", "gpu", "uuid"}
	return &Collector{
		degraded:  prometheus.NewDesc("pal_gpu_degraded", "1 when DCGM shows the GPU throttled or at a low SM clock.", l, nil),
		throttled: prometheus.NewDesc("pal_gpu_throttled", "1 for each thermal or power slowdown reason DCGM reports for the GPU.", append(l, "reason"), nil),
		ratio:     prometheus.NewDesc("pal_gpu_clock_ratio", "SM clock over the median SM clock of the busy GPUs scraped.", l, nil),
		prior:     prometheus.NewDesc("pal_gpu_prior_slowdown", "Slowdown the SM clock suggests for compute-bound work (1: none); under pal scheduler, an idle GPU still flagged shows the slowdown it last showed busy.", l, nil),
	}
}

// Set replaces the findings exported.
func (c *Collector) Set(fs []Finding) {
	c.mu.Lock()
	c.findings = append([]Finding(nil), fs...)
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.degraded
	ch <- c.throttled
	ch <- c.ratio
	ch <- c.prior
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.findings {
		l := []string{f.GPU.Hostname, strconv.Itoa(f.GPU.GPU), f.GPU.UUID}
		d := 0.0
		if f.Degraded() {
			d = 1
		}
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, d, l...)
		for _, r := range f.Throttled {
			ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.GaugeValue, 1, append(l, r)...)
		}
		if !math.IsNaN(f.ClockRatio) {
			ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, f.ClockRatio, l...)
		}
		ch <- prometheus.MustNewConstMetric(c.prior, prometheus.GaugeValue, f.Prior, l...)
	}
}
