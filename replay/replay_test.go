package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// The replay tests run Run against the fake clientset with the test as
// pal-kube scheduler and kwok: fakeCluster binds every complete gang to
// node n1 in the round under way and finishes a running pod once its
// pal.io/finish-after has passed. A round is 1 simulated second, 500 ms
// of wall time.
const (
	testRound   = 1.0
	testSpeedup = 2.0
	testWall    = 500 * time.Millisecond
)

type fakeCluster struct {
	cs *fake.Clientset
	mu sync.Mutex
	// bound counts each gang's placements.
	bound map[string]int
	// slowdown is the pal.io/slowdown written at binding ("": 1).
	slowdown string
	// bindInfo, when set, is the pal.io/bind-info written at binding.
	bindInfo string
	// fate, when set, says how a running pod whose finish-after has
	// passed ends: "" succeeds, "fail" ends Failed (OOMKilled), "delete"
	// deletes it (evicted).
	fate func(p *corev1.Pod) string
}

func newFakeCluster() *fakeCluster {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{kube.ResourceGPU: resource.MustParse("8")}}}
	return &fakeCluster{cs: fake.NewClientset(n), bound: map[string]int{}}
}

// run acts every 10 ms until ctx ends.
func (f *fakeCluster) run(ctx context.Context, t *testing.T, ns string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
		f.step(ctx, t, ns)
	}
}

func (f *fakeCluster) step(ctx context.Context, t *testing.T, ns string) {
	list, err := f.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	gangs := map[string][]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName == "" {
			gangs[p.Annotations[kube.AnnGang]] = append(gangs[p.Annotations[kube.AnnGang]], p)
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, p.Annotations[devcluster.AnnFinishAfter])
		if p.Status.Phase == corev1.PodRunning && err == nil && !time.Now().Before(at) {
			fate := ""
			if f.fate != nil {
				fate = f.fate(p)
			}
			switch fate {
			case "delete":
				f.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
				continue
			case "fail":
				p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "OOMKilled", "container train used 81Gi"
			default:
				p.Status.Phase = corev1.PodSucceeded
			}
			f.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
	}
	for g, ps := range gangs {
		if size, _ := strconv.Atoi(ps[0].Annotations[kube.AnnGangSize]); len(ps) != size {
			continue
		}
		bi := kube.BindInfo{Gang: g, Round: time.Now().Truncate(testWall).UTC().Format(time.RFC3339Nano), Pods: map[string]kube.PodBind{}}
		for i, p := range ps {
			bi.Pods[p.Name] = kube.PodBind{Node: "n1", GPUs: []int{i}}
		}
		b, _ := json.Marshal(bi)
		for _, p := range ps {
			p.Spec.NodeName = "n1"
			p.Annotations[kube.AnnBindInfo] = cmp.Or(f.bindInfo, string(b))
			p.Annotations[kube.AnnSlowdown] = cmp.Or(f.slowdown, "1")
			p.Status.Phase = corev1.PodRunning
			if _, err := f.cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Errorf("bind %s: %v", p.Name, err)
			}
		}
		f.mu.Lock()
		f.bound[g]++
		f.mu.Unlock()
	}
}

// oneJob is a 2-GPU job of two rounds arriving at 0.
func oneJob() *workload.Trace {
	return &workload.Trace{Jobs: []workload.Spec{{ID: 1, GPUs: 2, Submit: 0, Iterations: 20, IterTime: 0.1, Class: variability.ClassA}}}
}

func testReplay(ctx context.Context, t *testing.T, f *fakeCluster, tr *workload.Trace, timeout time.Duration) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go f.run(ctx, t, "r")
	return Run(ctx, f.cs, Options{Trace: tr, Round: testRound, Speedup: testSpeedup, Namespace: "r", SchedulerName: "pal",
		Timeout: timeout, Log: t.Logf})
}

func TestReplayRuns(t *testing.T) {
	f := newFakeCluster()
	res, err := testReplay(context.Background(), t, f, oneJob(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].Run != 2 || fmt.Sprint(res.Jobs[0].GPUIDs) != "[0 1]" {
		t.Errorf("jobs %+v", res.Jobs)
	}
}

// gapWatch stands between the pods informer and the fake API server's
// watch, and can make the informer miss events: drop swallows them, and
// expire ends the watch with 410 Gone (the API server's answer to a
// watch that fell too far behind), after which the informer lists the
// pods again. A pod deleted while events are dropped then comes to the
// informer's handlers as a cache.DeletedFinalStateUnknown tombstone.
type gapWatch struct {
	mu   sync.Mutex
	drop bool
	cur  *proxyWatch
}

type proxyWatch struct {
	in     watch.Interface
	out    chan watch.Event
	expire chan struct{}
	once   sync.Once
}

func (g *gapWatch) install(cs *fake.Clientset) {
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		in, err := cs.Tracker().Watch(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		p := &proxyWatch{in: in, out: make(chan watch.Event), expire: make(chan struct{})}
		g.mu.Lock()
		g.cur = p
		g.mu.Unlock()
		go func() {
			defer close(p.out)
			defer in.Stop()
			for {
				select {
				case <-p.expire:
					p.out <- watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410,
						Reason: metav1.StatusReasonExpired, Message: "too old resource version"}}
					return
				case e, ok := <-in.ResultChan():
					if !ok {
						return
					}
					g.mu.Lock()
					drop := g.drop
					g.mu.Unlock()
					if drop {
						continue
					}
					select {
					case p.out <- e:
					case <-p.expire:
					}
				}
			}
		}()
		return true, p, nil
	})
}

func (p *proxyWatch) Stop()                          { p.once.Do(func() { close(p.expire) }) }
func (p *proxyWatch) ResultChan() <-chan watch.Event { return p.out }

// miss deletes pods while the informer's watch drops events, then
// expires the watch.
func (g *gapWatch) miss(t *testing.T, cs *fake.Clientset, ns string, pods []string) {
	g.mu.Lock()
	g.drop = true
	cur := g.cur
	g.mu.Unlock()
	for _, n := range pods {
		if err := cs.CoreV1().Pods(ns).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // the deletions' events reach the proxy and are dropped
	g.mu.Lock()
	g.drop = false
	g.mu.Unlock()
	cur.Stop()
}

// A gang evicted (its pods deleted) while the replay's watch was
// broken reaches the replay as tombstones when its informer lists the
// pods again. The replay recreates it as it does any evicted gang; it
// used to ignore a tombstone, and the job never finished, the replay
// waiting for it until its timeout (forever by default).
func TestReplayRecreatesGangDeletedInWatchGap(t *testing.T) {
	f := newFakeCluster()
	var g gapWatch
	g.install(f.cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Evict the gang once, mid-run, while the watch is broken.
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			f.mu.Lock()
			n := len(f.bound)
			f.mu.Unlock()
			if n == 0 {
				continue
			}
			list, _ := f.cs.CoreV1().Pods("r").List(ctx, metav1.ListOptions{})
			var names []string
			for _, p := range list.Items {
				if p.Annotations[devcluster.AnnFinishAfter] == "" || p.Status.Phase != corev1.PodRunning {
					names = nil
					break
				}
				names = append(names, p.Name)
			}
			if len(names) == 2 {
				g.miss(t, f.cs, "r", names)
				return
			}
		}
	}()
	res, err := testReplay(ctx, t, f, oneJob(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if j := res.Jobs[0]; j.Preemptions != 1 {
		t.Errorf("job %+v: want one preemption", j)
	}
	f.placedTwice(t, "once more after its eviction")
}

// placedTwice checks that every gang was placed twice: once, and once
// more after why.
func (f *fakeCluster) placedTwice(t *testing.T, why string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for g, n := range f.bound {
		if n != 2 {
			t.Errorf("gang %s placed %d times, want 2 (%s)", g, n, why)
		}
	}
}

// A pod the API server refuses to create leaves its gang short of a
// member, and a gang short of a member is never placed. A refusal that
// passes (a 500, a timeout) is retried; one that stays fails the replay
// at once, naming the pod, instead of waiting for the job until the
// timeout (forever by default).
func TestReplayCreateRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuse  int // creates refused, from the first
		err     error
		wantErr string
	}{
		{name: "once", refuse: 1, err: apierrors.NewInternalError(errors.New("etcd leader changed"))},
		{name: "always", refuse: 1000, err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("exceeded quota")),
			wantErr: `-00000-j1-0: pods "x" is forbidden: exceeded quota`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			var mu sync.Mutex
			refused := 0
			f.cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				if refused < tc.refuse {
					refused++
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			start := time.Now()
			_, err := testReplay(context.Background(), t, f, oneJob(), 4*time.Second)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("replay: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("replay: %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr != "" && time.Since(start) > 3*time.Second:
				t.Errorf("replay failed after %v: it waited for the timeout", time.Since(start))
			}
		})
	}
}

// A replay that stops early (Ctrl-C, its timeout, an error) cannot be
// resumed, and its gangs would go on holding GPUs and the scheduler's
// attention: it deletes its ConfigMap, by UID, with background
// propagation, so that the garbage collector deletes its pods (and only
// its pods: those owned by that ConfigMap).
func TestReplayStoppedDeletesItsRun(t *testing.T) {
	f := newFakeCluster()
	f.cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).UID = "cm-uid"
		return false, nil, nil
	})
	var mu sync.Mutex
	var deletes []string
	f.cs.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		o := d.GetDeleteOptions()
		s := a.GetResource().Resource + " " + d.GetName()
		if o.Preconditions != nil && o.Preconditions.UID != nil {
			s += " uid " + string(*o.Preconditions.UID)
		}
		if o.PropagationPolicy != nil {
			s += " " + string(*o.PropagationPolicy)
		}
		mu.Lock()
		deletes = append(deletes, s)
		mu.Unlock()
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Interrupted once the gang runs.
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			f.mu.Lock()
			n := len(f.bound)
			f.mu.Unlock()
			if n > 0 {
				cancel()
			}
		}
	}()
	_, err := testReplay(ctx, t, f, oneJob(), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 jobs unfinished") {
		t.Fatalf("replay: %v, want it interrupted", err)
	}
	cms, _ := f.cs.CoreV1().ConfigMaps("r").List(context.Background(), metav1.ListOptions{})
	mu.Lock()
	defer mu.Unlock()
	if len(cms.Items) != 0 || len(deletes) != 1 || !strings.HasSuffix(deletes[0], " uid cm-uid Background") || !strings.HasPrefix(deletes[0], "configmaps replay-") {
		t.Errorf("after the interruption: %d ConfigMaps left, deletes %q; want the run's ConfigMap deleted by UID, Background", len(cms.Items), deletes)
	}
}

// A pal.io/slowdown that is infinite, or so large that the job's rounds
// cannot be counted in any time, is not used: counting them one by one,
// under the replay's lock, never ended, and the replay then hung past
// its timeout and Ctrl-C alike. The job, which cannot be timed, is
// recorded as failed and the replay ends (it only logged it, and waited
// for the job until its timeout, for ever by default).
func TestReplayRefusesAbsurdSlowdown(t *testing.T) {
	for _, tc := range []struct{ slow, want string }{
		{"Inf", `no usable pal.io/slowdown ("Inf")`},
		{"1e300", "the job needs more than 4194304 rounds at slowdown 1e+300"},
	} {
		t.Run(tc.slow, func(t *testing.T) {
			f := newFakeCluster()
			f.slowdown = tc.slow
			res, err := replayWithin(t, f, oneJob(), 4*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != 0 || len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Reason, tc.want) {
				t.Errorf("finished %+v, failed %+v; want job 1 failed: %s", res.Jobs, res.Failed, tc.want)
			}
		})
	}
}

// A trace row the cluster can never run is refused before anything is
// made, naming its file, line and field, as pal sim refuses it: a job
// wider than the cluster's GPUs was made as pods that were never placed
// (the replay then waited for it for ever), and one arriving past what a
// time.Duration holds overflowed to an arrival at once.
func TestReplayRefusesImpossibleJobs(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  workload.Spec
		want string
	}{
		{name: "wider than the cluster", job: workload.Spec{ID: 7, GPUs: 9, Iterations: 10, IterTime: 0.1, Source: "t.csv", Line: 3},
			want: `t.csv:3: field "num_gpus": job 7 asks for 9 GPUs but the cluster has 8 (on 1 GPU nodes)`},
		{name: "arrives past any wait", job: workload.Spec{ID: 7, GPUs: 1, Submit: 1e13, Iterations: 10, IterTime: 0.1, Source: "t.csv", Line: 3},
			want: `t.csv:3: field "submit_time": job 7 arrives at 1e+13 s, 1.6e+05 years of wall time at speedup 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			tr := oneJob()
			tr.Jobs = append(tr.Jobs, tc.job)
			_, err := testReplay(context.Background(), t, f, tr, 2*time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("replay: %v\nwant: %s", err, tc.want)
			}
			pods, _ := f.cs.CoreV1().Pods("r").List(context.Background(), metav1.ListOptions{})
			cms, _ := f.cs.CoreV1().ConfigMaps("r").List(context.Background(), metav1.ListOptions{})
			if len(pods.Items)+len(cms.Items) > 0 {
				t.Errorf("%d pods and %d ConfigMaps made for a refused trace", len(pods.Items), len(cms.Items))
			}
		})
	}
}

// The patch that tells kwok when a pod finishes is the only one made for
// the pod's placement: one the API server refuses left the pod running
// for ever. A passing refusal is retried; one that stays fails the
// replay at once, naming the pod.
func TestReplayFinishPatchRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuse  int
		wantErr string
	}{
		{name: "once", refuse: 1},
		{name: "always", refuse: 1000, wantErr: `: Internal error occurred: etcd leader changed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			var mu sync.Mutex
			refused := 0
			f.cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				if refused < tc.refuse {
					refused++
					return true, nil, apierrors.NewInternalError(errors.New("etcd leader changed"))
				}
				return false, nil, nil
			})
			start := time.Now()
			_, err := testReplay(context.Background(), t, f, oneJob(), 4*time.Second)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("replay: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "job 1: patch pod r/replay-")):
				t.Errorf("replay: %v, want an error naming the pod and %q", err, tc.wantErr)
			case tc.wantErr != "" && time.Since(start) > 3*time.Second:
				t.Errorf("replay failed after %v: it waited for the timeout", time.Since(start))
			}
		})
	}
}

// replayWithin runs testReplay with the replay's own timeout 0 (as
// pal-kube replay's default) and fails the test if it has not returned
// within d: the hangs these tests guard against would otherwise hang the
// test binary.
func replayWithin(t *testing.T, f *fakeCluster, tr *workload.Trace, d time.Duration) (*Result, error) {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		res, err := testReplay(ctx, t, f, tr, 0)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(d):
		cancel()
		<-done
		t.Fatalf("the replay (--timeout 0) had not returned after %v", d)
		return nil, nil
	}
}

// twoJobs is oneJob and a 1-GPU job of one round arriving at 1 s.
func twoJobs() *workload.Trace {
	tr := oneJob()
	tr.Jobs = append(tr.Jobs, workload.Spec{ID: 2, GPUs: 1, Submit: 1, Iterations: 10, IterTime: 0.1, Class: variability.ClassA})
	return tr
}

// podsLeft is the replay's pods of gang job ID id still in the API.
func podsLeft(t *testing.T, f *fakeCluster, id int) []string {
	list, err := f.cs.CoreV1().Pods("r").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		if strings.HasSuffix(p.Annotations[kube.AnnGang], fmt.Sprintf("-j%d", id)) {
			names = append(names, p.Name+" "+string(p.Status.Phase))
		}
	}
	return names
}

// A pod that ends Failed (OOM-killed, evicted by its kubelet, a kwok
// stage) is neither Succeeded nor gone: its job never finished, and the
// replay waited for it for ever. The job is now recorded as failed (its
// times would not be the simulator's), its other pods deleted, and the
// replay goes on with the other jobs and reports it.
func TestReplayPodFailed(t *testing.T) {
	f := newFakeCluster()
	f.fate = func(p *corev1.Pod) string {
		if strings.HasSuffix(p.Name, "-j1-1") {
			return "fail"
		}
		return ""
	}
	res, err := replayWithin(t, f, twoJobs(), 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].ID != 2 {
		t.Errorf("finished jobs %+v, want job 2 alone", res.Jobs)
	}
	if len(res.Failed) != 1 || res.Failed[0].JobID != 1 || !strings.Contains(res.Failed[0].Reason, "-j1-1 ended Failed (OOMKilled: container train used 81Gi)") {
		t.Errorf("failed jobs %+v, want job 1's pod -j1-1 Failed, OOMKilled", res.Failed)
	}
	if left := podsLeft(t, f, 1); len(left) != 0 {
		t.Errorf("failed job's pods left: %q", left)
	}
}

// A bound pod whose pal.io/bind-info cannot be read (bound by another
// scheduler, or the annotation edited) gives the replay no round to
// count from: it was only logged, and the job never got its finish time,
// the replay waiting for it for ever. The job is recorded as failed.
func TestReplayBindInfoUnreadable(t *testing.T) {
	f := newFakeCluster()
	f.bindInfo = "{not json"
	res, err := replayWithin(t, f, oneJob(), 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 0 || len(res.Failed) != 1 || res.Failed[0].JobID != 1 || !strings.Contains(res.Failed[0].Reason, "pal.io/bind-info") {
		t.Errorf("finished %+v, failed %+v; want job 1 failed for its bind-info", res.Jobs, res.Failed)
	}
	if left := podsLeft(t, f, 1); len(left) != 0 {
		t.Errorf("failed job's pods left: %q", left)
	}
}

// A gang of which one pod Succeeded and another was deleted (evicted as
// it ended, or removed once done) was neither finished nor recreated,
// and the replay waited for it for ever. A pod deleted once its
// finish-after has passed, or once a gang mate has succeeded, ran to its
// end: the job finishes at its time. A pod deleted before its end breaks
// the gang: the replay deletes the others and recreates it, a restart.
func TestReplayGangPartlySucceeded(t *testing.T) {
	t.Run("deleted at its end", func(t *testing.T) {
		f := newFakeCluster()
		f.fate = func(p *corev1.Pod) string {
			if strings.HasSuffix(p.Name, "-j1-1") {
				return "delete"
			}
			return ""
		}
		res, err := replayWithin(t, f, oneJob(), 6*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || res.Jobs[0].Run != 2 || res.Jobs[0].Preemptions != 0 || len(res.Failed) != 0 {
			t.Errorf("jobs %+v, failed %+v; want job 1 run 2 rounds, not preempted", res.Jobs, res.Failed)
		}
	})
	t.Run("deleted before its end", func(t *testing.T) {
		f := newFakeCluster()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Delete the first placement's pod 1 once it has its
			// finish time, well before it.
			for ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
				list, _ := f.cs.CoreV1().Pods("r").List(ctx, metav1.ListOptions{})
				for _, p := range list.Items {
					if strings.HasSuffix(p.Name, "-j1-1") && p.Annotations[devcluster.AnnFinishAfter] != "" {
						f.cs.CoreV1().Pods("r").Delete(ctx, p.Name, metav1.DeleteOptions{})
						return
					}
				}
			}
		}()
		res, err := replayWithin(t, f, oneJob(), 6*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || res.Jobs[0].Preemptions != 1 || len(res.Failed) != 0 {
			t.Errorf("jobs %+v, failed %+v; want job 1 finished after one restart", res.Jobs, res.Failed)
		}
		f.placedTwice(t, "once more after it broke")
	})
}

// An API server that does not answer the pods informer's list (down,
// unreachable, or this user may not list pods there) kept the replay
// waiting for the informer's sync for ever under --timeout 0. It now
// waits startupTimeout (2 min) at most and says why it stopped.
func TestReplayStartupBounded(t *testing.T) {
	defer func(d time.Duration) { startupTimeout = d }(startupTimeout)
	startupTimeout = 500 * time.Millisecond
	f := newFakeCluster()
	f.cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("apiserver is shutting down")
	})
	start := time.Now()
	_, err := replayWithin(t, f, oneJob(), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "the informer of the pods in namespace r did not sync within 500ms") {
		t.Errorf("replay: %v, want the informer's sync given up after 500ms", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("replay returned after %v", d)
	}
}
