package kube

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// A running gang whose member was deleted (by hand, or by its kubelet)
// waits, partly bound, for its controller to make the pod again: the
// Job controller does so after its failure backoff, up to minutes later.
// Meanwhile the vanished member's recorded devices are the gang's: the
// round completes gangs "before anything else may take their GPUs". They
// used to be free to every other gang while it waited, so a gang
// arriving in that time was bound on them, and when the new member came
// the round found its slot taken and evicted the whole gang (seen on a
// dev cluster: a Job of four 2-GPU pods lost one pod to kubectl delete,
// 1-GPU pods took device 0 of its slot, and the Job's three running pods
// were evicted when its fourth came back).
//
// Gang w of three 2-GPU pods: w-0 on n0 devices 0,1 and w-1 on n1 0,1
// (two-GPU nodes, full), w-2 recorded on n2 devices 1,2 and gone. Gang x,
// one pod of 4 GPUs, can only go on n2, which overlaps w-2's slot: it
// waits. Then w-3 comes (the Job's new pod) and takes w-2's slot, n2
// devices 1,2; nothing is evicted.
func TestPartialGangHoldsVanishedMembersSlot(t *testing.T) {
	info := `{"gang":"ns/w","round":"2026-01-01T00:00:00Z","pods":{` +
		`"w-0":{"node":"n0","gpus":[0,1]},"w-1":{"node":"n1","gpus":[0,1]},"w-2":{"node":"n2","gpus":[1,2]}}}`
	for _, sched := range []string{"fifo", "themis"} {
		t.Run(sched, func(t *testing.T) {
			w0 := running(owned(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, info), "n0")))
			w1 := running(owned(pod("w-1", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, info), "n1")))
			x := owned(pod("x-0", 4, gangAnn("x", 1), ""))
			cs, fc := newFake(t, node("n0", 2), node("n1", 2), node("n2", 4), w0, w1, x)
			cfg := testCfg()
			cfg.Scheduler = sched
			s := startRounds(t, cfg, cs)
			ctx := context.Background()
			now := time.Now()
			roundWait(s, ctx, now)
			if b := fc.binds["x-0"]; b != nil {
				t.Errorf("x-0 bound to %s devices %s while gang w waits for its member recorded on n2 devices 1,2", b.Target.Name, b.Annotations[AnnGPUIndices])
			}
			if _, err := cs.CoreV1().Pods("ns").Create(ctx, owned(pod("w-3", 2, gangAnn("w", 3), "")), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitInformer(t, s, "w-3", true)
			roundWait(s, ctx, now.Add(10*time.Second))
			if len(fc.evicted) > 0 {
				t.Errorf("evicted %v, want none (wait reasons %q)", fc.evicted, s.lastWhy)
			}
			if b := fc.binds["w-3"]; b == nil || b.Target.Name != "n2" || b.Annotations[AnnGPUIndices] != "1,2" {
				t.Errorf("w-3 bound %+v, want n2 devices 1,2 (w-2's recorded slot)", b)
			}
		})
	}
}

// The same gang of bare pods: nothing makes w-2 again, so its slot is not
// held. Before, x waited until w's other pods ended, for a pod nothing
// would make. Now x is bound on n2 and w is told why it stays partial.
// When the user makes w's missing pod again, its slot is taken: it waits
// (bare pods are not evicted), told to delete the gang's pods to queue it
// again, and nothing is evicted.
func TestPartialBareGangFreesVanishedMembersSlot(t *testing.T) {
	info := `{"gang":"ns/w","round":"2026-01-01T00:00:00Z","pods":{` +
		`"w-0":{"node":"n0","gpus":[0,1]},"w-1":{"node":"n1","gpus":[0,1]},"w-2":{"node":"n2","gpus":[1,2]}}}`
	w0 := running(pod("w-0", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, info), "n0"))
	w1 := running(pod("w-1", 2, gangAnn("w", 3, AnnGPUIndices, "0,1", AnnBindInfo, info), "n1"))
	x := owned(pod("x-0", 4, gangAnn("x", 1), ""))
	cs, fc := newFake(t, node("n0", 2), node("n1", 2), node("n2", 4), w0, w1, x)
	var mu sync.Mutex
	var events []string
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ev, ok := a.(k8stesting.CreateAction).GetObject().(*eventsv1.Event); ok {
			mu.Lock()
			events = append(events, ev.Regarding.Name+" "+ev.Reason+": "+ev.Note)
			mu.Unlock()
		}
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	s := startRounds(t, testCfg(), cs)
	ctx := context.Background()
	s.events.Start(ctx)
	now := time.Now()
	roundWait(s, ctx, now)
	if b := fc.binds["x-0"]; b == nil || b.Target.Name != "n2" {
		t.Errorf("x-0 bound %+v, want on n2: w-2's slot is held for a pod nothing makes again", b)
	}
	want := "gang partly bound (2 of 3): its pods are bare, so nothing makes its missing pods (w-2) again; their GPUs are free to other gangs, and its other pods run on. Create them again to complete it, or delete the gang's pods to queue it again"
	if got := s.lastWhy["ns/w"]; got != want {
		t.Errorf("w waits with\n%q, want\n%q", got, want)
	}
	roundWait(s, ctx, now.Add(5*time.Second))
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, pod("w-2", 2, gangAnn("w", 3), ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "w-2", true)
	roundWait(s, ctx, now.Add(10*time.Second))
	if len(fc.evicted) > 0 || fc.binds["w-2"] != nil {
		t.Errorf("evicted %v, w-2 bound %+v; want neither (wait reasons %q)", fc.evicted, fc.binds["w-2"], s.lastWhy)
	}
	if got := s.lastWhy["ns/w"]; !strings.Contains(got, "its bare pods ns/w-0, ns/w-1 are not evicted") {
		t.Errorf("w waits with %q, want it to say its bare pods are not evicted", got)
	}
	// No pod of w waited while it lacked w-2: its running pods said why,
	// once (two rounds).
	s.events.Stop() // flushes what was posted
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	if wantEv := []string{"w-0 GangIncomplete: " + want, "w-1 GangIncomplete: " + want}; !slices.Equal(slices.DeleteFunc(slices.Clone(got), func(e string) bool { return !strings.Contains(e, "GangIncomplete") }), wantEv) {
		t.Errorf("events %q, want w-0's and w-1's GangIncomplete once each", got)
	}
}
