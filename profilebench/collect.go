package profilebench

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube"
)

// Measured is one run's result.
type Measured struct {
	Run
	Result
	// Source is where the line was found: "termination message" or "log".
	Source string
}

// Failed is a run that gave no measurement, and why.
type Failed struct {
	Run
	Why string
}

// Collection is a run's results: every planned run is in exactly one of
// Measured and Failed.
type Collection struct {
	Plan     *Plan
	Measured []Measured
	Failed   []Failed
}

// LogFunc reads the tail of a container's log.
type LogFunc func(ctx context.Context, namespace, pod, container string) (string, error)

// logTailLines and logLimit bound what is read of a run's log.
const (
	logTailLines = 200
	logLimit     = 64 << 10
)

// logTimeout bounds the reading of one run's log.
var logTimeout = 30 * time.Second

// ClientLogs reads logs through the API server.
func ClientLogs(cs kubernetes.Interface) LogFunc {
	return func(ctx context.Context, ns, pod, container string) (string, error) {
		tail, limit := int64(logTailLines), int64(logLimit)
		b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail, LimitBytes: &limit}).DoRaw(ctx)
		return string(b), err
	}
}

// LoadPlan reads run id's plan from its ConfigMap in namespace ns.
func LoadPlan(ctx context.Context, cs kubernetes.Interface, ns, runID string) (*Plan, *corev1.ConfigMap, error) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "pal-bench-"+runID, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", runID, err)
	}
	p, err := ReadPlan(cm)
	return p, cm, err
}

// Collect reads every planned run's result: from the benchmark
// container's termination message, or, when that has no result line,
// from the tail of its log. A run whose pod is missing, not finished,
// failed, moved off its planned device, or printed no valid line is in
// Failed with the reason.
func Collect(ctx context.Context, cs kubernetes.Interface, plan *Plan, logs LogFunc) (*Collection, error) {
	list, err := cs.CoreV1().Pods(plan.Namespace).List(ctx, metav1.ListOptions{LabelSelector: plan.Selector()})
	if err != nil {
		return nil, err
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	c := &Collection{Plan: plan}
	for _, r := range plan.Runs {
		m, why := collectOne(ctx, pods[r.Pod], r, logs)
		if why != "" {
			c.Failed = append(c.Failed, Failed{Run: r, Why: why})
			continue
		}
		c.Measured = append(c.Measured, m)
	}
	return c, nil
}

func collectOne(ctx context.Context, p *corev1.Pod, r Run, logs LogFunc) (Measured, string) {
	m := Measured{Run: r}
	if p == nil {
		return m, "pod not found"
	}
	if p.Spec.NodeName != r.Node || p.Annotations[kube.AnnGPUIndices] != strconv.Itoa(r.GPU) {
		return m, fmt.Sprintf("pod runs on %s device %s, planned for %s device %d", p.Spec.NodeName, quote.Value(p.Annotations[kube.AnnGPUIndices]), r.Node, r.GPU)
	}
	var st *corev1.ContainerStatus
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == Container {
			st = &p.Status.ContainerStatuses[i]
		}
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
	case corev1.PodFailed:
		why := "pod failed"
		if p.Status.Reason != "" {
			why += ": " + p.Status.Reason
		}
		if st != nil && st.State.Terminated != nil {
			t := st.State.Terminated
			why += fmt.Sprintf(": exit code %d", t.ExitCode)
			if t.Reason != "" {
				why += " (" + t.Reason + ")"
			}
			if msg := lastLine(t.Message); msg != "" {
				why += ": " + msg
			}
		} else if msg := lastLine(p.Status.Message); msg != "" {
			why += ": " + msg
		}
		return m, why
	default:
		return m, fmt.Sprintf("pod is %s, not finished", phaseName(p.Status.Phase))
	}
	msg := ""
	if st != nil && st.State.Terminated != nil {
		msg = st.State.Terminated.Message
	}
	res, line, found, err := FindResult(msg)
	if err != nil {
		return m, fmt.Sprintf("termination message line %d: %v", line, err)
	}
	m.Source = "termination message"
	if !found {
		if logs == nil {
			return m, "no " + ResultPrefix + " line in the termination message"
		}
		lctx, cancel := context.WithTimeout(ctx, logTimeout)
		text, lerr := logs(lctx, p.Namespace, p.Name, Container)
		cancel()
		if lerr != nil {
			return m, fmt.Sprintf("no %s line in the termination message, and the log cannot be read: %v", ResultPrefix, lerr)
		}
		// The log comes back cut at logLimit bytes, in the middle of a
		// line: its last line, a result line cut short, would read
		// iter_time_s=12.5 as 1.
		cut := ""
		if len(text) >= logLimit && !strings.HasSuffix(text, "\n") {
			text = text[:strings.LastIndexByte(text, '\n')+1]
			cut = fmt.Sprintf(" (the log's last line was cut at %d bytes)", logLimit)
		}
		if res, line, found, err = FindResult(text); err != nil {
			return m, fmt.Sprintf("log line %d (of its last %d): %v", line, logTailLines, err)
		}
		if !found {
			return m, fmt.Sprintf("no %s line in the termination message or the last %d log lines%s", ResultPrefix, logTailLines, cut)
		}
		m.Source = "log"
	}
	m.Result = res
	return m, ""
}

func phaseName(p corev1.PodPhase) string {
	if p == "" {
		return "Pending"
	}
	return string(p)
}

// lastLine is the last non-empty line of a message, shortened.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "..."
	}
	return l
}

// Sorted returns the measurements ordered by node, GPU, model (in plan
// order) and repetition.
func (c *Collection) Sorted() []Measured {
	mi := map[string]int{}
	for i, m := range c.Plan.Models {
		mi[m] = i
	}
	out := append([]Measured(nil), c.Measured...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.GPU != b.GPU {
			return a.GPU < b.GPU
		}
		if a.Model != b.Model {
			return mi[a.Model] < mi[b.Model]
		}
		return a.Repetition < b.Repetition
	})
	return out
}

// UnmeasuredComment starts each comment line of the measurement CSV
// that names GPUs without a measurement; pal profile build carries such
// lines into the score table's comments and warns of them.
const UnmeasuredComment = "# unmeasured: "

// PartialComment starts each comment line of the measurement CSV that
// names a GPU and model measured by fewer runs than the plan asked (some
// failed); pal profile build carries such lines into the score table's
// comments and warns of them.
const PartialComment = "# partial: "

// Unmeasured says which GPUs the collection has no measurement of: the
// nodes' GPUs the plan has no run for (Plan.UnmeasuredNotes), then, by
// node and device, each planned GPU whose every run failed (no row of it
// in the CSV, so none in the score table), and each GPU and model whose
// every run failed. A GPU and model that some runs measured is not in
// it: Partial names it.
func (c *Collection) Unmeasured() []string {
	out := c.Plan.UnmeasuredNotes()
	type gpu struct {
		node string
		idx  int
	}
	type gm struct {
		gpu
		model string
	}
	measured, failed := map[gm]int{}, map[gm]int{}
	gpuFailed := map[gpu]int{}
	for _, m := range c.Measured {
		measured[gm{gpu{m.Node, m.GPU}, m.Model}]++
	}
	for _, f := range c.Failed {
		failed[gm{gpu{f.Node, f.GPU}, f.Model}]++
		gpuFailed[gpu{f.Node, f.GPU}]++
	}
	runs := func(n int) string {
		if n == 1 {
			return "its run failed"
		}
		return fmt.Sprintf("its %d runs failed", n)
	}
	for _, n := range c.Plan.Nodes {
		for i := range n.GPUs {
			g := gpu{n.Name, i}
			if gpuFailed[g] == 0 {
				continue
			}
			some := false
			for _, md := range c.Plan.Models {
				some = some || measured[gm{g, md}] > 0
			}
			if !some {
				out = append(out, fmt.Sprintf("node %s GPU %d: no run measured (%s); the score table has no row for it", n.Name, i, runs(gpuFailed[g])))
				continue
			}
			for _, md := range c.Plan.Models {
				if k := (gm{g, md}); measured[k] == 0 && failed[k] > 0 {
					out = append(out, fmt.Sprintf("node %s GPU %d: %s unmeasured (%s)", n.Name, i, md, runs(failed[k])))
				}
			}
		}
	}
	return out
}

// Partial says, by node, device and model in plan order, which GPU and
// model some of whose runs failed and some measured. Its score is then
// the mean of fewer runs than asked, and not of a fair sample of them:
// the run a deadline killed is the slowest one, a run that crashed
// may have crashed for its GPU's fault, and with one or two runs left
// no outlier can be told. Such a GPU is not scored like one measured
// whole, and the table says so.
func (c *Collection) Partial() []string {
	type gm struct {
		node  string
		idx   int
		model string
	}
	measured, failed := map[gm]int{}, map[gm]int{}
	for _, m := range c.Measured {
		measured[gm{m.Node, m.GPU, m.Model}]++
	}
	for _, f := range c.Failed {
		failed[gm{f.Node, f.GPU, f.Model}]++
	}
	var out []string
	for _, n := range c.Plan.Nodes {
		for i := range n.GPUs {
			for _, md := range c.Plan.Models {
				k := gm{n.Name, i, md}
				if m, f := measured[k], failed[k]; m > 0 && f > 0 {
					out = append(out, fmt.Sprintf("node %s GPU %d: %s measured by %d of %d runs (%d failed)", n.Name, i, md, m, m+f, f))
				}
			}
		}
	}
	return out
}

// WriteCSV writes the measurement file pal profile build reads: '#'
// lines saying which run and image it came from, each failed run, each
// unmeasured GPU (UnmeasuredComment) and each GPU and model measured
// by only some of its runs (PartialComment), then one row per measured
// run.
func (c *Collection) WriteCSV(w io.Writer) error {
	p := c.Plan
	fmt.Fprintf(w, "# pal-kube profile bench run %s: image %s, namespace %s, %d iterations per run, one run per %s at a time\n",
		p.RunID, p.Image, p.Namespace, p.Iterations, p.Concurrency)
	fmt.Fprintf(w, "# %d of %d runs measured\n", len(c.Measured), len(p.Runs))
	for _, f := range c.Failed {
		fmt.Fprintf(w, "# failed: pod %s (node %s GPU %d, %s repetition %d): %s\n", f.Pod, f.Node, f.GPU, f.Model, f.Repetition, oneLine(f.Why))
	}
	for _, u := range c.Unmeasured() {
		fmt.Fprintf(w, "%s%s\n", UnmeasuredComment, u)
	}
	for _, u := range c.Partial() {
		fmt.Fprintf(w, "%s%s\n", PartialComment, u)
	}
	cw := csv.NewWriter(w)
	cw.Write([]string{"node", "gpu_index", "gpu_uuid", "model", "iter_time_s", "sm_clock_mhz", "power_w", "temp_c"})
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, m := range c.Sorted() {
		cw.Write([]string{m.Node, strconv.Itoa(m.GPU), m.UUID, m.Model, num(m.IterTime), num(m.SMClock), num(m.Power), num(m.Temp)})
	}
	cw.Flush()
	return cw.Error()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Cleanup deletes the run's pods that pal-kube profile bench --apply created
// and that succeeded: those carrying the run's label and an owner
// reference to the run's ConfigMap by its UID, where that ConfigMap
// carries AnnCreatedBy. Failed pods stay for inspection; the ConfigMap
// goes when none of its pods remain. It returns what it deleted and kept.
func Cleanup(ctx context.Context, cs kubernetes.Interface, ns, runID string) (deleted, kept []string, err error) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "pal-bench-"+runID, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	if cm.Annotations[AnnCreatedBy] == "" || cm.UID == "" {
		return nil, nil, fmt.Errorf("run %s was not created by pal-kube profile bench --apply: nothing deleted (kubectl delete pods,configmaps -n %s -l %s=%s removes it)", runID, ns, LabelRun, runID)
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + runID})
	if err != nil {
		return nil, nil, err
	}
	left := 0
	for i := range list.Items {
		p := &list.Items[i]
		if !ownedBy(p, cm) {
			kept = append(kept, p.Name+" (not created by this run)")
			left++
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded {
			kept = append(kept, p.Name+" ("+phaseName(p.Status.Phase)+")")
			left++
			continue
		}
		uid := p.UID
		if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, kept, err
		}
		deleted = append(deleted, p.Name)
	}
	if left == 0 {
		uid := cm.UID
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, kept, err
		}
		deleted = append(deleted, "configmap/"+cm.Name)
	}
	return deleted, kept, nil
}

func ownedBy(p *corev1.Pod, cm *corev1.ConfigMap) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "ConfigMap" && o.Name == cm.Name && o.UID == cm.UID {
			return true
		}
	}
	return false
}
