package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func listEvents(t *testing.T, cs *fake.Clientset, ns string) []eventsv1.Event {
	t.Helper()
	l, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func dropped(m *Metrics, reason string) float64 {
	return testutil.ToFloat64(m.EventsDropped.WithLabelValues(reason))
}

// A burst of 2,500 Scheduled events (more than the 1,000 that client-go's
// core/v1 broadcaster holds) is posted whole: one event per pod, with the
// pod as regarding object and the note ScheduledNote writes; nothing is
// counted as dropped.
func TestEventBurstAllPosted(t *testing.T) {
	cs := fake.NewSimpleClientset()
	m := NewMetrics()
	e := newEventPoster(cs, "pal", m)
	const n = 2500
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%04d", i), UID: "u"}}
		e.post(podRef(p), corev1.EventTypeNormal, ReasonScheduled, "Binding", ScheduledNote("node-1", "3", "gang ns/g"))
	}
	e.Start(context.Background())
	e.Stop()
	evs := listEvents(t, cs, "ns")
	if len(evs) != n {
		t.Fatalf("%d events posted, want %d", len(evs), n)
	}
	names := map[string]bool{}
	for _, ev := range evs {
		if ev.Reason != ReasonScheduled || ev.Note != "Bound to node-1 with GPUs 3 (gang ns/g)" || ev.Type != corev1.EventTypeNormal ||
			ev.Regarding.Kind != "Pod" || ev.Regarding.Namespace != "ns" || ev.ReportingController != "pal" || ev.Action != "Binding" ||
			ev.EventTime.IsZero() {
			t.Fatalf("event %+v", ev)
		}
		names[ev.Regarding.Name] = true
	}
	if len(names) != n {
		t.Errorf("%d pods have an event, want %d", len(names), n)
	}
	if got := testutil.ToFloat64(m.EventsPosted); got != n {
		t.Errorf("pal_events_posted_total %v, want %d", got, n)
	}
	for _, r := range []string{dropQueueFull, dropAPIError, dropShutdown} {
		if d := dropped(m, r); d != 0 {
			t.Errorf("dropped{%s} = %v, want 0", r, d)
		}
	}
}

// An event that finds the queue full is dropped and counted, never
// blocking the caller.
func TestEventQueueFullCounted(t *testing.T) {
	cs := fake.NewSimpleClientset()
	m := NewMetrics()
	e := newEventPoster(cs, "pal", m)
	e.queue = make(chan *eventsv1.Event, 3)
	for i := range 5 {
		e.post(nodeRef(fmt.Sprintf("n%d", i)), corev1.EventTypeWarning, ReasonNoPMScore, "Scoring", "x")
	}
	if d := dropped(m, dropQueueFull); d != 2 {
		t.Fatalf("dropped{queue_full} = %v, want 2", d)
	}
	e.Start(context.Background())
	e.Stop()
	evs := listEvents(t, cs, metav1.NamespaceDefault)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Regarding.Name)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[n0 n1 n2]" {
		t.Errorf("events about %v, want the first three nodes (node events go to namespace default)", got)
	}
}

// A refused event (403) is dropped at once and counted; a transient
// failure is tried again, up to eventTries in all.
func TestEventAPIErrors(t *testing.T) {
	for _, c := range []struct {
		name        string
		fail        int // the first fail creates fail
		err         error
		wantCalls   int32
		wantPosted  float64
		wantDropped float64
	}{
		{"forbidden", 99, apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "e", fmt.Errorf("no")), 1, 0, 1},
		{"timeout twice", 2, apierrors.NewServerTimeout(schema.GroupResource{Resource: "events"}, "create", 1), 3, 1, 0},
		{"timeout always", 99, apierrors.NewServerTimeout(schema.GroupResource{Resource: "events"}, "create", 1), eventTries, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewSimpleClientset()
			var calls atomic.Int32
			cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				if calls.Add(1) <= int32(c.fail) {
					return true, nil, c.err
				}
				return false, nil, nil
			})
			m := NewMetrics()
			e := newEventPoster(cs, "pal", m)
			e.retryWait = time.Millisecond
			e.post(podRef(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}), corev1.EventTypeNormal, ReasonScheduled, "Binding", "n")
			e.Start(context.Background())
			e.Stop()
			if calls.Load() != c.wantCalls || testutil.ToFloat64(m.EventsPosted) != c.wantPosted || dropped(m, dropAPIError) != c.wantDropped {
				t.Errorf("calls %d posted %v dropped %v, want %d %v %v", calls.Load(), testutil.ToFloat64(m.EventsPosted),
					dropped(m, dropAPIError), c.wantCalls, c.wantPosted, c.wantDropped)
			}
		})
	}
}

// Events still queued when Stop's wait runs out are counted as dropped
// at shutdown.
func TestEventShutdownCounted(t *testing.T) {
	cs := fake.NewSimpleClientset()
	m := NewMetrics()
	e := newEventPoster(cs, "pal", m)
	// No worker ever started: Stop finds all four queued.
	for range 4 {
		e.post(nodeRef("n"), corev1.EventTypeNormal, ReasonScheduled, "Binding", "n")
	}
	e.Stop()
	if d := dropped(m, dropShutdown); d != 4 {
		t.Errorf("dropped{shutdown} = %v, want 4", d)
	}
}

// A long note is cut to the 1 KiB the apiserver accepts.
func TestEventNoteCut(t *testing.T) {
	cs := fake.NewSimpleClientset()
	e := newEventPoster(cs, "pal", NewMetrics())
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'a'
	}
	e.post(nodeRef("n"), corev1.EventTypeWarning, ReasonFailedScheduling, "Scheduling", string(long))
	ev := <-e.queue
	if len(ev.Note) != 1024 || ev.Note[1021:] != "..." {
		t.Errorf("note of %d bytes ending %q", len(ev.Note), ev.Note[len(ev.Note)-3:])
	}
}

// What an event is made of must pass the apiserver's validation, or the
// event is refused and dropped: its name is a DNS subdomain (an object's
// name cut to 200 bytes and ending in '-' or '.' is not one once the
// suffix follows), and its note is at most 1024 bytes of UTF-8 (a note
// cut inside a character is sent as U+FFFD, 3 bytes for the 1 left, and
// goes over).
func TestEventNameAndNoteValid(t *testing.T) {
	for _, c := range []struct {
		name, obj, note string
		cut             bool // the note is cut ("..." ends it)
	}{
		{"note cut inside a character", "n", strings.Repeat("é", 600), true},
		{"note of invalid UTF-8", "n", "bad " + strings.Repeat("\xff", 1100) + strings.Repeat("x", 1100), true},
		{"name cut at a dash", strings.Repeat("a", 199) + "-" + strings.Repeat("b", 40), "x", false},
		{"name cut at a dot", strings.Repeat("a", 199) + "." + strings.Repeat("b", 40), "x", false},
		{"name cut at dashes", strings.Repeat("a", 190) + strings.Repeat("-", 20) + "b", "x", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEventPoster(fake.NewSimpleClientset(), "pal", NewMetrics())
			e.post(corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: c.obj}, corev1.EventTypeWarning, ReasonFailedScheduling, "Scheduling", c.note)
			ev := <-e.queue
			if errs := validation.IsDNS1123Subdomain(ev.Name); len(errs) > 0 {
				t.Errorf("event name %q: %v", ev.Name, errs)
			}
			if !utf8.ValidString(ev.Note) || len(ev.Note) > 1024 {
				t.Errorf("note of %d bytes, valid UTF-8 %v, ending %q", len(ev.Note), utf8.ValidString(ev.Note), ev.Note[max(0, len(ev.Note)-8):])
			}
			if c.cut && !strings.HasSuffix(ev.Note, "...") {
				t.Errorf("a cut note does not end in ...: %q", ev.Note[max(0, len(ev.Note)-8):])
			}
		})
	}
}

// A round that binds a gang posts one Scheduled event per bound pod,
// through the event client, with ScheduledNote's text.
func TestRoundPostsScheduledPerPod(t *testing.T) {
	objs := []runtime.Object{node("n0", 4), node("n1", 4),
		pod("g-0", 2, gangAnn("g", 2), ""), pod("g-1", 2, gangAnn("g", 2), "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	s := startRounds(t, cfg, cs)
	evc := fake.NewSimpleClientset()
	s.UseEventClient(evc)
	s.events.Start(context.Background())
	roundWait(s, context.Background(), time.Now())
	s.events.Stop()
	if len(fc.binds) != 2 {
		t.Fatalf("binds %v", keys(fc.binds))
	}
	got := map[string]string{}
	for _, ev := range listEvents(t, evc, "ns") {
		if ev.Reason == ReasonScheduled {
			got[ev.Regarding.Name] = ev.Note
		}
	}
	want := map[string]string{}
	for n, b := range fc.binds {
		want[n] = ScheduledNote(b.Target.Name, b.Annotations[AnnGPUIndices], "gang ns/g")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Scheduled events %v, want %v", got, want)
	}
	if l := listEvents(t, cs, "ns"); len(l) != 0 {
		t.Errorf("%d events went through the scheduler's own client", len(l))
	}
}

// Events wait while binds are pending and go once the binder is idle;
// an event taken from a queue still half full goes at once (holding would
// end in drops), so with a full queue of 4 some go while binding.
func TestEventsWaitForBinds(t *testing.T) {
	for _, c := range []struct {
		name     string
		queueCap int
		queued   int
		held     bool
	}{
		{"binds pending", 100, 1, true},
		{"queue full", 4, 4, false},
	} {
		cs := fake.NewSimpleClientset()
		e := newEventPoster(cs, "pal", NewMetrics())
		e.queue = make(chan *eventsv1.Event, c.queueCap)
		var binding atomic.Bool
		binding.Store(true)
		e.binding = binding.Load
		for i := range c.queued {
			e.post(nodeRef(fmt.Sprintf("n%d", i)), corev1.EventTypeNormal, ReasonScheduled, "Binding", "x")
		}
		ctx, cancel := context.WithCancel(context.Background())
		e.Start(ctx)
		time.Sleep(300 * time.Millisecond) // 15 polls of the binder
		if n := len(listEvents(t, cs, metav1.NamespaceDefault)); (n == 0) != c.held {
			t.Errorf("%s: %d events posted while binding, want held %v", c.name, n, c.held)
		}
		binding.Store(false)
		deadline := time.Now().Add(5 * time.Second)
		for len(listEvents(t, cs, metav1.NamespaceDefault)) < c.queued && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := len(listEvents(t, cs, metav1.NamespaceDefault)); n != c.queued {
			t.Errorf("%s: %d events posted once the binder was idle, want %d", c.name, n, c.queued)
		}
		e.Stop()
		cancel()
	}
}

// What a round posts reaches the apiserver after the binds it queued:
// the NoPMScore warnings of a cluster without scores are made before the
// round places anything, and went out ahead of its first bind.
func TestRoundEventsFollowItsBinds(t *testing.T) {
	objs := []runtime.Object{node("n0", 4), node("n1", 4), node("n2", 4),
		pod("g-0", 2, gangAnn("g", 2), ""), pod("g-1", 2, gangAnn("g", 2), "")}
	cs, fc := newFake(t, objs...)
	var mu sync.Mutex
	var writes []string
	note := func(w string) {
		mu.Lock()
		writes = append(writes, w)
		mu.Unlock()
	}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "binding" {
			time.Sleep(50 * time.Millisecond) // a bind the apiserver takes a while over
			note("binding")
		}
		return false, nil, nil
	})
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	s := startRounds(t, cfg, cs)
	evc := fake.NewSimpleClientset()
	evc.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		note(a.(k8stesting.CreateAction).GetObject().(*eventsv1.Event).Reason)
		return false, nil, nil
	})
	s.UseEventClient(evc)
	s.events.Start(context.Background())
	roundWait(s, context.Background(), time.Now())
	s.events.Stop()
	if len(fc.binds) != 2 {
		t.Fatalf("binds %v", keys(fc.binds))
	}
	mu.Lock()
	defer mu.Unlock()
	noScore := 0
	for _, w := range writes {
		if w == ReasonNoPMScore {
			noScore++
		}
	}
	if noScore != 3 || len(writes) != 2+3+2 {
		t.Fatalf("writes %v, want 2 binds, 3 NoPMScore and 2 Scheduled events", writes)
	}
	if writes[0] != "binding" || writes[1] != "binding" {
		t.Errorf("writes in order %v: an event went ahead of a bind", writes)
	}
}
