package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/spf13/cobra"

	"github.com/palsched/pal/telemetry"
)

func newProfileDCGMCmd() *cobra.Command {
	var urls []string
	var output string
	var lowClock float64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "dcgm",
		Short: "Flag throttled or degraded GPUs from NVIDIA DCGM exporter endpoints",
		Long: `Scrape DCGM exporter /metrics endpoints (Prometheus text format) and flag
each GPU that DCGM reports throttled (clock event reasons hw_slowdown,
sw_thermal, hw_thermal, hw_power_brake; read from
DCGM_FI_DEV_CLOCKS_EVENT_REASONS or the older
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) or whose SM clock is under
--low-clock times the median SM clock of the busy GPUs scraped. GPUs are
named by the exporter's Hostname and gpu labels (the URL's host when
there is no Hostname label). A software power cap is shown, not flagged.

-o prometheus writes the findings as pal_gpu_degraded, pal_gpu_throttled,
pal_gpu_clock_ratio and pal_gpu_prior_slowdown metrics.`,
		Example: `  pal profile dcgm --url http://gpu-node-001:9400/metrics --url http://gpu-node-002:9400/metrics
  pal profile dcgm --url http://localhost:9400/metrics -o prometheus`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(urls) == 0 {
				return fmt.Errorf("--url is required (a DCGM exporter's /metrics URL)")
			}
			switch output {
			case "table", "json", "prometheus":
			default:
				return fmt.Errorf("--output %q: want table, json or prometheus", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			c := &http.Client{Timeout: timeout}
			var all []telemetry.GPU
			for _, u := range urls {
				host := u
				if i := strings.Index(host, "://"); i >= 0 {
					host = host[i+3:]
				}
				host, _, _ = strings.Cut(host, "/")
				host, _, _ = strings.Cut(host, ":")
				gs, err := telemetry.Scrape(ctx, c, u, host)
				if err != nil {
					return err
				}
				all = append(all, gs...)
			}
			return writeDCGM(cmd.OutOrStdout(), output, telemetry.Assess(all, lowClock))
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&urls, "url", nil, "DCGM exporter /metrics URL (repeat or comma-separate)")
	f.Lookup("url").DefValue = ""
	f.Float64Var(&lowClock, "low-clock", 0.9, "flag a busy GPU whose SM clock is under this times the busy GPUs' median")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "time allowed for all scrapes")
	f.StringVarP(&output, "output", "o", DefaultOutput, "table, json or prometheus")
	return cmd
}

func writeDCGM(w io.Writer, output string, fs []telemetry.Finding) error {
	switch output {
	case "prometheus":
		reg := prometheus.NewPedanticRegistry()
		c := telemetry.NewCollector()
		c.Set(fs)
		if err := reg.Register(c); err != nil {
			return err
		}
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return err
			}
		}
		return nil
	case "json":
		type row struct {
			Node        string   `json:"node"`
			GPU         int      `json:"gpu"`
			UUID        string   `json:"uuid"`
			SMClock     *float64 `json:"sm_clock_mhz,omitempty"`
			ClockRatio  *float64 `json:"clock_ratio,omitempty"`
			Throttled   []string `json:"throttled,omitempty"`
			PowerCapped bool     `json:"power_capped"`
			Degraded    bool     `json:"degraded"`
			Prior       float64  `json:"prior_slowdown"`
		}
		opt := func(v float64) *float64 {
			if math.IsNaN(v) {
				return nil
			}
			return &v
		}
		rows := []row{}
		for _, f := range fs {
			rows = append(rows, row{f.GPU.Hostname, f.GPU.GPU, f.GPU.UUID, opt(f.GPU.SMClock), opt(f.ClockRatio), f.Throttled, f.PowerCapped, f.Degraded(), f.Prior})
		}
		return writeJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "node\tgpu\tuuid\tsm_clock_mhz\tclock_ratio\treasons\tdegraded\tprior")
	for _, f := range fs {
		reasons := "-"
		if n := telemetry.Reason(f.GPU.Reasons).Names(); len(n) > 0 {
			reasons = strings.Join(n, ",")
		}
		deg := ""
		if f.Degraded() {
			deg = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.3f\t%s\t%s\t%.2f\n", f.GPU.Hostname, f.GPU.GPU, f.GPU.UUID, f.GPU.SMClock, f.ClockRatio, reasons, deg, f.Prior)
	}
	return tw.Flush()
}
