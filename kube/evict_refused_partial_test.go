package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// A refusal that takes one pod of a gang and not the other (a budget
// this replica cannot read allows one disruption): old-0 is evicted,
// old-1 refused. old-0, made again by its controller, is bound back on
// the GPUs it left (the gang is completed, as after a crash), new still
// waits, and old is tried again, whole, when the backoff ends.
func TestRefusedEvictionPartialGang(t *testing.T) {
	s, fc, ref, log, t0 := oldHalfEvicted(t, func(*corev1.Pod) {})
	ctx := context.Background()
	roundWait(s, ctx, t0.Add(2*time.Second))
	b := fc.binds["old-0"]
	if b == nil || b.Target.Name != "n0" || b.Annotations[AnnGPUIndices] != "0,1" || len(fc.binds) != 1 {
		t.Fatalf("bound %v, want old-0 alone, back on n0 GPUs 0,1 (old completed)", keys(fc.binds))
	}
	roundWait(s, ctx, t0.Add(5*time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0"}) {
		t.Fatalf("within the backoff: evicted %v, want old-0 only", fc.evicted)
	}
	if want := "the API server refused to evict its pod ns/old-1 (last at "; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
	ref.set(false)
	roundWait(s, ctx, t0.Add(15*time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0", "old-0", "old-1"}) {
		t.Errorf("after the backoff: evicted %v, want old-0 again and old-1 (old whole)", fc.evicted)
	}
}

// As above, but old-0 comes back asking for a node it cannot have (a
// node selector n0 does not match), so the partial gang cannot be
// completed: evictPartial would evict old-1, whose eviction was just
// refused. Within the backoff it waits, its pending pod told why and
// when the next try is; once the backoff ends old-1 is evicted, once.
func TestRefusedEvictionPartialGangNotCompletable(t *testing.T) {
	s, fc, ref, log, t0 := oldHalfEvicted(t, func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"zone": "elsewhere"}
	})
	tries := ref.count()
	ctx := context.Background()
	for _, at := range []time.Duration{2 * time.Second, 5 * time.Second} {
		roundWait(s, ctx, t0.Add(at))
		if len(fc.binds) != 0 || !slices.Equal(fc.evicted, []string{"old-0"}) || ref.count() != tries {
			t.Fatalf("round at +%v, within the backoff: bound %v, evicted %v, %d more evictions tried; want nothing bound, old-1 neither evicted nor tried again",
				at, keys(fc.binds), fc.evicted, ref.count()-tries)
		}
	}
	for _, want := range []string{"gang ns/old partly bound, and pod old-0 ", "its bound pods are not evicted yet: ", "not tried again before "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	ref.set(false)
	roundWait(s, ctx, t0.Add(15*time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0", "old-1"}) {
		t.Errorf("after the backoff: evicted %v, want old-1 too (old's bound pod, to queue old again whole)", fc.evicted)
	}
}

// oldHalfEvicted runs lasWantsOld on oldGangWorld with old-1's eviction
// refused, checks that the first round evicted old-0 alone, then has
// the kubelet end old-0 and its controller make it again (mod changes
// the new pod), and waits until the scheduler has seen it.
func oldHalfEvicted(t *testing.T, mod func(*corev1.Pod)) (*Scheduler, *fakeCluster, *evictionRefuser, *syncBuf, time.Time) {
	t.Helper()
	cs, fc := oldGangWorld(t)
	ref := refuseEvictions(cs, func(pod string) bool { return pod == "old-1" })
	s, log, t0 := lasWantsOld(t, cs)
	ctx := context.Background()
	roundWait(s, ctx, t0.Add(time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0"}) {
		t.Fatalf("evicted %v, want old-0 (old-1 refused)", fc.evicted)
	}
	if err := cs.CoreV1().Pods("ns").Delete(ctx, "old-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "old-0", false)
	again := owned(pod("old-0", 2, gangAnn("old", 2), ""))
	again.UID = k8stypes.UID("uid-old-0-again")
	mod(again)
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "old-0", true)
	return s, fc, ref, log, t0
}
