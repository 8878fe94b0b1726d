package kube

import (
	"strings"
	"testing"
	"time"
)

// Under scheduler themis a gang whose pods end one by one frees its GPUs
// over several rounds: it leaves the round's order (the policy's finish,
// an auction) when its first pod ends, and its last pod frees its GPUs a
// round later. Those GPUs go to a waiting gang at that round, as the
// simulator's finishing job gives all of its GPUs at its finish's
// auction; they used not to (no lease end, arrival or finish then), and
// stayed idle until the next lease ended, 10 minutes on: a restarted
// scheduler, whose fresh policy auctions at its first round, bound the
// waiting gang where the one never restarted did not
// (TestRestartsChangeNothing, themis seed 0 round 83).
func TestThemisAuctionsWhenFinishingGangFreesGPUs(t *testing.T) {
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement = "themis", "packed-sticky"
	w := newWorld(t, cfg, 1, 1, 4)
	at := time.Unix(1_700_000_000, 0)
	for i := range 2 {
		w.create("a-"+itoa(i), 2, gangAnn("a", 2, AnnModel, "BERT", AnnIterations, "100000"), at)
	}
	if got := w.step(&at, "a placed"); !strings.Contains(got, "ns/a-0@") || !strings.Contains(got, "ns/a-1@") {
		t.Fatalf("a not bound: %s", got)
	}
	w.create("b-0", 4, map[string]string{AnnModel: "BERT", AnnIterations: "100000"}, at)
	w.step(&at, "b arrives")
	w.finish("ns/a-0")
	if got := w.step(&at, "a-0 ends"); strings.Contains(got, "ns/b-0@") {
		t.Fatalf("b bound while a-1 holds 2 of the node's 4 GPUs: %s", got)
	}
	w.finish("ns/a-1")
	if got := w.step(&at, "a-1 ends"); !strings.Contains(got, "ns/b-0@n0[0,1,2,3]") {
		t.Fatalf("a's GPUs are all free and b waits: %q", got)
	}
}

// The fake world applies the scheduler's annotation patches to its pods,
// so that a restart's relist reads what a real apiserver would hold: a
// lease that themis renewed at an expiry is on the pods
// (pal.io/lease-until, written after the round) when the next scheduler
// starts. The world used to leave patches to the fake's tracker, so a
// restart read the bind's lease, long expired.
func TestWorldKeepsRenewedLeases(t *testing.T) {
	cfg := testCfg()
	cfg.Scheduler = "themis"
	cfg.Themis.Lease.Duration = 30 * time.Second
	w := newWorld(t, cfg, 1, 1, 4)
	at := time.Unix(1_700_000_000, 0)
	w.create("a-0", 2, map[string]string{AnnModel: "BERT", AnnIterations: "100000"}, at)
	w.step(&at, "a placed")
	lease := func() time.Time {
		w.s.statusWG.Wait()
		w.mu.Lock()
		defer w.mu.Unlock()
		v, err := time.Parse(time.RFC3339Nano, w.pods["ns/a-0"].Annotations[AnnLeaseUntil])
		if err != nil {
			t.Fatalf("ns/a-0's %s: %v", AnnLeaseUntil, err)
		}
		return v
	}
	first := lease()
	for range 5 {
		w.step(&at, "a runs")
	}
	if got := lease(); !got.After(first) || !got.After(at) {
		t.Fatalf("at %v ns/a-0's lease ends %v, the bind's %v: the renewal is not on the pod", at, got, first)
	}
}
