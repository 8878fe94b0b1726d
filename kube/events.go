package kube

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Event reasons the scheduler posts.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
	ReasonPreempted        = "Preempted"
	ReasonKept             = "Kept"
	ReasonNoPMScore        = "NoPMScore"
	// ReasonIncomplete: a running gang of bare pods lost a pod, which
	// nothing makes again (its running pods carry it: none waits).
	ReasonIncomplete = "GangIncomplete"
)

// ScheduledNote is the note of the Scheduled event of a pod bound to node
// with the given GPU indices as a member of gang. Every Scheduled event's
// text comes from here, so that what it says is decided in one place.
func ScheduledNote(node, gpus, gang string) string {
	return fmt.Sprintf("Bound to %s with GPUs %s (%s)", node, gpus, gang)
}

// Why the scheduler posts events itself rather than through client-go's
// broadcasters: the core/v1 broadcaster (tools/record) keeps 1,000 events
// in its queue and drops the rest of a burst without a trace, and the
// events.k8s.io/v1 one (tools/events) starts a goroutine per event and
// only logs the ones it gives up on. A scheduler that binds thousands of
// pods in a minute must post one Scheduled event per pod and say when it
// could not, so the poster below has a deep queue, a fixed set of
// workers, a client of its own (its rate limits never slow a bind), and
// counts every event it drops, by why, in pal_events_dropped_total.
const (
	// eventQueueLen is how many events may wait to be posted. At the
	// default 200 events/s a full queue drains in under two minutes;
	// an event that finds it full is dropped and counted.
	eventQueueLen = 20000
	// eventWorkers post at once; the client's rate limiter, not their
	// number, sets the pace.
	eventWorkers = 8
	// eventTries is how often a post that failed with a transient error
	// (timeout, throttling, server error) is tried in all.
	eventTries = 3
	// eventDrainLimit bounds how long Stop waits for queued events.
	eventDrainLimit = 5 * time.Second
	// eventHoldLimit is the longest an event waits for the binder to go
	// idle. Events and Bindings go to the same apiserver: a Scheduled
	// event per bind doubles its writes in a burst, and the bind is what
	// the pod waits for, while the event only reports it. So an event
	// waits while binds are queued or in flight, at most this long after
	// it was made, and not at all once the queue is half full (holding
	// then would end in drops).
	eventHoldLimit = 30 * time.Second
	// eventHoldPoll is how often a held event looks at the binder.
	eventHoldPoll = 20 * time.Millisecond
)

// Drop reasons (the label of pal_events_dropped_total).
const (
	dropQueueFull = "queue_full"
	dropAPIError  = "api_error"
	dropShutdown  = "shutdown"
)

// eventPoster posts events.k8s.io/v1 Events from a queue.
type eventPoster struct {
	client     kubernetes.Interface
	controller string // reportingController: the scheduler's name
	instance   string // reportingInstance: controller-host
	metrics    *Metrics
	queue      chan *eventsv1.Event
	seq        atomic.Uint64 // makes event names unique within one instance
	retryWait  time.Duration
	// binding reports binds queued or in flight (nil: never); events
	// wait for it to turn false (eventHoldLimit).
	binding func() bool

	// While a round runs, what it posts waits in gated and is queued
	// when the round ends (see gate), behind the binds it queued.
	gateMu sync.Mutex
	gated  []*eventsv1.Event
	gating bool

	startOnce sync.Once
	stopOnce  sync.Once
	wg        sync.WaitGroup
	stop      chan struct{} // closed by Stop: workers drain, then leave
}

func newEventPoster(client kubernetes.Interface, controller string, m *Metrics) *eventPoster {
	host, _ := os.Hostname()
	return &eventPoster{client: client, controller: controller, instance: controller + "-" + host, metrics: m,
		queue: make(chan *eventsv1.Event, eventQueueLen), retryWait: 200 * time.Millisecond, stop: make(chan struct{})}
}

// Start starts the workers (once).
func (e *eventPoster) Start(ctx context.Context) {
	e.startOnce.Do(func() {
		for range eventWorkers {
			e.wg.Go(func() { e.work(ctx) })
		}
	})
}

// Stop waits up to eventDrainLimit for the queue to drain, then counts
// what is left as dropped at shutdown.
func (e *eventPoster) Stop() {
	e.stopOnce.Do(func() {
		close(e.stop)
		done := make(chan struct{})
		go func() { e.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(eventDrainLimit):
		}
		for {
			select {
			case <-e.queue:
				e.metrics.EventsDropped.WithLabelValues(dropShutdown).Inc()
			default:
				return
			}
		}
	})
}

func (e *eventPoster) work(ctx context.Context) {
	for {
		select {
		case ev := <-e.queue:
			e.hold(ev)
			e.send(context.WithoutCancel(ctx), ev)
		case <-e.stop:
			// Drain what is queued, then leave.
			for {
				select {
				case ev := <-e.queue:
					e.send(context.WithoutCancel(ctx), ev)
				default:
					return
				}
			}
		}
	}
}

// hold keeps ev back while binds are pending (eventHoldLimit), unless
// the queue is half full or the poster stops.
func (e *eventPoster) hold(ev *eventsv1.Event) {
	if e.binding == nil {
		return
	}
	until := ev.EventTime.Add(eventHoldLimit)
	for e.binding() && len(e.queue) < cap(e.queue)/2 && time.Now().Before(until) {
		select {
		case <-e.stop:
			return
		case <-time.After(eventHoldPoll):
		}
	}
}

func (e *eventPoster) send(ctx context.Context, ev *eventsv1.Event) {
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := e.client.EventsV1().Events(ev.Namespace).Create(cctx, ev, metav1.CreateOptions{})
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			e.metrics.EventsPosted.Inc()
			return
		}
		if try >= eventTries || !transient(err) {
			e.metrics.EventsDropped.WithLabelValues(dropAPIError).Inc()
			return
		}
		time.Sleep(time.Duration(try) * e.retryWait)
	}
}

// transient errors are worth another try.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) ||
		!isStatus(err)
}

// isStatus: the apiserver answered (a network error is not one).
func isStatus(err error) bool {
	_, ok := err.(apierrors.APIStatus)
	return ok
}

// post queues one event about the object ref; it never blocks. An event
// that finds the queue full is dropped and counted.
func (e *eventPoster) post(ref corev1.ObjectReference, eventType, reason, action, note string) {
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // events about cluster-scoped objects (nodes)
	}
	now := time.Now()
	name := ref.Name
	if len(name) > 200 {
		// Event names are DNS subdomains (253 at most), whose labels
		// end in a letter or digit: the suffix below follows a '.'.
		name = strings.TrimRight(name[:200], "-.")
	}
	note = eventNote(note)
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x%x", name, now.UnixNano(), e.seq.Add(1)),
			Namespace: ns,
		},
		EventTime:           metav1.MicroTime{Time: now},
		ReportingController: e.controller,
		ReportingInstance:   e.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           ref,
		Note:                note,
		Type:                eventType,
	}
	e.gateMu.Lock()
	if e.gating {
		e.gated = append(e.gated, ev)
		e.gateMu.Unlock()
		return
	}
	e.gateMu.Unlock()
	e.enqueue(ev)
}

// maxNote is the longest note the apiserver takes, in bytes of UTF-8.
const maxNote = 1024

// eventNote is note as the apiserver takes it: valid UTF-8 (the JSON
// encoder writes each invalid byte as U+FFFD, three bytes) cut to
// maxNote bytes at a character boundary, "..." ending a cut one.
func eventNote(note string) string {
	note = strings.ToValidUTF8(note, "\uFFFD")
	if len(note) <= maxNote {
		return note
	}
	n := maxNote - len("...")
	for n > 0 && !utf8.RuneStart(note[n]) {
		n--
	}
	return note[:n] + "..."
}

func (e *eventPoster) enqueue(ev *eventsv1.Event) {
	select {
	case e.queue <- ev:
	default:
		e.metrics.EventsDropped.WithLabelValues(dropQueueFull).Inc()
	}
}

// gate holds back what is posted from now until ungate. A round gates
// its events so that they reach the queue after the binds it hands the
// binder: a worker that took an event before the first bind was queued
// would find the binder idle and post at once. At start-up that was a
// NoPMScore warning for each of a thousand unscored nodes, all written
// ahead of the first round's binds.
func (e *eventPoster) gate() {
	e.gateMu.Lock()
	e.gating = true
	e.gateMu.Unlock()
}

// ungate queues what gate held back, in the order it was posted.
func (e *eventPoster) ungate() {
	e.gateMu.Lock()
	held := e.gated
	e.gated, e.gating = nil, false
	e.gateMu.Unlock()
	for i, ev := range held {
		e.enqueue(ev)
		held[i] = nil
	}
}

// podRef is the reference an event about a pod carries.
func podRef(p *corev1.Pod) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID,
		ResourceVersion: p.ResourceVersion}
}

// nodeRef is the reference an event about a node carries.
func nodeRef(node string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node}
}
