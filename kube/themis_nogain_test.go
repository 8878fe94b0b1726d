package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// foreignPod is another scheduler's running pod holding gpus of node.
func foreignPod(name string, gpus int, node string) *corev1.Pod {
	p := running(pod(name, gpus, nil, node))
	p.Spec.SchedulerName = "default-scheduler"
	return p
}

// spreadAtLeaseEnd plays the first lease of the no-gain cases: three
// 4-GPU nodes, another scheduler's pods holding all of n0 (f0) and two
// GPUs of n1 and n2 each (f1, f2); Themis app A's gang a (two 2-GPU
// BERT pods) binds at 0 on the GPUs left, a-0 on n1 devices 0,1 and a-1
// on n2 devices 0,1 (spread over two nodes), leased until 600. At 300
// f0 ends and, with more, another scheduler's f3 takes two of n0's GPUs.
// From 60 to 540 nothing is evicted or bound again. The round at 600
// (the lease's end) is left to the caller.
func spreadAtLeaseEnd(t *testing.T, more bool) (*Scheduler, *fake.Clientset, *fakeCluster, func(int) time.Time) {
	t.Helper()
	t0 := time.Unix(1_000_000, 0)
	cs, fc := newFake(t, node("n0", 4), node("n1", 4), node("n2", 4),
		foreignPod("f0", 4, "n0"), foreignPod("f1", 2, "n1"), foreignPod("f2", 2, "n2"),
		themisPod("a-0", 2, "A", "a", 2, "1000000", t0), themisPod("a-1", 2, "A", "a", 2, "1000000", t0))
	s := startRounds(t, themisCfg(), cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	for n, want := range map[string]string{"a-0": "n1 0,1", "a-1": "n2 0,1"} {
		if b := fc.binds[n]; b == nil || b.Target.Name+" "+b.Annotations[AnnGPUIndices] != want {
			t.Fatalf("t=0: %s bound %+v, want %s", n, b, want)
		}
	}
	if got := s.th.leaseEnd["ns/a"]; got != 600 {
		t.Fatalf("t=0: gang a's lease ends at %v, want 600", got)
	}
	settleBound(t, s, cs, fc, "a-0", "a-1")
	calls := fc.calls
	for sec := 60; sec <= 540; sec += 60 {
		if sec == 300 {
			if err := cs.CoreV1().Pods("ns").Delete(ctx, "f0", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitInformer(t, s, "f0", false)
			if more {
				if _, err := cs.CoreV1().Pods("ns").Create(ctx, foreignPod("f3", 2, "n0"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				waitInformer(t, s, "f3", true)
			}
		}
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || fc.calls != calls {
			t.Fatalf("t=%d: evicted %v, %d binds since 0; a's lease runs until 600", sec, fc.evicted, fc.calls-calls)
		}
	}
	return s, cs, fc, at
}

// No move without gain. An operator's kwok trial saw Themis move gangs
// at their lease's end to other GPUs where they ran no faster (slowdown
// 1.7 before and after), each move an eviction, a restart and the Job's
// backoff. Gang a runs spread over n1 and n2 (see spreadAtLeaseEnd);
// when its lease ends at 600, the GPUs on offer are its own four and n0's
// two free ones (f3 holds the others): no node has four, so any set of
// four is as spread as a's. The auction, alone, chose n0's and n1's (the
// machines with the most free GPUs, lowest id first), and a was evicted
// to be placed there, no faster. Now a keeps its GPUs: nothing is
// evicted or bound, its lease is renewed to 1200 and its pods say so.
func TestThemisNoMoveWithoutGain(t *testing.T) {
	s, cs, fc, at := spreadAtLeaseEnd(t, true)
	ctx := context.Background()
	calls := fc.calls
	for _, sec := range []int{600, 660} {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || fc.calls != calls {
			t.Fatalf("t=%d: evicted %v, %d binds since 0; a gains nothing from a move and keeps n1 and n2", sec, fc.evicted, fc.calls-calls)
		}
	}
	if got := s.th.leaseEnd["ns/a"]; got != 1200 {
		t.Errorf("after the auction at 600: a's lease ends at %v, want 1200 (renewed on its GPUs)", got)
	}
	want := at(1200).UTC().Format(time.RFC3339Nano)
	waitLeaseUntil(t, cs, want, "after the renewal at 600", "a-0", "a-1")
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
}

// A move with a gain still happens: the same gang a, but n0 is wholly
// free at 600 (f0 ended, nothing took its GPUs), and a's four GPUs on n0
// run it inside one node, faster than spread over two. At 600 a-0 and
// a-1 are evicted; once they are gone the gang binds whole on n0.
func TestThemisMoveWithGain(t *testing.T) {
	s, cs, fc, at := spreadAtLeaseEnd(t, false)
	ctx := context.Background()
	roundWait(s, ctx, at(600))
	if !slices.Equal(fc.evicted, []string{"a-0", "a-1"}) {
		t.Fatalf("t=600: evicted %v, want a-0 and a-1 (a runs faster inside n0)", fc.evicted)
	}
	for _, n := range []string{"a-0", "a-1"} {
		if err := cs.CoreV1().Pods("ns").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInformer(t, s, n, false)
	}
	// The controller makes the gang's pods again.
	for _, n := range []string{"a-2", "a-3"} {
		if _, err := cs.CoreV1().Pods("ns").Create(ctx, themisPod(n, 2, "A", "a", 2, "1000000", at(610)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInformer(t, s, n, true)
	}
	roundWait(s, ctx, at(660))
	var gpus []string
	for _, n := range []string{"a-2", "a-3"} {
		b := fc.binds[n]
		if b == nil || b.Target.Name != "n0" {
			t.Fatalf("t=660: %s bound %+v, want the gang bound whole on n0 (told %q)", n, b, s.lastWhy["ns/a"])
		}
		gpus = append(gpus, b.Annotations[AnnGPUIndices])
	}
	slices.Sort(gpus)
	if got := strings.Join(gpus, " "); got != "0,1 2,3" {
		t.Errorf("t=660: gang a on n0 devices %s, want 0,1 2,3", got)
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
}

// The kwok trial's move without gain with a gang spanning nodes: six
// 4-GPU nodes; Themis apps J1 and J2, each a gang of two 2-GPU pods,
// bind at 0 whole on n0 and n1; J3, a gang of five 4-GPU pods (20 GPUs),
// arrives at 30 and waits for the leases to end (16 GPUs are free). At
// 600 the auction gives J3 twenty GPUs and one of J1 and J2 four: J2 is
// preempted, its n1 going to j3, and J1 stays on n0. The trial saw j1
// "migrated by the themis placement from n0 GPUs 0,1,2,3 to n5 GPUs
// 0,1,2,3 (expected slowdown 1 on the old GPUs, 1 on the new); its old
// GPUs go to j3": the exchange served only a gang planned wholly on the
// mover's GPUs, and j3 spans five nodes. Once j2's pods are gone j3
// binds on n1 to n5.
func TestThemisNoMoveWithoutGainSpanningGang(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := clockAt(t0)
	objs := []runtime.Object{}
	for n := range 6 {
		objs = append(objs, node(fmt.Sprintf("n%d", n), 4))
	}
	for _, p := range []string{"j1-0", "j1-1", "j2-0", "j2-1"} {
		app := strings.ToUpper(p[:2])
		objs = append(objs, themisPod(p, 2, app, p[:2], 2, "1000000", t0))
	}
	cs, fc := newFake(t, objs...)
	s, log := startLogged(t, themisCfg(), cs)
	ctx := context.Background()
	roundWait(s, ctx, at(0))
	for n, want := range map[string]string{"j1-0": "n0", "j1-1": "n0", "j2-0": "n1", "j2-1": "n1"} {
		if b := fc.binds[n]; b == nil || b.Target.Name != want {
			t.Fatalf("t=0: %s bound %+v, want on %s", n, b, want)
		}
	}
	settleBound(t, s, cs, fc, "j1-0", "j1-1", "j2-0", "j2-1")
	for x := range 5 {
		if _, err := cs.CoreV1().Pods("ns").Create(ctx, themisPod(fmt.Sprintf("j3-%d", x), 4, "J3", "j3", 5, "1000000", at(30)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitInformer(t, s, "j3-4", true)
	calls := fc.calls
	for sec := 60; sec <= 540; sec += 60 {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || fc.calls != calls {
			t.Fatalf("t=%d: evicted %v, %d binds since 0; the leases run until 600", sec, fc.evicted, fc.calls-calls)
		}
	}
	roundWait(s, ctx, at(600))
	if got := slices.Sorted(slices.Values(fc.evicted)); !slices.Equal(got, []string{"j2-0", "j2-1"}) {
		t.Fatalf("t=600: evicted %v, want j2-0 and j2-1 only (j1 gains nothing from n5: j3 takes it instead of n0); log:\n%s", got, log)
	}
	if want := "gave its n1 GPUs 0,1,2,3 to gang ns/j3 and left no GPUs for it"; !strings.Contains(log.String(), want) {
		t.Errorf("t=600: the log lacks %q:\n%s", want, log)
	}
	for _, n := range []string{"j2-0", "j2-1"} {
		if err := cs.CoreV1().Pods("ns").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInformer(t, s, n, false)
	}
	roundWait(s, ctx, at(660))
	var nodes []string
	for x := range 5 {
		b := fc.binds[fmt.Sprintf("j3-%d", x)]
		if b == nil {
			t.Fatalf("t=660: j3-%d not bound (told %q)", x, s.lastWhy["ns/j3"])
		}
		nodes = append(nodes, b.Target.Name)
	}
	slices.Sort(nodes)
	if got := strings.Join(nodes, " "); got != "n1 n2 n3 n4 n5" {
		t.Errorf("t=660: j3 bound on %s, want n1 n2 n3 n4 n5", got)
	}
	if len(fc.evicted) != 2 {
		t.Errorf("t=660: evicted %v, want only j2's pods", fc.evicted)
	}
	if got := s.th.leaseEnd["ns/j1"]; got != 1200 {
		t.Errorf("j1's lease ends at %v, want 1200 (renewed on n0)", got)
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
}
