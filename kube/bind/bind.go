// Package bind carries out a round's decisions on the apiserver: it
// posts the Bindings and Evictions on workers of its own, through a
// client of its own (its rate limits are the binder's, not the
// informers'), so that a round never waits on the network. It reports
// what became of each one, and the scheduler's state (package
// kube/state) holds an assumed bind's devices until then.
//
// An answer is not always the outcome. A Binding the apiserver committed
// may still come back as an error (a lost connection, a timeout, a
// server error), and one the client gave up on may be committed later.
// So an error settles nothing by itself: the binder asks the apiserver
// for the pod (a direct GET). Bound to the node and devices the binding
// named: it is bound (even while it is being deleted: it runs there
// until it ends). Gone, replaced by a pod of the same name, unbound and
// being deleted, or bound elsewhere: it is not (ours). Still unbound after an
// error the apiserver answered (a 4xx: it refused the request): it is
// not. Still unbound after an error whose outcome is unknown: the same
// Binding is posted again, so that either it lands now or the earlier
// one did (the second is then refused as a conflict and the GET finds
// the pod bound). A GET that fails leaves the outcome unknown and is
// tried again later, with backoff, for as long as the binder runs; the
// devices stay held all that time.
package bind

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
)

// Kind is what a task does.
type Kind uint8

const (
	// Bind posts a Binding with the task's annotations.
	Bind Kind = iota
	// Evict posts an Eviction.
	Evict
	// Verify only asks the apiserver whether an assumed bind landed (a
	// bind left unsettled when an earlier binder stopped).
	Verify
	// Delete preempts past the pod's PodDisruptionBudget, as
	// kube-scheduler preempts a victim: it patches the pod's status with
	// a DisruptionTarget condition (reason PreemptionByScheduler,
	// message the task's Target), then deletes the pod under a
	// precondition on its UID. The Eviction API would refuse it (429).
	// A bare pod (no controller) is never deleted: nothing would make it
	// again.
	Delete
)

func (k Kind) String() string {
	switch k {
	case Bind:
		return "bind"
	case Evict:
		return "evict"
	case Delete:
		return "delete"
	}
	return "verify"
}

// Task is one bind or eviction of one pod.
type Task struct {
	Kind   Kind
	Pod    *corev1.Pod // its namespace, name and UID are what the requests name
	Node   string      // Bind, Verify: the node
	Annots map[string]string
	Seq    uint64 // the assumption's number in the state
	Gang   string // the gang's key, for the caller
	Reason string // Evict, Delete: why (the caller's)
	Target string // Delete: the DisruptionTarget condition's message
	// Unsure marks a Verify of a bind an earlier binder may have posted
	// without learning the answer (its term ended with the request in
	// flight). A request the client gave up on can still commit on the
	// apiserver after a GET has found the pod unbound, and the devices
	// would then be given twice: to this pod, and to whatever the next
	// round put on them. So an Unsure verification that finds the pod
	// unbound binds it again, as the task says, instead of settling it
	// as not bound. The second Binding makes the outcome certain: it
	// lands, or the first one did and it is refused as already assigned
	// (then the GET finds the pod on the task's node and devices).
	Unsure bool

	tries int
	asked bool // a request of this task reached the apiserver
}

// Result is what became of a task.
type Result struct {
	Task    *Task
	Outcome state.Outcome // 0: none (the task panicked or the binder stopped)
	Err     error         // the last error met on the way, if any
	Panic   any           // what a worker recovered from, with Stack
	Stack   []byte
}

// Binder runs tasks on its workers.
type Binder struct {
	client  kubernetes.Interface
	workers int
	done    func(Result)
	log     *slog.Logger
	// Backoff is the wait before a task whose outcome is unknown is
	// tried again, doubled per try up to MaxBackoff.
	Backoff, MaxBackoff time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*Task
	waiting int // tasks queued, in flight or waiting to be tried again
	ctx     context.Context
	stopped chan struct{} // closed when the last Start's workers are gone
	idle    chan struct{}
}

// New makes a binder of workers goroutines posting through client; done
// is called, on a worker, once per task with what became of it.
func New(client kubernetes.Interface, workers int, log *slog.Logger, done func(Result)) *Binder {
	b := &Binder{client: client, workers: max(workers, 1), done: done, log: log,
		Backoff: 200 * time.Millisecond, MaxBackoff: 10 * time.Second}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Start runs the workers until ctx ends. Tasks still queued or in flight
// then are dropped without a Result: their outcome stays unknown (the
// state keeps a bind's devices held and a later binder verifies it; an
// eviction is forgotten, for the next term's rounds to decide again).
func (b *Binder) Start(ctx context.Context) {
	b.mu.Lock()
	prev := b.stopped
	b.mu.Unlock()
	if prev != nil {
		<-prev // the previous run's workers are gone (a new leader term)
	}
	stopped := make(chan struct{})
	b.mu.Lock()
	b.ctx, b.stopped = ctx, stopped
	b.mu.Unlock()
	var wg sync.WaitGroup
	for range b.workers {
		wg.Go(func() { b.work(ctx) })
	}
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
		wg.Wait()
		b.mu.Lock()
		b.queue, b.waiting = nil, 0
		b.signalIdle()
		b.mu.Unlock()
		close(stopped)
	}()
}

// Submit queues tasks; it never blocks. Tasks handed over once the
// binder has stopped are dropped, as those in flight then are: the next
// Start must not post what a round of the last term decided while the
// next term verifies it.
func (b *Binder) Submit(ts ...*Task) {
	if len(ts) == 0 {
		return
	}
	b.mu.Lock()
	if b.ctx != nil && b.ctx.Err() != nil {
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, ts...)
	b.waiting += len(ts)
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Pending is how many tasks are queued, in flight or waiting to be tried
// again.
func (b *Binder) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// Wait blocks until no task is pending or ctx ends (tests, and a
// scheduler that stops).
func (b *Binder) Wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.waiting == 0 {
			b.mu.Unlock()
			return nil
		}
		if b.idle == nil {
			b.idle = make(chan struct{})
		}
		ch := b.idle
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *Binder) signalIdle() {
	if b.waiting == 0 && b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
}

func (b *Binder) work(ctx context.Context) {
	for {
		b.mu.Lock()
		for len(b.queue) == 0 && ctx.Err() == nil {
			b.cond.Wait()
		}
		if ctx.Err() != nil {
			b.mu.Unlock()
			return
		}
		t := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.mu.Unlock()

		r, again := b.run(ctx, t)
		if ctx.Err() != nil {
			return // stopped: the outcome stays unknown
		}
		if again {
			b.retry(ctx, t)
			continue
		}
		b.done(r)
		b.mu.Lock()
		b.waiting--
		b.signalIdle()
		b.mu.Unlock()
	}
}

// retry queues t again after its backoff.
func (b *Binder) retry(ctx context.Context, t *Task) {
	d := b.Backoff << min(t.tries, 16)
	if d > b.MaxBackoff || d <= 0 {
		d = b.MaxBackoff
	}
	t.tries++
	time.AfterFunc(d, func() {
		b.mu.Lock()
		if ctx.Err() != nil || b.ctx != ctx {
			b.mu.Unlock()
			return // that run stopped: the outcome stays unknown
		}
		b.queue = append(b.queue, t)
		b.cond.Broadcast()
		b.mu.Unlock()
	})
}

// run does one try of t: its Result, or again when its outcome is still
// unknown and it must be tried later. A panic is recovered and reported;
// the task then turns into a Verify (what happened is not known).
func (b *Binder) run(ctx context.Context, t *Task) (r Result, again bool) {
	defer func() {
		if v := recover(); v != nil {
			r, again = Result{Task: t, Panic: v, Stack: debug.Stack()}, false
			b.done(r)
			if t.Kind != Evict && t.Kind != Delete {
				t.Kind = Verify
			}
			r, again = Result{}, true
		}
	}()
	switch t.Kind {
	case Bind:
		return b.bind(ctx, t)
	case Evict:
		return b.evict(ctx, t)
	case Delete:
		return b.delete(ctx, t)
	}
	return b.verify(ctx, t, nil, false)
}

func (b *Binder) bind(ctx context.Context, t *Task) (Result, bool) {
	p := t.Pod
	bd := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Annotations: t.Annots},
		Target:     corev1.ObjectReference{Kind: "Node", Name: t.Node},
	}
	t.asked = true
	err := b.client.CoreV1().Pods(p.Namespace).Bind(ctx, bd, metav1.CreateOptions{})
	if err == nil {
		return Result{Task: t, Outcome: state.Bound}, false
	}
	if ctx.Err() != nil {
		return Result{}, false
	}
	return b.verify(ctx, t, err, refused(err))
}

// verify settles t from a GET of its pod after err (nil: a Verify task).
// refusedErr says the apiserver answered err itself (it did not commit).
func (b *Binder) verify(ctx context.Context, t *Task, err error, refusedErr bool) (Result, bool) {
	p := t.Pod
	cur, gerr := b.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case ctx.Err() != nil:
		return Result{}, false
	case apierrors.IsNotFound(gerr):
		return Result{Task: t, Outcome: state.NotBound, Err: err}, false
	case gerr != nil:
		b.log.Debug("bind outcome unknown; asking again later", "pod", p.Namespace+"/"+p.Name, "err", err, "get", gerr)
		if t.Kind == Bind {
			t.Kind = Verify // the first answer decides whether to bind again
			t.asked = !refusedErr
		}
		return Result{}, true
	case cur.UID != p.UID:
		return Result{Task: t, Outcome: state.NotBound, Err: err}, false
	case cur.Spec.NodeName == t.Node && cur.Annotations[podspec.AnnGPUIndices] == t.Annots[podspec.AnnGPUIndices]:
		// Even when it is being deleted: it runs on those devices until
		// it ends, and the informer shows it bound until then.
		return Result{Task: t, Outcome: state.Bound, Err: err}, false
	case cur.DeletionTimestamp != nil && cur.Spec.NodeName == "":
		// The apiserver binds no pod that is being deleted.
		return Result{Task: t, Outcome: state.NotBound, Err: err}, false
	case cur.Spec.NodeName != "":
		return Result{Task: t, Outcome: state.NotBound, Err: fmt.Errorf("pod bound to %s by another binding (%v)", cur.Spec.NodeName, err)}, false
	case refusedErr || t.Kind == Verify && !t.asked && !t.Unsure:
		return Result{Task: t, Outcome: state.NotBound, Err: err}, false
	}
	// Unbound, and a request of ours may still land: post it again, to a
	// node that is still there. The apiserver binds a pod to any node
	// name, and the pod garbage collector deletes a pod bound to a node
	// that does not exist: a bare pod would be lost, where left unbound
	// it is placed again. (A request of ours that commits late on a node
	// that is gone holds no device that could be given twice.)
	switch _, nerr := b.client.CoreV1().Nodes().Get(ctx, t.Node, metav1.GetOptions{}); {
	case ctx.Err() != nil:
		return Result{}, false
	case apierrors.IsNotFound(nerr):
		return Result{Task: t, Outcome: state.NotBound, Err: fmt.Errorf("node %s is gone; not bound again (%v)", t.Node, err)}, false
	case nerr != nil:
		b.log.Debug("bind outcome unknown, the pod unbound and its node not read; asking again later", "pod", p.Namespace+"/"+p.Name, "node", t.Node, "err", nerr)
		return Result{}, true
	}
	b.log.Debug("bind outcome unknown and the pod unbound; binding again", "pod", p.Namespace+"/"+p.Name, "err", err)
	t.Kind = Bind
	return Result{}, true
}

func (b *Binder) evict(ctx context.Context, t *Task) (Result, bool) {
	p := t.Pod
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
	err := b.client.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return Result{Task: t, Outcome: state.Evicted, Err: err}, false
	case ctx.Err() != nil:
		return Result{}, false
	case refused(err):
		return Result{Task: t, Outcome: state.NotEvicted, Err: err}, false
	}
	return b.readBack(ctx, t, err) // unknown: evicting twice is harmless
}

// delete carries out a Delete task: the DisruptionTarget condition on
// the pod's status (a strategic merge patch, whose conditions merge by
// type; the patch names the pod's UID, so a pod made again under its
// name is not marked), then the pod's deletion under a UID
// precondition. A refusal of either (a 4xx: RBAC without pods/status
// patch or pods delete, a webhook) leaves the pod running and reports it
// not evicted; a pod gone, or replaced under its name, is evicted; an
// outcome not known is tried again (both requests may be repeated).
func (b *Binder) delete(ctx context.Context, t *Task) (Result, bool) {
	p := t.Pod
	if metav1.GetControllerOfNoCopy(p) == nil {
		return Result{Task: t, Outcome: state.NotEvicted,
			Err: fmt.Errorf("pod %s/%s is bare (no controller would make it again): not deleted", p.Namespace, p.Name)}, false
	}
	cond := map[string]any{"type": corev1.DisruptionTarget, "status": corev1.ConditionTrue,
		"reason": corev1.PodReasonPreemptionByScheduler, "message": t.Target,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status":   map[string]any{"conditions": []any{cond}},
	})
	if err != nil {
		return Result{Task: t, Outcome: state.NotEvicted, Err: err}, false
	}
	_, err = b.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	switch {
	case apierrors.IsNotFound(err):
		return Result{Task: t, Outcome: state.Evicted, Err: err}, false
	case ctx.Err() != nil:
		return Result{}, false
	case err != nil && refused(err):
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// Another pod under its name (the UID the patch names
			// differs): this one is gone.
			if cur, gerr := b.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(gerr) || gerr == nil && cur.UID != p.UID {
				return Result{Task: t, Outcome: state.Evicted, Err: err}, false
			}
		}
		return Result{Task: t, Outcome: state.NotEvicted, Err: err}, false
	case err != nil:
		return Result{}, true // unknown: patch again (the same condition twice is harmless)
	}
	err = b.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return Result{Task: t, Outcome: state.Evicted, Err: err}, false
	case ctx.Err() != nil:
		return Result{}, false
	case apierrors.IsConflict(err):
		// The UID precondition failed: the pod under that name is
		// another one, and ours is gone.
		return Result{Task: t, Outcome: state.Evicted, Err: err}, false
	case refused(err):
		return Result{Task: t, Outcome: state.NotEvicted, Err: err}, false
	}
	return b.readBack(ctx, t, err)
}

// readBack settles an eviction or deletion of t's pod whose answer (err)
// says neither yes nor no: the pod gone, replaced under its name or
// being deleted is evicted; otherwise the task is tried again.
func (b *Binder) readBack(ctx context.Context, t *Task, err error) (Result, bool) {
	p := t.Pod
	cur, gerr := b.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case ctx.Err() != nil:
		return Result{}, false
	case apierrors.IsNotFound(gerr) || gerr == nil && (cur.UID != p.UID || cur.DeletionTimestamp != nil):
		return Result{Task: t, Outcome: state.Evicted, Err: err}, false
	}
	return Result{}, true
}

// refused reports whether err is the apiserver's own answer refusing a
// request (a 4xx status other than a timeout): nothing was committed.
// Anything else (a 5xx, a timeout, a transport error) may hide a commit.
func refused(err error) bool {
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return false
	}
	c := st.Status().Code
	return c >= 400 && c < 500 && c != 408
}
