package kube

import (
	"os"
	"testing"
	"time"
)

// Under tenancy hived pal_app_rho exports the apps of the VCs' last
// auctions. Two ways it kept apps for good: a VC whose last gang left
// runs no auction (its policy is not called without jobs), so the apps of
// its last one stayed in its record; and a cells change remakes the VCs'
// layers, and with them each VC's Themis, while the scheduler kept the
// old policies in its list beside the new ones and exported their apps
// too. Here app x (VC A) ends after a change of the cells ConfigMap (a
// comment added): its ρ is gone, and one policy per VC is left.
func TestThemisVCPoliciesAfterCellsChange(t *testing.T) {
	text, err := os.ReadFile("testdata/two-vcs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, at := hivedWorld(t, "testdata/two-vcs.yaml", 2, withCellsConfigMap, func(c *Config) { c.Scheduler = "themis" })
	w.create("x-0", 4, vcJob("A"), *at)
	w.create("z-0", 4, vcJob("B"), *at)
	w.expect(at, "x and z placed", "ns/x-0@n0[0,1,2,3] ns/z-0@n1[0,1,2,3]")
	if _, ok := w.s.th.rho["ns/pod:x-0"]; !ok {
		t.Fatalf("x has no ρ: %v", w.s.th.rho)
	}
	w.setCells(w.s.cfg, string(text)+"# changed\n")
	w.expect(at, "the change", "ns/x-0@n0[0,1,2,3] ns/z-0@n1[0,1,2,3]")
	w.finish("ns/x-0")
	w.expect(at, "x ends", "ns/z-0@n1[0,1,2,3]")
	w.expect(at, "x gone", "ns/z-0@n1[0,1,2,3]")
	if r, ok := w.s.th.rho["ns/pod:x-0"]; ok {
		t.Errorf("x left, and its ρ %v is still exported (%d VC policies)", r, len(w.s.th.vcs))
	}
	if len(w.s.th.vcs) != 2 {
		t.Errorf("%d VC policies, want 2", len(w.s.th.vcs))
	}
}

// A cells change makes each VC's Themis afresh (new layers, new views)
// and the new policy held no lease: its first round is an auction, in
// which a running gang's GPUs were offered. A change that only adds a
// comment had VC A's waiting app y (ρ +Inf) win x's node the round after
// it, 30 s into x's 60 s lease, and x evicted. The new policies are told
// the old ones' leases (Honour), so x keeps its node until its lease ends
// and is evicted for y at the round its lease ends.
func TestThemisVCLeasesSurviveCellsChange(t *testing.T) {
	text, err := os.ReadFile("testdata/two-vcs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, t0 := themisVCWorld(t, withCellsConfigMap)
	at := t0
	xThenY(w, &at)
	w.expect(&at, "y arrives", "ns/x-0@n0[0,1,2,3]")
	w.setCells(w.s.cfg, string(text)+"# changed\n")
	xKeepsItsLease(t, w, &at, t0)
}

// A restarted scheduler under tenancy hived makes each VC's Themis
// afresh, as a cells change does; the running gangs' leases are on their
// pods (pal.io/lease-until) and the new policies are told them. Under
// hived nothing wrote the annotation (the VCs' policies held the leases,
// the scheduler kept no record), so a restart ended every lease: VC A's x
// (60 s lease from t0+10 s) was evicted for the waiting y at the first
// round after a restart at t0+30 s.
func TestThemisVCLeasesSurviveRestart(t *testing.T) {
	w, t0 := themisVCWorld(t)
	at := t0
	xThenY(w, &at)
	w.expect(&at, "y arrives", "ns/x-0@n0[0,1,2,3]")
	w.expect(&at, "y waits", "ns/x-0@n0[0,1,2,3]")
	w.restart()
	xKeepsItsLease(t, w, &at, t0)
}

// xKeepsItsLease runs w's rounds from at until VC A's x-0, leased until
// t0+70 s, has reached its lease's end: x is not evicted before it, and
// is after it, for the waiting y, and no VC's policy broke a lease.
func xKeepsItsLease(t *testing.T, w *world, at *time.Time, t0 time.Time) {
	t.Helper()
	evicted := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.pods["ns/x-0"].DeletionTimestamp != nil
	}
	for at.Add(10 * time.Second).Before(t0.Add(70 * time.Second)) {
		w.step(at, "x's lease runs")
		if evicted() {
			t.Fatalf("x evicted at t0+%v, before its lease ends at t0+70s\n%s", at.Sub(t0), w.log.String())
		}
	}
	w.step(at, "x's lease ended")
	if !evicted() {
		t.Fatalf("x not evicted for y at t0+%v, after its lease ended", at.Sub(t0))
	}
	for _, v := range w.s.th.vcs {
		if vs := v.pol.Stats().Violations; len(vs) > 0 {
			t.Errorf("VC policy violations: %v", vs)
		}
	}
}

// A VC's Themis that auctions running gangs none of which holds a lease
// may plan them on each other's GPUs; the tenancy stage keeps a running
// gang where it runs (keepRunning), and the policy leased the GPUs it
// planned. VC A's x (3 GPUs, n0 0-2) and y (1 GPU, n0 3), bound together
// on 60 s leases, are auctioned again unleased by a restarted scheduler
// that finds no pal.io/lease-until on their pods (their owner removed
// it), or at their leases' end: the policy planned y on GPU 0 and x on
// 1-3, both were kept where they ran, and x's GPU 0 was leased to y's
// app. When y ended, the auction offered x's GPUs (its app held no lease
// on them) and granted them to x's app over y's lease ('lease: GPU 0 is
// leased to app 1 until ...; app 0 cannot have it'). The policy now keeps
// a running gang on its GPUs itself (themis.Config.KeepRunning) and
// leases those.
func TestThemisVCKeepsRunningGangsOnTheirLeases(t *testing.T) {
	for _, restart := range []bool{true, false} {
		w, t0 := themisVCWorld(t)
		at := t0
		w.create("x-0", 3, vcJob("A"), at)
		w.create("y-0", 1, vcJob("A"), at)
		both := "ns/x-0@n0[0,1,2] ns/y-0@n0[3]"
		w.expect(&at, "x and y placed", both) // t0+10 s: leases until t0+70 s
		if restart {
			w.expect(&at, "x and y run", both)
			w.s.statusWG.Wait()
			w.mu.Lock()
			for _, k := range []string{"ns/x-0", "ns/y-0"} {
				q := w.pods[k].DeepCopy()
				delete(q.Annotations, AnnLeaseUntil)
				w.put(q)
			}
			w.mu.Unlock()
			w.restart()
			w.expect(&at, "the restart", both)
		} else {
			for at.Before(t0.Add(70 * time.Second)) {
				w.expect(&at, "x and y run", both)
			}
		}
		what := map[bool]string{true: "after a restart", false: "after the leases' end"}[restart]
		for _, v := range w.s.th.vcs {
			for g := range 4 {
				want := "ns/pod:x-0"
				if g == 3 {
					want = "ns/pod:y-0"
				}
				if app, _ := v.pol.Lease(g, v.pol.Now()); app != "" && app != want {
					t.Errorf("%s: GPU %d of %s is leased to %s", what, g, want, app)
				}
			}
		}
		w.finish("ns/y-0")
		w.expect(&at, "y ends", "ns/x-0@n0[0,1,2]")
		w.expect(&at, "y gone", "ns/x-0@n0[0,1,2]")
		for _, v := range w.s.th.vcs {
			if vs := v.pol.Stats().Violations; len(vs) > 0 {
				t.Errorf("%s: VC policy violations: %v\n%s", what, vs, w.log.String())
			}
		}
	}
}

// A gang's lease is on its pods from its bind: a restart at the round
// right after it keeps it too. Under hived the VC policies' lease of a
// gang they had just placed was not read (JobLeases: running jobs only),
// so the bind wrote no pal.io/lease-until and the round after wrote it;
// a restart before that round found x with no lease on record, and the
// fresh VC policy's first auction gave x's node to the waiting y.
func TestThemisVCLeaseOnPodsFromTheBind(t *testing.T) {
	w, t0 := themisVCWorld(t)
	at := t0
	xThenY(w, &at)
	w.restart()
	xKeepsItsLease(t, w, &at, t0)
}

// xThenY creates VC A's x-0 (4 GPUs), runs the round that places it on
// n0 (at t0+10 s: its lease until t0+70 s), and creates A's y-0 (4
// GPUs), which only x's node can take.
func xThenY(w *world, at *time.Time) {
	w.t.Helper()
	w.create("x-0", 4, vcJob("A"), *at)
	w.expect(at, "x placed", "ns/x-0@n0[0,1,2,3]")
	w.create("y-0", 4, vcJob("A"), *at)
}

// vcJob is the annotations of a long BERT gang of VC vc.
func vcJob(vc string) map[string]string {
	return map[string]string{AnnVC: vc, AnnModel: "BERT", AnnIterations: "100000"}
}

// themisVCWorld is two 4-GPU nodes under hived (testdata/two-vcs.yaml)
// with a Themis of 60 s leases per VC, then opts; t0 is its first round.
func themisVCWorld(t *testing.T, opts ...func(*Config)) (*world, time.Time) {
	themis := func(c *Config) {
		c.Scheduler = "themis"
		c.Themis.Lease.Duration = 60 * time.Second
	}
	w, at := hivedWorld(t, "testdata/two-vcs.yaml", 2, append([]func(*Config){themis}, opts...)...)
	return w, *at
}
