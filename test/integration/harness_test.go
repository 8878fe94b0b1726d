//go:build integration

// Package integration runs pal-kube scheduler against a real kube-apiserver,
// kube-controller-manager and etcd with kwok's fake GPU nodes
// (devcluster), all on 127.0.0.1. The
// binaries come from hack/testbin.sh; without them the tests fail under
// CI=true and skip, saying why, elsewhere.
package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
)

// palBin and kubeBin are the pal and pal-kube commands, built once for the
// tests that run them as processes.
var palBin, kubeBin string

func TestMain(m *testing.M) {
	bin := devcluster.BinDir()
	if err := devcluster.FindBins(bin); err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "FAIL: integration tests need the control plane under CI:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "SKIP: integration tests:", err)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "pal-integration-bin")
	if err != nil {
		panic(err)
	}
	palBin, kubeBin = filepath.Join(dir, "pal"), filepath.Join(dir, "pal-kube")
	for bin, pkg := range map[string]string{palBin: "github.com/palsched/pal/cmd/pal", kubeBin: "github.com/palsched/pal/cmd/pal-kube"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: building", pkg+":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's dev cluster.
type env struct {
	t  *testing.T
	cl *devcluster.Cluster
	cs *kubernetes.Clientset
	ns string

	logMu sync.Mutex
	logs  map[string]*testWriter // each in-process scheduler's log, by name
}

func newEnv(t *testing.T, nodes, gpus int) *env {
	t.Helper()
	return newEnvOpts(t, devcluster.Options{Nodes: nodes, GPUsPerNode: gpus})
}

// newEnvOpts starts a dev cluster as o says (apiserver flags, native
// gangs) in a fresh directory.
func newEnvOpts(t *testing.T, o devcluster.Options) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o.Dir = t.TempDir()
	cl, err := devcluster.Up(ctx, o)
	if err != nil {
		if cl != nil {
			dumpLogs(t, cl.Dir)
		}
		t.Fatalf("dev cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, cl.Dir)
		}
		if err := cl.Down(); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	cs, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cl: cl, cs: cs, ns: "jobs"}
	// Up made pal-system; the tests' pods go to jobs.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, devcluster.SystemNamespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("dev cluster up made no namespace %s: %v", devcluster.SystemNamespace, err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jobs"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func dumpLogs(t *testing.T, dir string) {
	for _, f := range []string{"kube-apiserver.log", "kube-controller-manager.log", "kwok.log", "etcd.log"} {
		b, _ := os.ReadFile(filepath.Join(dir, "logs", f))
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s (tail)\n%s", f, b)
	}
}

// testConfig is a fast config for tests: short rounds, no Lease unless
// asked for, no metrics server.
func testConfig() kube.Config {
	c := kube.DefaultConfig()
	c.Period = kube.Duration{Duration: 300 * time.Millisecond}
	c.ArrivalDelay = kube.Duration{Duration: 50 * time.Millisecond}
	c.LeaderElection.Enabled = false
	c.MetricsAddr = ""
	return c
}

// runScheduler runs an in-process scheduler until the returned stop is
// called (or the test ends).
func (e *env) runScheduler(cfg kube.Config, name string) (*kube.Scheduler, func()) {
	e.t.Helper()
	cs, err := kubernetes.NewForConfig(e.cl.RestConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	return e.runSchedulerWith(cfg, cs, name)
}

func (e *env) runSchedulerWith(cfg kube.Config, cs kubernetes.Interface, name string, opts ...kube.Option) (*kube.Scheduler, func()) {
	return e.runSchedulerSetUp(cfg, cs, name, nil, opts...)
}

// runSchedulerOwnBinds is runScheduler with the binder on a client of
// its own, limited to cfg.BindQPS and cfg.BindBurst, as pal-kube runs
// it. Without it the binder shares the test's client, whose limits
// (500 a second) are not cfg's.
func (e *env) runSchedulerOwnBinds(cfg kube.Config, name string, opts ...kube.Option) (*kube.Scheduler, func()) {
	e.t.Helper()
	cs, err := kubernetes.NewForConfig(e.cl.RestConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	rc := rest.CopyConfig(e.cl.RestConfig())
	rc.QPS, rc.Burst = cfg.BindQPS, cfg.BindBurst
	binds, err := kubernetes.NewForConfig(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.runSchedulerSetUp(cfg, cs, name, func(s *kube.Scheduler) { s.UseBindClient(binds) }, opts...)
}

// runSchedulerSetUp makes a scheduler, calls setUp on it (when not nil)
// before it runs, and runs it until the test ends.
func (e *env) runSchedulerSetUp(cfg kube.Config, cs kubernetes.Interface, name string, setUp func(*kube.Scheduler), opts ...kube.Option) (*kube.Scheduler, func()) {
	w := &testWriter{t: e.t, prefix: name + ": "}
	e.logMu.Lock()
	if e.logs == nil {
		e.logs = map[string]*testWriter{}
	}
	e.logs[name] = w
	e.logMu.Unlock()
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := kube.New(cfg, cs, log, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	if setUp != nil {
		setUp(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil && ctx.Err() == nil {
			e.t.Errorf("%s: %v", name, err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return s, stop
}

type testWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	done   bool
	lines  []string // what was logged, for logged
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	defer func() { _ = recover() }() // a log line after the test ended
	if testing.Verbose() {
		w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

var _ io.Writer = (*testWriter)(nil)

// logged is the lines the scheduler run as name has logged that contain
// every one of subs.
func (e *env) logged(name string, subs ...string) []string {
	e.logMu.Lock()
	w := e.logs[name]
	e.logMu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range w.lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// podOpts describe a test pod.
type podOpts struct {
	name, sched string
	gpus        int
	ann         map[string]string
	class       string // priorityClassName
}

func (e *env) createPod(o podOpts) *corev1.Pod {
	e.t.Helper()
	if o.sched == "" {
		o.sched = "pal"
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: e.ns, Annotations: o.ann},
		Spec: corev1.PodSpec{SchedulerName: o.sched, PriorityClassName: o.class, Containers: []corev1.Container{{Name: "train", Image: "train:latest",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(o.gpus)}}}}},
	}
	got, err := e.cs.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", o.name, err)
	}
	return got
}

// gang creates n pods named NAME-i of gpus each in gang NAME.
func (e *env) gang(name string, n, gpus int, extra map[string]string) []string {
	var names []string
	for i := range n {
		ann := map[string]string{kube.AnnGang: name, kube.AnnGangSize: fmt.Sprint(n)}
		for k, v := range extra {
			ann[k] = v
		}
		pn := fmt.Sprintf("%s-%d", name, i)
		e.createPod(podOpts{name: pn, gpus: gpus, ann: ann})
		names = append(names, pn)
	}
	return names
}

func (e *env) pod(name string) *corev1.Pod {
	p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		e.t.Fatal(err)
	}
	return p
}

// eventually polls cond until it holds or the limit passes.
func (e *env) eventually(limit time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *env) bound(names ...string) bool {
	for _, n := range names {
		p := e.pod(n)
		if p == nil || p.Spec.NodeName == "" {
			return false
		}
	}
	return true
}

func (e *env) countBound(names ...string) int {
	k := 0
	for _, n := range names {
		if p := e.pod(n); p != nil && p.Spec.NodeName != "" {
			k++
		}
	}
	return k
}

// annotate sets a pod's annotation, as a worker reporting its run would:
// read, change and update, again on a conflict (the scheduler writes the
// pod's status and annotations meanwhile).
func (e *env) annotate(name, key, value string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := e.cs.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Annotations[key] = value
		_, err = e.cs.CoreV1().Pods(e.ns).Update(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// events lists the events of a pod with the given reason.
func (e *env) events(pod, reason string) []string {
	list, err := e.cs.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": reason}.AsSelector().String()})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Message)
	}
	return out
}

func (e *env) hasEvent(pod, reason, substr string) bool {
	return slices.ContainsFunc(e.events(pod, reason), func(m string) bool { return strings.Contains(m, substr) })
}

// checkNoDoubleGPU asserts that no device on any node is held by two live
// pods (the apiserver does not enforce capacity, so the test must).
func (e *env) checkNoDoubleGPU() {
	e.t.Helper()
	pods, err := e.cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	held := map[string]string{}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		v, ok := p.Annotations[kube.AnnGPUIndices]
		if !ok {
			g, _ := kube.PodGPUs(&p)
			perNode[p.Spec.NodeName] += g
			continue
		}
		idx, err := kube.ParseIndices(v)
		if err != nil {
			e.t.Fatalf("pod %s: %v", p.Name, err)
		}
		g, _ := kube.PodGPUs(&p)
		if len(idx) != g {
			e.t.Errorf("pod %s asks %d GPUs but got indices %v", p.Name, g, idx)
		}
		perNode[p.Spec.NodeName] += len(idx)
		for _, x := range idx {
			k := fmt.Sprintf("%s/%d", p.Spec.NodeName, x)
			if other, dup := held[k]; dup {
				e.t.Errorf("GPU %s given to both %s and %s", k, other, p.Name)
			}
			held[k] = p.Name
		}
	}
	nodes, _ := e.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		if perNode[n.Name] > kube.NodeGPUs(&n) {
			e.t.Errorf("node %s: %d GPUs in use, it has %d", n.Name, perNode[n.Name], kube.NodeGPUs(&n))
		}
	}
}

var httptestClient = &http.Client{Timeout: 5 * time.Second}
