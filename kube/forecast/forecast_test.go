package forecast

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/whatif"
)

// The backfill hand case (examples/backfill) as a forecast: 4 nodes x 4
// GPUs, all alike (no scores, locality penalty 1), FIFO, rounds of 100 s,
// a model of 1 s per iteration (pal.io/iterations is a run time in
// seconds). Gang a (two 4-GPU pods, 1000 s) was bound at t0; gang g
// (four 4-GPU pods, 500 s) and the 2-GPU pods s300, s600 and s1500 wait,
// created in that order.
var t0 = time.Unix(1_000_000, 0)

func handCluster(t testing.TB, pending ...string) []runtime.Object {
	var objs []runtime.Object
	for i := range 4 {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(4)}}})
	}
	yes := true
	mk := func(name string, gpus int, iters string, created time.Time, ann ...string) *corev1.Pod {
		a := map[string]string{kube.AnnModel: "unit", kube.AnnIterations: iters}
		for i := 0; i+1 < len(ann); i += 2 {
			a[ann[i]] = ann[i+1]
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name),
			Annotations: a, CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "set", UID: "uid-set", Controller: &yes}}},
			Spec: corev1.PodSpec{SchedulerName: "pal", Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(gpus)}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	bi, err := json.Marshal(kube.BindInfo{Gang: "ns/a", Round: t0.UTC().Format(time.RFC3339Nano),
		Pods: map[string]kube.PodBind{"a-0": {Node: "n0", GPUs: []int{0, 1, 2, 3}}, "a-1": {Node: "n1", GPUs: []int{0, 1, 2, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		p := mk(fmt.Sprintf("a-%d", i), 4, "1000", t0.Add(-10*time.Second), kube.AnnGang, "a", kube.AnnGangSize, "2")
		p.Spec.NodeName = fmt.Sprintf("n%d", i)
		p.Status.Phase = corev1.PodRunning
		p.Annotations[kube.AnnGPUIndices] = kube.FormatIndices([]int{0, 1, 2, 3})
		p.Annotations[kube.AnnBindInfo] = string(bi)
		objs = append(objs, p)
	}
	for i := range 4 {
		objs = append(objs, mk(fmt.Sprintf("g-%d", i), 4, "500", t0.Add(-3*time.Second), kube.AnnGang, "g", kube.AnnGangSize, "4"))
	}
	for i, d := range pending {
		objs = append(objs, mk("s"+d, 2, d, t0.Add(time.Duration(i-2)*time.Second)))
	}
	return objs
}

func handConfig(t testing.TB, backfill string) kube.Config {
	models := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte("models:\n  - name: unit\n    iter_time_s: 1\n    class: A\n    paper_class: A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := kube.DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.MetricsAddr = ""
	cfg.Scheduler, cfg.Placement, cfg.Backfill = "fifo", "packed-sticky", backfill
	cfg.LocalityPenalty, cfg.Models = 1, models
	cfg.Period = kube.Duration{Duration: 100 * time.Second}
	return cfg
}

func rowsText(rows []kube.ForecastRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d %s start %g end %g: %s", r.Position, r.Gang, r.Start, r.Finish, r.Reason))
	}
	return out
}

// readOnlyForecast starts a scheduler on objs under backfill mode, reads
// the cluster without running a round, and forecasts at t0 + 300 s (300 s
// after the hand cluster's gang a was bound). It returns the forecast's
// state and the clientset, whose actions tell whether anything was
// written.
func readOnlyForecast(t *testing.T, objs []runtime.Object, mode string) (*kube.ForecastState, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	s, err := kube.New(handConfig(t, mode), cs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := s.Forecast(t0.Add(300 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return st, cs
}

// Read-only, 300 s after a was bound: a has 700 s left (its time since
// its bind-info's round), so g starts at +700 (t0 + 1000) and ends at
// +1200; strict order keeps s1500 behind g until g ends (+1200, ending
// +2700). Under easy, s1500 (1500 s) would hold GPUs past g's
// reservation: the same answer.
func TestForecastReadOnlyHandCase(t *testing.T) {
	want := []string{
		"1 ns/g start 700 end 1200: does not fit: needs 16 GPUs, 8 free",
		"2 ns/s1500 start 1200 end 2700: behind gang ns/g, which waits (strict order)",
	}
	for _, mode := range []string{"none", "easy"} {
		st, cs := readOnlyForecast(t, handCluster(t, "1500"), mode)
		rows, err := Run(st)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if mode == "easy" {
			w = []string{want[0], "2 ns/s1500 start 1200 end 2700: would hold GPUs gang ns/g's reservation needs past its time"}
		}
		if got := rowsText(rows); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: forecast\n%s\nwant\n%s", mode, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
		if eta := kube.ETA(st, rows[0].Start); !eta.Equal(t0.Add(1000 * time.Second)) {
			t.Errorf("%s: g's ETA %v, want t0 + 1000 s", mode, eta)
		}
		acts := 0
		for _, a := range cs.Actions() {
			switch a.GetVerb() {
			case "create", "update", "patch", "delete":
				acts++
			}
		}
		if acts != 0 {
			t.Errorf("%s: the read-only forecast made %d writes", mode, acts)
		}
	}
}

// forecastingRound starts a scheduler on objs under backfill mode, with
// a forecast every round, and runs its round at t0; the scheduler is
// stopped when the test ends. It returns the scheduler, its clientset
// and its log.
func forecastingRound(t *testing.T, objs []runtime.Object, mode string) (*kube.Scheduler, *fake.Clientset, *bytes.Buffer) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	cfg := handConfig(t, mode)
	cfg.ForecastEvery = 1
	log := &bytes.Buffer{}
	s, err := kube.New(cfg, cs, slog.New(slog.NewTextHandler(log, nil)), kube.WithForecaster(Run))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Read(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	s.Start(ctx)
	t.Cleanup(func() { s.Stop(); cancel() })
	s.Round(ctx, t0)
	return s, cs, log
}

// In the scheduler, at t0: under none only g and the three small pods
// wait (g at 1000, the three when it ends at 1500); under easy s300 and
// s600 start now and s1500 waits for g's end. The estimated starts go on
// the pending pods, into the waiting message and into the gauge.
func TestSchedulerForecastEvery(t *testing.T) {
	want := map[string][]string{
		"none": {
			"1 ns/g start 1000 end 1500: does not fit: needs 16 GPUs, 8 free",
			"2 ns/s300 start 1500 end 1800: behind gang ns/g, which waits (strict order)",
			"3 ns/s600 start 1500 end 2100: behind gang ns/g, which waits (strict order)",
			"4 ns/s1500 start 1500 end 3000: behind gang ns/g, which waits (strict order)",
		},
		"easy": {
			"1 ns/g start 1000 end 1500: does not fit: needs 16 GPUs, 4 free",
			"2 ns/s1500 start 1500 end 3000: would hold GPUs gang ns/g's reservation needs past its time",
		},
	}
	for _, mode := range []string{"none", "easy"} {
		s, cs, log := forecastingRound(t, handCluster(t, "300", "600", "1500"), mode)
		ctx := context.Background()
		if got := rowsText(s.LastForecast()); strings.Join(got, "\n") != strings.Join(want[mode], "\n") {
			t.Errorf("%s: forecast\n%s\nwant\n%s", mode, strings.Join(got, "\n"), strings.Join(want[mode], "\n"))
		}
		gAt := time.Unix(1_001_000, 0).UTC().Format(time.RFC3339)
		if !strings.Contains(log.String(), "estimated start "+gAt) {
			t.Errorf("%s: no waiting message names g's estimated start %s:\n%s", mode, gAt, log.String())
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			p, err := cs.CoreV1().Pods("ns").Get(ctx, "g-3", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Annotations[kube.AnnEstimatedStart] == gAt {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: g-3's %s is %q, want %q", mode, kube.AnnEstimatedStart, p.Annotations[kube.AnnEstimatedStart], gAt)
			}
			time.Sleep(10 * time.Millisecond)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if g := `pal_gang_estimated_start_seconds{gang="ns/g"} 1.001e+06`; !strings.Contains(rec.Body.String(), g) {
			t.Errorf("%s: /metrics has no %s", mode, g)
		}
	}
}

// A gang's name goes into the gauge as a label value, which must be
// valid UTF-8 (the Prometheus client panics on any other): the hand case
// under none with gang g named "g\x98" instead exports its estimated
// start under "ns/g\uFFFD", and the round that forecasts it completes.
func TestSchedulerForecastGaugeOfAnInvalidName(t *testing.T) {
	objs := handCluster(t, "300", "600", "1500")
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Annotations[kube.AnnGang] == "g" {
			p.Annotations[kube.AnnGang] = "g\x98"
		}
	}
	s, _, log := forecastingRound(t, objs, "none")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if g := "pal_gang_estimated_start_seconds{gang=\"ns/g\uFFFD\"} 1.001e+06"; !strings.Contains(rec.Body.String(), g) {
		t.Errorf("/metrics has no %s:\n%s", g, log.String())
	}
}

// What-ifs on the read-only hand case at +300 s (a runs on n0 and n1
// until +700). add-node=n4:8: 16 GPUs free from the next round, so g
// starts at +100 (ends +600) and s1500, behind it, when g's GPUs free
// (+600, ending +2100). Waits from the arrivals (g at t0 - 3 s, s1500 at
// t0 - 2 s, i.e. -303 and -302): base 1003 and 1502 (mean 1252.5), JCTs
// 1503 and 3002 (2252.5); add-node 403 and 902 (652.5), JCTs 903 and
// 2402 (1652.5). drain=n3 leaves 12 GPUs: g never starts, nor s1500 behind
// it. drain=n0 is refused (a spans n0 and n1).
func TestWhatIfHandCase(t *testing.T) {
	st, _ := readOnlyForecast(t, handCluster(t, "1500"), "none")
	sum := func(st *kube.ForecastState) (whatif.Summary, []string) {
		rows, err := Run(st)
		if err != nil {
			t.Fatal(err)
		}
		return Summarize(st, rows), rowsText(rows)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	base, _ := sum(st)
	if !near(base.MeanWait, 1252.5) || !near(base.MeanJCT, 2252.5) || base.Started != 2 {
		t.Errorf("base %+v, want mean wait 1252.5, JCT 2252.5, 2 started", base)
	}
	add, err := WhatIf(st, "add-node=n4:8")
	if err != nil {
		t.Fatal(err)
	}
	got, rows := sum(add)
	if !near(got.MeanWait, 652.5) || !near(got.MeanJCT, 1652.5) {
		t.Errorf("add-node %+v, want mean wait 652.5, JCT 1652.5\n%s", got, strings.Join(rows, "\n"))
	}
	dr, err := WhatIf(st, "drain=n3")
	if err != nil {
		t.Fatal(err)
	}
	if got, rows := sum(dr); got.Started != 0 {
		t.Errorf("drain=n3: %d started, want none\n%s", got.Started, strings.Join(rows, "\n"))
	}
	for kv, want := range map[string]string{
		"drain=n0":       "spans it and other nodes",
		"drain=n9":       "no node n9",
		"speed=2":        "unknown setting",
		"placement=best": "field placement",
		"add-node=n1:4":  "already in the cluster",
		"add-node=n5":    "want NAME:GPUS",
	} {
		if _, err := WhatIf(st, kv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", kv, err, want)
		}
	}
}

// Noisy on the read-only hand case at +300 s (g starts when a's 700 s
// left are done, s1500 when g's 500 s are): with no noise every draw is
// the forecast itself (g at 700, s1500 at 1200); with a CV of 0.5 the
// starts spread (p10 < p90), keep their order, fall on round boundaries
// (100 s), and the same seed gives the same spread.
func TestNoisyHandCase(t *testing.T) {
	st, _ := readOnlyForecast(t, handCluster(t, "1500"), "none")
	flat, err := Noisy(st, 5, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Spread{{P10: 700, P50: 700, P90: 700}, {P10: 1200, P50: 1200, P90: 1200}}; !slices.Equal(flat, want) {
		t.Errorf("no noise: %+v, want %+v", flat, want)
	}
	sp, err := Noisy(st, 40, 0.5, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Noisy(st, 40, 0.5, 7)
	if !slices.Equal(sp, again) {
		t.Errorf("same seed, different spreads: %+v and %+v", sp, again)
	}
	for i, x := range sp {
		for _, v := range []float64{x.P10, x.P50, x.P90} {
			if v < 0 || math.Mod(v, 100) != 0 {
				t.Errorf("gang %d: start %v is not a round boundary", i, v)
			}
		}
		if !(x.P10 < x.P90) || x.P50 < x.P10 || x.P90 < x.P50 {
			t.Errorf("gang %d: spread %+v, want p10 < p90 and p50 between", i, x)
		}
	}
	if !(sp[1].P10 > sp[0].P10) {
		t.Errorf("s1500 %+v does not start after g %+v", sp[1], sp[0])
	}
	for _, c := range []struct {
		k    int
		cv   float64
		want string
	}{{0, 0.3, "--forecast-draws 0"}, {3, -1, "--duration-noise -1"}} {
		if _, err := Noisy(st, c.k, c.cv, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("k %d cv %v: error %v, want one saying %q", c.k, c.cv, err, c.want)
		}
	}
}

// Assumed arrivals on the read-only hand case at +300 s: under strict
// FIFO a later gang only queues behind, so g and s1500 start as without
// arrivals (700, 1200). The arrivals are seeded (same seed, same list),
// copies of the cluster's gangs (8, 16 or 2 GPUs), and about rate x
// horizon of them (60 an hour over 30 days: 43,200, within 2%).
func TestAssumedArrivals(t *testing.T) {
	st, _ := readOnlyForecast(t, handCluster(t, "1500"), "none")
	rows, err := RunWith(st, Options{ArrivalsPerHour: 60, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Start != 700 || rows[1].Start != 1200 {
		t.Errorf("with arrivals under FIFO: %q, want g at 700 and s1500 at 1200", rowsText(rows))
	}
	a, _ := Assumed(st, 60, 3)
	b, _ := Assumed(st, 60, 3)
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Fatalf("same seed: %d and %d arrivals, or different", len(a), len(b))
	}
	if n := float64(len(a)); math.Abs(n-43200) > 0.02*43200 {
		t.Errorf("%d arrivals over 30 days at 60 an hour, want about 43,200", len(a))
	}
	for i, sp := range a {
		if sp.GPUs != 8 && sp.GPUs != 16 && sp.GPUs != 2 || sp.Tracked || i > 0 && sp.Submit < a[i-1].Submit {
			t.Fatalf("arrival %d: %+v", i, sp)
		}
	}
	if _, err := Assumed(st, -1, 3); err == nil || !strings.Contains(err.Error(), "--assume-arrivals -1") {
		t.Errorf("rate -1: error %v", err)
	}
}

// bareA is the hand cluster with gang a's pods bare (no controller
// would make them again): the round may not evict a, and keeps it out
// of its order.
func bareA(objs []runtime.Object) []runtime.Object {
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Annotations[kube.AnnGang] == "a" {
			p.OwnerReferences = nil
		}
	}
	return objs
}

// A gang the round keeps in place (a's pods bare) ends when its work
// says, in the forecast under backfill as in the live round, which
// starts g when a's GPUs free. Read-only at +300 s: a states 1000
// iterations of 1 s and was bound at t0 (its bind-info's round), so it
// has 1000 - 300 = 700 s left; g (16 GPUs, a's 8 among them) starts at
// +700 and ends 500 s later, +1200; s1500 (1500 s, past g's start)
// cannot go ahead of it and starts when g ends, +1200, ending +2700. In
// the scheduler's round at t0 a has all 1000 s left: g starts at 1000.
// Cut out of the forecast's cluster, a's GPUs never freed and g had no
// start. The forecast's fresh policies (a noisy draw, a what-if of
// another placement) keep a too.
func TestForecastKeptGang(t *testing.T) {
	want := []string{
		"1 ns/g start 700 end 1200: does not fit: needs 16 GPUs, 8 free",
		"2 ns/s1500 start 1200 end 2700: would hold GPUs gang ns/g's reservation needs past its time",
	}
	st, _ := readOnlyForecast(t, bareA(handCluster(t, "1500")), "easy")
	rows, err := Run(st)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("forecast\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	spread, err := Noisy(st, 3, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(spread) != 2 || spread[0].P50 != 700 || spread[1].P50 != 1200 {
		t.Errorf("noisy draws without noise: %+v, want g at 700 and s1500 at 1200", spread)
	}
	alt, err := WhatIf(st, "placement=pal-ma")
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := Run(alt); err != nil || rows[0].Start != 700 {
		t.Errorf("what-if placement=pal-ma: %v, %v; want g at 700", rowsText(rows), err)
	}

	live, _, _ := forecastingRound(t, bareA(handCluster(t, "1500")), "easy")
	wantLive := []string{
		"1 ns/g start 1000 end 1500: does not fit: needs 16 GPUs, 8 free",
		"2 ns/s1500 start 1500 end 3000: would hold GPUs gang ns/g's reservation needs past its time",
	}
	if got := rowsText(live.LastForecast()); strings.Join(got, "\n") != strings.Join(wantLive, "\n") {
		t.Errorf("the round's forecast\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLive, "\n"))
	}
}

// The read-only hand case with s1500's pod at priority 1000 (its
// PriorityClass's, written by admission): the round places it first, on
// two of the 8 free GPUs (it runs from the forecast's start: no row),
// and the forecast orders as the round does, so g (priority 0), which
// needs all 16, starts when s1500 ends (+1500), not when a does (+700).
// Ordered by FIFO alone, the forecast would have g, which came first,
// preempt s1500 at +700.
func TestForecastOrdersByPodPriority(t *testing.T) {
	objs := handCluster(t, "1500")
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "s1500" {
			prio := int32(1000)
			p.Spec.Priority = &prio
		}
	}
	st, _ := readOnlyForecast(t, objs, "none")
	rows, err := Run(st)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 ns/g start 1500 end 2000: does not fit: needs 16 GPUs, 6 free"}
	if got := rowsText(rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("forecast\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The read-only hand case with g's pods at priority 1000 under
// preemptionPolicy: Never: the round places g behind a (priority 0,
// running), so it evicts nothing, and the forecast does the same: g
// starts when a ends (+700), and s1500 (priority 0) waits behind it.
// Ordered by pod priority alone, the forecast would have g preempt a
// at its first round.
func TestForecastNeverWaitsBehindRunning(t *testing.T) {
	objs := handCluster(t, "1500")
	never := corev1.PreemptNever
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Annotations[kube.AnnGang] == "g" {
			prio := int32(1000)
			p.Spec.Priority, p.Spec.PreemptionPolicy = &prio, &never
		}
	}
	st, _ := readOnlyForecast(t, objs, "none")
	rows, err := Run(st)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1 ns/g start 700 end 1200: does not fit: needs 16 GPUs, 8 free",
		"2 ns/s1500 start 1200 end 2700: behind gang ns/g, which waits (strict order)",
	}
	if got := rowsText(rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("forecast\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
