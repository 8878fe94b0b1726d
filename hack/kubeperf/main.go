// Command kubeperf measures pal-kube scheduler on a dev cluster, alone or next
// to kube-scheduler of the same Kubernetes version (--compare): pods bound
// per second, create-to-bound latency (p50, p99), the CPU seconds the
// scheduler and the kube-apiserver spent, gangs split over nodes they
// would fit in one of, and the Scheduled events posted for the bound
// pods. Each scheduler runs alone on a fresh dev cluster per scenario, so
// the two never compete, at the same client rate limits. Run it through
// hack/kube-perf.sh.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/metrics"
)

// scenario is one workload: gangs of size one-GPU pods on nodes x gpus.
// sizes, when set, gives each gang's size (the mixed scenario); otherwise
// every gang has size pods.
type scenario struct {
	name        string
	what        string
	nodes, gpus int
	gangs, size int
	sizes       []int
}

func (sc scenario) pods() int {
	if sc.sizes != nil {
		n := 0
		for _, s := range sc.sizes {
			n += s
		}
		return n
	}
	return sc.gangs * sc.size
}

func (sc scenario) gangSize(g int) int {
	if sc.sizes != nil {
		return sc.sizes[g]
	}
	return sc.size
}

// multiPod is how many gangs have more than one pod.
func (sc scenario) multiPod() int {
	n := 0
	for g := range sc.gangs {
		if sc.isGang(g) {
			n++
		}
	}
	return n
}

// A gang is a real gang (placed all or nothing, to be kept on one node)
// when it has more than one pod.
func (sc scenario) isGang(g int) bool { return sc.gangSize(g) > 1 }

const (
	schedPAL  = "pal"
	schedKube = "kube-scheduler"
	// schedKubeGang is kube-scheduler in its best gang configuration:
	// GenericWorkload and TopologyAwareWorkloadScheduling on the
	// apiserver and the scheduler, each PodGroup constrained to one
	// kubernetes.io/hostname, and the NodeResourcesFit plugin scoring
	// MostAllocated on nvidia.com/gpu (packing rather than spreading).
	schedKubeGang = "kube-scheduler-gang"
	// schedNoop is the no-op binder (noop.go): pending pods bound in
	// order to any node with room, no scheduling; the apiserver's own
	// ceiling.
	schedNoop = "noop"
	ns        = "perf"
	gangLabel = "kubeperf.pal.io/gang"
)

type options struct {
	pal, kubeScheduler string
	qps                float32
	burst              int
	timeout, eventWait time.Duration
	runFor             time.Duration
	placement          string
	keep               bool
	palProfile         string
	run                int // which run (for file names)
	palGangs           string
	noopWorkers        int
	// backlog: every pod exists before the scheduler starts, and the
	// clock runs from its start; the rate is then the scheduler's (and
	// the apiserver's), not how fast the benchmark creates pods.
	backlog bool
}

func main() {
	compare := flag.Bool("compare", false, "run the peer scenarios (plain, gangs8, gangs4) against pal, kube-scheduler in its default and its gang configuration, and the no-op binder")
	scen := flag.String("scenarios", "", "comma-separated scenarios: plain, gangs8, gangs4, mixed, scale (default: mixed; with --compare: plain,gangs8,gangs4)")
	scheds := flag.String("schedulers", "", "comma-separated: pal, kube-scheduler, kube-scheduler-gang, noop (default: pal; with --compare: all four)")
	noopKubeconfig := flag.String("noop-binder", "", "run as the no-op binder against this kubeconfig (kubeperf starts itself so for the noop scheduler)")
	noopWorkers := flag.Int("noop-workers", 32, "the no-op binder's bind workers (pal's bindWorkers default)")
	runs := flag.Int("runs", 1, "repeat every scenario this many times; the table gives medians")
	nodes := flag.Int("nodes", 1000, "mixed scenario: kwok nodes")
	gpus := flag.Int("gpus", 8, "mixed scenario: GPUs per node")
	pods := flag.Int("pods", 10000, "mixed scenario: pods to create in gangs of 1-8")
	seed := flag.Uint64("seed", 1, "mixed scenario: seed of the gang sizes")
	var o options
	flag.StringVar(&o.pal, "pal", "", "pal-kube binary, which runs the scheduler (built by hack/kube-perf.sh)")
	flag.StringVar(&o.kubeScheduler, "kube-scheduler", "", "kube-scheduler binary (built by hack/kube-scheduler.sh)")
	qps := flag.Float64("qps", 200, "client QPS of either scheduler (pal: qps and eventQPS; kube-scheduler: clientConnection.qps)")
	flag.IntVar(&o.burst, "burst", 400, "client burst of either scheduler")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on a scenario when its pods are not all bound by then")
	flag.DurationVar(&o.eventWait, "event-wait", 90*time.Second, "after all are bound, wait at most this long for their Scheduled events")
	flag.DurationVar(&o.runFor, "run", 0, "how long each pod runs once bound (kwok finishes it; default: 5s in the mixed scenario, so not all can run at once, 1h in the others, which all fit)")
	flag.StringVar(&o.placement, "placement", "pal", "pal's placement")
	flag.BoolVar(&o.keep, "keep", false, "keep each cluster's directory (logs) and print it")
	flag.StringVar(&o.palGangs, "pal-gangs", "annotations", "how pal's gangs are written: annotations (pal.io/gang) or podgroups (native PodGroups, as for kube-scheduler)")
	flag.BoolVar(&o.backlog, "backlog", false, "create every pod before the scheduler starts and time from its start to the last bind (the bind rate without the creation rate in it)")
	flag.StringVar(&o.palProfile, "pal-cpuprofile", "", "write pal-kube scheduler's CPU profile of each run to FILE.<scenario>.<run>")
	flag.Parse()
	o.qps = float32(*qps)
	o.noopWorkers = *noopWorkers
	if *noopKubeconfig != "" {
		if err := runNoopBinder(*noopKubeconfig, o.qps, o.burst, o.noopWorkers); err != nil {
			fail(err)
		}
		return
	}
	if *scen == "" {
		*scen = "mixed"
		if *compare {
			*scen = "plain,gangs8,gangs4"
		}
	}
	if *scheds == "" {
		*scheds = schedPAL
		if *compare {
			*scheds = strings.Join([]string{schedKube, schedKubeGang, schedNoop, schedPAL}, ",")
		}
	}
	all := map[string]scenario{
		"plain":  {name: "plain", what: "5,000 one-GPU pods, 1,000 nodes x 8 GPUs", nodes: 1000, gpus: 8, gangs: 5000, size: 1},
		"gangs8": {name: "gangs8", what: "500 gangs of 8, 1,000 nodes x 8 GPUs", nodes: 1000, gpus: 8, gangs: 500, size: 8},
		"gangs4": {name: "gangs4", what: "100 gangs of 4, 100 nodes x 8 GPUs", nodes: 100, gpus: 8, gangs: 100, size: 4},
		"mixed":  mixed(*nodes, *gpus, *pods, *seed),
		"scale":  scale(*nodes, *gpus),
	}
	var list []scenario
	for _, n := range strings.Split(*scen, ",") {
		sc, ok := all[strings.TrimSpace(n)]
		if !ok {
			fail(fmt.Errorf("--scenarios: unknown scenario %q (plain, gangs8, gangs4, mixed, scale)", n))
		}
		list = append(list, sc)
	}
	var who []string
	for _, n := range strings.Split(*scheds, ",") {
		n = strings.TrimSpace(n)
		switch n {
		case schedPAL:
			if o.pal == "" {
				fail(fmt.Errorf("--pal: the pal binary is needed"))
			}
		case schedKube, schedKubeGang:
			if o.kubeScheduler == "" {
				fail(fmt.Errorf("--kube-scheduler: the kube-scheduler binary is needed"))
			}
		case schedNoop:
		default:
			fail(fmt.Errorf("--schedulers: unknown scheduler %q (pal, kube-scheduler, kube-scheduler-gang, noop)", n))
		}
		who = append(who, n)
	}
	if o.palGangs != "annotations" && o.palGangs != "podgroups" {
		fail(fmt.Errorf("--pal-gangs: annotations or podgroups, got %q", o.palGangs))
	}
	if *runs < 1 {
		fail(fmt.Errorf("--runs: want at least 1"))
	}
	clock := "from the first create"
	if o.backlog {
		clock = "backlog: every pod created before the scheduler starts, timed from its start"
	}
	fmt.Printf("kubeperf: scenarios %s, schedulers %s, %d run(s), client QPS %g / burst %d for either scheduler, timeout %v per scenario, pal placement %s, pal gangs as %s, %s\n",
		*scen, *scheds, *runs, o.qps, o.burst, o.timeout, o.placement, o.palGangs, clock)
	res := map[string][]result{}
	for r := range *runs {
		for _, sc := range list {
			for _, w := range who {
				fmt.Printf("\n== run %d/%d: %s (%s) with %s; load average %s\n", r+1, *runs, sc.name, sc.what, w, loadavg())
				o.run = r + 1
				x, err := measure(sc, w, o)
				if err != nil {
					fmt.Printf("   FAILED: %v\n", err)
					x.failed = true
				}
				x.print()
				res[sc.name+"|"+w] = append(res[sc.name+"|"+w], x)
			}
		}
	}
	fmt.Printf("\nMedians over %d run(s); load average at the end %s\n\n", *runs, loadavg())
	fmt.Println("| scenario | scheduler | pods bound/s | create-to-bound p50 / p99 (s) | scheduler CPU (s) | scheduler peak RSS (MiB) | apiserver CPU (s) | split gangs | Scheduled events | apiserver writes per pod |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, sc := range list {
		for _, w := range who {
			xs := res[sc.name+"|"+w]
			med := func(f func(result) float64) float64 {
				var v []float64
				for _, x := range xs {
					if !x.failed {
						v = append(v, f(x))
					}
				}
				if len(v) == 0 {
					return 0
				}
				slices.Sort(v)
				return metrics.Quantile(v, 0.5)
			}
			ok := 0
			for _, x := range xs {
				if !x.failed {
					ok++
				}
			}
			split := "-"
			if sc.gangSize(0) > 1 || sc.sizes != nil {
				split = fmt.Sprintf("%.0f of %d", med(func(x result) float64 { return float64(x.split) }), x0(xs).gangs)
			}
			failed := ""
			if ok < len(xs) {
				failed = fmt.Sprintf(" (%d of %d runs failed)", len(xs)-ok, len(xs))
			}
			fmt.Printf("| %s | %s%s | %.1f | %.2f / %.2f | %.1f | %.0f | %.1f | %s | %.0f of %d | %.2f |\n", sc.what, w, failed,
				med(func(x result) float64 { return x.rate }), med(func(x result) float64 { return x.p50 }),
				med(func(x result) float64 { return x.p99 }), med(func(x result) float64 { return x.cpuSched }),
				med(func(x result) float64 { return x.rssMiB }),
				med(func(x result) float64 { return x.cpuAPI }), split,
				med(func(x result) float64 { return float64(x.events) }), sc.pods(), med(result.writesPerPod))
		}
	}
}

func x0(xs []result) result {
	if len(xs) == 0 {
		return result{}
	}
	return xs[0]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kubeperf:", err)
	os.Exit(1)
}

// mixed is the default single-scheduler scenario: pods in gangs of 1-8
// whose sizes come from seed.
func mixed(nodes, gpus, pods int, seed uint64) scenario {
	rng := rand.New(rand.NewPCG(seed, 0x70657266))
	var sizes []int
	for n := 0; n < pods; {
		s := min(1+rng.IntN(8), pods-n)
		sizes = append(sizes, s)
		n += s
	}
	return scenario{name: "mixed", what: fmt.Sprintf("%d pods in gangs of 1-8 (seed %d), %d nodes x %d GPUs", pods, seed, nodes, gpus),
		nodes: nodes, gpus: gpus, gangs: len(sizes), sizes: sizes}
}

// scale is the large-cluster scenario: on 5,000 nodes, 20,000 one-GPU
// pods and 2,000 gangs of 8 (36,000 of the 40,000 GPUs at 8 a node), all
// running at once; other node counts scale the counts with them. Ten
// one-GPU pods come before each gang.
func scale(nodes, gpus int) scenario {
	gangs := max(1, 2000*nodes/5000)
	var sizes []int
	for range gangs {
		for range 10 {
			sizes = append(sizes, 1)
		}
		sizes = append(sizes, 8)
	}
	return scenario{name: "scale", what: fmt.Sprintf("%d one-GPU pods and %d gangs of 8, %d nodes x %d GPUs", 10*gangs, gangs, nodes, gpus),
		nodes: nodes, gpus: gpus, gangs: len(sizes), sizes: sizes}
}

// result is one scenario run with one scheduler.
type result struct {
	sched, scenario  string
	pods, gangs      int
	bound            int
	created, span    float64 // seconds to create all; clock start (from) to last bind
	from             string  // what starts the clock
	rate             float64 // pods bound per second
	firstBind        float64 // seconds from the clock's start to the first bind
	steadyRate       float64 // pods bound per second from the first bind to the last
	p50, p99, maxLat float64
	cpuSched, cpuAPI float64
	cpuEtcd, cpuKwok float64
	rssMiB           float64 // the scheduler's peak resident set (VmHWM) by the last bind
	split            int     // gangs on more than one node (in the mixed scenario one may have had no node with room)
	events           int     // bound pods with a Scheduled event
	eventsAfter      float64
	writes           map[string]float64 // apiserver write requests by verb and resource, all clients
	failed           bool
}

// writesPerPod is the apiserver's write requests per pod, all clients
// together (the benchmark's creates and kwok's status writes included).
func (x result) writesPerPod() float64 {
	n := 0.0
	for _, v := range x.writes {
		n += v
	}
	return n / float64(max(x.pods, 1))
}

func (x result) print() {
	if x.pods == 0 {
		return
	}
	fmt.Printf("   %d of %d pods bound; created in %.1f s; all bound %.1f s after %s: %.1f pods/s\n",
		x.bound, x.pods, x.created, x.span, x.from, x.rate)
	fmt.Printf("   create-to-bound p50 %.2f s, p99 %.2f s, max %.2f s\n", x.p50, x.p99, x.maxLat)
	fmt.Printf("   first bind %.1f s after %s; from the first bind to the last: %.1f pods/s\n", x.firstBind, x.from, x.steadyRate)
	fmt.Printf("   CPU s (%s to last bind): %s %.1f, kube-apiserver %.1f, etcd %.1f, kwok %.1f\n",
		x.from, x.sched, x.cpuSched, x.cpuAPI, x.cpuEtcd, x.cpuKwok)
	fmt.Printf("   %s peak RSS %.0f MiB\n", x.sched, x.rssMiB)
	if x.gangs > 0 {
		fmt.Printf("   gangs (of more than one pod) split over nodes: %d of %d\n", x.split, x.gangs)
	}
	fmt.Printf("   Scheduled events (events.k8s.io/v1) for bound pods: %d of %d, %.1f s after the last bind\n", x.events, x.bound, x.eventsAfter)
	if len(x.writes) > 0 {
		var ks []string
		for k := range x.writes {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, x.writes[k]))
		}
		fmt.Printf("   apiserver writes (all clients), %.2f per pod: %s\n", x.writesPerPod(), strings.Join(parts, ", "))
	}
}

// apiWrites reads the apiserver's apiserver_request_total and sums the
// write requests (POST, PUT, PATCH, DELETE) by verb and
// group/resource/subresource.
func apiWrites(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver /metrics: %v", err)
	}
	return parseWrites(string(raw)), nil
}

// parseWrites sums the apiserver_request_total samples of write verbs in
// a Prometheus text exposition by "VERB group/resource/subresource"; lines
// it cannot read are skipped (the counts are a report, not an input).
func parseWrites(text string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		res := l["resource"]
		if l["group"] != "" {
			res = l["group"] + "/" + res
		}
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		out[l["verb"]+" "+res] += v
	}
	return out
}

// cpuSeconds is a process's user+system CPU time from /proc.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100 // USER_HZ
}

// peakRSSMiB is a process's peak resident set size (VmHWM in
// /proc/PID/status), in MiB; 0 when it cannot be read.
func peakRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return parseVmHWM(string(b))
}

// parseVmHWM reads the VmHWM line ("VmHWM:    123456 kB") of a
// /proc/PID/status text, in MiB; 0 when there is none.
func parseVmHWM(status string) float64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// startScheduler starts the scheduler w against the cluster and returns
// its process.
func startScheduler(w string, sc scenario, cl *devcluster.Cluster, dir string, o options) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(dir, w+".log"))
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	switch w {
	case schedPAL:
		cfg := filepath.Join(dir, "pal.yaml")
		body := fmt.Sprintf("period: 1s\narrivalDelay: 100ms\nqps: %g\nburst: %d\neventQPS: %g\neventBurst: %d\nbindQPS: %g\nbindBurst: %d\nmetricsAddr: \"\"\nplacement: %s\nleaderElection: {enabled: false}\n",
			o.qps, o.burst, o.qps, o.burst, o.qps, o.burst, o.placement)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			return nil, err
		}
		args := []string{"scheduler", "--config", cfg, "--kubeconfig", cl.Kubeconfig, "--log-level", "warn"}
		if o.palProfile != "" {
			args = append(args, "--cpuprofile", fmt.Sprintf("%s.%s.%d", o.palProfile, sc.name, o.run))
		}
		cmd = exec.Command(o.pal, args...)
	case schedKube, schedKubeGang:
		cfg := filepath.Join(dir, "kube-scheduler.yaml")
		body := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %g
  burst: %d
leaderElection:
  leaderElect: false
`, cl.Kubeconfig, o.qps, o.burst)
		if w == schedKubeGang {
			body += mostAllocatedProfile
		}
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			return nil, err
		}
		args := []string{"--config", cfg, "--bind-address", "127.0.0.1", "--secure-port", "0", "-v", "1"}
		switch {
		case w == schedKubeGang:
			args = append(args, "--feature-gates", gangGates)
		case sc.gangs < sc.pods():
			args = append(args, "--feature-gates", "GenericWorkload=true")
		}
		cmd = exec.Command(o.kubeScheduler, args...)
	case schedNoop:
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(self, "--noop-binder", cl.Kubeconfig, "--qps", fmt.Sprint(o.qps), "--burst", fmt.Sprint(o.burst),
			"--noop-workers", fmt.Sprint(o.noopWorkers))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	return cmd, cmd.Start()
}

func measure(sc scenario, w string, o options) (result, error) {
	x := result{sched: w, scenario: sc.name, pods: sc.pods(), gangs: sc.multiPod(), from: "the first create"}
	if o.backlog {
		x.from = "the scheduler's start"
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "pal-kubeperf-"+sc.name+"-"+w+"-")
	if err != nil {
		return x, err
	}
	if o.keep {
		fmt.Printf("   directory %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	t := time.Now()
	var apiArgs []string
	if w == schedKubeGang {
		apiArgs = append(apiArgs, "--feature-gates="+gangGates)
	}
	cl, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, Nodes: sc.nodes, GPUsPerNode: sc.gpus,
		NativeGangs: true, APIServerArgs: apiArgs})
	if err != nil {
		return x, err
	}
	defer cl.Down()
	fmt.Printf("   dev cluster: %d nodes x %d GPUs ready in %.1f s\n", sc.nodes, sc.gpus, time.Since(t).Seconds())
	cs, err := cl.Client()
	if err != nil {
		return x, err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return x, err
	}
	native := w == schedKube || w == schedKubeGang || o.palGangs == "podgroups"
	if native {
		for g := range sc.gangs {
			if !sc.isGang(g) {
				continue
			}
			pg := &schedv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: gangName(g), Namespace: ns},
				Spec: schedv1beta1.PodGroupSpec{SchedulingPolicy: schedv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedv1beta1.GangSchedulingPolicy{MinCount: int32(sc.gangSize(g))}}}}
			if w == schedKubeGang {
				pg.Spec.SchedulingConstraints = &schedv1beta1.PodGroupSchedulingConstraints{
					Topology: []schedv1beta1.TopologyConstraint{{Key: "kubernetes.io/hostname"}}}
			}
			if _, err := cs.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return x, fmt.Errorf("create PodGroup: %v", err)
			}
		}
	}
	var mu sync.Mutex
	created := map[string]time.Time{}
	runFor := o.runFor
	if runFor == 0 {
		runFor = time.Hour
		if sc.name == "mixed" {
			runFor = 5 * time.Second
		}
	}
	type podReq struct {
		name string
		gang int
	}
	var reqs []podReq
	for g := range sc.gangs {
		for i := range sc.gangSize(g) {
			reqs = append(reqs, podReq{fmt.Sprintf("%s-%d", gangName(g), i), g})
		}
	}
	// createAll creates every pod from 32 goroutines, noting when each
	// request was sent.
	createAll := func() error {
		work := make(chan podReq)
		var wg sync.WaitGroup
		var createErr error
		for range 32 {
			wg.Go(func() {
				for r := range work {
					p := makePod(sc, native, w, r.name, r.gang, runFor)
					mu.Lock()
					created[r.name] = time.Now()
					mu.Unlock()
					if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
						mu.Lock()
						createErr = err
						mu.Unlock()
					}
				}
			})
		}
		for _, r := range reqs {
			work <- r
		}
		close(work)
		wg.Wait()
		if createErr != nil {
			return fmt.Errorf("create pod: %v", createErr)
		}
		return nil
	}
	if o.backlog {
		t := time.Now()
		if err := createAll(); err != nil {
			return x, err
		}
		x.created = time.Since(t).Seconds()
	}

	// With a backlog the scheduler works from its first instant: the
	// others' CPU and the apiserver's writes are read before it starts,
	// and its own CPU counts from zero.
	var preCPU, preW map[string]float64
	if o.backlog {
		preCPU = map[string]float64{}
		for k, c := range map[string]string{"api": "kube-apiserver", "etcd": "etcd", "kwok": "kwok"} {
			preCPU[k] = cpuSeconds(cl.PID(c))
		}
		preCPU["sched"] = 0
		if preW, err = apiWrites(ctx, cs); err != nil {
			return x, err
		}
	}
	schedStart := time.Now()
	sched, err := startScheduler(w, sc, cl, dir, o)
	if err != nil {
		return x, err
	}
	defer stopProcess(sched)

	boundAt := map[string]time.Time{}
	nodeOf := map[string]string{}
	done := make(chan struct{})
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	pi := f.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := boundAt[p.Name]; !ok {
			boundAt[p.Name] = time.Now()
			nodeOf[p.Name] = p.Spec.NodeName
			if len(boundAt) == x.pods {
				close(done)
			}
		}
	}
	_, _ = pi.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }})
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	cache.WaitForCacheSync(stop, pi.HasSynced)
	if !o.backlog {
		time.Sleep(3 * time.Second) // the scheduler's informers sync
	}

	pids := map[string]int{"sched": sched.Process.Pid, "api": cl.PID("kube-apiserver"), "etcd": cl.PID("etcd"), "kwok": cl.PID("kwok")}
	cpu := func() map[string]float64 {
		m := map[string]float64{}
		for k, p := range pids {
			m[k] = cpuSeconds(p)
		}
		return m
	}
	cpu0, w0 := preCPU, preW
	if !o.backlog {
		cpu0 = cpu()
		if w0, err = apiWrites(ctx, cs); err != nil {
			return x, err
		}
	}

	start := time.Now()
	if o.backlog {
		// The clock and every pod's wait start with the scheduler.
		start = schedStart
		mu.Lock()
		for n := range created {
			created[n] = start
		}
		mu.Unlock()
	} else {
		if err := createAll(); err != nil {
			return x, err
		}
		x.created = time.Since(start).Seconds()
	}
	timedOut := false
	select {
	case <-done:
	case <-time.After(o.timeout - time.Since(start)):
		timedOut = true
	}
	cpu1 := cpu()
	x.cpuSched, x.cpuAPI = cpu1["sched"]-cpu0["sched"], cpu1["api"]-cpu0["api"]
	x.cpuEtcd, x.cpuKwok = cpu1["etcd"]-cpu0["etcd"], cpu1["kwok"]-cpu0["kwok"]
	x.rssMiB = peakRSSMiB(pids["sched"])

	mu.Lock()
	var last, first time.Time
	var lat []float64
	for n, b := range boundAt {
		lat = append(lat, b.Sub(created[n]).Seconds())
		if b.After(last) {
			last = b
		}
		if first.IsZero() || b.Before(first) {
			first = b
		}
	}
	x.bound = len(boundAt)
	nodes := map[int]map[string]bool{}
	for _, r := range reqs {
		if n, ok := nodeOf[r.name]; ok {
			if nodes[r.gang] == nil {
				nodes[r.gang] = map[string]bool{}
			}
			nodes[r.gang][n] = true
		}
	}
	bound := map[string]bool{}
	for n := range boundAt {
		bound[n] = true
	}
	mu.Unlock()
	for g, ns := range nodes {
		if sc.isGang(g) && len(ns) > 1 && sc.gangSize(g) <= sc.gpus {
			x.split++
		}
	}
	if len(lat) > 0 {
		slices.SortFunc(lat, cmp.Compare[float64])
		x.span = last.Sub(start).Seconds()
		x.rate = float64(x.bound) / x.span
		x.firstBind = first.Sub(start).Seconds()
		if d := last.Sub(first).Seconds(); d > 0 {
			x.steadyRate = float64(x.bound-1) / d
		}
		x.p50, x.p99, x.maxLat = metrics.Quantile(lat, 0.5), metrics.Quantile(lat, 0.99), lat[len(lat)-1]
	}
	// Events: those posted for the bound pods, counted by listing
	// events.k8s.io/v1 Events; bounded by --event-wait.
	ev0 := time.Now()
	for {
		n, err := scheduledEvents(ctx, cs, bound)
		if err != nil {
			return x, err
		}
		x.events = n
		if n >= len(bound) || time.Since(ev0) > o.eventWait || w == schedNoop {
			break
		}
		time.Sleep(2 * time.Second)
	}
	x.eventsAfter = time.Since(last).Seconds()
	w1, err := apiWrites(ctx, cs)
	if err != nil {
		return x, err
	}
	x.writes = map[string]float64{}
	for k, v := range w1 {
		if d := v - w0[k]; d > 0 {
			x.writes[k] = d
		}
	}
	if timedOut {
		return x, fmt.Errorf("only %d of %d pods bound after %v (see %s, --keep keeps it)", x.bound, x.pods, o.timeout, filepath.Join(dir, w+".log"))
	}
	return x, nil
}

// stopProcess asks the scheduler to stop (SIGTERM: pal writes its
// profile), and kills it after 10 s.
func stopProcess(c *exec.Cmd) {
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.Process.Kill()
		<-done
	}
}

func gangName(g int) string { return fmt.Sprintf("g%05d", g) }

// makePod is one one-GPU pod of gang g for scheduler w: gang members name
// their native PodGroup (always for kube-scheduler), or carry pal.io/gang.
func makePod(sc scenario, native bool, w, name string, g int, runFor time.Duration) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{gangLabel: gangName(g)},
			Annotations: map[string]string{devcluster.AnnFinishAfter: runFor.String()}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}},
	}
	switch w {
	case schedPAL:
		p.Spec.SchedulerName = "pal"
	case schedNoop:
		p.Spec.SchedulerName = noopSchedulerName
	}
	switch {
	case !sc.isGang(g):
	case native:
		pg := gangName(g)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg}
	default:
		p.Annotations[kube.AnnGang] = gangName(g)
		p.Annotations[kube.AnnGangSize] = strconv.Itoa(sc.gangSize(g))
	}
	return p
}

// scheduledEvents counts the bound pods that have a Scheduled event.
func scheduledEvents(ctx context.Context, cs kubernetes.Interface, bound map[string]bool) (int, error) {
	have := map[string]bool{}
	opts := metav1.ListOptions{Limit: 2000}
	for {
		l, err := cs.EventsV1().Events(ns).List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("list events: %v", err)
		}
		for _, e := range l.Items {
			if e.Reason == "Scheduled" && e.Regarding.Kind == "Pod" && bound[e.Regarding.Name] {
				have[e.Regarding.Name] = true
			}
		}
		if l.Continue == "" {
			return len(have), nil
		}
		opts.Continue = l.Continue
	}
}
