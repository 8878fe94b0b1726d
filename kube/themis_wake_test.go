package kube

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/workload"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// Under tenancy hived each VC runs its own Themis, and GPUs a finishing
// gang's last pod frees start an auction in its VC's policy, as the
// driver's wake does without tenancy. VC A (node n0): gang a (two 1-GPU
// pods) and d (2 GPUs) run, and A's 2-GPU gang b waits. a-0 ends: a
// leaves the order (its finish, an auction) while a-1 holds n0/1, which
// the stage hides from A's policy, so b cannot fit. a-1 ends: b binds on
// a's GPUs at that round; it used to wait for the next lease end (the
// wake was wired only without tenancy). Meanwhile A's policy was handed a
// renumbered sub-cluster without a's GPUs, on which its leases (by GPU
// id) named other GPUs: d's GPUs read as unleased and were offered. Now
// the hidden GPUs are taken on the policy's copy of the whole view. VC
// B's gang z keeps n1 throughout; no policy invariant breaks.
func TestThemisInVCAuctionsWhenFinishingGangFreesGPUs(t *testing.T) {
	cfg := testCfg()
	cfg.Scheduler, cfg.Tenancy, cfg.Cells = "themis", "hived", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, 2, 4)
	at := time.Unix(1_700_000_000, 0)
	inVC := func(vc string, a map[string]string) map[string]string { a[AnnVC] = vc; return a }
	job := func() map[string]string { return map[string]string{AnnModel: "BERT", AnnIterations: "100000"} }
	for i := range 2 {
		w.create("a-"+itoa(i), 1, inVC("A", gangAnn("a", 2, AnnModel, "BERT", AnnIterations, "100000")), at)
	}
	w.create("d-0", 2, inVC("A", job()), at)
	w.create("z-0", 4, inVC("B", job()), at)
	w.expect(&at, "a, d and z placed", "ns/a-0@n0[0] ns/a-1@n0[1] ns/d-0@n0[2,3] ns/z-0@n1[0,1,2,3]")
	w.create("b-0", 2, inVC("A", job()), at)
	w.expect(&at, "b arrives", "ns/a-0@n0[0] ns/a-1@n0[1] ns/d-0@n0[2,3] ns/z-0@n1[0,1,2,3]")
	w.finish("ns/a-0")
	w.expect(&at, "a-0 ends", "ns/a-1@n0[1] ns/d-0@n0[2,3] ns/z-0@n1[0,1,2,3]")
	w.expect(&at, "a-1 runs", "ns/a-1@n0[1] ns/d-0@n0[2,3] ns/z-0@n1[0,1,2,3]")
	w.finish("ns/a-1")
	w.expect(&at, "a-1 ends", "ns/b-0@n0[0,1] ns/d-0@n0[2,3] ns/z-0@n1[0,1,2,3]")
	for _, v := range w.s.th.vcs {
		if vs := v.pol.Stats().Violations; len(vs) > 0 {
			t.Errorf("VC policy violations: %v", vs)
		}
	}
	if n := testutil.ToFloat64(w.s.metrics.LeaseRevocations); n != 0 {
		t.Errorf("%v lease revocations", n)
	}
}

// A gang's arrival on Themis' clock is its first pods' creation, not its
// current pods': a gang evicted and made again by its controller (its
// job's Submit kept by the evicted-work record or the bind-info, as the
// state reads them) waited since it first came, and its app's ρ counts
// that wait, in a restarted scheduler too, whose stand-ins start from
// the gangs it finds. Before, the new pods' creation time was taken.
func TestThemisArrivalIsTheGangsFirst(t *testing.T) {
	cfg := testCfg()
	cfg.Scheduler = "themis"
	w := newWorld(t, cfg, 1, 1, 4)
	s := w.s
	t0 := time.Unix(1_700_000_000, 0)
	s.th.epoch = t0
	p := owned(pod("a-1", 4, nil, ""))
	p.CreationTimestamp = metav1.NewTime(t0.Add(300 * time.Second)) // the controller's new pod
	for _, c := range []struct {
		first time.Time
		want  float64
	}{
		{t0.Add(100 * time.Second), 100}, // arrived before its pod was made again
		{t0.Add(400 * time.Second), 300}, // a Submit later than its pod: the pod
	} {
		j := workload.NewJob(workload.Spec{ID: 1, GPUs: 4, Submit: s.clockOf(c.first)})
		if got := s.th.arrival(s, &gang{Key: "ns/a", Pending: []*corev1.Pod{p}, Job: j}); math.Abs(got-c.want*s.th.scale) > 1e-6 {
			t.Errorf("first arrival %v, pod made at %v: arrival %v on Themis' clock, want %v", c.first.Sub(t0), 300*time.Second, got, c.want*s.th.scale)
		}
	}
}
