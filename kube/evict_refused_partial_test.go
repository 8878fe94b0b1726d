package kube

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// A refusal that takes one pod of a gang and not the other (a budget
// this replica cannot read allows one disruption): old-0 is evicted,
// old-1 refused. old-0, made again by its controller, is bound back on
// the GPUs it left (the gang is completed, as after a crash), new still
// waits, and old is tried again, whole, when the backoff ends.
func TestRefusedEvictionPartialGang(t *testing.T) {
	cs, fc := newFake(t, node("n0", 4), owned(running(pod("old-0", 2, oldAnn("0,1"), "n0"))), owned(running(pod("old-1", 2, oldAnn("2,3"), "n0"))))
	var mu sync.Mutex
	refuse := true
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if refuse && a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName() == "old-1" {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return false, nil, nil // the recording reactor evicts it
	})
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky"
	s, log := startLogged(t, cfg, cs)
	ctx := context.Background()
	t0 := time.Now()
	roundWait(s, ctx, t0)
	arriveNew(t, s, cs, owned)
	roundWait(s, ctx, t0.Add(time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0"}) {
		t.Fatalf("evicted %v, want old-0 (old-1 refused)", fc.evicted)
	}
	// The kubelet ends old-0 and its controller makes it again.
	if err := cs.CoreV1().Pods("ns").Delete(ctx, "old-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "old-0", false)
	again := owned(pod("old-0", 2, gangAnn("old", 2), ""))
	again.UID = k8stypes.UID("uid-old-0-again")
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "old-0", true)
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
	mu.Lock()
	refuse = false
	mu.Unlock()
	roundWait(s, ctx, t0.Add(15*time.Second))
	if !slices.Equal(fc.evicted, []string{"old-0", "old-0", "old-1"}) {
		t.Errorf("after the backoff: evicted %v, want old-0 again and old-1 (old whole)", fc.evicted)
	}
}
