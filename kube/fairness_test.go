package kube

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func themisPod(name string, gpus int, app, gang string, size int, iters string, created time.Time) *corev1.Pod {
	p := owned(pod(name, gpus, gangAnn(gang, size, AnnModel, "BERT", AnnIterations, iters, AnnApp, app), ""))
	p.CreationTimestamp = metav1.NewTime(created)
	return p
}

func gaugeValue(t *testing.T, s *Scheduler, app string) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.AppRho.WithLabelValues(app).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func counterValue(t *testing.T, s *Scheduler) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.LeaseRevocations.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// themisCfg is the test config under Themis with 60 s rounds, the
// setting every hand-worked lease case here uses.
func themisCfg() Config {
	cfg := testCfg()
	cfg.Scheduler = "themis"
	cfg.Period = Duration{time.Minute}
	return cfg
}

// clockAt gives the round times of a case as seconds after t0.
func clockAt(t0 time.Time) func(int) time.Time {
	return func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
}

// leaseRunsOut plays the lease case's middle, from 60 s to A's pods
// leaving: the waiter's pod b-0 arrives at 100 s; from 120 to 540 s
// nothing is evicted or bound (holder's lease runs until 600), and at
// 120 s the holder's ρ is exactly 1 and the waiter's +Inf; at 600 s
// a-0 and a-1 are evicted and b-0 waits for them; then they are deleted.
func leaseRunsOut(t *testing.T, s *Scheduler, cs *fake.Clientset, fc *fakeCluster, at func(int) time.Time, b0 *corev1.Pod, holder, waiter string) {
	t.Helper()
	ctx := context.Background()
	roundWait(s, ctx, at(60))
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, b0, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "b-0", true)
	for sec := 120; sec <= 540; sec += 60 {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || fc.binds["b-0"] != nil {
			t.Fatalf("t=%d: evicted %v, b-0 bound %v: %s's lease runs until 600", sec, fc.evicted, fc.binds["b-0"] != nil, holder)
		}
		if sec == 120 {
			if r := gaugeValue(t, s, holder); math.Abs(r-1) > 1e-9 {
				t.Errorf("t=120: pal_app_rho{app=%s} = %v, want 1", holder, r)
			}
			if r := gaugeValue(t, s, waiter); !math.IsInf(r, 1) {
				t.Errorf("t=120: pal_app_rho{app=%s} = %v, want +Inf", waiter, r)
			}
		}
	}
	roundWait(s, ctx, at(600))
	if !slices.Equal(fc.evicted, []string{"a-0", "a-1"}) || fc.binds["b-0"] != nil {
		t.Fatalf("t=600: evicted %v, b-0 bound %v; want a-0 and a-1 evicted (nothing else), b-0 waiting for them", fc.evicted, fc.binds["b-0"] != nil)
	}
	for _, n := range []string{"a-0", "a-1"} {
		if err := cs.CoreV1().Pods("ns").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// Themis' lease on one 4-GPU node, every 60 s round by hand (lease 600 s,
// f = 0.8, BERT: 0.179 s per iteration, no GPU scores: every GPU at the
// median):
//
//   - t = 0: app A (gang a, two 2-GPU pods) is alone and wins the node:
//     a-0 on devices 0,1, a-1 on 2,3, leased until 600.
//   - t = 100: app B (gang b, one 2-GPU pod) arrives; the auction at 120
//     has nothing to offer (A's GPUs are leased), so b waits. A's ρ then is
//     exactly 1: it has run alone at full speed since it arrived, so
//     T_sh = 120 + (D − 120) = D (D its run time on 4 GPUs) and T_id =
//     W / min(C / N_avg, D_max) = 4D / min(4/1, 4) = D. B holds nothing: +Inf.
//   - t = 180 ... 540: nothing is evicted or bound (the lease holds).
//   - t = 600: A's lease ends; both apps hold nothing on a lease (ρ +Inf,
//     a tie), n = 2 gives one bidder, and the tie goes to the app waiting
//     longest: B (since 100) over A (ran until now). B wins devices 0,1;
//     the 2 GPUs left cannot hold A's gang of 4, so A is evicted, and b's
//     launch waits for A's pods to leave.
//   - t = 660, A's pods gone: b binds on n0 devices 0,1.
func TestThemisLeaseHeldUntilItEnds(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cs, fc := newFake(t, node("n0", 4),
		themisPod("a-0", 2, "A", "a", 2, "100000", t0), themisPod("a-1", 2, "A", "a", 2, "100000", t0))
	cfg := themisCfg()
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	at := clockAt(t0)

	roundWait(s, ctx, at(0))
	for n, idx := range map[string]string{"a-0": "0,1", "a-1": "2,3"} {
		if b := fc.binds[n]; b == nil || b.Target.Name != "n0" || b.Annotations[AnnGPUIndices] != idx {
			t.Fatalf("t=0: %s bound %+v, want n0 devices %s", n, b, idx)
		}
	}
	if got := s.th.leaseEnd["ns/a"]; got != 600 {
		t.Errorf("t=0: gang a's lease ends at %v, want 600", got)
	}
	leaseRunsOut(t, s, cs, fc, at, themisPod("b-0", 2, "B", "b", 1, "100000", at(100)), "ns/A", "ns/B")
	waitInformer(t, s, "a-1", false)
	roundWait(s, ctx, at(660))
	if b := fc.binds["b-0"]; b == nil || b.Target.Name != "n0" || b.Annotations[AnnGPUIndices] != "0,1" {
		t.Fatalf("t=660: b-0 bound %+v, want n0 devices 0,1", b)
	}
	// Wall times, as pal.io/lease-until: t0 + 660 s and t0 + 1260 s.
	want := "Bound to n0 with GPUs 0,1 (gang ns/b); themis app ns/B, rho +Inf at the auction at 1970-01-12T13:57:40Z, lease until 1970-01-12T14:07:40Z"
	if got := s.scheduledMessage("n0", "0,1", "ns/b"); got != want {
		t.Errorf("Scheduled event:\n got %q\nwant %q", got, want)
	}
	if got := fc.binds["b-0"].Annotations[AnnLeaseUntil]; got != "1970-01-12T14:07:40Z" {
		t.Errorf("b-0's %s = %q, want the event's lease end 1970-01-12T14:07:40Z", AnnLeaseUntil, got)
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0", n)
	}
	if v := s.th.pol.Stats().Violations; len(v) > 0 {
		t.Errorf("policy violations: %v", v)
	}
}

// The driver's own guard: a plan that takes a leased gang's GPUs (here
// forced by shortening the recorded lease's view of time: the driver is
// told the lease ends at 900 while the policy's ended at 600) is refused,
// counted, and the job that was to take them waits.
func TestThemisDriverRefusesEarlyRevocation(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cs, fc := newFake(t, node("n0", 4),
		themisPod("a-0", 2, "A", "a", 2, "100000", t0), themisPod("a-1", 2, "A", "a", 2, "100000", t0))
	cfg := themisCfg()
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, themisPod("b-0", 2, "B", "b", 1, "100000", at(100)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "b-0", true)
	roundWait(s, ctx, at(120))
	s.th.leaseEnd["ns/a"] = 900 // the driver's record outlives the policy's lease
	roundWait(s, ctx, at(600))
	if len(fc.evicted) > 0 || fc.binds["b-0"] != nil {
		t.Fatalf("t=600: evicted %v, b-0 bound %v; want a kept until 900, b waiting", fc.evicted, fc.binds["b-0"] != nil)
	}
	if n := counterValue(t, s); n != 1 {
		t.Errorf("pal_lease_revocations_total = %v, want 1", n)
	}
}

// A pod's app: pal.io/app (annotation, then label), else its Job, else
// its PodGroup (native, then scheduler-plugins), else its gang.
func TestThemisAppKey(t *testing.T) {
	yes := true
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u", Controller: &yes}}
	pg := "pg1"
	cases := []struct {
		name string
		edit func(p *corev1.Pod)
		want string
	}{
		{"annotation", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnApp: "search"}
			p.Labels = map[string]string{AnnApp: "other"}
			p.OwnerReferences = job
		}, "ns/search"},
		{"label", func(p *corev1.Pod) { p.Labels = map[string]string{AnnApp: "other"}; p.OwnerReferences = job }, "ns/other"},
		{"job", func(p *corev1.Pod) { p.OwnerReferences = job; p.Labels = map[string]string{LabelPodGroup: "x"} }, "ns/job:train"},
		{"native podgroup", func(p *corev1.Pod) {
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg}
			p.Labels = map[string]string{LabelPodGroup: "x"}
		}, "ns/podgroup:pg1"},
		{"scheduler-plugins podgroup", func(p *corev1.Pod) { p.Labels = map[string]string{LabelPodGroup: "x"} }, "ns/podgroup:x"},
		{"gang", func(*corev1.Pod) {}, "ns/g"},
	}
	for _, c := range cases {
		p := pod("p", 1, nil, "")
		c.edit(p)
		if got := appKey(&gang{Key: "ns/g", Pending: []*corev1.Pod{p}}); got != c.want {
			t.Errorf("%s: app %q, want %q", c.name, got, c.want)
		}
	}
}

// Config: themis' knobs are checked, and tenancy under themis is refused
// with the field named.
func TestThemisConfig(t *testing.T) {
	c := testCfg()
	c.Scheduler = "themis"
	if err := c.Validate(); err != nil {
		t.Fatalf("default themis config: %v", err)
	}
	if c.Themis.Lease.Duration != 10*time.Minute || c.Themis.Knob != 0.8 {
		t.Errorf("defaults lease %v knob %v, want 10m0s and 0.8 (the simulator's)", c.Themis.Lease, c.Themis.Knob)
	}
	bad := c
	bad.Themis.Lease = Duration{}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "themis.lease") {
		t.Errorf("lease 0: %v", err)
	}
	path := t.TempDir() + "/themis.yaml"
	if err := writeFile(path, "scheduler: themis\nthemis:\n  lease: 5m\n  knob: 0.5\n"); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(path)
	if err != nil || got.Themis.Lease.Duration != 5*time.Minute || got.Themis.Knob != 0.5 {
		t.Errorf("%s: lease %v knob %v (%v), want 5m0s and 0.5", path, got.Themis.Lease, got.Themis.Knob, err)
	}
	bad = c
	bad.Tenancy, bad.Cells = "quota", "testdata/two-vcs.yaml"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "field tenancy: quota under scheduler themis") {
		t.Errorf("quota: %v", err)
	}
	bad = c
	bad.Themis.Knob = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "themis.knob") {
		t.Errorf("knob 1.5: %v", err)
	}
}

// Under tenancy hived each VC runs a Themis of its own over its cells
// (testdata/two-vcs.yaml: VC A on one 4-GPU node, VC B on the other). VC
// A replays the lease case above with apps X and Y; app Z's gang of four
// GPUs in VC B is never touched by A's auctions: at 600 s its lease ends
// too, but Z is alone in its VC and keeps its node. X's ρ at 120 s is 1
// (C is A's 4 GPUs), Y's +Inf. Y's gang, placed at 600 s onto X's
// vacating GPUs, is committed to its cells then; the stage gives them
// back when the launch does not happen (Y's job is not running at 660 s),
// so Y's gang binds at 720 s, on n0 devices 0,1.
func TestThemisInsideHiveDVCs(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	withVC := func(p *corev1.Pod, vc string) *corev1.Pod { p.Annotations[AnnVC] = vc; return p }
	cs, fc := newFake(t, node("n0", 4), node("n1", 4),
		withVC(themisPod("a-0", 2, "X", "a", 2, "100000", t0), "A"), withVC(themisPod("a-1", 2, "X", "a", 2, "100000", t0), "A"),
		withVC(themisPod("c-0", 4, "Z", "c", 1, "100000", t0), "B"))
	cfg := themisCfg()
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	at := clockAt(t0)
	roundWait(s, ctx, at(0))
	for n, want := range map[string]string{"a-0": "n0 0,1", "a-1": "n0 2,3", "c-0": "n1 0,1,2,3"} {
		if b := fc.binds[n]; b == nil || b.Target.Name+" "+b.Annotations[AnnGPUIndices] != want {
			t.Fatalf("t=0: %s bound %+v, want %s", n, b, want)
		}
	}
	leaseRunsOut(t, s, cs, fc, at, withVC(themisPod("b-0", 2, "Y", "b", 1, "100000", at(100)), "A"), "ns/X", "ns/Y")
	waitInformer(t, s, "a-1", false)
	roundWait(s, ctx, at(660))
	if fc.binds["b-0"] != nil {
		t.Fatalf("t=660: b-0 bound; want it at 720 (the stage gave its cells back at 660)")
	}
	roundWait(s, ctx, at(720))
	if b := fc.binds["b-0"]; b == nil || b.Target.Name != "n0" || b.Annotations[AnnGPUIndices] != "0,1" {
		t.Fatalf("t=720: b-0 bound %+v, want n0 devices 0,1", b)
	}
	if !slices.Equal(fc.evicted, []string{"a-0", "a-1"}) {
		t.Errorf("evicted %v, want only a-0 and a-1", fc.evicted)
	}
	for _, v := range s.th.vcs {
		if vs := v.pol.Stats().Violations; len(vs) > 0 {
			t.Errorf("VC policy violations: %v", vs)
		}
	}
}

// A restarted scheduler keeps a running gang's GPUs until the lease its
// pods record (pal.io/lease-until) ends, though its fresh policy has no
// lease of its own: gang a (app run, devices 0-3 of n0, lease until
// t0+300 s) and gang b (app queued, 2 GPUs) pending. The scheduler tells
// its new policy a's recorded lease, so the auctions offer nothing until
// 300 s and b waits, with no plan refused (pal_lease_revocations_total
// stays 0; it used to count a refusal every round, the fresh policy
// having offered a's GPUs to queued). At 300 s queued wins (ρ +Inf
// against a's finite ρ), a is evicted, and b binds on n0 devices 0,1 once
// a's pods are gone, recording b's lease end, 600 s after the round that
// placed it.
func TestThemisRestartKeepsRecordedLease(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	until := t0.Add(300 * time.Second).UTC().Format(time.RFC3339Nano)
	bi := `{"gang":"ns/a","round":"` + t0.Add(-300*time.Second).UTC().Format(time.RFC3339Nano) + `","pods":{"a-0":{"node":"n0","gpus":[0,1]},"a-1":{"node":"n0","gpus":[2,3]}}}`
	bound := func(name, idx string) *corev1.Pod {
		p := themisPod(name, 2, "run", "a", 2, "100000", t0.Add(-400*time.Second))
		p.Spec.NodeName = "n0"
		p.Annotations[AnnGPUIndices], p.Annotations[AnnBindInfo], p.Annotations[AnnLeaseUntil] = idx, bi, until
		return running(p)
	}
	cs, fc := newFake(t, node("n0", 4), bound("a-0", "0,1"), bound("a-1", "2,3"),
		themisPod("b-0", 2, "queued", "b", 1, "100000", t0.Add(-100*time.Second)))
	cfg := themisCfg()
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	at := clockAt(t0)
	for sec := 0; sec < 300; sec += 60 {
		roundWait(s, ctx, at(sec))
		if len(fc.evicted) > 0 || len(fc.binds) > 0 {
			t.Fatalf("t=%d: evicted %v, bound %v; a's recorded lease runs until 300", sec, fc.evicted, keys(fc.binds))
		}
	}
	if n := counterValue(t, s); n != 0 {
		t.Errorf("pal_lease_revocations_total = %v, want 0 (the policy knew a's lease)", n)
	}
	roundWait(s, ctx, at(300))
	if !slices.Equal(fc.evicted, []string{"a-0", "a-1"}) {
		t.Fatalf("t=300: evicted %v, want a-0 and a-1", fc.evicted)
	}
	for _, n := range []string{"a-0", "a-1"} {
		if err := cs.CoreV1().Pods("ns").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitInformer(t, s, "a-1", false)
	roundWait(s, ctx, at(360))
	b := fc.binds["b-0"]
	if b == nil || b.Target.Name != "n0" || b.Annotations[AnnGPUIndices] != "0,1" {
		t.Fatalf("t=360: b-0 bound %+v, want n0 devices 0,1", b)
	}
	if got, want := b.Annotations[AnnLeaseUntil], t0.Add(960*time.Second).UTC().Format(time.RFC3339Nano); got != want {
		t.Errorf("b-0's %s = %q, want %q", AnnLeaseUntil, got, want)
	}
}

// Under Themis a gang's work must be known, and two kinds of pod leave it
// unknown: one without pal.io/model (no iteration time) and one that ran
// past its pal.io/iterations. Each used to stop the scheduler (the
// auction refuses zero work and negative remaining work). On one 8-GPU
// node: app x's 4-GPU pod with no model and no iterations, app y's
// 4-GPU pod with a model and no iterations (one iteration: 0.2 s of
// work it outruns in its first round). Both bind in the first round (8
// GPUs for 8) and keep their GPUs while their leases run (600 s); the
// rounds go on past the leases' end without a fault.
func TestThemisUnknownWorkSchedules(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	x := owned(pod("x-0", 4, map[string]string{AnnApp: "x"}, ""))
	y := owned(pod("y-0", 4, map[string]string{AnnApp: "y", AnnModel: "BERT"}, ""))
	for _, p := range []*corev1.Pod{x, y} {
		p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
	}
	cs, fc := newFake(t, node("n0", 8), x, y)
	s, log := startLogged(t, themisCfg(), cs)
	at := clockAt(t0)
	roundWait(s, context.Background(), at(0))
	if fc.binds["x-0"] == nil || fc.binds["y-0"] == nil {
		t.Fatalf("binds %v, want x-0 and y-0 (wait reasons %q); log:\n%s", keys(fc.binds), s.lastWhy, log)
	}
	for sec := 60; sec <= 540; sec += 60 {
		roundWait(s, context.Background(), at(sec))
	}
	if len(fc.evicted) > 0 || fc.calls != 2 {
		t.Errorf("evicted %v, %d bind calls before the leases end; want both kept, 2 binds", fc.evicted, fc.calls)
	}
	for sec := 600; sec <= 900; sec += 60 {
		roundWait(s, context.Background(), at(sec))
	}
	faults := 0.0
	for _, st := range []string{"round", "plan", "bind", "complete"} {
		faults += testutil.ToFloat64(s.metrics.RoundErrors.WithLabelValues(st))
	}
	if faults != 0 || strings.Contains(log.String(), "recovered from a fault") {
		t.Fatalf("%v faults recovered; log:\n%s", faults, log)
	}
}

// A Job's evicted pods come back only after the Job controller's failure
// backoff (up to 6 minutes), far more than a few rounds: the gang's
// stand-in keeps its identity, arrival and credited progress through
// that gap, and is dropped only once the gang has been gone longer than
// the longest backoff plus three periods. Rounds every 10 s; gang a's
// two pods run from 0 s, are gone from 60 s to 140 s (80 s, the backoff
// for 4 pods), and come back.
func TestThemisStandInOutlivesJobBackoff(t *testing.T) {
	cfg := themisCfg()
	cfg.Period = Duration{10 * time.Second}
	w := newWorld(t, cfg, 1, 1, 4)
	t0 := time.Unix(1_000_000, 0)
	at := clockAt(t0)
	ann := gangAnn("a", 2, AnnModel, "BERT", AnnIterations, "100000", AnnApp, "A")
	for _, n := range []string{"a-0", "a-1"} {
		w.create(n, 2, ann, t0)
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
	id, submit, done := sh.ID, sh.Submit, sh.Executed
	w.remove("ns/a-0")
	w.remove("ns/a-1")
	w.deliver(-1)
	for sec := 60; sec <= 130; sec += 10 {
		w.round(at(sec))
	}
	for _, n := range []string{"a-0", "a-1"} {
		w.create(n, 2, ann, at(135))
	}
	w.deliver(-1)
	w.round(at(140))
	sh = w.s.th.stand["ns/a"]
	if sh == nil || sh.ID != id || sh.Submit != submit || sh.Executed < done {
		t.Fatalf("after 80 s gone: stand-in %+v, want id %d, submit %v, at least %v iterations done", sh, id, submit, done)
	}
	w.remove("ns/a-0")
	w.remove("ns/a-1")
	w.deliver(-1)
	last := 140
	for sec := 150; sec <= 140+int((standInKeep+3*cfg.Period.Duration).Seconds()); sec += 10 {
		w.round(at(sec))
		last = sec
	}
	if w.s.th.stand["ns/a"] == nil {
		t.Fatalf("stand-in dropped by %d s, within %v of its last round", last, standInKeep+3*cfg.Period.Duration)
	}
	w.round(at(last + 10))
	if sh := w.s.th.stand["ns/a"]; sh != nil {
		t.Errorf("stand-in kept %d s after its last round: %+v", last+10-140, sh)
	}
}
