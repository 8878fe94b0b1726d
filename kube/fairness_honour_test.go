package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A fresh policy (a restarted scheduler, or one rebuilt because a node
// joined) is told the leases the scheduler recorded, so its auctions
// offer only free GPUs and expired leases: it neither plans to take a
// leased gang's GPUs (which the driver refused every round, counting a
// revocation and logging an error each time) nor leaves free GPUs idle
// while the gang it granted leased GPUs to waits for them. On a dev
// cluster (kill -9, then a node added) a waiting 4-GPU gang stayed
// pending beside a new idle 4-GPU node until the recorded leases ran
// out, and pal_lease_revocations_total rose to 12.
//
// Restart at t0: gang a (app run) on n0 devices 0-3 with a lease it
// records until t0+300 s, n1 free, gang b (app queued, 4 GPUs) pending.
// b binds on n1 at 0 s. At 60 s node n2 joins (the policy is rebuilt)
// and gang c (app third, 4 GPUs) arrives: it binds on n2. a keeps n0
// until 300 s; nothing is refused, and the policy breaks no lease.
func TestThemisFreshPolicyHonoursRecordedLeases(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	until := t0.Add(300 * time.Second).UTC().Format(time.RFC3339Nano)
	bi := `{"gang":"ns/a","round":"` + t0.Add(-300*time.Second).UTC().Format(time.RFC3339Nano) + `","pods":{"a-0":{"node":"n0","gpus":[0,1,2,3]}}}`
	a := themisPod("a-0", 4, "run", "a", 1, "100000", t0.Add(-400*time.Second))
	a.Spec.NodeName = "n0"
	a.Annotations[AnnGPUIndices], a.Annotations[AnnBindInfo], a.Annotations[AnnLeaseUntil] = "0,1,2,3", bi, until
	cs, fc := newFake(t, node("n0", 4), node("n1", 4), running(a),
		themisPod("b-0", 4, "queued", "b", 1, "100000", t0.Add(-100*time.Second)))
	s := startRounds(t, themisCfg(), cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	if b := fc.binds["b-0"]; b == nil || b.Target.Name != "n1" || len(fc.evicted) > 0 {
		t.Fatalf("t=0: b-0 bound %+v, evicted %v; want b-0 on the free node n1 and a kept", b, fc.evicted)
	}
	ev := s.state.Events()
	if _, err := cs.CoreV1().Nodes().Create(ctx, node("n2", 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodeEvent(t, s, ev, "n2 added")
	var c *corev1.Pod = themisPod("c-0", 4, "third", "c", 1, "100000", at(30))
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "c-0", true)
	for sec := 60; sec < 300; sec += 60 {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 {
			t.Fatalf("t=%d: evicted %v; a's recorded lease runs until 300, b's until 600", sec, fc.evicted)
		}
	}
	if c := fc.binds["c-0"]; c == nil || c.Target.Name != "n2" {
		t.Errorf("c-0 bound %+v, want it on the new node n2 while a and b hold their leases", c)
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0: the fresh policies knew the recorded lease", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
}
