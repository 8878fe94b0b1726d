package kube

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// An eviction the API server refuses (here every eviction, as a webhook
// or a budget this replica cannot read would) is not planned again each
// round: the gang stays where it runs until its backoff ends (10 s, then
// 20 s, ...), says why, and a gang that waits for its GPUs names it.
// Without the backoff LAS tries to evict it again every round.
func TestRefusedEvictionBacksOff(t *testing.T) {
	cs, fc := oldGangWorld(t)
	ref := refuseEvictions(cs, func(string) bool { return true })
	s, log, t0 := lasWantsOld(t, cs)
	ctx := context.Background()
	// LAS puts new (no service yet) ahead of old: each round that may
	// evict old tries both pods.
	for _, step := range []struct {
		at    time.Duration
		tries int
	}{
		{1 * time.Second, 2},  // refused: backoff 10 s, to +11 s
		{2 * time.Second, 2},  // within it: kept, nothing tried
		{8 * time.Second, 2},  // still within it
		{15 * time.Second, 4}, // over: tried, refused again (20 s, to +35 s)
		{16 * time.Second, 4},
		{30 * time.Second, 4},
		{36 * time.Second, 6}, // over: refused a third time (40 s, to +76 s)
		{40 * time.Second, 6},
	} {
		roundWait(s, ctx, t0.Add(step.at))
		if got := ref.count(); got != step.tries {
			t.Fatalf("round at +%v: %d evictions tried in all, want %d", step.at, got, step.tries)
		}
	}
	if len(fc.evicted) > 0 || len(fc.binds) > 0 {
		t.Fatalf("evicted %v, bound %v; want nothing while the API server refuses", fc.evicted, keys(fc.binds))
	}
	for _, want := range []string{
		"left on n0 GPUs 0,1,2,3, not moved or preempted: the API server refused to evict its pods ns/old-0, ns/old-1 (last at ",
		"3 times in a row: Cannot evict pod as it would violate the pod's disruption budget.); not tried again before ",
		"0 GPUs free; 4 GPUs are held by gangs it may not evict: gang ns/old (its eviction was refused)",
		"eviction refused",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	if got := testutil.ToFloat64(s.metrics.EvictionsRefused); got != 6 {
		t.Errorf("pal_evictions_refused_total %v, want 6", got)
	}
	ref.set(false)
	roundWait(s, ctx, t0.Add(70*time.Second)) // within the third backoff
	if len(fc.evicted) > 0 {
		t.Fatalf("evicted %v within the backoff", fc.evicted)
	}
	roundWait(s, ctx, t0.Add(80*time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0", "old-1"}) {
		t.Errorf("after the backoff, with the API server allowing it: evicted %v, want old-0 and old-1", fc.evicted)
	}
	if r := s.refusedEv.blocks([]*corev1.Pod{pod("old-0", 2, nil, "n0")}, t0.Add(81*time.Second)); r != "" {
		t.Errorf("a landed eviction is still remembered as refused: %s", r)
	}
}

// evictionRefuser answers a fake clientset's evictions: while on, it
// refuses (429, as a disruption budget's) those of the pods which
// selects, and lets the others through to the recording reactor.
type evictionRefuser struct {
	mu    sync.Mutex
	on    bool
	tries int
}

func refuseEvictions(cs *fake.Clientset, which func(pod string) bool) *evictionRefuser {
	r := &evictionRefuser{on: true}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.tries++
		if r.on && which(a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()) {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return false, nil, nil
	})
	return r
}

func (r *evictionRefuser) set(on bool) { r.mu.Lock(); r.on = on; r.mu.Unlock() }

// count is the evictions asked for so far, refused or not.
func (r *evictionRefuser) count() int { r.mu.Lock(); defer r.mu.Unlock(); return r.tries }
