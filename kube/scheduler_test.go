package kube

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// fakeCluster records binds and evictions made through a fake clientset
// (the real apiserver contract is covered by test/integration).
type fakeCluster struct {
	mu      sync.Mutex
	binds   map[string]*corev1.Binding
	calls   int
	evicted []string
}

func newFake(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *fakeCluster) {
	cs := fake.NewSimpleClientset(objs...)
	fc := &fakeCluster{binds: map[string]*corev1.Binding{}}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		switch ca.GetSubresource() {
		case "binding":
			b := ca.GetObject().(*corev1.Binding)
			fc.mu.Lock()
			fc.binds[b.Name] = b
			fc.calls++
			fc.mu.Unlock()
			return true, b, nil
		case "eviction":
			ev := ca.GetObject().(*policyv1.Eviction)
			fc.mu.Lock()
			fc.evicted = append(fc.evicted, ev.Name)
			slices.Sort(fc.evicted) // evictions run in parallel: compare as a set
			fc.mu.Unlock()
			return true, ev, nil
		}
		return false, nil, nil
	})
	return cs, fc
}

func startRounds(t *testing.T, cfg Config, cs *fake.Clientset) *Scheduler {
	t.Helper()
	s, err := New(cfg, cs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.startFactories(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		t.Fatal("informers did not sync")
	}
	s.binder.Start(ctx)
	return s
}

// roundWait runs a round and waits until the binder has settled its
// binds and evictions, its group statuses are written, and so is the
// learned ConfigMap if the round started a write of it (its outcome
// taken, as the next round would).
func roundWait(s *Scheduler, ctx context.Context, at time.Time) {
	s.Round(ctx, at)
	_ = s.binder.Wait(ctx)
	s.statusWG.Wait()
	if s.learn != nil {
		s.learn.settleWrite(true)
	}
	s.settleEvicted(true)
}

// One round on a hand-built cluster: the 2x2 gang gets one node's four
// GPUs (PAL packs it inside a node), every member carries the same
// bind-info and its own device indices, and the incomplete gang and the
// pod that fits no node wait.
func TestRoundBindsWholeGang(t *testing.T) {
	objs := []runtime.Object{node("n0", 4), node("n1", 4),
		pod("g-0", 2, gangAnn("g", 2), ""), pod("g-1", 2, gangAnn("g", 2), ""),
		pod("h-0", 1, gangAnn("h", 3), ""), pod("huge", 5, nil, "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())

	if len(fc.binds) != 2 {
		t.Fatalf("binds %v, want g-0 and g-1 only", keys(fc.binds))
	}
	a, b := fc.binds["g-0"], fc.binds["g-1"]
	if a == nil || b == nil {
		t.Fatalf("binds %v", keys(fc.binds))
	}
	if a.Target.Name != b.Target.Name {
		t.Errorf("PAL split a 4-GPU gang over nodes %s and %s", a.Target.Name, b.Target.Name)
	}
	got := []string{a.Annotations[AnnGPUIndices], b.Annotations[AnnGPUIndices]}
	if !slices.Equal(got, []string{"0,1", "2,3"}) {
		t.Errorf("indices %v, want [0,1 2,3]", got)
	}
	if a.Annotations[AnnBindInfo] != b.Annotations[AnnBindInfo] {
		t.Errorf("members carry different bind-info")
	}
	bi, err := ParseBindInfo(a.Annotations[AnnBindInfo])
	if err != nil || len(bi.Pods) != 2 || bi.Gang != "ns/g" {
		t.Fatalf("bind-info %+v %v", bi, err)
	}
	if s.lastWhy["ns/h"] != "gang of 3 waits: 1 of 3 pods exist" || s.lastWhy["ns/pod:huge"] != "each pod asks 5 GPUs but the largest node has 4" {
		t.Errorf("wait reasons %q", s.lastWhy)
	}
	// A second round before the informers show the binds must not hand
	// the same GPUs out again: nothing new is bound.
	roundWait(s, context.Background(), time.Now())
	if fc.calls != 2 {
		t.Fatalf("%d bind calls after the second round, want the first round's 2", fc.calls)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A gang whose pods are still being created is not told why it waits
// until its oldest pod is a period old: a gang created one pod at a time
// would otherwise get an event per pod for every new member.
func TestIncompleteGangToldAfterAPeriod(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h0, h1 := pod("h-0", 1, gangAnn("h", 3), ""), pod("h-1", 1, gangAnn("h", 3), "")
	h0.CreationTimestamp = metav1.NewTime(t0)
	h1.CreationTimestamp = metav1.NewTime(t0.Add(4 * time.Second))
	cs, _ := newFake(t, node("n0", 4), h0, h1)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Period = Duration{10 * time.Second}
	s := startRounds(t, cfg, cs)
	for _, c := range []struct {
		at   time.Duration
		want string
	}{
		{5 * time.Second, ""},
		{9999 * time.Millisecond, ""},
		{10 * time.Second, "gang of 3 waits: 2 of 3 pods exist"},
	} {
		roundWait(s, context.Background(), t0.Add(c.at))
		if got := s.lastWhy["ns/h"]; got != c.want {
			t.Errorf("round at t0+%v: told %q, want %q", c.at, got, c.want)
		}
	}
}

// The round after now, for a scheduler aligned to its period: inside a
// period it is the period's end, and at a round's own instant (which
// that round has taken) the next one.
func TestNextAlignedRound(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now    time.Duration
		period time.Duration
		want   time.Duration
	}{
		{500 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		{1999 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		{2 * time.Second, 2 * time.Second, 4 * time.Second},
		{61 * time.Second, time.Minute, 2 * time.Minute},
	} {
		if got := NextAlignedRound(t0.Add(c.now), c.period); !got.Equal(t0.Add(c.want)) {
			t.Errorf("NextAlignedRound(+%v, %v) = +%v, want +%v", c.now, c.period, got.Sub(t0), c.want)
		}
	}
}
