package bind

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
)

// apiserver answers a test's binds, evictions and GETs from a script:
// each request takes the next answer for its kind.
type apiserver struct {
	mu      sync.Mutex
	pod     *corev1.Pod // the apiserver's pod (nil: gone)
	binds   []func(b *corev1.Binding) error
	gets    []error
	evicts  []error
	patches []error // Delete's status patches
	deletes []error
	calls   map[string]int
	// patched and deleteUID are the last status patch's body and the
	// last delete's UID precondition ("none": without one).
	patched   string
	deleteUID string
	commits   int
	// nodeGone: the task's node has no Node object; nodeGets scripts the
	// answers to GETs of it (nil: the node).
	nodeGone bool
	nodeGets []error
}

func (a *apiserver) next(list *[]error) error {
	if len(*list) == 0 {
		return nil
	}
	e := (*list)[0]
	*list = (*list)[1:]
	return e
}

func (a *apiserver) client() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("*", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.calls[act.GetVerb()+"/"+act.GetSubresource()]++
		switch x := act.(type) {
		// Patch and delete first: they have GetAction's methods too.
		case k8stesting.PatchAction:
			a.patched = string(x.GetPatch())
			if err := a.next(&a.patches); err != nil {
				return true, nil, err
			}
			return true, a.pod.DeepCopy(), nil
		case k8stesting.DeleteAction:
			a.deleteUID = "none"
			if pre := x.GetDeleteOptions().Preconditions; pre != nil && pre.UID != nil {
				a.deleteUID = string(*pre.UID)
			}
			return true, nil, a.next(&a.deletes)
		case k8stesting.CreateAction:
			switch x.GetSubresource() {
			case "binding":
				b := x.GetObject().(*corev1.Binding)
				do := func(b *corev1.Binding) error { return a.commit(b) }
				if len(a.binds) > 0 {
					do, a.binds = a.binds[0], a.binds[1:]
				}
				return true, b, do(b)
			case "eviction":
				return true, x.GetObject(), a.next(&a.evicts)
			}
		case k8stesting.GetAction:
			if err := a.next(&a.gets); err != nil {
				return true, nil, err
			}
			if a.pod == nil {
				return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, x.GetName())
			}
			return true, a.pod.DeepCopy(), nil
		}
		return false, nil, nil
	})
	cs.PrependReactor("get", "nodes", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.calls["get/node"]++
		name := act.(k8stesting.GetAction).GetName()
		if err := a.next(&a.nodeGets); err != nil {
			return true, nil, err
		}
		if a.nodeGone {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
		}
		return true, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	})
	return cs
}

// commit binds the pod as b asks (mu held), or answers as the apiserver
// would when it is already bound.
func (a *apiserver) commit(b *corev1.Binding) error {
	if a.pod.Spec.NodeName != "" {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, b.Name, errors.New("pod is already assigned"))
	}
	a.pod.Spec.NodeName = b.Target.Name
	a.pod.Annotations = b.Annotations
	a.commits++
	return nil
}

func pending() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
}

// run does one task on a binder over the scripted apiserver and returns
// what became of it.
func run(t *testing.T, a *apiserver, task *Task) Result {
	t.Helper()
	a.calls = map[string]int{}
	var got []Result
	var mu sync.Mutex
	b := New(a.client(), 2, slog.New(slog.NewTextHandler(io.Discard, nil)), func(r Result) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	})
	b.Backoff, b.MaxBackoff = time.Millisecond, 2*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.Start(ctx)
	b.Submit(task)
	if err := b.Wait(ctx); err != nil {
		t.Fatalf("the task never settled: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no result")
	}
	return got[len(got)-1]
}

func bindTask() *Task {
	return &Task{Kind: Bind, Pod: pending(), Node: "n0", Annots: map[string]string{podspec.AnnGPUIndices: "0,1"}, Seq: 7}
}

// Each way a Binding's answer can mislead, and what the binder makes of
// it: the outcome the state gets, and the requests it took.
func TestBindOutcomes(t *testing.T) {
	timeout := func(a *apiserver) func(*corev1.Binding) error {
		return func(b *corev1.Binding) error { // committed, answered with an error
			_ = a.commit(b)
			return apierrors.NewTimeoutError("request did not complete within the allowed duration", 1)
		}
	}
	lost := func(*corev1.Binding) error { return errors.New("http2: client connection lost") } // not committed
	for _, c := range []struct {
		name  string
		setup func(a *apiserver)
		want  state.Outcome
		binds int
	}{
		{"plain", func(*apiserver) {}, state.Bound, 1},
		{"committed but a timeout: the GET finds it bound", func(a *apiserver) { a.binds = append(a.binds, timeout(a)) }, state.Bound, 1},
		{"committed but a timeout, and the pod is being deleted: bound (it holds its devices until it ends)", func(a *apiserver) {
			a.binds = append(a.binds, func(b *corev1.Binding) error {
				_ = a.commit(b)
				now := metav1.Now()
				a.pod.DeletionTimestamp = &now // its Job was deleted meanwhile
				return apierrors.NewTimeoutError("request did not complete within the allowed duration", 1)
			})
		}, state.Bound, 1},
		{"lost, and the pod is being deleted unbound: not bound (a deleting pod cannot be bound)", func(a *apiserver) {
			now := metav1.Now()
			a.pod.DeletionTimestamp = &now
			a.binds = append(a.binds, lost)
		}, state.NotBound, 1},
		{"lost and not committed: bound again", func(a *apiserver) { a.binds = append(a.binds, lost) }, state.Bound, 2},
		{"lost and not committed, and the node is gone: not bound again (the pod would be lost on it)", func(a *apiserver) {
			a.binds = append(a.binds, lost)
			a.nodeGone = true
		}, state.NotBound, 1},
		{"lost and not committed, the node read on the third try: bound again", func(a *apiserver) {
			a.binds = append(a.binds, lost)
			a.nodeGets = []error{errors.New("connection refused"), errors.New("connection refused")}
		}, state.Bound, 2},
		{"committed, and the GETs fail twice: held until one answers", func(a *apiserver) {
			a.binds = append(a.binds, timeout(a))
			a.gets = []error{errors.New("connection refused"), errors.New("connection refused")}
		}, state.Bound, 1},
		{"refused (429), unbound: not bound", func(a *apiserver) {
			a.binds = append(a.binds, func(*corev1.Binding) error { return apierrors.NewTooManyRequests("slow down", 1) })
		}, state.NotBound, 1},
		{"timed out (408) before it was committed: it may land, so bound again", func(a *apiserver) {
			a.binds = append(a.binds, func(*corev1.Binding) error {
				return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 408, Reason: metav1.StatusReasonTimeout}}
			})
		}, state.Bound, 2},
		{"bound elsewhere by another: not ours", func(a *apiserver) { a.pod.Spec.NodeName = "n9" }, state.NotBound, 1},
		{"bound elsewhere with the same devices: still not ours", func(a *apiserver) {
			a.pod.Spec.NodeName = "n9"
			a.pod.Annotations = map[string]string{podspec.AnnGPUIndices: "0,1"}
		}, state.NotBound, 1},
		{"gone", func(a *apiserver) {
			a.binds = append(a.binds, func(b *corev1.Binding) error {
				a.pod = nil
				return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, b.Name)
			})
		}, state.NotBound, 1},
		{"replaced by a pod of the same name", func(a *apiserver) {
			a.pod.UID = "u2"
			a.binds = append(a.binds, func(b *corev1.Binding) error {
				return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, b.Name, errors.New("UID precondition"))
			})
		}, state.NotBound, 1},
		{"lost, then the earlier one landed: the retry's conflict is ours", func(a *apiserver) {
			a.binds = append(a.binds, lost, func(b *corev1.Binding) error {
				_ = a.commit(b) // the first request landed late...
				return a.commit(b)
			})
		}, state.Bound, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &apiserver{pod: pending()}
			c.setup(a)
			r := run(t, a, bindTask())
			if r.Outcome != c.want || r.Task.Seq != 7 {
				t.Errorf("outcome %v (err %v), want %v", r.Outcome, r.Err, c.want)
			}
			if got := a.calls["create/binding"]; got != c.binds {
				t.Errorf("%d Bindings posted, want %d", got, c.binds)
			}
			if c.want == state.Bound && (a.pod.Spec.NodeName != "n0" || a.commits != 1) {
				t.Errorf("pod on %q after %d commits", a.pod.Spec.NodeName, a.commits)
			}
		})
	}
}

// An eviction refused by a disruption budget (429) leaves the pod
// running; one whose pod is gone is done; one lost is sent again.
func TestEvictOutcomes(t *testing.T) {
	for _, c := range []struct {
		name   string
		evicts []error
		want   state.Outcome
		posts  int
	}{
		{"accepted", nil, state.Evicted, 1},
		{"budget", []error{apierrors.NewTooManyRequests("disruption budget", 10)}, state.NotEvicted, 1},
		{"gone", []error{apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")}, state.Evicted, 1},
		{"lost, then accepted", []error{errors.New("connection reset")}, state.Evicted, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pending()
			p.Spec.NodeName = "n0"
			a := &apiserver{pod: p, evicts: c.evicts}
			r := run(t, a, &Task{Kind: Evict, Pod: p, Seq: 3})
			if r.Outcome != c.want {
				t.Errorf("outcome %v (err %v), want %v", r.Outcome, r.Err, c.want)
			}
			if got := a.calls["create/eviction"]; got != c.posts {
				t.Errorf("%d Evictions posted, want %d", got, c.posts)
			}
		})
	}
}

// A Delete task (a preemption past a budget): the pod's status gets the
// DisruptionTarget condition, then the pod is deleted under its UID; a
// refusal of either leaves it not evicted, a pod gone or replaced is
// evicted, an outcome not known is tried again; a bare pod is never
// touched.
func TestDeleteOutcomes(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("RBAC: no"))
	for _, c := range []struct {
		name             string
		bare             bool
		patches, deletes []error
		want             state.Outcome
		patched, deleted int
	}{
		{name: "accepted", want: state.Evicted, patched: 1, deleted: 1},
		{name: "bare pod", bare: true, want: state.NotEvicted},
		{name: "status patch refused", patches: []error{forbidden}, want: state.NotEvicted, patched: 1},
		{name: "gone before the patch", patches: []error{apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")}, want: state.Evicted, patched: 1},
		{name: "delete refused", deletes: []error{forbidden}, want: state.NotEvicted, patched: 1, deleted: 1},
		{name: "another pod under its name", deletes: []error{apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("precondition failed: UID"))},
			want: state.Evicted, patched: 1, deleted: 1},
		{name: "delete lost, then accepted", deletes: []error{errors.New("connection reset")}, want: state.Evicted, patched: 2, deleted: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pending()
			p.Spec.NodeName = "n0"
			if !c.bare {
				yes := true
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "uj", Controller: &yes}}
			}
			a := &apiserver{pod: p, patches: c.patches, deletes: c.deletes}
			r := run(t, a, &Task{Kind: Delete, Pod: p, Seq: 3, Target: "pal: preempting to accommodate gang ns/high"})
			if r.Outcome != c.want {
				t.Errorf("outcome %v (err %v), want %v", r.Outcome, r.Err, c.want)
			}
			if got := a.calls["patch/status"]; got != c.patched {
				t.Errorf("%d status patches, want %d", got, c.patched)
			}
			if got := a.calls["delete/"]; got != c.deleted {
				t.Errorf("%d deletes, want %d", got, c.deleted)
			}
			if got := a.calls["create/eviction"]; got != 0 {
				t.Errorf("%d Evictions posted, want none (the Eviction API would refuse them)", got)
			}
			if c.deleted > 0 && a.deleteUID != string(p.UID) {
				t.Errorf("delete under UID precondition %q, want %q", a.deleteUID, p.UID)
			}
			if c.patched > 0 {
				for _, want := range []string{`"type":"DisruptionTarget"`, `"status":"True"`, `"reason":"PreemptionByScheduler"`,
					`"message":"pal: preempting to accommodate gang ns/high"`, `"uid":"u1"`} {
					if !strings.Contains(a.patched, want) {
						t.Errorf("status patch %s lacks %s", a.patched, want)
					}
				}
			}
		})
	}
}

// A task that panics is reported with its stack and goes on as a
// verification: here the bind had landed, and it settles as bound.
func TestPanicTurnsIntoVerify(t *testing.T) {
	a := &apiserver{pod: pending()}
	a.binds = append(a.binds, func(b *corev1.Binding) error {
		_ = a.commit(b)
		panic("a bug in the binding path")
	})
	a.calls = map[string]int{}
	var got []Result
	var mu sync.Mutex
	b := New(a.client(), 1, slog.New(slog.NewTextHandler(io.Discard, nil)), func(r Result) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	})
	b.Backoff = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.Start(ctx)
	b.Submit(bindTask())
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Panic == nil || len(got[0].Stack) == 0 || got[1].Outcome != state.Bound {
		t.Fatalf("results %+v, want the panic, then bound", got)
	}
}

// A task handed over after the binder stopped (a round that was still
// running when its term ended) is dropped, not run by the next term's
// workers: that term verifies what the state assumed, and a Verify that
// finds the pod unbound while the old Binding is still to be posted
// would free devices the Binding then takes.
func TestSubmitAfterStopIsDropped(t *testing.T) {
	a := &apiserver{pod: pending(), calls: map[string]int{}}
	var got []Result
	var mu sync.Mutex
	b := New(a.client(), 1, slog.New(slog.NewTextHandler(io.Discard, nil)), func(r Result) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	})
	term1, end1 := context.WithCancel(context.Background())
	b.Start(term1)
	end1()
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	<-stopped
	b.Submit(bindTask()) // the last term's round, late
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.Start(ctx)
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := a.calls["create/binding"]; n != 0 || len(got) != 0 {
		t.Errorf("%d Bindings posted and %d results after the term ended, want none", n, len(got))
	}
}

// A bind an earlier term left unsettled may have been posted: the client
// gave up on the request when the term ended, but the apiserver can still
// commit it after the next term's GET finds the pod unbound. Settling it
// as not bound would free devices the late Binding then takes, and the
// next round could give them to another pod. An Unsure verification
// therefore binds the pod again, which makes the outcome certain; a
// Verify that is not Unsure (a task no request of which was posted)
// settles as not bound without a Binding.
func TestUnsureVerifyBindsAgain(t *testing.T) {
	old := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1",
		Annotations: map[string]string{podspec.AnnGPUIndices: "0,1"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "n0"}}
	verifyTask := func(unsure bool) *Task {
		task := bindTask()
		task.Kind, task.Unsure = Verify, unsure
		return task
	}
	cases := []struct {
		name   string
		unsure bool
		// lateFirst: the earlier term's Binding commits between the GET
		// and the new one, which is then refused as already assigned.
		lateFirst bool
		want      state.Outcome
		posts     int
	}{
		{"not unsure: never posted", false, false, state.NotBound, 0},
		{"unsure: bound again", true, false, state.Bound, 1},
		{"unsure: the late Binding lands first", true, true, state.Bound, 1},
		{"unsure, the node gone: not bound again", true, false, state.NotBound, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &apiserver{pod: pending(), nodeGone: c.want == state.NotBound && c.unsure}
			if c.lateFirst {
				a.binds = append(a.binds, func(b *corev1.Binding) error {
					if err := a.commit(old); err != nil {
						t.Errorf("the late Binding: %v", err)
					}
					return a.commit(b)
				})
			}
			r := run(t, a, verifyTask(c.unsure))
			if r.Outcome != c.want {
				t.Errorf("outcome %v (err %v), want %v", r.Outcome, r.Err, c.want)
			}
			if got := a.calls["create/binding"]; got != c.posts {
				t.Errorf("%d Bindings posted, want %d", got, c.posts)
			}
			if a.commits != 1 && c.want == state.Bound {
				t.Errorf("%d commits, want 1", a.commits)
			}
			// The earlier term's request lands now, if it had not: the
			// pod must then be on the devices the state holds for it, or
			// the request must be refused.
			a.mu.Lock()
			err := a.commit(old)
			a.mu.Unlock()
			if c.want == state.NotBound {
				return // never posted, or its node is gone (no device to give twice)
			}
			if !apierrors.IsConflict(err) {
				t.Errorf("the earlier term's Binding, landing late, was not refused (err %v): the devices are given twice", err)
			}
		})
	}
}
