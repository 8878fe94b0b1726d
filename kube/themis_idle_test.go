package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// No eviction into idleness, as an operator's kwok trial saw it: a
// 1-GPU gang displaced a 16-GPU gang at the end of its lease and left 15
// GPUs idle. Two 8-GPU nodes; app A's gang a (two 8-GPU pods) binds at 0
// on both, leased until 600; app B's gang b (one 1-GPU pod) arrives at
// 100 and waits. At 600 the auction gives b one of a's GPUs, and the 15
// left fit no gang: a would be evicted to run one GPU. Now a keeps its
// GPUs, leased again until 1200 (its pods' pal.io/lease-until say so),
// nothing is evicted or bound at 600 and 660, and b waits.
func TestThemisNoEvictionIntoIdleness(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cs, fc := newFake(t, node("n0", 8), node("n1", 8),
		themisPod("a-0", 8, "A", "a", 2, "1000000", t0), themisPod("a-1", 8, "A", "a", 2, "1000000", t0))
	s := startRounds(t, themisCfg(), cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	for _, n := range []string{"a-0", "a-1"} {
		if fc.binds[n] == nil {
			t.Fatalf("t=0: %s not bound", n)
		}
	}
	settleBound(t, s, cs, fc, "a-0", "a-1")
	calls := fc.calls
	for sec := 60; sec <= 660; sec += 60 {
		if sec == 120 {
			if _, err := cs.CoreV1().Pods("ns").Create(ctx, themisPod("b-0", 1, "B", "b", 1, "1000000", at(100)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitInformer(t, s, "b-0", true)
		}
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || fc.calls != calls {
			t.Fatalf("t=%d: evicted %v, %d binds since 0; a's eviction would leave 15 GPUs idle to run b's one", sec, fc.evicted, fc.calls-calls)
		}
	}
	if got := s.th.leaseEnd["ns/a"]; got != 1200 {
		t.Errorf("after the auction at 600: a's lease ends at %v, want 1200 (renewed on its GPUs)", got)
	}
	want := at(1200).UTC().Format(time.RFC3339Nano)
	waitLeaseUntil(t, cs, want, "after the renewal at 600", "a-0", "a-1")
	if got, want := s.lastWhy["ns/b"], "gang of 1 pods (1 GPUs) waits at queue position 2 under themis/themis: 0 GPUs free"; got != want {
		t.Errorf("b's wait reason %q, want %q", got, want)
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
}
