package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// The recovery paths of a round, on the fake clientset: completing a gang
// a crash cut off, evicting one whose record cannot be followed, a launch
// that waits for preempted pods to leave, other schedulers' pods, and the
// node-pack fallback. Every expected pod, node and device index below is
// worked out by hand in the test's comment.

// syncBuf is a log sink the test reads while the scheduler writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// startLogged is startRounds with the scheduler's log kept.
func startLogged(t *testing.T, cfg Config, cs *fake.Clientset) (*Scheduler, *syncBuf) {
	t.Helper()
	buf := &syncBuf{}
	s, err := New(cfg, cs, slog.New(slog.NewTextHandler(buf, nil)))
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
	return s, buf
}

func testCfg() Config {
	c := DefaultConfig()
	c.LeaderElection.Enabled = false
	return c
}

func running(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	return p
}

// bindInfo is a hand-written pal.io/bind-info of gang ns/w.
const bindInfo3 = `{"gang":"ns/w","round":"2026-01-01T00:00:00Z","pods":{` +
	`"w-0":{"node":"n0","gpus":[0,1]},"w-1":{"node":"n1","gpus":[2,3]},"w-2":{"node":"n2","gpus":[1,2]}}}`

// A gang of three 2-GPU pods on three 4-GPU nodes, cut off by a crash
// after its first bind: w-0 is bound on n0 devices 0,1 and carries the
// whole gang's record (w-1 on n1 devices 2,3, w-2 on n2 devices 1,2). The
// next round binds w-1 to n1 with indices 2,3 and w-2 to n2 with 1,2,
// each with the same record, w-0's slowdown and w-0's backfill record
// (the waiting gang it jumped and its promise), and evicts nothing. When
// w-2 vanished and its controller made w-3 instead, w-3 takes w-2's
// recorded slot (n2, 1,2); when w-1 and w-2 both vanished for w-3 and
// w-4, the vanished slots go in name order: w-3 gets w-1's (n1, 2,3), w-4
// w-2's (n2, 1,2).
func TestRoundCompletesCrashCutGang(t *testing.T) {
	want := BindInfo{Gang: "ns/w", Round: "2026-01-01T00:00:00Z", Pods: map[string]PodBind{
		"w-0": {Node: "n0", GPUs: []int{0, 1}}, "w-1": {Node: "n1", GPUs: []int{2, 3}}, "w-2": {Node: "n2", GPUs: []int{1, 2}}}}
	for _, tc := range []struct {
		pending []string
		slots   map[string]PodBind // pod -> where it must be bound
	}{
		{[]string{"w-1", "w-2"}, map[string]PodBind{"w-1": {Node: "n1", GPUs: []int{2, 3}}, "w-2": {Node: "n2", GPUs: []int{1, 2}}}},
		{[]string{"w-1", "w-3"}, map[string]PodBind{"w-1": {Node: "n1", GPUs: []int{2, 3}}, "w-3": {Node: "n2", GPUs: []int{1, 2}}}},
		{[]string{"w-3", "w-4"}, map[string]PodBind{"w-3": {Node: "n1", GPUs: []int{2, 3}}, "w-4": {Node: "n2", GPUs: []int{1, 2}}}},
	} {
		w0 := running(owned(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, bindInfo3, AnnSlowdown, "1.5",
			AnnBackfillHead, "ns/h", AnnBackfillPromise, "2026-01-01T01:00:00Z"), "n0")))
		objs := []runtime.Object{node("n0", 4), node("n1", 4), node("n2", 4), w0}
		for _, n := range tc.pending {
			objs = append(objs, owned(pod(n, 2, gangAnn("w", 3), "")))
		}
		cs, fc := newFake(t, objs...)
		s := startRounds(t, testCfg(), cs)
		roundWait(s, context.Background(), time.Now())
		if len(fc.evicted) > 0 {
			t.Errorf("pending %v: evicted %v, want none", tc.pending, fc.evicted)
		}
		if got := keys(fc.binds); !slices.Equal(got, keys(tc.slots)) {
			t.Fatalf("pending %v: bound %v, want %v (wait reasons %q)", tc.pending, got, keys(tc.slots), s.lastWhy)
		}
		for name, slot := range tc.slots {
			b := fc.binds[name]
			if b.Target.Name != slot.Node || b.Annotations[AnnGPUIndices] != FormatIndices(slot.GPUs) {
				t.Errorf("pending %v: %s bound to %s devices %s, want %s devices %v", tc.pending, name, b.Target.Name, b.Annotations[AnnGPUIndices], slot.Node, slot.GPUs)
			}
			got, err := ParseBindInfo(b.Annotations[AnnBindInfo])
			if err != nil || !reflect.DeepEqual(*got, want) {
				t.Errorf("pending %v: %s carries bind-info %+v (%v), want %+v", tc.pending, name, got, err, want)
			}
			if b.Annotations[AnnSlowdown] != "1.5" {
				t.Errorf("pending %v: %s slowdown %q, want w-0's 1.5", tc.pending, name, b.Annotations[AnnSlowdown])
			}
			if h, p := b.Annotations[AnnBackfillHead], b.Annotations[AnnBackfillPromise]; h != "ns/h" || p != "2026-01-01T01:00:00Z" {
				t.Errorf("pending %v: %s backfill record %q %q, want w-0's ns/h 2026-01-01T01:00:00Z", tc.pending, name, h, p)
			}
		}
	}
}

// A gang cut off again while it was being completed: its record names
// w-0, w-1 and w-2, but w-1 and w-2 vanished and their slots went to the
// recreated w-3 (n1, 2,3) and w-4 (n2, 1,2), of which only one bind
// landed. The bound newcomer holds its slot by its devices, not by its
// name, so the one still pending takes the other slot, and nothing is
// evicted: w-3 bound leaves w-4 the slot n2, 1,2; w-4 bound leaves w-3
// n1, 2,3. A member recreated under its recorded name (w-1) after a
// newcomer took its slot takes the slot left free (n2, 1,2).
func TestRoundCompletesAfterRecreatedMemberBound(t *testing.T) {
	for _, tc := range []struct {
		bound, boundIdx, boundNode string
		pending                    string
		want                       PodBind
	}{
		{"w-3", "2,3", "n1", "w-4", PodBind{Node: "n2", GPUs: []int{1, 2}}},
		{"w-4", "1,2", "n2", "w-3", PodBind{Node: "n1", GPUs: []int{2, 3}}},
		{"w-3", "2,3", "n1", "w-1", PodBind{Node: "n2", GPUs: []int{1, 2}}}, // w-1 came back after w-3 took its slot
	} {
		w0 := running(owned(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, bindInfo3), "n0")))
		b := running(owned(pod(tc.bound, 2, gangAnn("w", 3, AnnGPUIndices, tc.boundIdx, AnnBindInfo, bindInfo3), tc.boundNode)))
		cs, fc := newFake(t, node("n0", 4), node("n1", 4), node("n2", 4), w0, b, owned(pod(tc.pending, 2, gangAnn("w", 3), "")))
		s := startRounds(t, testCfg(), cs)
		roundWait(s, context.Background(), time.Now())
		if len(fc.evicted) > 0 {
			t.Errorf("%s bound: evicted %v, want none (wait reason %q)", tc.bound, fc.evicted, s.lastWhy["ns/w"])
		}
		got := fc.binds[tc.pending]
		if len(fc.binds) != 1 || got == nil || got.Target.Name != tc.want.Node || got.Annotations[AnnGPUIndices] != FormatIndices(tc.want.GPUs) {
			t.Errorf("%s bound: binds %v (%s: %+v), want %s on %s devices %v", tc.bound, keys(fc.binds), tc.pending, got, tc.pending, tc.want.Node, tc.want.GPUs)
		}
	}
}

// A leader whose term ends drops the evictions its binder had not
// settled (they may never have been posted). The next term must not
// keep them assumed: gang old (two running pods on n0) would count as
// leaving, out of every plan, until its pods ended by themselves. The
// new term forgets them; an eviction that did land shows as the pods'
// deletion, and the round may decide again.
func TestNewTermForgetsUnsettledEvictions(t *testing.T) {
	ann := func(idx string) map[string]string { return gangAnn("old", 2, AnnGPUIndices, idx) }
	cs, fc := newFake(t, node("n0", 4), running(owned(pod("old-0", 2, ann("0,1"), "n0"))), running(owned(pod("old-1", 2, ann("2,3"), "n0"))))
	s := startRounds(t, testCfg(), cs)
	ctx := context.Background()
	roundWait(s, ctx, time.Now())
	g := s.state.Snapshot().ByKey["ns/old"]
	if g == nil || g.State != state.GangRunning {
		t.Fatalf("gang old: %+v, want running", g)
	}
	for _, p := range g.Bound { // the earlier term's round evicted it; its binder stopped first
		s.state.AssumeEvicted(p, time.Now())
	}
	s.verifyUnsettled() // the new term starts
	roundWait(s, ctx, time.Now())
	if got := s.state.Snapshot().ByKey["ns/old"]; got == nil || got.State != state.GangRunning || len(got.GPUs) != 4 {
		t.Errorf("gang old after the new term's round: state %v on GPUs %v, want running on 4", got.State, got.GPUs)
	}
	if all, _ := s.state.Assumed(); all != 0 || len(fc.evicted) > 0 {
		t.Errorf("%d assumptions left, evicted %v; want none", all, fc.evicted)
	}
}

// A gang of three whose bound member's bind-info lists only two pods
// cannot be completed from it: the round evicts the bound member (w-0)
// so that the whole gang queues again, and binds nothing. Were w-0 a bare
// pod, evicting it would lose it: by default it is kept, and the gang's
// pods are told why and what to do.
func TestRoundEvictsGangWithShortBindInfo(t *testing.T) {
	short := `{"gang":"ns/w","round":"2026-01-01T00:00:00Z","pods":{"w-0":{"node":"n0","gpus":[0,1]},"w-1":{"node":"n1","gpus":[2,3]}}}`
	for _, bare := range []bool{false, true} {
		mk := func(p *corev1.Pod) *corev1.Pod {
			if bare {
				return p
			}
			return owned(p)
		}
		w0 := running(mk(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, short), "n0")))
		objs := []runtime.Object{node("n0", 4), node("n1", 4), node("n2", 4), w0,
			mk(pod("w-1", 2, gangAnn("w", 3), "")), mk(pod("w-2", 2, gangAnn("w", 3), ""))}
		cs, fc := newFake(t, objs...)
		s := startRounds(t, testCfg(), cs)
		roundWait(s, context.Background(), time.Now())
		if len(fc.binds) > 0 {
			t.Errorf("bare %v: bound %v, want nothing", bare, keys(fc.binds))
		}
		switch {
		case !bare && !slices.Equal(fc.evicted, []string{"w-0"}):
			t.Errorf("evicted %v, want [w-0]", fc.evicted)
		case bare && len(fc.evicted) > 0:
			t.Errorf("bare: evicted %v, want none", fc.evicted)
		case bare && s.lastWhy["ns/w"] != "gang ns/w partly bound without a usable pal.io/bind-info for all its pods; "+
			"its bare pods ns/w-0 are not evicted, since nothing would recreate them: delete them to queue the gang again":
			t.Errorf("bare: wait reason %q", s.lastWhy["ns/w"])
		}
	}
}

// A gang cut off by a crash whose recorded slot for a missing member
// (w-2 on n2) lies on a node that still runs pods but takes no new ones
// cannot be completed: binding there would defy the cordon (a drain, a
// benchmark's exclusive node) on devices the round does not see, since
// such a node is outside its cluster. So the bound member w-0 is
// evicted, as for a node that is gone, and nothing is bound (not even
// w-1 to its usable slot); the reason names what the node is, not "gone".
func TestRoundEvictsGangWhoseSlotIsOnCordonedNode(t *testing.T) {
	cordoned := node("n2", 4)
	cordoned.Spec.Unschedulable = true
	tainted := node("n2", 4)
	tainted.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name string
		n2   *corev1.Node // nil: gone
		why  string
	}{
		{"cordoned", cordoned, "partly bound, and its recorded node n2 is cordoned (unschedulable)"},
		{"tainted", tainted, "partly bound, and pod w-2 does not tolerate node n2's taint maintenance:NoSchedule"},
		{"gone", nil, "partly bound, and its recorded node n2 is gone"},
	} {
		w0 := running(owned(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, bindInfo3), "n0")))
		objs := []runtime.Object{node("n0", 4), node("n1", 4), w0,
			owned(pod("w-1", 2, gangAnn("w", 3), "")), owned(pod("w-2", 2, gangAnn("w", 3), ""))}
		if tc.n2 != nil {
			objs = append(objs, tc.n2)
		}
		cs, fc := newFake(t, objs...)
		s, logs := startLogged(t, testCfg(), cs)
		roundWait(s, context.Background(), time.Now())
		if len(fc.binds) > 0 {
			t.Errorf("%s: bound %v, want nothing", tc.name, keys(fc.binds))
		}
		if !slices.Equal(fc.evicted, []string{"w-0"}) {
			t.Errorf("%s: evicted %v, want [w-0]", tc.name, fc.evicted)
		}
		if !strings.Contains(logs.String(), tc.why) {
			t.Errorf("%s: log lacks %q:\n%s", tc.name, tc.why, logs.String())
		}
	}
}

// oldAnn is the annotations of gang old's pods, two of 2 GPUs filling
// node n0 (devices idx), bound by an earlier round: the running gang the
// preemption tests take GPUs from.
func oldAnn(idx string) map[string]string {
	return gangAnn("old", 2, AnnGPUIndices, idx, AnnBindInfo,
		`{"gang":"ns/old","round":"2026-01-01T00:00:00Z","pods":{"old-0":{"node":"n0","gpus":[0,1]},"old-1":{"node":"n0","gpus":[2,3]}}}`)
}

// oldGangWorld is a fake cluster of one 4-GPU node, n0, that gang old's
// two running pods (owned by a controller, see oldAnn) fill.
func oldGangWorld(t *testing.T) (*fake.Clientset, *fakeCluster) {
	return newFake(t, node("n0", 4), running(owned(pod("old-0", 2, oldAnn("0,1"), "n0"))), running(owned(pod("old-1", 2, oldAnn("2,3"), "n0"))))
}

// lasWantsOld starts LAS over packed-nonsticky on cs, runs a round at t0
// (now) and has gang new arrive (arriveNew, owned pods): LAS, which has
// served new nothing and old since its bind, then wants old's GPUs for
// new. It returns the scheduler, its log and t0.
func lasWantsOld(t *testing.T, cs *fake.Clientset) (*Scheduler, *syncBuf, time.Time) {
	t.Helper()
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky"
	s, log := startLogged(t, cfg, cs)
	t0 := time.Now()
	roundWait(s, context.Background(), t0)
	arriveNew(t, s, cs, owned)
	return s, log, t0
}

// arriveNew creates gang new's two waiting 2-GPU pods (mod makes each,
// owned or bare) and waits until the scheduler has seen both.
func arriveNew(t *testing.T, s *Scheduler, cs *fake.Clientset, mod func(*corev1.Pod) *corev1.Pod) {
	t.Helper()
	for _, n := range []string{"new-0", "new-1"} {
		if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), mod(pod(n, 2, gangAnn("new", 2), "")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitInformer(t, s, "new-1", true)
}

// LAS with packed-nonsticky on one 4-GPU node: gang old (two 2-GPU pods
// on devices 0,1 and 2,3) has run 100 s when gang new arrives. LAS puts
// new first, and the placement gives it devices 0-3 and old nothing: the
// round evicts old-0 and old-1 and does not bind new, whose pods are told
// that old still holds those GPUs. The next round (old's pods deleting)
// binds nothing either; once they are gone new binds on n0, 0,1 and 2,3.
func TestLaunchWaitsForPreemptedPods(t *testing.T) {
	cs, fc := oldGangWorld(t)
	s, log, t0 := lasWantsOld(t, cs)
	ctx := context.Background()
	roundWait(s, ctx, t0.Add(100*time.Second))
	if !slices.Equal(slices.Sorted(slices.Values(fc.evicted)), []string{"old-0", "old-1"}) || len(fc.binds) > 0 {
		t.Fatalf("round 2: evicted %v, bound %v; want old-0 and old-1 evicted, nothing bound", fc.evicted, keys(fc.binds))
	}
	if got, want := s.lastWhy["ns/new"], "placed on n0 GPUs 0,1,2,3, which gang ns/old still hold(s); binds once they are free"; got != want {
		t.Errorf("round 2: new waits with %q, want %q", got, want)
	}
	if want := `why="preempted at queue position 2 under las: its n0 GPUs 0,1,2,3 go to gang ns/new, ordered ahead of it"`; !strings.Contains(log.String(), want) {
		t.Errorf("round 2: the log lacks %s:\n%s", want, log)
	}
	roundWait(s, ctx, t0.Add(110*time.Second))
	if len(fc.binds) > 0 {
		t.Fatalf("round 3: bound %v while old's pods are still leaving", keys(fc.binds))
	}
	for _, n := range []string{"old-0", "old-1"} {
		if err := cs.CoreV1().Pods("ns").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitInformer(t, s, "old-1", false)
	roundWait(s, ctx, t0.Add(120*time.Second))
	for n, idx := range map[string]string{"new-0": "0,1", "new-1": "2,3"} {
		if b := fc.binds[n]; b == nil || b.Target.Name != "n0" || b.Annotations[AnnGPUIndices] != idx {
			t.Errorf("round 4: %s bound %+v, want n0 devices %s", n, b, idx)
		}
	}
}

// The same arrival when old's pods are bare: by default old keeps its
// GPUs (evicting would delete its pods for good) and new waits with the
// node full; with preemptBarePods on, old is evicted as above.
func TestBarePodsPreemptedOnlyWhenAllowed(t *testing.T) {
	for _, allow := range []bool{false, true} {
		ann := func(idx string) map[string]string { return gangAnn("old", 2, AnnGPUIndices, idx) }
		cs, fc := newFake(t, node("n0", 4), running(pod("old-0", 2, ann("0,1"), "n0")), running(pod("old-1", 2, ann("2,3"), "n0")))
		cfg := testCfg()
		cfg.Scheduler, cfg.Placement, cfg.PreemptBarePods = "las", "packed-nonsticky", allow
		s := startRounds(t, cfg, cs)
		ctx := context.Background()
		t0 := time.Now()
		roundWait(s, ctx, t0)
		arriveNew(t, s, cs, func(p *corev1.Pod) *corev1.Pod { return p })
		roundWait(s, ctx, t0.Add(100*time.Second))
		if len(fc.binds) > 0 {
			t.Errorf("preemptBarePods %v: bound %v, want nothing", allow, keys(fc.binds))
		}
		if allow && !slices.Equal(fc.evicted, []string{"old-0", "old-1"}) {
			t.Errorf("preemptBarePods on: evicted %v, want old-0 and old-1", fc.evicted)
		}
		if !allow {
			if len(fc.evicted) > 0 {
				t.Errorf("preemptBarePods off: evicted %v, want none", fc.evicted)
			}
			if got, want := s.lastWhy["ns/new"], "gang of 2 pods (4 GPUs) waits at queue position 1 under las/packed-nonsticky: 0 GPUs free; 4 GPUs are held by gangs it may not evict: gang ns/old (bare pods)"; got != want {
				t.Errorf("preemptBarePods off: new waits with %q, want %q", got, want)
			}
		}
	}
}

// waitInformer waits until the scheduler's informer has handed its store
// pod name in ns (present) or its deletion, for the next round to read.
func waitInformer(t *testing.T, s *Scheduler, name string, present bool) {
	t.Helper()
	waitNoted(t, s, name, fmt.Sprintf("%s present=%v", name, present), func(p *corev1.Pod) bool { return (p != nil) == present })
}

// waitNoted waits until a change to pod name in ns that ok accepts (a
// nil pod: its deletion) waits in the scheduler's store for the next
// round. The informer's lister shows a change before its handlers hand it
// to the store, so a test that waited on the lister could run the round
// without the change. what names the change for the failure.
func waitNoted(t *testing.T, s *Scheduler, name, what string, ok func(*corev1.Pod) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if p, noted := s.state.Noted("ns/" + name); noted && ok(p) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler's store was never handed %s", what)
		}
	}
}

// Another scheduler's pod on n0 asking all 4 of its GPUs holds devices
// 0-3 (global 0-3); n1's GPUs 4-7 stay free. With a second foreign pod
// holding 3 of n1's GPUs (devices 3,2,1, from the top), our 1-GPU pod a
// binds to the one GPU left, n1 device 0, and our 2-GPU pod b waits.
func TestForeignPodHoldsWholeNode(t *testing.T) {
	f4 := running(pod("f4", 4, nil, "n0"))
	f4.Spec.SchedulerName = "default-scheduler"
	snap, err := buildSnapshot([]*corev1.Node{node("n0", 4), node("n1", 4)}, nil, []*corev1.Pod{f4}, workload.DefaultModels(), noJob)
	if err != nil {
		t.Fatal(err)
	}
	for g := range 8 {
		want := cluster.Free
		if g < 4 {
			want = ownerForeign
		}
		if o := snap.Cluster.Owner(g); o != want {
			t.Errorf("GPU %d: owner %d, want %d", g, o, want)
		}
	}

	f3 := running(pod("f3", 3, nil, "n1"))
	f3.Spec.SchedulerName = "default-scheduler"
	cs, fc := newFake(t, node("n0", 4), node("n1", 4), f4, f3, pod("a", 1, nil, ""), pod("b", 2, nil, ""))
	s := startRounds(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	if b := fc.binds["a"]; b == nil || b.Target.Name != "n1" || b.Annotations[AnnGPUIndices] != "0" || len(fc.binds) != 1 {
		t.Fatalf("binds %v (a: %+v), want a alone on n1 device 0", keys(fc.binds), fc.binds["a"])
	}
	if got, want := s.lastWhy["ns/pod:b"], "gang of 1 pods (2 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free"; got != want {
		t.Errorf("b waits with %q, want %q", got, want)
	}
}

// fixedPlacer answers every round with the same GPU sets (in the ids of
// the view it is given).
type fixedPlacer struct{ alloc [][]int }

func (fixedPlacer) Name() string { return "fixed" }
func (fixedPlacer) Sticky() bool { return false }
func (f fixedPlacer) Place(_ *policy.Env, order []*workload.Job) [][]int {
	out := make([][]int, len(order))
	copy(out, f.alloc)
	return out
}

// funcPlacer answers with f; calls counts its calls.
type funcPlacer struct {
	calls *int
	f     func(call int, env *policy.Env, order []*workload.Job) [][]int
}

func (funcPlacer) Name() string { return "func" }
func (funcPlacer) Sticky() bool { return false }
func (p funcPlacer) Place(env *policy.Env, order []*workload.Job) [][]int {
	*p.calls++
	return p.f(*p.calls, env, order)
}

// A round that places its order a second time (the first answer migrated
// a gang with a bare pod, which is refused, and launched onto its GPUs)
// must still see the GPUs it handed out earlier in the same round when
// it completed a gang a crash cut off. Nodes n0 and n1 (4 GPUs each):
// gang b (one bare 2-GPU pod) runs on n0 0,1; gang w has w-0 bound on n1
// device 0 and a record giving w-1 device 1; gang q (one 2-GPU pod)
// queues. The round binds w-1 to n1 device 1 first. The placer then
// migrates b to n1 and launches q on b's GPUs; asked again without b,
// it gives q n1's first two GPUs it sees as free, which must be devices
// 2,3: device 1 is w-1's.
func TestReplanKeepsCompletedGangsGPUs(t *testing.T) {
	info := `{"gang":"ns/w","round":"2026-01-01T00:00:00Z","pods":{"w-0":{"node":"n1","gpus":[0]},"w-1":{"node":"n1","gpus":[1]}}}`
	cs, fc := newFake(t, node("n0", 4), node("n1", 4),
		running(pod("b-0", 2, gangAnn("b", 1, AnnGPUIndices, "0,1"), "n0")),
		running(owned(pod("w-0", 1, gangAnn("w", 2, AnnGPUIndices, "0", AnnBindInfo, info), "n1"))),
		owned(pod("w-1", 1, gangAnn("w", 2), "")),
		owned(pod("q-0", 2, gangAnn("q", 1), "")))
	cfg := testCfg()
	cfg.PreemptBarePods = true
	s := startRounds(t, cfg, cs)
	calls := 0
	onNode := func(env *policy.Env, name string, n int) []int { // the view's first n GPUs of node name
		base := 0
		for _, nd := range env.Cluster.Nodes {
			if nd.Name == name {
				return []int{base, base + 1}[:n]
			}
			base += len(nd.GPUs)
		}
		return nil
	}
	s.pol.place = funcPlacer{&calls, func(call int, env *policy.Env, order []*workload.Job) [][]int {
		out := make([][]int, len(order))
		for i, j := range order {
			switch {
			case j.GPUsHeld != nil: // b: to n1
				out[i] = onNode(env, "n1", 2)
			case call == 1: // q: onto b's GPUs
				out[i] = slices.Clone(order[0].GPUsHeld)
				if order[0].GPUsHeld == nil {
					out[i] = slices.Clone(order[1].GPUsHeld)
				}
			default:
				out[i] = onNode(env, "n1", 2)
			}
		}
		return out
	}}
	roundWait(s, context.Background(), time.Now())
	if calls != 2 {
		t.Fatalf("the placer was asked %d times, want 2", calls)
	}
	for name, want := range map[string]string{"w-1": "1", "q-0": "2,3"} {
		if b := fc.binds[name]; b == nil || b.Target.Name != "n1" || b.Annotations[AnnGPUIndices] != want {
			t.Errorf("%s bound %+v, want n1 devices %s (binds %v)", name, b, want, keys(fc.binds))
		}
	}
	if len(fc.evicted) > 0 {
		t.Errorf("evicted %v, want none", fc.evicted)
	}
}

// client-go's elector runs a term's loop on a goroutine of its own and
// does not wait for it: a replica that loses its lease mid-round and wins
// it back at once starts the next term's loop while the last one's round
// still runs. Two rounds at once would plan from the same state and bind
// the same pods and GPUs twice. Here the first term's round is held in
// its placer while the term ends and the next one starts: the next
// term's round must wait for it, and the pod is bound at most once.
func TestTermsDoNotOverlap(t *testing.T) {
	cs, fc := newFake(t, node("n0", 4), owned(pod("a", 2, nil, "")))
	s, err := New(testCfg(), cs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.startFactories(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		t.Fatal("informers did not sync")
	}
	var mu sync.Mutex
	inPlacer, most, calls := 0, 0, 0
	entered, release := make(chan struct{}, 4), make(chan struct{})
	s.pol.place = funcPlacer{new(int), func(_ int, _ *policy.Env, order []*workload.Job) [][]int {
		mu.Lock()
		inPlacer++
		calls++
		most = max(most, inPlacer)
		first := calls == 1
		mu.Unlock()
		entered <- struct{}{}
		if first {
			<-release
		}
		mu.Lock()
		inPlacer--
		mu.Unlock()
		out := make([][]int, len(order))
		for i := range order {
			out[i] = []int{0, 1}
		}
		return out
	}}
	term1, end1 := context.WithCancel(ctx)
	done1, done2 := make(chan struct{}), make(chan struct{})
	go func() { s.loop(term1); close(done1) }()
	<-entered
	end1() // the lease is lost mid-round...
	term2, end2 := context.WithCancel(ctx)
	go func() { s.loop(term2); close(done2) }() // ...and won back at once
	select {
	case <-entered:
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	<-done1
	time.Sleep(200 * time.Millisecond)
	end2()
	<-done2
	mu.Lock()
	defer mu.Unlock()
	if most > 1 {
		t.Errorf("two terms' rounds placed at once")
	}
	if fc.calls > 1 {
		t.Errorf("%d Bindings posted for one pod, want at most 1", fc.calls)
	}
}

// A placer's set that does not split into whole pods per node falls back
// to packing by node, the node with the most free GPUs first. Three 4-GPU
// nodes; other schedulers' pods hold 1 GPU of n0 (device 3) and 2 of n2
// (devices 3,2): free are n0 0,1,2 (3), n1 0-3 (4), n2 0,1 (2). The
// placer's view numbers those 9 GPUs 0..8 and the placer answers view
// 0,1,2,3 = n0 0,1,2 and n1 0, which gives the gang's second 2-GPU pod
// n0 device 2 and n1 device 0. Packing by node takes n1 (4 free) first,
// and both pods fit there: g-0 on n1 0,1, g-1 on n1 2,3.
func TestNodePackFallbackMostFreeFirst(t *testing.T) {
	f1 := running(pod("f1", 1, nil, "n0"))
	f2 := running(pod("f2", 2, nil, "n2"))
	f1.Spec.SchedulerName, f2.Spec.SchedulerName = "default-scheduler", "default-scheduler"
	cs, fc := newFake(t, node("n0", 4), node("n1", 4), node("n2", 4), f1, f2,
		pod("g-0", 2, gangAnn("g", 2), ""), pod("g-1", 2, gangAnn("g", 2), ""))
	s := startRounds(t, testCfg(), cs)
	s.pol.place = fixedPlacer{[][]int{{0, 1, 2, 3}}}
	roundWait(s, context.Background(), time.Now())
	for n, idx := range map[string]string{"g-0": "0,1", "g-1": "2,3"} {
		if b := fc.binds[n]; b == nil || b.Target.Name != "n1" || b.Annotations[AnnGPUIndices] != idx {
			t.Errorf("%s bound %+v, want n1 devices %s (wait reasons %q)", n, b, idx, s.lastWhy)
		}
	}
}

// With leader election on and no pal-system namespace, Run fails at once
// with one message naming the namespace and the fixes; with the
// namespace there it gets past the check (and runs until stopped).
func TestRunWithoutLeaseNamespace(t *testing.T) {
	cfg := DefaultConfig()
	cs, _ := newFake(t, node("n0", 4))
	s, err := New(cfg, cs, slog.New(slog.NewTextHandler(&syncBuf{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.Run(ctx)
	want := `leader election needs namespace "pal-system" for its Lease pal-system/pal-scheduler, and it does not exist: ` +
		`create it (kubectl create namespace pal-system, or kubectl apply -f deploy/namespace.yaml), ` +
		`name an existing one in the config's namespace field, or run a single replica with --no-leader-election`
	if err == nil || err.Error() != want {
		t.Fatalf("Run: %v\nwant: %s", err, want)
	}

	cs, _ = newFake(t, node("n0", 4), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pal-system"}})
	if s, err = New(cfg, cs, slog.New(slog.NewTextHandler(&syncBuf{}, nil))); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx2) }()
	for deadline := time.Now().Add(10 * time.Second); s.Rounds() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no round ran with the namespace present")
		}
	}
	cancel2()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
}
