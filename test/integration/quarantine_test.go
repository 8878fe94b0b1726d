//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/telemetry"
)

// simExporter is a DCGM exporter for one dev-cluster node whose samples
// follow the cluster: a GPU that a live pod holds is busy (100%, 1410 MHz
// SM clock), any other idle (DCGM's gpu_idle reason, 0%, 210 MHz). A GPU
// marked degraded runs at half the clock, 705 MHz, under DCGM's
// hw_slowdown reason, busy or idle; a busy one is then 1410/705 = 2
// times slower than the busy median.
type simExporter struct {
	e    *env
	node string
	url  string

	mu       sync.Mutex
	degraded map[int]bool
}

func (e *env) simExporter(node string) *simExporter {
	x := &simExporter{e: e, node: node, degraded: map[int]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := x.sample(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body))
	}))
	e.t.Cleanup(srv.Close)
	x.url = srv.URL + "/metrics"
	return x
}

func (x *simExporter) degrade(gpu int, on bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.degraded[gpu] = on
}

// sample is the exporter's answer now: the node's two GPUs, named by the
// Hostname label (dcgm.urls names GPUs so).
func (x *simExporter) sample(ctx context.Context) (string, error) {
	pods, err := x.e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + x.node})
	if err != nil {
		return "", err
	}
	busy := map[int]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		idx, err := kube.ParseIndices(p.Annotations[kube.AnnGPUIndices])
		if err != nil {
			return "", err
		}
		for _, i := range idx {
			busy[i] = true
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var clock, util, reasons strings.Builder
	for g := range 2 {
		labels := fmt.Sprintf(`{gpu="%d",UUID="GPU-%s-%d",modelName="NVIDIA A100-SXM4-80GB",Hostname="%s"}`, g, x.node, g, x.node)
		c, u, r := 1410.0, 100, telemetry.Reason(0)
		if !busy[g] {
			c, u, r = 210, 0, telemetry.ReasonGPUIdle
		}
		if x.degraded[g] {
			c, r = c/2, r|telemetry.ReasonHWSlowdown
		}
		fmt.Fprintf(&clock, "%s%s %g\n", telemetry.MetricSMClock, labels, c)
		fmt.Fprintf(&util, "%s%s %d\n", telemetry.MetricUtil, labels, u)
		fmt.Fprintf(&reasons, "%s%s %d\n", telemetry.MetricEventReasons, labels, r)
	}
	return "# TYPE " + telemetry.MetricSMClock + " gauge\n" + clock.String() +
		"# TYPE " + telemetry.MetricUtil + " gauge\n" + util.String() +
		"# TYPE " + telemetry.MetricEventReasons + " gauge\n" + reasons.String(), nil
}

// A GPU degraded 2x mid-run, through DCGM, with quarantineAbove 1.5, on
// the dev cluster, under hived-speed and under hived. The case is pal
// sim's (experiment.TestQuarantineKeepsTheVCsPrivateWait): two 2-GPU
// nodes, VC A owning two 1-GPU cells and VC B one, one GPU spare. A has
// eight 1-GPU gangs of 1000 s, B one of 6000 s, all created at t = 0.
// One thing is added: an opportunistic pod of B holds the spare GPU, so
// that the healthy room A's cells need at t = 1000 is there only by
// preempting it, and a free GPU, the slow one, is at hand. Time here is
// the test's: a job ends when the test deletes its pod, at its start
// plus 1000 s (2000 s on a GPU that DCGM shows slow when it starts), and
// a gang's wait is the time of the event after which it was bound (the
// test lets the scheduler's rounds settle after each event, evicted pods
// gone, before it moves on), so the waits do not depend on how fast
// this machine runs the control plane.
//
//   - t = 0: A's cells take gpu-node-000's GPUs 0 and 1 (buddy
//     allocation splits the first node for A's first two cells), B's
//     gpu-node-001's GPU 0; the opportunistic ob the spare
//     gpu-node-001/1.
//   - t = 1000: gpu-node-000's GPU 0 turns 2x slow while a0 still runs on
//     it. DCGM shows it busy at 705 MHz against the busy median of 1410
//     under hw_slowdown: a prior slowdown of 2, at or above 1.5, so it is
//     quarantined: a GPUQuarantined event on gpu-node-000,
//     pal_gpu_quarantined 1, the learned ConfigMap's pal.io/quarantined
//     "gpu-node-000/0: slowdown 2.000 (dcgm) since ...". a0 and a1 end;
//     idle, the GPU still shows hw_slowdown, so it stays quarantined.
//     A's cells bind healthy GPUs: gpu-node-000/1, and gpu-node-001/1,
//     from which ob is preempted. a2 and a3 wait 1000.
//   - t = 2000: a2 and a3 end; a4 and a5 take the same two GPUs, and wait
//     2000.
//   - t = 2500: the GPU is back (no hw_slowdown): DCGM no longer flags
//     it, and the quarantine is lifted (GPUQuarantineLifted, the gauge 0,
//     the annotation empty).
//   - t = 3000: a4 and a5 end; a6 and a7 bind, and wait 3000.
//
// A's mean wait is (0+0+1000+1000+2000+2000+3000+3000)/8 = 1500 s, B's 0.
// A's private reference, its two cells as two GPUs of its own that all
// run at 1.0, is the same by hand: its jobs run two at a time, ending at
// 1000, 2000 and 3000, so its waits are the same eight, 1500 s. From the
// quarantine to its lift no A pod is bound to the slow GPU, and at no
// time do two pods hold one GPU.
//
// Under hived the bad cell is what keeps A's cells off the slow GPU.
// Under hived-speed the learned scores, which DCGM's hint raised to 2 for
// that GPU, do it as well: binding keeps a VC's mean score at or below the
// cluster's, and A's would be 1.5 against 1.25.
func TestQuarantineDCGMDevCluster(t *testing.T) {
	for _, tenancy := range []string{"hived-speed", "hived"} {
		t.Run(tenancy, func(t *testing.T) { quarantineDCGM(t, tenancy) })
	}
}

func quarantineDCGM(t *testing.T, tenancy string) {
	e := newEnv(t, 2, 2)
	ctx := context.Background()
	n := e.nodeNames(2)
	cells := e.writeCells(fmt.Sprintf(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 2, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: %s}
  - {cellType: NODE, cellAddress: %s}
virtualClusters:
  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 2}]}
  B: {virtualCells: [{cellType: NODE.GPU, cellNumber: 1}]}
`, n[0], n[1]))
	x0, x1 := e.simExporter(n[0]), e.simExporter(n[1])

	cfg := testConfig()
	cfg.Scheduler, cfg.Tenancy, cfg.Cells = "fifo", tenancy, cells
	cfg.LearnScores, cfg.QuarantineAbove = true, 1.5
	cfg.PreemptBarePods = true
	cfg.LearnedScoresWriteInterval = kube.Duration{}
	cfg.DCGM.URLs = []string{x0.url, x1.url}
	cfg.DCGM.Interval, cfg.DCGM.Timeout = kube.Duration{Duration: time.Second}, kube.Duration{Duration: time.Second}
	s, _ := e.runScheduler(cfg, "pal")

	metric := func(line string) bool {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return strings.Contains(rec.Body.String(), line+"\n")
	}
	nodeEvent := func(node, reason string) []string {
		list, err := e.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": node, "reason": reason}.AsSelector().String()})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range list.Items {
			out = append(out, ev.Type+": "+ev.Message)
		}
		return out
	}
	reason := func() string {
		cm, err := e.cs.CoreV1().ConfigMaps(devcluster.SystemNamespace).Get(ctx, kube.DefaultLearnedScoresConfigMap, metav1.GetOptions{})
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return cm.Annotations[kube.AnnQuarantined]
	}

	type job struct {
		name, vc string
		dur      float64
	}
	var jobs []job
	for i := range 8 {
		jobs = append(jobs, job{fmt.Sprintf("a%d", i), "A", 1000})
	}
	jobs = append(jobs, job{"b0", "B", 6000})
	for _, j := range jobs {
		e.createPod(podOpts{name: j.name, gpus: 1, ann: hivedAnn(kube.AnnVC, j.vc, kube.AnnGang, j.name, kube.AnnGangSize, "1")})
	}

	// The test's clock: where each pod was bound, when, and when it ends.
	slow := map[string]bool{} // GPUs DCGM shows slow now, "node/index"
	type run struct {
		gpu        string
		start, end float64
	}
	runs := map[string]*run{}
	dur := map[string]float64{}
	for _, j := range jobs {
		dur[j.name] = j.dur
	}
	quarantined := "" // the GPU in quarantine, "" when none is
	// settle records the pods bound after the event at now, once no pod
	// has been bound for 1.5 s (five rounds).
	settle := func(now float64) {
		t.Helper()
		last := time.Now()
		for deadline := last.Add(30 * time.Second); time.Since(last) < 1500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("t = %v: the scheduler did not settle", now)
			}
			pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					last = time.Now() // evicted, still terminating: not settled
				}
				if p.Spec.NodeName == "" || runs[p.Name] != nil {
					continue
				}
				g := p.Spec.NodeName + "/" + p.Annotations[kube.AnnGPUIndices]
				d := dur[p.Name]
				if slow[g] {
					d *= 2
				}
				runs[p.Name] = &run{gpu: g, start: now, end: now + d}
				last = time.Now()
				t.Logf("t = %v: %s bound to %s", now, p.Name, g)
				if g == quarantined && p.Annotations[kube.AnnVC] == "A" {
					t.Errorf("t = %v: %s (VC A) bound to %s, slow and quarantined since t = 1000, while healthy GPUs can serve A's cells", now, p.Name, g)
				}
			}
		}
		e.checkNoDoubleGPU()
	}
	// finishAt deletes the pods whose jobs end at now.
	finishAt := func(now float64) {
		t.Helper()
		var names []string
		for name, r := range runs {
			if r.end == now {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			e.finish(name)
		}
	}
	on := func(names ...string) []string {
		var out []string
		for _, name := range names {
			if r := runs[name]; r != nil {
				out = append(out, r.gpu)
			} else {
				out = append(out, "unbound")
			}
		}
		slices.Sort(out)
		return out
	}
	wantOn := func(now float64, want []string, names ...string) {
		t.Helper()
		if got := on(names...); !slices.Equal(got, want) {
			t.Errorf("t = %v: %v on %v, want %v", now, names, got, want)
		}
	}

	settle(0)
	g0, g1, g2, g3 := n[0]+"/0", n[0]+"/1", n[1]+"/0", n[1]+"/1"
	wantOn(0, []string{g0, g1}, "a0", "a1")
	wantOn(0, []string{g2}, "b0")
	e.evictablePod("ob", 1, hivedAnn(kube.AnnVC, "B", kube.AnnPriority, "-1", kube.AnnGang, "ob", kube.AnnGangSize, "1"))
	dur["ob"] = 6000
	settle(0)
	wantOn(0, []string{g3}, "ob")

	// t = 1000: the GPU a0 runs on turns 2x slow, then a0 and a1 end.
	x0.degrade(0, true)
	slow[g0] = true
	gauge := func(v int) string {
		return fmt.Sprintf(`pal_gpu_quarantined{gpu="0",node="%s"} %d`, n[0], v)
	}
	e.eventually(20*time.Second, "gpu-node-000/0 quarantined (pal_gpu_quarantined 1)", func() bool { return metric(gauge(1)) })
	quarantined = g0
	e.eventually(10*time.Second, "a GPUQuarantined event on "+n[0], func() bool {
		return slices.ContainsFunc(nodeEvent(n[0], kube.ReasonGPUQuarantined), func(m string) bool {
			return strings.HasPrefix(m, "Warning: GPU 0 runs 2.000 times slower than its profile (dcgm), at or above quarantineAbove 1.5")
		})
	})
	e.eventually(10*time.Second, "the learned ConfigMap says why", func() bool {
		return strings.HasPrefix(reason(), n[0]+"/0: slowdown 2.000 (dcgm) since ")
	})
	time.Sleep(time.Second) // a few rounds: the cells hold it as a bad device
	finishAt(1000)
	settle(1000)
	wantOn(1000, []string{g1, g3}, "a2", "a3")

	finishAt(2000)
	settle(2000)
	wantOn(2000, []string{g1, g3}, "a4", "a5")
	if !metric(gauge(1)) || reason() == "" {
		t.Errorf("t = 2000: the idle GPU still shows hw_slowdown, but the quarantine was lifted (%q)", reason())
	}

	// t = 2500: the GPU is back.
	x0.degrade(0, false)
	delete(slow, g0)
	e.eventually(20*time.Second, "the quarantine lifted (pal_gpu_quarantined 0)", func() bool { return metric(gauge(0)) })
	quarantined = ""
	e.eventually(10*time.Second, "a GPUQuarantineLifted event on "+n[0], func() bool {
		return len(nodeEvent(n[0], kube.ReasonGPUQuarantineLifted)) == 1
	})
	e.eventually(10*time.Second, "the learned ConfigMap's reason cleared", func() bool { return reason() == "" })
	settle(2500)

	finishAt(3000)
	settle(3000)
	if got := on("a6", "a7"); slices.Contains(got, "unbound") {
		t.Errorf("t = 3000: a6, a7 on %v, want both bound", got)
	}

	waits := map[string][]float64{}
	for _, j := range jobs {
		r := runs[j.name]
		if r == nil {
			t.Fatalf("%s never bound", j.name)
		}
		waits[j.vc] = append(waits[j.vc], r.start)
	}
	mean := func(w []float64) float64 {
		s := 0.0
		for _, x := range w {
			s += x
		}
		return s / float64(len(w))
	}
	const privateA = 1500 // by hand, above
	t.Logf("mean waits: A %v s (private reference %v s), B %v s", mean(waits["A"]), privateA, mean(waits["B"]))
	if got := mean(waits["A"]); got > privateA {
		t.Errorf("A's mean wait %v s, longer than its private reference %v s (waits %v)", got, privateA, waits["A"])
	}
	if got := mean(waits["B"]); got != 0 {
		t.Errorf("B's mean wait %v s, want 0", got)
	}
	if got := nodeEvent(n[0], kube.ReasonGPUQuarantined); len(got) != 1 {
		t.Errorf("GPUQuarantined events on %s: %q, want one", n[0], got)
	}
}
