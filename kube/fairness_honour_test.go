package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
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
	if _, err := cs.CoreV1().Nodes().Create(ctx, node("n2", 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodeNoted(t, s, "n2", "n2 added", func(n *corev1.Node) bool { return n != nil })
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

// A Job of parallelism 1 is a gang of one pod keyed by the pod's name,
// so the pod its controller makes after an eviction is a new gang. Under
// Themis it used to get a new stand-in too: a new job of the app (its
// work W and demand counted a second time, its arrival moved to the new
// pod's creation), its credited progress started over. Now the new pod
// takes over the evicted one's stand-in (same Job, by the Job's UID): its
// id, arrival and iterations done, as a multi-pod gang's new pods do.
// One 4-GPU node, 60 s rounds: Job x's pod x-1 (app A) runs from 0 s on
// a lease to 600 s; app B's pod y-0 arrives at 100 s and wins the node at
// 600 s, x-1 is evicted, and the Job makes x-2. A later pod of the Job
// that follows one that finished (completions above 1) is new work.
func TestThemisJobOfOneKeepsStandIn(t *testing.T) {
	w := newWorld(t, themisCfg(), 1, 1, 4)
	t0 := time.Unix(1_000_000, 0)
	at := clockAt(t0)
	yes := true
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "x", UID: "uid-job-x", Controller: &yes}}
	ann := map[string]string{AnnModel: "BERT", AnnIterations: "100000", AnnApp: "A"}
	w.createWith("x-1", 4, ann, t0, job)
	w.deliver(-1)
	for sec := 0; sec <= 540; sec += 60 {
		if sec == 120 {
			w.create("y-0", 4, map[string]string{AnnModel: "BERT", AnnIterations: "100000", AnnApp: "B"}, at(100))
		}
		w.round(at(sec))
		w.deliver(-1)
	}
	sh := w.s.th.stand["ns/pod:x-1"]
	if sh == nil || !(sh.Executed > 0) {
		t.Fatalf("stand-in of x-1 after 540 s running: %+v", sh)
	}
	id, submit := sh.ID, sh.Submit
	w.round(at(600))
	w.deliver(-1)
	if gone := w.deleting(); len(gone) != 1 || gone[0].Name != "x-1" {
		t.Fatalf("t=600: evicting %v, want x-1 (B's turn)", gone)
	}
	done := w.s.th.credit["ns/pod:x-1"]
	w.remove("ns/x-1")
	w.deliver(-1)
	w.round(at(660))
	w.createWith("x-2", 4, ann, at(670), job)
	w.deliver(-1)
	w.round(at(720))
	w.deliver(-1)
	sh = w.s.th.stand["ns/pod:x-2"]
	if sh == nil || sh.ID != id || sh.Submit != submit || sh.Executed < done {
		t.Fatalf("x-2's stand-in %+v; want x-1's (id %d, submit %v, at least %v iterations done)", sh, id, submit, done)
	}
	if old := w.s.th.stand["ns/pod:x-1"]; old != nil {
		t.Errorf("x-1's stand-in kept beside x-2's: %+v", old)
	}
	// x-2 finishes; the Job's next pod is new work.
	w.finish("ns/x-2")
	w.deliver(-1)
	w.round(at(780))
	w.createWith("x-3", 4, ann, at(790), job)
	w.deliver(-1)
	w.round(at(840))
	if sh := w.s.th.stand["ns/pod:x-3"]; sh == nil || sh.ID == id {
		t.Errorf("x-3 (after x-2 finished) has stand-in %+v, want a new one", sh)
	}
}

// A lease the gang wins again at its expiry is written to its pods'
// pal.io/lease-until, so that a restarted scheduler (which reads it)
// honours the renewed lease, not only the first: app A alone on one
// 4-GPU node is placed at 0 s (lease to 600 s) and wins its GPUs again
// at 600 s (to 1200 s); its pods then say t0+1200 s. They used to keep
// t0+600 s, and a scheduler restarted after 600 s could hand A's GPUs to
// another app while A's renewed lease ran.
func TestThemisRenewedLeaseWrittenToPods(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cs, fc := newFake(t, node("n0", 4),
		themisPod("a-0", 2, "A", "a", 2, "100000", t0), themisPod("a-1", 2, "A", "a", 2, "100000", t0))
	s := startRounds(t, themisCfg(), cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	if fc.binds["a-0"] == nil || fc.binds["a-1"] == nil {
		t.Fatalf("t=0: binds %v, want a-0 and a-1", keys(fc.binds))
	}
	// The fake's bind does not touch the pods: bind them as the apiserver would.
	for _, n := range []string{"a-0", "a-1"} {
		p, err := cs.CoreV1().Pods("ns").Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.NodeName = "n0"
		for k, v := range fc.binds[n].Annotations {
			p.Annotations[k] = v
		}
		if _, err := cs.CoreV1().Pods("ns").Update(ctx, running(p), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first := t0.Add(600 * time.Second).UTC().Format(time.RFC3339Nano)
	if got := fc.binds["a-0"].Annotations[AnnLeaseUntil]; got != first {
		t.Fatalf("bound with %s %q, want %q", AnnLeaseUntil, got, first)
	}
	for sec := 60; sec <= 660; sec += 60 {
		roundWait(s, ctx, at(sec))
	}
	if got := s.th.leaseEnd["ns/a"]; got != 1200 {
		t.Fatalf("a's lease ends at %v after the auction at 600, want 1200 (renewed)", got)
	}
	want := t0.Add(1200 * time.Second).UTC().Format(time.RFC3339Nano)
	waitLeaseUntil(t, cs, want, "after the renewal at 600 s", "a-0", "a-1")
}

// pal.io/lease-until is an annotation on the pod, which its owner can
// edit: a restarted scheduler read any end as the gang's lease, so
// `kubectl annotate --overwrite pal.io/lease-until=9999-...` kept a gang
// on its GPUs for good after the next restart. No lease this scheduler
// grants runs past a whole lease from now, so a longer record is cut to
// that, with a warning naming the pod and the annotation: gang a's pods
// say 100 days on; b waits; a is evicted at 600 s (one lease).
func TestThemisRecordedLeaseCapped(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	until := t0.Add(100 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
	a := themisPod("a-0", 4, "run", "a", 1, "100000", t0.Add(-400*time.Second))
	a.Spec.NodeName = "n0"
	a.Annotations[AnnGPUIndices], a.Annotations[AnnLeaseUntil] = "0,1,2,3", until
	cs, fc := newFake(t, node("n0", 4), running(a),
		themisPod("b-0", 4, "queued", "b", 1, "100000", t0.Add(-100*time.Second)))
	s, log := startLogged(t, themisCfg(), cs)
	ctx := context.Background()
	at := clockAt(t0)
	for sec := 0; sec < 600; sec += 60 {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 {
			t.Fatalf("t=%d: evicted %v; a's lease runs until 600 at least", sec, fc.evicted)
		}
	}
	roundWait(s, ctx, at(600))
	if !slices.Equal(fc.evicted, []string{"a-0"}) {
		t.Fatalf("t=600: evicted %v, want a-0 (its recorded lease cut to one lease); log:\n%s", fc.evicted, log)
	}
	if l := log.String(); !strings.Contains(l, "pod=ns/a-0") || !strings.Contains(l, "annotation=pal.io/lease-until") {
		t.Errorf("no warning names the pod and the annotation:\n%s", l)
	}
}

// A gang's stand-in outlives its pods for the Job controller's backoff,
// and is given back to the gang's next pods by key. A Job deleted and
// applied again under its name has the same key but is another Job (its
// controller UID differs): it starts over, with a stand-in of its own,
// not the old Job's id, arrival and iterations done.
func TestThemisResubmittedJobStartsOver(t *testing.T) {
	cfg := themisCfg()
	cfg.Period = Duration{10 * time.Second}
	w := newWorld(t, cfg, 1, 1, 4)
	t0 := time.Unix(1_000_000, 0)
	at := clockAt(t0)
	yes := true
	owner := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "a", UID: types.UID(uid), Controller: &yes}}
	}
	ann := gangAnn("a", 2, AnnModel, "BERT", AnnIterations, "100000", AnnApp, "A")
	for _, n := range []string{"a-0", "a-1"} {
		w.createWith(n, 2, ann, t0, owner("uid-1"))
	}
	w.deliver(-1)
	for sec := 0; sec <= 50; sec += 10 {
		w.round(at(sec))
		w.deliver(-1)
	}
	sh := w.s.th.stand["ns/a"]
	if sh == nil || !(sh.Executed > 0) {
		t.Fatalf("stand-in of a after 50 s running: %+v", sh)
	}
	id := sh.ID
	w.remove("ns/a-0")
	w.remove("ns/a-1")
	w.deliver(-1)
	w.round(at(60))
	for _, n := range []string{"a-2", "a-3"} {
		w.createWith(n, 2, ann, at(65), owner("uid-2"))
	}
	w.deliver(-1)
	w.round(at(70))
	sh = w.s.th.stand["ns/a"]
	if sh == nil || sh.ID == id || sh.Executed > 0 || sh.Submit != 65 {
		t.Fatalf("the new Job a's stand-in %+v; want a new one (not id %d), arrived at 65 s, nothing done", sh, id)
	}
}

// waitLeaseUntil waits until each named pod's pal.io/lease-until reads
// want (the scheduler writes it in the background), and fails naming
// when (the lease's renewal) for each that does not within 5 s.
func waitLeaseUntil(t *testing.T, cs *fake.Clientset, want, when string, names ...string) {
	t.Helper()
	for _, n := range names {
		got := ""
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			p, err := cs.CoreV1().Pods("ns").Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got = p.Annotations[AnnLeaseUntil]; got == want {
				break
			}
		}
		if got != want {
			t.Errorf("%s's %s = %q %s, want %q", n, AnnLeaseUntil, got, when, want)
		}
	}
}
