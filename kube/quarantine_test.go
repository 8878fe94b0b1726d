package kube

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/palsched/pal/telemetry"
	"github.com/palsched/pal/variability"
)

// quarantineAbove on a cluster. DCGM shows gpu-node-001's GPU 1 held down
// to 1005 MHz against the busy GPUs' 1395: a slowdown of 1395/1005 =
// 1.388, at or above quarantineAbove 1.3 (out again below 1.15). The
// round after the scrape the GPU is quarantined: pal_gpu_quarantined is
// 1, a Warning event GPUQuarantined is on node gpu-node-001, the learned
// ConfigMap says why (slowdown 1.388 from dcgm), and placement's scores
// give GPU 1 its class's slowest score: that of gpu-node-002's GPU 3
// (global 7), which the profile puts at 2.0 (slow, but as its profile
// says: not quarantined), above GPU 1's own 1.388. A third node joining
// makes a new binning; the mark stays. Once the throttling ends the
// belief is back at 1 (below 1.15): the gauge is 0, a Normal event
// GPUQuarantineLifted, the annotation is empty, and GPU 1 scores below
// GPU 7 again.
func TestQuarantineOnTheCluster(t *testing.T) {
	sample := a100Sample(t)
	u, set := exporter(t, sample)
	cfg := learnCfg()
	cfg.DCGM.URLs = []string{u}
	cfg.QuarantineAbove = 1.3
	cs, _ := newFake(t, node("gpu-node-001", 4), node("gpu-node-002", 4), profileConfigMap(allClasses("gpu-node-002,3", "2.0")))
	s := startRounds(t, cfg, cs)
	evc := fake.NewSimpleClientset()
	s.UseEventClient(evc)
	ctx := context.Background()
	s.events.Start(ctx)
	defer s.Stop()
	roundWait(s, ctx, learnT0)
	s.dcgm.scrape(ctx, cs, s.log)
	at := learnT0.Add(10 * time.Second)
	roundWait(s, ctx, at)

	gauge := s.metrics.learn.quarantined.WithLabelValues("gpu-node-001", "1")
	if got := testutil.ToFloat64(gauge); got != 1 {
		t.Errorf("pal_gpu_quarantined{gpu-node-001,1} = %v, want 1", got)
	}
	want := "gpu-node-001/1: slowdown 1.388 (dcgm) since " + at.UTC().Format(time.RFC3339)
	if got := learnedCM(t, cs).Annotations[AnnQuarantined]; got != want {
		t.Errorf("learned ConfigMap %s = %q, want %q", AnnQuarantined, got, want)
	}
	slowest := func(when string, want bool) {
		t.Helper()
		sf := s.scores.SF[variability.ClassA]
		if got := sf[1] == slices.Max(sf); got != want || sf[7] != slices.Max(sf) {
			t.Errorf("%s: class A scores %v: GPU 1 the slowest %v, want %v (and GPU 7 the slowest)", when, sf, got, want)
		}
	}
	slowest("quarantined", true)
	if _, err := cs.CoreV1().Nodes().Create(ctx, node("gpu-node-003", 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500 && len(s.scores.SF[variability.ClassA]) != 12; i++ { // until the informer has the node
		time.Sleep(10 * time.Millisecond)
		roundWait(s, ctx, learnT0.Add(15*time.Second))
	}
	if n := len(s.scores.SF[variability.ClassA]); n != 12 {
		t.Fatalf("after gpu-node-003 joined: %d GPUs scored, want 12", n)
	}
	slowest("after a new binning", true)

	set(cooled(sample))
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(20*time.Second))
	if got := testutil.ToFloat64(gauge); got != 0 {
		t.Errorf("after the throttling ended pal_gpu_quarantined = %v, want 0", got)
	}
	if got := learnedCM(t, cs).Annotations[AnnQuarantined]; got != "" {
		t.Errorf("after the throttling ended %s = %q, want empty", AnnQuarantined, got)
	}
	slowest("lifted", false)
	s.events.Stop()
	var evs []string
	for _, ev := range listEvents(t, evc, "default") {
		if strings.HasPrefix(ev.Reason, "GPUQuarantine") {
			evs = append(evs, ev.Type+" "+ev.Reason+" "+ev.Regarding.Kind+"/"+ev.Regarding.Name)
		}
	}
	slices.Sort(evs)
	if wantEv := []string{"Normal GPUQuarantineLifted Node/gpu-node-001", "Warning GPUQuarantined Node/gpu-node-001"}; !slices.Equal(evs, wantEv) {
		t.Errorf("events %q, want %q", evs, wantEv)
	}
}

// quarantineAbove is 0 (off) or a slowdown above 1, and needs learning.
func TestQuarantineConfigValidate(t *testing.T) {
	for _, c := range []struct {
		above float64
		learn bool
		want  string
	}{{0, false, ""}, {1.5, true, ""}, {1, true, "want a slowdown above 1"}, {1.5, false, "needs learnScores: true"}} {
		cfg := learnCfg()
		cfg.LearnScores, cfg.QuarantineAbove = c.learn, c.above
		err := cfg.validateLearn()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("quarantineAbove %v learnScores %v: %v, want %q", c.above, c.learn, err, c.want)
		}
	}
}

// Under tenancy: hived cells of two 4-GPU nodes, gpu-node-001 and
// gpu-node-002, VCs A and B one node each. DCGM quarantines
// gpu-node-001's GPU 1 (as above); the cells then hold it as a bad
// device. A 4-GPU gang of A created after that binds A's node cell to the
// healthy gpu-node-002 (buddy allocation would hand out gpu-node-001
// first: TestTenancyTwoVCs), and a 3-GPU gang of B gets gpu-node-001's
// three healthy GPUs (B's cell doomed to the node with the bad device:
// 0, 2, 3). Once the throttling ends the cells hold nothing quarantined.
func TestQuarantineUnderTenancy(t *testing.T) {
	dir := t.TempDir()
	cells := dir + "/cells.yaml"
	if err := os.WriteFile(cells, []byte(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: gpu-node-001}
  - {cellType: NODE, cellAddress: gpu-node-002}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	sample := a100Sample(t)
	u, set := exporter(t, sample)
	cfg := learnCfg()
	cfg.DCGM.URLs = []string{u}
	cfg.QuarantineAbove = 1.3
	cfg.Tenancy, cfg.Cells = "hived", cells
	cs, fc := newFake(t, node("gpu-node-001", 4), node("gpu-node-002", 4))
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0)
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(10*time.Second)) // learns the hint, quarantines
	roundWait(s, ctx, learnT0.Add(20*time.Second)) // the cells are told
	if got := fmt.Sprint(s.ten.hived.Cells().Quarantined()); got != "[{gpu-node-001 1}]" {
		t.Fatalf("cells quarantine %s, want [{gpu-node-001 1}]", got)
	}
	for _, p := range []*corev1.Pod{pod("a-0", 4, vcAnn("A", ""), ""), pod("b-0", 3, vcAnn("B", ""), "")} {
		if _, err := cs.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	binds := func() int {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return len(fc.binds)
	}
	for i := 0; i < 500 && binds() < 2; i++ { // until the informer has the pods and both are bound
		time.Sleep(10 * time.Millisecond)
		roundWait(s, ctx, learnT0.Add(30*time.Second))
	}
	for name, want := range map[string]string{"a-0": "gpu-node-002 0,1,2,3", "b-0": "gpu-node-001 0,2,3"} {
		fc.mu.Lock()
		b := fc.binds[name]
		fc.mu.Unlock()
		if b == nil {
			t.Fatalf("%s not bound", name)
		}
		if got := b.Target.Name + " " + b.Annotations[AnnGPUIndices]; got != want {
			t.Errorf("%s on %s, want %s", name, got, want)
		}
	}
	set(cooled(sample))
	s.dcgm.scrape(ctx, cs, s.log)
	roundWait(s, ctx, learnT0.Add(40*time.Second))
	roundWait(s, ctx, learnT0.Add(50*time.Second))
	if got := s.ten.hived.Cells().Quarantined(); len(got) != 0 {
		t.Errorf("after the throttling ended the cells hold %v quarantined", got)
	}
}

// withGPU1 is the exporter sample with gpu-node-001's GPU 1 at the given
// SM clock and clock event reasons.
func withGPU1(sample string, clock, reasons int) string {
	var out []string
	for _, l := range strings.Split(sample, "\n") {
		if strings.Contains(l, `gpu="1"`) {
			switch {
			case strings.HasPrefix(l, "DCGM_FI_DEV_SM_CLOCK{"):
				l = l[:strings.LastIndex(l, " ")] + " " + strconv.Itoa(clock)
			case strings.HasPrefix(l, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{"):
				l = l[:strings.LastIndex(l, " ")] + " " + strconv.Itoa(reasons)
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// A GPU quarantined on DCGM's word stays in while idle. The sample's GPU
// 1 of gpu-node-001, busy at 1005 MHz under thermal slowdown (0x60), is
// quarantined at 1395/1005 = 1.388 (quarantineAbove 1.3). Then nothing
// runs on it: idle (0x1) at 210 MHz, still under thermal slowdown (0x61).
// Its idle clock says nothing, but the slowdown reason still holds, so
// the belief stays at 1.388 and so does the quarantine. Idle without the
// reason (0x1), DCGM no longer flags it: the belief goes back to 1 and
// the quarantine is lifted.
func TestQuarantineOutlivesIdleness(t *testing.T) {
	sample, set, cfg, cs := dcgmQuarantineCase(t)
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	gauge := s.metrics.learn.quarantined.WithLabelValues("gpu-node-001", "1")
	roundWait(s, ctx, learnT0)
	for i, step := range []struct {
		sample string
		belief float64
		in     float64
	}{
		{sample, 1395.0 / 1005, 1},
		{withGPU1(sample, 210, 0x61), 1395.0 / 1005, 1},
		{withGPU1(sample, 210, 0x1), 1, 0},
	} {
		set(step.sample)
		s.dcgm.scrape(ctx, cs, s.log)
		roundWait(s, ctx, learnT0.Add(time.Duration(i+1)*10*time.Second))
		if b := s.learn.learner.Belief(variability.ClassA, 1); math.Abs(b-step.belief) > 1e-12 {
			t.Errorf("step %d: GPU 1 believed %v, want %v", i, b, step.belief)
		}
		if got := testutil.ToFloat64(gauge); got != step.in {
			t.Errorf("step %d: pal_gpu_quarantined = %v, want %v", i, got, step.in)
		}
	}
}

// carryPriors on hand-built findings, one scrape after another: a GPU
// flagged idle keeps the prior it last showed flagged busy, for as long
// as it stays flagged; one never seen busy has nothing to carry; one no
// longer flagged, or no longer reported, is forgotten.
func TestCarryPriors(t *testing.T) {
	type gpu struct {
		busy, flagged bool
		prior         float64
	}
	finding := func(g gpu) telemetry.Finding {
		f := telemetry.Finding{GPU: telemetry.GPU{Hostname: "n", GPU: 0, Util: 100}, Prior: g.prior}
		if !g.busy {
			f.GPU.Util, f.GPU.Reasons = 0, telemetry.ReasonGPUIdle
		}
		if g.flagged {
			f.GPU.Reasons |= telemetry.ReasonHWSlowdown
			f.Throttled = []string{"hw_slowdown"}
		}
		return f
	}
	last := map[GPUKey]float64{}
	for i, step := range []struct {
		in        *gpu // nil: not reported
		wantPrior float64
		wantLast  string
	}{
		{&gpu{false, true, 1}, 1, "map[]"},           // flagged idle, never seen busy
		{&gpu{true, true, 2}, 2, "map[n/0:2]"},       // flagged busy
		{&gpu{false, true, 1}, 2, "map[n/0:2]"},      // idle, still flagged: carried
		{&gpu{true, true, 1.5}, 1.5, "map[n/0:1.5]"}, // busy again, a new prior
		{&gpu{false, false, 1}, 1, "map[]"},          // idle, no longer flagged
		{&gpu{false, true, 1}, 1, "map[]"},           // flagged again idle: nothing to carry
		{&gpu{true, true, 2}, 2, "map[n/0:2]"},
		{nil, 0, "map[]"}, // gone from the scrape
		{&gpu{false, true, 1}, 1, "map[]"},
	} {
		var fs []telemetry.Finding
		if step.in != nil {
			fs = append(fs, finding(*step.in))
		}
		carryPriors(fs, last)
		var got []string
		for k, v := range last {
			got = append(got, fmt.Sprintf("%s/%d:%g", k.Node, k.Index, v))
		}
		if s := "map[" + strings.Join(got, " ") + "]"; s != step.wantLast {
			t.Errorf("step %d: last %s, want %s", i, s, step.wantLast)
		}
		if step.in != nil && fs[0].Prior != step.wantPrior {
			t.Errorf("step %d: prior %v, want %v", i, fs[0].Prior, step.wantPrior)
		}
	}
}

// A replica that starts after another quarantined a GPU on DCGM's word
// keeps it in while DCGM still flags it idle: the learned ConfigMap's
// record (slowdown 1395/1005 = 1.388 from dcgm, since t1) stands for the
// idle GPU's missing clock reading, as carryPriors does within one
// replica, and the quarantine keeps its date. Without the record the new
// replica would take the idle GPU's prior of 1, lift the quarantine and
// give the GPU a guaranteed job. Once DCGM no longer flags it, it is out.
func TestQuarantineOutlivesRestart(t *testing.T) {
	sample, set, cfg, cs := dcgmQuarantineCase(t)
	ctx := context.Background()
	s1 := startRounds(t, cfg, cs)
	roundWait(s1, ctx, learnT0)
	s1.dcgm.scrape(ctx, cs, s1.log)
	t1 := learnT0.Add(10 * time.Second)
	roundWait(s1, ctx, t1)
	want := "gpu-node-001/1: slowdown 1.388 (dcgm) since " + t1.UTC().Format(time.RFC3339)
	if got := learnedCM(t, cs).Annotations[AnnQuarantined]; got != want {
		t.Fatalf("first replica: %s = %q, want %q", AnnQuarantined, got, want)
	}

	set(withGPU1(sample, 210, 0x61)) // idle, still flagged
	s2 := startRounds(t, cfg, cs)
	gauge := s2.metrics.learn.quarantined.WithLabelValues("gpu-node-001", "1")
	for i, step := range []struct {
		sample string
		in     float64
		ann    string
	}{
		{withGPU1(sample, 210, 0x61), 1, want},
		{withGPU1(sample, 210, 0x61), 1, want},
		{withGPU1(sample, 210, 0x1), 0, ""}, // idle, no longer flagged
	} {
		set(step.sample)
		s2.dcgm.scrape(ctx, cs, s2.log)
		roundWait(s2, ctx, t1.Add(time.Duration(i+1)*10*time.Second))
		if got := testutil.ToFloat64(gauge); got != step.in {
			t.Errorf("second replica, step %d: pal_gpu_quarantined = %v, want %v", i, got, step.in)
		}
		if got := learnedCM(t, cs).Annotations[AnnQuarantined]; got != step.ann {
			t.Errorf("second replica, step %d: %s = %q, want %q", i, AnnQuarantined, got, step.ann)
		}
	}
}

// The learned ConfigMap's record of the quarantine, read back: what
// quarantineText writes, and clear errors for what it never writes.
func TestParseQuarantined(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	L := &learnStage{quarantined: map[GPUKey]quarantineEntry{
		{Node: "n-b", Index: 3}:      {Slowdown: 2, Source: "dcgm", Since: t0},
		{Node: "rack/n-a", Index: 0}: {Slowdown: 1.5, Source: "learned", Since: t0.Add(time.Hour)},
	}}
	text := L.quarantineText()
	if want := "n-b/3: slowdown 2.000 (dcgm) since 2026-12-03T10:00:00Z; rack/n-a/0: slowdown 1.500 (learned) since 2026-12-03T11:00:00Z"; text != want {
		t.Fatalf("quarantineText = %q, want %q", text, want)
	}
	got, err := parseQuarantined(text)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, L.quarantined) {
		t.Errorf("read back %v, want %v", got, L.quarantined)
	}
	if got, err := parseQuarantined(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v; want nothing", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"n/1 slowdown 2 (dcgm) since 2026-12-03T10:00:00Z", `entry 1 "n/1 slowdown 2 (dcgm) since 2026-12-03T10:00:00Z": no ": slowdown "`},
		{"n/1: slowdown 2.000 (dcgm) since 2026-12-03T10:00:00Z; n1: slowdown 2 (dcgm) since 2026-12-03T10:00:00Z", `entry 2 "n1: slowdown 2 (dcgm) since 2026-12-03T10:00:00Z": no NODE/INDEX`},
		{"n/-1: slowdown 2 (dcgm) since 2026-12-03T10:00:00Z", "GPU index is not a count >= 0"},
		{"n/1: slowdown 0.5 (dcgm) since 2026-12-03T10:00:00Z", "slowdown is not a number >= 1"},
		{"n/1: slowdown NaN (dcgm) since 2026-12-03T10:00:00Z", "slowdown is not a number >= 1"},
		{"n/1: slowdown 2 (told) since 2026-12-03T10:00:00Z", "source is not (learned) or (dcgm)"},
		{"n/1: slowdown 2 dcgm since 2026-12-03T10:00:00Z", "source is not (learned) or (dcgm)"},
		{"n/1: slowdown 2 (dcgm) since yesterday", "time is not RFC 3339"},
		{"n/1: slowdown 2 (dcgm) 2026-12-03T10:00:00Z", `want slowdown, source, "since" and a time`},
		{"n/1: slowdown 2 (dcgm) since 2026-12-03T10:00:00Z; n/1: slowdown 3 (dcgm) since 2026-12-03T10:00:00Z", "entry 2 " + `"n/1: slowdown 3 (dcgm) since 2026-12-03T10:00:00Z": GPU listed twice`},
	} {
		if _, err := parseQuarantined(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.want)
		}
	}
}

// dcgmQuarantineCase is the DCGM quarantine cases' set-up: two 4-GPU
// nodes, a simulated exporter serving the A100 sample (set changes what
// it serves), learning on and quarantineAbove 1.3.
func dcgmQuarantineCase(t *testing.T) (sample string, set func(string), cfg Config, cs *fake.Clientset) {
	t.Helper()
	sample = a100Sample(t)
	u, set := exporter(t, sample)
	cfg = learnCfg()
	cfg.DCGM.URLs = []string{u}
	cfg.QuarantineAbove = 1.3
	cs, _ = newFake(t, node("gpu-node-001", 4), node("gpu-node-002", 4))
	return sample, set, cfg, cs
}

// A quarantine lifted just before the cells ConfigMap changes: the round
// that lifted it told the cells nothing yet (they are told at the next
// round's tenancy stage), and the next round applies the new cells
// first, which carry gpu-node-001's GPU 1 over as quarantined. The cells
// must then be told it is back: otherwise it stays out of every VC's
// guarantee until it is quarantined and lifted again.
func TestQuarantineLiftedAcrossCellsChange(t *testing.T) {
	const cellsA = `physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: gpu-node-001}
  - {cellType: NODE, cellAddress: gpu-node-002}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`
	cells := t.TempDir() + "/cells.yaml"
	if err := os.WriteFile(cells, []byte(cellsA), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := learnCfg()
	cfg.QuarantineAbove = 1.3
	cfg.Tenancy, cfg.Cells, cfg.CellsConfigMap = "hived", cells, "pal-cells"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: "pal-cells", ResourceVersion: "1"},
		Data: map[string]string{CellsKey: cellsA}}
	cs, _ := newFake(t, node("gpu-node-001", 4), node("gpu-node-002", 4), cm)
	s := startRounds(t, cfg, cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0)
	L, k := s.learn, GPUKey{"gpu-node-001", 1}
	L.quarantined[k] = quarantineEntry{Slowdown: 1.4, Source: "learned", Since: learnT0}
	L.qgen++
	s.syncTenancyQuarantine()
	if got := fmt.Sprint(s.ten.hived.Cells().Quarantined()); got != "[{gpu-node-001 1}]" {
		t.Fatalf("cells quarantine %s, want [{gpu-node-001 1}]", got)
	}
	delete(L.quarantined, k) // lifted after the round's tenancy stage
	L.qgen++
	cm = cm.DeepCopy()
	cm.ResourceVersion, cm.Data[CellsKey] = "2", strings.Replace(cellsA, "B: {virtualCells", "B:  {virtualCells", 1)
	if _, err := cs.CoreV1().ConfigMaps(cfg.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ { // until the informer has the change, so that one round sees both
		if got, err := s.cms.ConfigMaps(cfg.Namespace).Get("pal-cells"); err == nil && got.ResourceVersion == "2" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	roundWait(s, ctx, learnT0.Add(10*time.Second))
	if s.ten.cellsText != cm.Data[CellsKey] {
		t.Fatalf("the changed cells were not applied")
	}
	if got := s.ten.hived.Cells().Quarantined(); len(got) != 0 {
		t.Errorf("after the lift and the cells change the cells hold %v quarantined, want none", got)
	}
}
