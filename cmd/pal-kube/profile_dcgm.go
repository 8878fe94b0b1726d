package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/palsched/pal/internal/jsonround"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/profilebench"
	"github.com/palsched/pal/telemetry"
	"github.com/palsched/pal/variability"
)

func newProfileDCGMCmd() *cobra.Command {
	var urls []string
	var output string
	var lowClock float64
	var timeout time.Duration
	var concurrency int
	var allowPartial bool
	var scoresFile string
	var at float64
	svc := dcgmService{port: kube.DefaultConfig().DCGM.Port, path: kube.DefaultConfig().DCGM.Path}
	cmd := &cobra.Command{
		Use:   "dcgm",
		Short: "Flag throttled or degraded GPUs from NVIDIA DCGM exporter endpoints",
		Long: `Scrape DCGM exporter /metrics endpoints (Prometheus text format) and flag
each GPU that DCGM reports throttled (clock event reasons hw_slowdown,
sw_thermal, hw_thermal, hw_power_brake; read from
DCGM_FI_DEV_CLOCKS_EVENT_REASONS or the older
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) or whose SM clock is under
--low-clock times the median SM clock of the busy GPUs scraped (busy: not
reported gpu_idle, and DCGM_FI_DEV_GPU_UTIL not 0). A software power
cap is shown, not flagged.

The exporters are the --url URLs, or the endpoints of the exporters'
Service: --service NAMESPACE/NAME (such as
gpu-operator/nvidia-dcgm-exporter) lists its EndpointSlices in the
cluster --kubeconfig names (default: $KUBECONFIG, ~/.kube/config, then
in-cluster; it needs to list EndpointSlices and get Services there),
and scrapes each ready endpoint's address at --port and --path (9400
and /metrics, the scheduler's dcgm.port and dcgm.path), as the
scheduler's dcgm.service does. An endpoint's GPUs are named by the
endpoint's node and the gpu label; a --url's by the exporter's Hostname
label (the URL's host when there is none), which is the node's name
only when the exporter runs with NODE_NAME set. An endpoint the Service
says is not ready is not scraped: it is named, with its node, as an
exporter not read is (below). A Service that does not exist, or has no
endpoint, is an error. --service and --url together scrape both, each
URL once (a --url that is also an endpoint is named by its node).

-o prometheus writes the findings as pal_gpu_degraded, pal_gpu_throttled,
pal_gpu_clock_ratio and pal_gpu_prior_slowdown metrics.

-o hints writes what the scrape says as a pal sim --gpu-hints file: one row
per flagged GPU, from --at seconds on, at its prior slowdown. Its GPU ids
are those of the score table given with --gpu-scores (the one pal sim will
believe): a scraped GPU is found there by its UUID, else by node name and
gpu index (a table pal profile build wrote for named nodes), else, for a
table of integer nodes, by the exporter's Hostname as the node number. A
flagged GPU the table does not have is an error.

The exporters are scraped --concurrency at a time, each given --timeout
to answer. An exporter that cannot be read (refused, hung past
--timeout, an HTTP error, a page that does not parse or has no GPU in
it) does not stop the others: it is named with its error on stderr
('failed: DCGM exporter URL: ...', 'URL (node NODE)' for a --service
endpoint) and, except in -o json, in a
'# unmeasured: DCGM exporter URL: ...' comment of the output, as
pal-kube profile bench names the GPUs it could not measure. Its GPUs
are then not assessed, and the command exits non-zero, unless
--allow-partial. -o hints, the file pal sim believes, is then not
written unless --allow-partial (a GPU of an exporter not read would go
unflagged, and nothing in the file would show it). When no exporter
can be read the command fails whatever the flags.`,
		Example: `  pal-kube profile dcgm --url http://gpu-node-001:9400/metrics --url http://gpu-node-002:9400/metrics
  pal-kube profile dcgm --service gpu-operator/nvidia-dcgm-exporter
  pal-kube profile dcgm --url http://localhost:9400/metrics -o prometheus
  pal-kube profile dcgm --url http://gpu-node-001:9400/metrics -o hints --gpu-scores built.csv > hints.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(urls) == 0 && svc.service == "" {
				return fmt.Errorf("--url or --service is required (a DCGM exporter's /metrics URL, or the exporters' Service as NAMESPACE/NAME)")
			}
			if err := svc.check(cmd.Flags()); err != nil {
				return err
			}
			switch output {
			case "table", "json", "prometheus":
				if scoresFile != "" {
					return fmt.Errorf("--gpu-scores names the GPUs of -o hints; -o %s does not use it", output)
				}
			case "hints":
				if scoresFile == "" {
					return fmt.Errorf("-o hints needs --gpu-scores: the score table whose GPU ids the hints use")
				}
				if !(at >= 0) || math.IsInf(at, 0) {
					return fmt.Errorf("--at %v: want seconds >= 0", at)
				}
			default:
				return fmt.Errorf("--output %q: want table, json, prometheus or hints", output)
			}
			var scores *variability.GPUScores
			if scoresFile != "" {
				var err error
				if scores, err = variability.ReadGPUScoresFile(scoresFile); err != nil {
					return err
				}
			}
			if concurrency < 1 {
				return fmt.Errorf("--concurrency %d: want at least 1", concurrency)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %v: want a positive duration, such as 10s", timeout)
			}
			targets, err := dcgmTargets(urls, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			targets, unread, err := svc.targets(ctx, targets, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			res := append(telemetry.ScrapeAll(ctx, dcgmHTTPClient(), targets, concurrency, timeout), unread...)
			return writeDCGMResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, dcgmOutput{output: output, lowClock: lowClock,
				scores: scores, scoresFile: scoresFile, at: at, allowPartial: allowPartial})
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&urls, "url", nil, "DCGM exporter /metrics URL (repeat or comma-separate)")
	f.Lookup("url").DefValue = ""
	f.StringVar(&svc.service, "service", "", "the DCGM exporters' Service as NAMESPACE/NAME: each ready endpoint of its EndpointSlices is scraped, its GPUs named by the endpoint's node (with --url: both, each URL once)")
	f.IntVar(&svc.port, "port", svc.port, "with --service: the port its endpoints are scraped at")
	f.StringVar(&svc.path, "path", svc.path, "with --service: the path its endpoints are scraped at")
	f.StringVar(&svc.kubeconfig, "kubeconfig", "", "with --service: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	f.Float64Var(&lowClock, "low-clock", 0.9, "flag a busy GPU whose SM clock is under this times the busy GPUs' median")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "time allowed for each exporter's scrape; one not read by then is named as not read, and the others go on")
	f.IntVar(&concurrency, "concurrency", 16, "exporters scraped at once")
	f.BoolVar(&allowPartial, "allow-partial", false, "accept a result without the exporters that could not be read: exit 0, and write -o hints all the same, its comments naming them (default: exit non-zero, -o hints not written)")
	f.StringVarP(&output, "output", "o", DefaultOutput, "table, json, prometheus or hints (a pal sim --gpu-hints file)")
	f.StringVar(&scoresFile, "gpu-scores", "", "with -o hints: the score table (GPU_ID,Node_ID,...) whose GPU ids the hints use")
	f.Float64Var(&at, "at", 0, "with -o hints: the time_s, in simulated seconds, the hints apply from")
	return cmd
}

// dcgmClientFor opens the cluster whose --service is scraped, as
// profile bench opens its cluster; tests replace it.
var dcgmClientFor = func(kubeconfig string) (kubernetes.Interface, error) {
	return profileClient(kubeconfig, "pal-profile-dcgm")
}

// dcgmHTTPClient scrapes the exporters; each scrape has its own timeout
// (telemetry.ScrapeAll), the client none of its own to cut a long page
// short. Tests replace it.
var dcgmHTTPClient = func() *http.Client { return &http.Client{} }

// dcgmService is what --service, --port, --path and --kubeconfig say.
type dcgmService struct {
	service, kubeconfig, path string
	port                      int
}

// check refuses a bad --service, --port or --path, and those flags
// without --service, before anything is scraped.
func (s dcgmService) check(f *pflag.FlagSet) error {
	if s.service == "" {
		for _, n := range []string{"port", "path", "kubeconfig"} {
			if f.Changed(n) {
				return fmt.Errorf("--%s is for --service: the port, path and cluster of its endpoints", n)
			}
		}
		return nil
	}
	if _, _, err := kube.ParseDCGMService(s.service); err != nil {
		return fmt.Errorf("--service %s: %v", quote.Value(s.service), err)
	}
	if !kube.DCGMPortOK(s.port) {
		return fmt.Errorf("--port %d: want 1..65535", s.port)
	}
	if !kube.DCGMPathOK(s.path) {
		return fmt.Errorf("--path %s: want a path starting with /, such as /metrics", quote.Value(s.path))
	}
	return nil
}

// targets adds the Service's endpoints to the --url targets: the ready
// ones to scrape, each named by its node; the others as results not
// read, naming their node, as an exporter that does not answer is. A
// --url that is also an endpoint is scraped once, its GPUs named by
// the endpoint's node. A Service that does not exist, or has no
// endpoint, is an error.
func (s dcgmService) targets(ctx context.Context, targets []telemetry.Target, stderr io.Writer) ([]telemetry.Target, []telemetry.Scraped, error) {
	if s.service == "" {
		return targets, nil, nil
	}
	cs, err := dcgmClientFor(s.kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--service %s: %v", s.service, err)
	}
	ready, notReady, err := kube.DCGMServiceTargets(ctx, cs, s.service, s.port, s.path)
	if err != nil {
		return nil, nil, fmt.Errorf("--service %s: %v", s.service, err)
	}
	if len(ready)+len(notReady) == 0 {
		ns, name, _ := kube.ParseDCGMService(s.service)
		_, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("--service %s: no Service %q in namespace %q", s.service, name, ns)
		}
		return nil, nil, fmt.Errorf("--service %s: the Service has no endpoints (no EndpointSlice labelled %s=%s in %s has an address): is its exporter DaemonSet running, and does the Service select its pods?",
			s.service, discoveryv1.LabelServiceName, name, ns)
	}
	at := map[string]int{}
	for i, t := range targets {
		at[t.URL] = i
	}
	given := func(t telemetry.Target) bool {
		i, ok := at[t.URL]
		if ok { // a --url is scraped, whatever the Service says of it
			targets[i].Node = t.Node
			fmt.Fprintf(stderr, "--url %s is also an endpoint of --service %s (node %s): scraped once, its GPUs named by that node\n", t.URL, s.service, t.Node)
		}
		return ok
	}
	for _, t := range ready {
		if !given(t) {
			targets = append(targets, t)
		}
	}
	var unread []telemetry.Scraped
	for _, t := range notReady {
		if !given(t) {
			unread = append(unread, telemetry.Scraped{Target: t, Err: fmt.Errorf("not ready in Service %s's EndpointSlices: not scraped", s.service)})
		}
	}
	return targets, unread, nil
}

// dcgmTargets are the --url values, checked to be http(s) URLs, each
// once (a repeat is said on stderr and scraped once).
func dcgmTargets(urls []string, stderr io.Writer) ([]telemetry.Target, error) {
	var out []telemetry.Target
	seen := map[string]bool{}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("--url %s: not an http(s) URL such as http://gpu-node-001:9400/metrics", quote.Value(u))
		}
		if seen[u] {
			fmt.Fprintf(stderr, "--url %s given twice: scraped once\n", u)
			continue
		}
		seen[u] = true
		out = append(out, telemetry.Target{URL: u})
	}
	return out, nil
}

// dcgmOutput is what shapes profile dcgm's output.
type dcgmOutput struct {
	output       string
	lowClock     float64
	scores       *variability.GPUScores
	scoresFile   string
	at           float64
	allowPartial bool
}

// writeDCGMResult names the exporters not read, assesses the GPUs of
// the others together and writes the findings; a partial result fails
// unless o.allowPartial, and -o hints is then not written.
func writeDCGMResult(stdout, stderr io.Writer, res []telemetry.Scraped, o dcgmOutput) error {
	var read, notes []string
	for i := range res {
		r := &res[i]
		if r.Err == nil && len(r.GPUs) == 0 {
			r.Err = fmt.Errorf("%s: no GPU in its page (no %s or other DCGM sample with a gpu label): is it a DCGM exporter's /metrics?", r.URL, telemetry.MetricSMClock)
		}
		if r.Err != nil {
			why := strings.Join(strings.Fields(r.Err.Error()), " ")
			name := r.URL
			if r.Node != "" { // a --service endpoint's
				name += " (node " + r.Node + ")"
			}
			fmt.Fprintf(stderr, "failed: DCGM exporter %s: %s\n", name, why)
			notes = append(notes, fmt.Sprintf("DCGM exporter %s: its GPUs are not assessed (%s)", name, why))
			continue
		}
		read = append(read, r.URL)
	}
	if len(read) == 0 {
		return fmt.Errorf("none of the %d DCGM exporters was read (each named above)", len(res))
	}
	all, dups := telemetry.Merge(res)
	if len(dups) > 0 {
		fmt.Fprintf(stderr, "%d GPUs reported by two exporters, each assessed as the first reported it: %s\n", len(dups), strings.Join(dups[:min(len(dups), 3)], "; "))
	}
	partial := ""
	if len(notes) > 0 {
		fmt.Fprintf(stderr, "%d of %d DCGM exporters read (%d GPUs); %d not read, their GPUs not assessed\n", len(read), len(res), len(all), len(notes))
		if !o.allowPartial {
			partial = fmt.Sprintf("%d of %d DCGM exporters not read (named above)", len(notes), len(res))
		}
	}
	fs := telemetry.Assess(all, o.lowClock)
	if o.output == "hints" {
		if partial != "" {
			return fmt.Errorf("%s; -o hints not written (--allow-partial writes it, naming them in its comments): a GPU of an exporter not read would go unflagged, and nothing in the file would show it", partial)
		}
		return writeDCGMHints(stdout, fs, o.scores, o.scoresFile, read, notes, o.lowClock, o.at)
	}
	if err := writeDCGM(stdout, o.output, fs, notes); err != nil {
		return err
	}
	if partial != "" {
		return fmt.Errorf("%s; --allow-partial accepts the rest", partial)
	}
	return nil
}

// writeDCGMHints writes the flagged GPUs as a --gpu-hints file, each
// located in the table pal sim will believe, with the inputs that shaped
// it, and the exporters not read, as comments.
func writeDCGMHints(w io.Writer, fs []telemetry.Finding, scores *variability.GPUScores, table string, urls, notes []string, lowClock, at float64) error {
	type row struct {
		gpu  int
		prio float64
	}
	var rows []row
	how := map[string]int{}
	for _, f := range fs {
		if !(f.Prior > 1) {
			continue
		}
		g, by, ok := scores.Locate(f.GPU.UUID, f.GPU.Hostname, f.GPU.GPU)
		if !ok {
			return fmt.Errorf("%s: flagged GPU %s (UUID %q) is not in the table: no GPU with that uuid, node_name and gpu_index, or node number and index", table, f.GPU.Key(), f.GPU.UUID)
		}
		how[by]++
		rows = append(rows, row{g, f.Prior})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.gpu - b.gpu })
	for i := 1; i < len(rows); i++ {
		if rows[i].gpu == rows[i-1].gpu {
			return fmt.Errorf("%s: two scraped GPUs are GPU %d of the table", table, rows[i].gpu)
		}
	}
	var bys []string
	for _, k := range []string{"uuid", "node_name and gpu_index", "node number and index"} {
		if how[k] > 0 {
			bys = append(bys, fmt.Sprintf("%d by %s", how[k], k))
		}
	}
	located := "none flagged"
	if len(bys) > 0 {
		located = strings.Join(bys, ", ")
	}
	fmt.Fprintf(w, "# pal-kube profile dcgm -o hints: %d of %d scraped GPUs flagged (--low-clock %g), from %s\n", len(rows), len(fs), lowClock, strings.Join(urls, " "))
	fmt.Fprintf(w, "# GPU ids of %s (%s); from time_s %s on\n", table, located, strconv.FormatFloat(at, 'f', -1, 64))
	for _, n := range notes {
		fmt.Fprintln(w, profilebench.UnmeasuredComment+n)
	}
	fmt.Fprintln(w, "time_s,gpu,slowdown")
	for _, r := range rows {
		fmt.Fprintf(w, "%s,%d,%s\n", strconv.FormatFloat(at, 'f', -1, 64), r.gpu, strconv.FormatFloat(r.prio, 'f', 4, 64))
	}
	return nil
}

// writeDCGM writes the findings; notes (the exporters not read) go
// first as comments (profile bench's '# unmeasured:'), except in json,
// which has none.
func writeDCGM(w io.Writer, output string, fs []telemetry.Finding, notes []string) error {
	if output != "json" {
		for _, n := range notes {
			fmt.Fprintln(w, profilebench.UnmeasuredComment+n)
		}
	}
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
		return jsonround.Encode(w, rows, "  ")
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
