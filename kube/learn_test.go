package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/palsched/pal/variability"
)

var learnT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func learnCfg() Config {
	c := testCfg()
	c.LearnScores = true
	c.LearnedScoresWriteInterval = Duration{}
	return c
}

// finished is a succeeded pod of gang ns/NAME bound by a PAL round with
// the given bind-info, whose container ran from start to end (seconds
// after learnT0).
func finished(name, gang string, size int, node string, idx []int, info string, start, end float64, extra ...string) *corev1.Pod {
	ann := gangAnn(gang, size, append([]string{AnnModel, "BERT", AnnIterations, "1000", AnnGPUIndices, FormatIndices(idx), AnnBindInfo, info}, extra...)...)
	p := pod(name, len(idx), ann, node)
	p.Status.Phase = corev1.PodSucceeded
	at := func(s float64) metav1.Time {
		return metav1.NewTime(learnT0.Add(time.Duration(s * float64(time.Second))))
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{StartedAt: at(start), FinishedAt: at(end)}}}}
	return p
}

func learnedCM(t *testing.T, cs *fake.Clientset) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps("pal-system").Get(context.Background(), DefaultLearnedScoresConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("learned ConfigMap: %v", err)
	}
	return cm
}

const twoNodeInfo = `{"gang":"ns/g","round":"2026-03-01T12:00:00Z","pods":{"g-0":{"node":"n0","gpus":[1]},"g-1":{"node":"n1","gpus":[2]}}}`

// A finished BERT gang (class B, 0.179 s per iteration on the median
// GPU) of 1000 iterations, g-0 on n0 device 1 from 2 s to 300 s, g-1 on
// n1 device 2 from 5 s to 290 s: its run is 5 s (the last start) to
// 300 s (the last end), 295 s, and it spans nodes (penalty 1.7), so the
// learner gets class B on global GPUs 1 and 6 (n1's device 2 is 4+2) at
// y = 295/1000/0.179/1.7. Both were believed at 1.0 and y is below it:
// each steps half way down, to (1+y)/2, and the ConfigMap says so.
func TestLearnObservationFromFinishedGang(t *testing.T) {
	cs, _ := newFake(t, node("n0", 4), node("n1", 4),
		finished("g-0", "g", 2, "n0", []int{1}, twoNodeInfo, 2, 300),
		finished("g-1", "g", 2, "n1", []int{2}, twoNodeInfo, 5, 290))
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0.Add(400*time.Second))
	obs := s.learn.observed
	if len(obs) != 1 {
		t.Fatalf("%d observations, want 1: %+v", len(obs), obs)
	}
	o := obs[0]
	wantY := 295.0 / 1000 / 0.179 / 1.7
	if o.Class != variability.ClassB || len(o.GPUs) != 2 || o.GPUs[0] != 1 || o.GPUs[1] != 6 || o.Run != 295 || o.Locality != 1.7 || math.Abs(o.Y-wantY) > 1e-12 {
		t.Fatalf("observation %+v, want class B on GPUs [1 6], run 295 s, locality 1.7, y %v", o, wantY)
	}
	for _, g := range []int{1, 6} {
		if b := s.learn.learner.Belief(variability.ClassB, g); math.Abs(b-(1+wantY)/2) > 1e-12 {
			t.Errorf("belief of GPU %d = %v, want %v", g, b, (1+wantY)/2)
		}
	}
	ns, err := ReadNodeScores("cm", strings.NewReader(learnedCM(t, cs).Data[ScoresKey]))
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 8 || math.Abs(ns[GPUKey{"n1", 2}][variability.ClassB]-(1+wantY)/2) > 1e-12 || ns[GPUKey{"n1", 2}][variability.ClassA] != 1 || ns[GPUKey{"n0", 0}][variability.ClassB] != 1 {
		t.Errorf("learned ConfigMap %v", ns)
	}
	// The same run is taken once.
	roundWait(s, context.Background(), learnT0.Add(410*time.Second))
	if len(s.learn.observed) != 0 || s.learn.count != 1 {
		t.Errorf("second round observed %+v (count %d)", s.learn.observed, s.learn.count)
	}
}

// A one-GPU BERT pod on n0 device 3 that took 2x the median GPU's time
// pins that GPU: its class-B belief goes half way to 2 (1.5), and
// placement's scores rank it slowest of the cluster for class B.
func TestLearnSlowGPUReachesPlacement(t *testing.T) {
	info := `{"gang":"ns/s","round":"2026-03-01T12:00:00Z","pods":{"s-0":{"node":"n0","gpus":[3]}}}`
	cs, _ := newFake(t, node("n0", 4), node("n1", 4), finished("s-0", "s", 1, "n0", []int{3}, info, 0, 2*179))
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0.Add(400*time.Second))
	if b := s.learn.learner.Belief(variability.ClassB, 3); b != 1.5 {
		t.Fatalf("belief %v, want 1.5", b)
	}
	sf := s.scores.SF[variability.ClassB]
	for g, v := range sf {
		if g != 3 && !(v < sf[3]) {
			t.Errorf("GPU %d score %v not below the slow GPU's %v: %v", g, v, sf[3], sf)
		}
	}
	if s.raw.Values[variability.ClassB][3] != 1.5 {
		t.Errorf("believed raw value %v, want 1.5", s.raw.Values[variability.ClassB][3])
	}
	// The gauges follow the GPU that moved (only it is set again), and
	// leave the others at their profile's 1. Class A keeps 1 on the slow
	// GPU too: one class's pin is carried to the others only once a
	// second class's jobs agree (variability.LearnOptions.Corroborate).
	for _, w := range []struct {
		node, gpu, class string
		want             float64
	}{{"n0", "3", "B", 1.5}, {"n0", "3", "A", 1}, {"n0", "2", "B", 1}, {"n1", "3", "B", 1}} {
		if got := testutil.ToFloat64(s.metrics.learn.score.WithLabelValues(w.node, w.gpu, w.class)); got != w.want {
			t.Errorf("pal_learned_score{node=%s,gpu=%s,class=%s} = %v, want %v", w.node, w.gpu, w.class, got, w.want)
		}
	}
}

func learnedConfigMap(csv string, ann map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: DefaultLearnedScoresConfigMap, Namespace: "pal-system", Annotations: ann},
		Data: map[string]string{ScoresKey: csv}}
}

func profileConfigMap(csv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system"}, Data: map[string]string{ScoresKey: csv}}
}

func allClasses(rows ...string) string {
	var b strings.Builder
	b.WriteString("node,gpu_index,class,score\n")
	for i := 0; i+2 < len(rows)+1; i += 2 {
		for _, c := range "ABCD" {
			b.WriteString(rows[i] + "," + string(c) + "," + rows[i+1] + "\n")
		}
	}
	return b.String()
}

// A restarted scheduler starts from the learned ConfigMap: n0 device 2 is
// believed at 1.4 there, over the profile's 0.9, and a run that ended
// before the ConfigMap's learned-through time is not counted again.
func TestLearnRestartStartsFromConfigMap(t *testing.T) {
	info := `{"gang":"ns/s","round":"2026-03-01T12:00:00Z","pods":{"s-0":{"node":"n0","gpus":[2]}}}`
	cs, _ := newFake(t, node("n0", 4),
		profileConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "0.9", "n0,3", "1")),
		learnedConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "1.4", "n0,3", "1"),
			map[string]string{AnnLearnedThrough: learnT0.Add(500 * time.Second).Format(time.RFC3339), AnnLearnedObservations: "7"}),
		finished("s-0", "s", 1, "n0", []int{2}, info, 0, 2*179))
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0.Add(600*time.Second))
	for c := range variability.Class(variability.NumClasses) {
		if v := s.raw.Values[c][2]; v != 1.4 {
			t.Errorf("class %s GPU 2 starts at %v, want the learned 1.4", c, v)
		}
	}
	if len(s.learn.observed) != 0 || s.learn.count != 7 {
		t.Errorf("observed %+v, count %d; want none and the ConfigMap's 7", s.learn.observed, s.learn.count)
	}
	sf := s.scores.SF[variability.ClassA]
	if !(sf[2] > sf[0]) {
		t.Errorf("scores %v: learned-slow GPU 2 not ranked behind GPU 0", sf)
	}
}

// A malformed learned ConfigMap names itself, the key and the line; the
// scheduler starts from the profile and keeps running rounds.
func TestLearnMalformedConfigMap(t *testing.T) {
	bad := "node,gpu_index,class,score\nn0,0,A,1\nn0,0,B,fast\n"
	cs, _ := newFake(t, node("n0", 4), profileConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "0.9", "n0,3", "1")),
		learnedConfigMap(bad, nil))
	s, buf := startLogged(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0)
	roundWait(s, context.Background(), learnT0.Add(10*time.Second))
	want := `configmap pal-system/pal-learned-scores key scores.csv:3: field "score": `
	if s.learn.loadErr == nil || !strings.HasPrefix(s.learn.loadErr.Error(), want) {
		t.Fatalf("load error %v, want it to start %q", s.learn.loadErr, want)
	}
	if !strings.Contains(buf.String(), "learned scores ConfigMap unreadable") || !strings.Contains(buf.String(), "scores.csv:3") {
		t.Errorf("log does not tell:\n%s", buf.String())
	}
	if v := s.raw.Values[variability.ClassA][2]; v != 0.9 {
		t.Errorf("GPU 2 starts at %v, want the profile's 0.9", v)
	}
	if s.Rounds() != 2 {
		t.Errorf("%d rounds", s.Rounds())
	}
}

// A write that meets a conflict reads the ConfigMap again and updates it,
// keeping the keys and labels someone else put there.
func TestLearnWriteRetriesConflict(t *testing.T) {
	old := learnedConfigMap("", nil)
	old.Labels = map[string]string{"team": "ml"}
	old.Data["notes"] = "keep me"
	cs, _ := newFake(t, node("n0", 2), old)
	conflicts := 0
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, DefaultLearnedScoresConfigMap, nil)
		}
		return false, nil, nil
	})
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0)
	s.learn.dirty = true
	if err := s.writeLearned(context.Background(), learnT0); err != nil {
		t.Fatal(err)
	}
	cm := learnedCM(t, cs)
	if conflicts != 1 || cm.Data["notes"] != "keep me" || cm.Labels["team"] != "ml" || !strings.HasPrefix(cm.Data[ScoresKey], "node,gpu_index,class,score\nn0,0,A,1\n") {
		t.Errorf("after %d conflict(s): %+v", conflicts, cm)
	}
}

// Writes are throttled: a second change within the interval waits.
func TestLearnWriteThrottled(t *testing.T) {
	info := func(g string) string {
		return `{"gang":"ns/` + g + `","round":"2026-03-01T12:00:00Z","pods":{"` + g + `-0":{"node":"n0","gpus":[0]}}}`
	}
	cs, _ := newFake(t, node("n0", 2), finished("a-0", "a", 1, "n0", []int{0}, info("a"), 0, 2*179))
	cfg := learnCfg()
	cfg.LearnedScoresWriteInterval = Duration{time.Minute}
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), learnT0.Add(400*time.Second))
	written := func() string { return learnedCM(t, cs).Annotations[AnnLearnedObservations] }
	if written() != "1" {
		t.Fatalf("first write says %q observations, want 1", written())
	}
	if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), finished("b-0", "b", 1, "n0", []int{1}, info("b"), -150, 3*179-150), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "b-0", true) // it ended at 387 s
	roundWait(s, context.Background(), learnT0.Add(430*time.Second))
	if s.learn.count != 2 || !s.learn.dirty || written() != "1" {
		t.Fatalf("count %d dirty %v: the ConfigMap was written within the interval", s.learn.count, s.learn.dirty)
	}
	roundWait(s, context.Background(), learnT0.Add(461*time.Second))
	if s.learn.dirty || written() != "2" {
		t.Errorf("not written after the interval")
	}
}

// A gang this replica evicted restarts from a checkpoint: its next run is
// not a measurement of its GPUs. Here the evicted run (bound at 11:50,
// evicted at 11:55: one pod had succeeded, the other was killed) ends
// first and must not clear the mark; the restarted run (bound at 12:00)
// is then left out too.
func TestLearnSkipsEvictedGang(t *testing.T) {
	oldInfo := `{"gang":"ns/e","round":"2026-03-01T11:50:00Z","pods":{"e-0":{"node":"n0","gpus":[0]},"e-1":{"node":"n0","gpus":[1]}}}`
	newInfo := `{"gang":"ns/e","round":"2026-03-01T12:00:00Z","pods":{"e-2":{"node":"n0","gpus":[0]},"e-3":{"node":"n0","gpus":[1]}}}`
	killed := finished("e-1", "e", 2, "n0", []int{1}, oldInfo, -600, -300)
	killed.Status.Phase = corev1.PodFailed
	cs, _ := newFake(t, node("n0", 2), finished("e-0", "e", 2, "n0", []int{0}, oldInfo, -600, -310), killed,
		finished("e-2", "e", 2, "n0", []int{0}, newInfo, 0, 10), finished("e-3", "e", 2, "n0", []int{1}, newInfo, 0, 10))
	s := startRounds(t, learnCfg(), cs)
	s.learn.evicted["ns/e"] = learnT0.Add(-5 * time.Minute)
	roundWait(s, context.Background(), learnT0.Add(400*time.Second))
	if len(s.learn.observed) != 0 || s.learn.learner.Belief(variability.ClassB, 1) != 1 {
		t.Errorf("observed %+v", s.learn.observed)
	}
	if _, ok := s.learn.evicted["ns/e"]; ok {
		t.Errorf("the restarted run did not clear the eviction mark")
	}
}

// An evicted gang that is gone for good (deleted, never made again)
// leaves no run to clear its mark: the mark is forgotten once the gang
// has been absent for evictedForget. One still present (its pods wait,
// made again) keeps it, and so does one evicted a minute ago (its
// controller may not have made it again yet).
func TestLearnForgetsGoneEvictedGangs(t *testing.T) {
	cs, _ := newFake(t, node("n0", 2), pod("w-0", 2, gangAnn("w", 1), ""))
	s := startRounds(t, learnCfg(), cs)
	s.learn.evicted["ns/gone"] = learnT0.Add(-20 * time.Minute)
	s.learn.evicted["ns/w"] = learnT0.Add(-20 * time.Minute)
	s.learn.evicted["ns/recent"] = learnT0.Add(-time.Minute)
	roundWait(s, context.Background(), learnT0)
	got := slices.Sorted(maps.Keys(s.learn.evicted))
	if want := []string{"ns/recent", "ns/w"}; !slices.Equal(got, want) {
		t.Errorf("eviction marks %q, want %q", got, want)
	}
}

func TestLearnConfigValidate(t *testing.T) {
	c := learnCfg()
	c.LearnedScoresConfigMap = c.VariabilityConfigMap
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "field learnedScoresConfigMap") {
		t.Errorf("same ConfigMap as the profile: %v", err)
	}
	c = learnCfg()
	c.LearnedScoresWriteInterval = Duration{-time.Second}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "field learnedScoresWriteInterval") {
		t.Errorf("negative interval: %v", err)
	}
	if d := DefaultConfig(); d.LearnScores {
		t.Errorf("learning on by default")
	}
}

// The learned ConfigMap's reader: any content gives scores or an error
// that names the ConfigMap, never a panic.
func FuzzReadLearned(f *testing.F) {
	f.Add(allClasses("n0,0", "1"), "2026-03-01T12:00:00Z", "3", "n0/0: slowdown 2.000 (dcgm) since 2026-03-01T12:00:00Z")
	f.Add("node,gpu_index,class,score\nn0,0,A,1\n", "", "", "")
	f.Add("node,gpu_index,class,score\nn0,x,A,1\n", "yesterday", "-1", "n0/x: slowdown 2 (dcgm) since now")
	f.Add("", "", "", "; ;")
	f.Fuzz(func(t *testing.T, csv, through, count, quarantined string) {
		ann := map[string]string{}
		if through != "" {
			ann[AnnLearnedThrough] = through
		}
		if count != "" {
			ann[AnnLearnedObservations] = count
		}
		if quarantined != "" {
			ann[AnnQuarantined] = quarantined
		}
		l, err := readLearned("pal-system/"+DefaultLearnedScoresConfigMap, learnedConfigMap(csv, ann), noShards)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "configmap pal-system/"+DefaultLearnedScoresConfigMap+" ") {
				t.Errorf("error %q does not name the ConfigMap", err)
			}
			// It is logged and put in an event: short, whatever the input.
			if n := len(err.Error()); n > 1024 {
				t.Errorf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		for k, v := range l.scores {
			for _, x := range v {
				if !(x > 0) || math.IsInf(x, 0) {
					t.Errorf("%v: score %v", k, x)
				}
			}
		}
		for k, e := range l.quarantined {
			if !(e.Slowdown >= 1) || math.IsInf(e.Slowdown, 0) || e.Source != "dcgm" && e.Source != "learned" || k.Index < 0 {
				t.Errorf("quarantine %v: %+v", k, e)
			}
		}
	})
}

// When rounds stop (shutdown, or the lease is lost) what was learned
// since the last write is written, and a replica that leads again starts
// from the ConfigMap, not counting the same run twice.
func TestLearnFlushThenLeadAgain(t *testing.T) {
	info := `{"gang":"ns/s","round":"2026-03-01T12:00:00Z","pods":{"s-0":{"node":"n0","gpus":[3]}}}`
	cs, _ := newFake(t, node("n0", 4), finished("s-0", "s", 1, "n0", []int{3}, info, 0, 2*179))
	cfg := learnCfg()
	cfg.LearnedScoresWriteInterval = Duration{time.Hour}
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), learnT0.Add(400*time.Second))
	if _, err := cs.CoreV1().ConfigMaps("pal-system").Get(context.Background(), DefaultLearnedScoresConfigMap, metav1.GetOptions{}); err != nil {
		t.Fatalf("first change not written at once: %v", err)
	}
	s.learn.lastWrite = learnT0.Add(400 * time.Second)
	s.learn.dirty = true
	s.learn.count = 5 // stands for learning since the first write
	s.flushLearned()
	cm := learnedCM(t, cs)
	if cm.Annotations[AnnLearnedObservations] != "5" || !strings.Contains(cm.Data[ScoresKey], "n0,3,B,1.5\n") {
		t.Fatalf("flush wrote %v %q", cm.Annotations, cm.Data[ScoresKey])
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := s.cms.ConfigMaps("pal-system").Get(DefaultLearnedScoresConfigMap); err == nil && c.Annotations[AnnLearnedObservations] == "5" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("informer never showed the flushed ConfigMap")
		}
		time.Sleep(10 * time.Millisecond)
	}
	roundWait(s, context.Background(), learnT0.Add(500*time.Second))
	if s.raw.Values[variability.ClassB][3] != 1.5 || s.learn.count != 5 || len(s.learn.observed) != 0 {
		t.Errorf("leading again: GPU 3 at %v, count %d, observed %+v; want 1.5 from the ConfigMap, 5, none", s.raw.Values[variability.ClassB][3], s.learn.count, s.learn.observed)
	}
}

// A running gang's progress report is an observation of its run so far:
// runningPod is a running pod of the two-pod gang ns/g (twoNodeInfo) on
// node's device idx, started start seconds after learnT0, reporting
// progress (AnnProgress) unless it is empty.
func runningPod(name, node string, idx int, start float64, progress string) *corev1.Pod {
	p := finished(name, "g", 2, node, []int{idx}, twoNodeInfo, start, 0)
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{
		StartedAt: metav1.NewTime(learnT0.Add(time.Duration(start) * time.Second))}}
	if progress != "" {
		p.Annotations[AnnProgress] = progress
	}
	return p
}

// learnAt is the RFC 3339 time s seconds after learnT0.
func learnAt(s int) string { return learnT0.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }

// g-0 started at 2 s, g-1 at 5 s, and g-1 reports 500 iterations at
// 100 s, so the learner gets 95 s / 500 / 0.179 / 1.7 on GPUs 1 and 6.
// The same report is taken once; a newer one is taken again.
func TestLearnProgressOfRunningGang(t *testing.T) {
	at := learnAt
	cs, _ := newFake(t, node("n0", 4), node("n1", 4), runningPod("g-0", "n0", 1, 2, ""), runningPod("g-1", "n1", 2, 5, "500@"+at(100)))
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0.Add(110*time.Second))
	want := 95.0 / 500 / 0.179 / 1.7
	if obs := s.learn.observed; len(obs) != 1 || obs[0].Run != 95 || obs[0].Iterations != 500 || math.Abs(obs[0].Y-want) > 1e-12 ||
		len(obs[0].GPUs) != 2 || obs[0].GPUs[0] != 1 || obs[0].GPUs[1] != 6 {
		t.Fatalf("observed %+v, want one on GPUs [1 6] with run 95 s, 500 iterations, y %v", obs, want)
	}
	roundWait(s, context.Background(), learnT0.Add(120*time.Second))
	if len(s.learn.observed) != 0 {
		t.Errorf("the same report taken again: %+v", s.learn.observed)
	}
	annotateSeen(t, cs, s, "g-1", AnnProgress, "1000@"+at(195))
	roundWait(s, context.Background(), learnT0.Add(200*time.Second))
	if obs := s.learn.observed; len(obs) != 1 || obs[0].Run != 190 || obs[0].Iterations != 1000 {
		t.Errorf("newer report: %+v, want run 190 s over 1000 iterations", obs)
	}
}

// The learner's prevalence estimate counts each gang run once, however
// often it reports. Three one-GPU BERT runs end at the median GPU's pace
// (1000 iterations in 179 s, y = 1, on their profile of 1), and the
// two-pod gang g (GPUs 1 and 6, spanning nodes: penalty 1.7) runs at
// about twice it: two progress reports (500 iterations in 305 s, 1000 in
// 615 s) and then its end, three observations of one run of 2 GPUs, off
// its profile. Maximum likelihood with q = 1-p: off_2·2·q²/(1-q²) =
// on_1·1, 2q²/(1-q²) = 3, q² = 3/5, p = 1 - √0.6. Counting every
// report would make it q² = 3/7 (two) or 1/3 (three).
func TestLearnPrevalenceCountsRunsOnce(t *testing.T) {
	at := learnAt
	one := func(gang, node string, idx int) *corev1.Pod {
		info := `{"gang":"ns/` + gang + `","round":"2026-03-01T12:00:00Z","pods":{"` + gang + `-0":{"node":"` + node + `","gpus":[` + strconv.Itoa(idx) + `]}}}`
		return finished(gang+"-0", gang, 1, node, []int{idx}, info, 0, 179)
	}
	cs, _ := newFake(t, node("n0", 4), node("n1", 4), one("s1", "n0", 0), one("s2", "n0", 2), one("s3", "n1", 0),
		runningPod("g-0", "n0", 1, 2, ""), runningPod("g-1", "n1", 2, 5, "500@"+at(310)))
	s := startRounds(t, learnCfg(), cs)
	want := 1 - math.Sqrt(0.6)
	check := func(when string, n int) {
		t.Helper()
		if len(s.learn.observed) != n {
			t.Fatalf("%s: %d observations, want %d: %+v", when, len(s.learn.observed), n, s.learn.observed)
		}
		if got := s.learn.learner.Prevalence(); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: prevalence %v, want %v", when, got, want)
		}
		if got := testutil.ToFloat64(s.metrics.learn.prevalence); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: pal_learned_prevalence %v, want %v", when, got, want)
		}
	}
	roundWait(s, context.Background(), learnT0.Add(320*time.Second))
	check("three runs ended and g's first report", 4)
	annotateSeen(t, cs, s, "g-1", AnnProgress, "1000@"+at(620))
	roundWait(s, context.Background(), learnT0.Add(630*time.Second))
	check("g's second report", 1)
	for _, name := range []string{"g-0", "g-1"} {
		p, err := cs.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := p.Status.ContainerStatuses[0].State.Running.StartedAt
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			StartedAt: start, FinishedAt: metav1.NewTime(learnT0.Add(700 * time.Second))}}
		if _, err := cs.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"g-0", "g-1"} {
		waitNoted(t, s, n, n+" succeeded", func(q *corev1.Pod) bool { return q != nil && q.Status.Phase == corev1.PodSucceeded })
	}
	roundWait(s, context.Background(), learnT0.Add(710*time.Second))
	check("g's end", 1)
	if len(s.learn.trialed) != 0 {
		t.Errorf("runs still marked counted after their end: %v", s.learn.trialed)
	}
}

// A run is counted at its latest pace: a one-GPU BERT run's first
// progress report, 20 iterations 4 s in, reads 4/20/0.179 = 1.117 times
// the median GPU (timestamp rounding on a short stretch), off its profile
// of 1, and as the only run counted it puts the estimate at its cap, 0.5.
// Its next report, 1000 iterations at 179 s, reads exactly 1: the same run
// is then on its profile, and the estimate falls to 0.
func TestLearnPrevalenceRecountsAtLatestPace(t *testing.T) {
	info := `{"gang":"ns/s","round":"2026-03-01T12:00:00Z","pods":{"s-0":{"node":"n0","gpus":[0]}}}`
	p := finished("s-0", "s", 1, "n0", []int{0}, info, 0, 0)
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(learnT0)}}
	p.Annotations[AnnProgress] = "20@" + learnAt(4)
	cs, _ := newFake(t, node("n0", 4), p)
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0.Add(10*time.Second))
	if len(s.learn.observed) != 1 {
		t.Fatalf("observed %+v, want the first report", s.learn.observed)
	}
	if got := s.learn.learner.Prevalence(); got != 0.5 {
		t.Errorf("after the first report: prevalence %v, want the cap 0.5", got)
	}
	annotateSeen(t, cs, s, "s-0", AnnProgress, "1000@"+learnAt(179))
	roundWait(s, context.Background(), learnT0.Add(190*time.Second))
	if obs := s.learn.observed; len(obs) != 1 || math.Abs(obs[0].Y-1) > 1e-12 {
		t.Fatalf("observed %+v, want the second report at pace 1", obs)
	}
	if got := s.learn.learner.Prevalence(); got != 0 {
		t.Errorf("after the second report: prevalence %v, want 0", got)
	}
}

// annotateSeen sets a pod's annotation, as its worker would, and waits
// until the informer has handed it to the scheduler's store (its lister
// shows it earlier, before the handler has run).
func annotateSeen(t *testing.T, cs *fake.Clientset, s *Scheduler, pod, key, value string) {
	t.Helper()
	p, err := cs.CoreV1().Pods("ns").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations[key] = value
	if _, err := cs.CoreV1().Pods("ns").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoted(t, s, pod, fmt.Sprintf("%s=%s on %s", key, value, pod), func(q *corev1.Pod) bool { return q != nil && q.Annotations[key] == value })
}

func TestParseProgress(t *testing.T) {
	n, at, err := ParseProgress("1200@2026-03-01T12:30:00.5Z")
	if err != nil || n != 1200 || !at.Equal(time.Date(2026, 3, 1, 12, 30, 0, 5e8, time.UTC)) {
		t.Errorf("got %v %v %v", n, at, err)
	}
	for v, want := range map[string]string{
		"1200":                      `annotation pal.io/progress="1200": want ITERATIONS@TIME`,
		"0@2026-03-01T12:30:00Z":    `"0" is not a positive iteration count`,
		"x@2026-03-01T12:30:00Z":    `"x" is not a positive iteration count`,
		"12@yesterday":              `"yesterday" is not an RFC 3339 time`,
		"NaN@2026-03-01T12:30:00Z":  `"NaN" is not a positive iteration count`,
		"1e99@2026-03-01T12:30:00Z": `"1e99" is not a positive iteration count`,
	} {
		if _, _, err := ParseProgress(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", v, err, want)
		}
	}
	sec, at, err := ParseStepTime(" 0.21@2026-03-01T12:30:00Z")
	if err != nil || sec != 0.21 || !at.Equal(time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)) {
		t.Errorf("step time: got %v %v %v", sec, at, err)
	}
	for v, want := range map[string]string{
		"0.21":                     `annotation pal.io/step-time="0.21": want SECONDS@TIME`,
		"-1@2026-03-01T12:30:00Z":  `"-1" is not a positive number of seconds`,
		"2e6@2026-03-01T12:30:00Z": `"2e6" is not a positive number of seconds`,
		"0.2@12:30":                `"12:30" is not an RFC 3339 time`,
	} {
		if _, _, err := ParseStepTime(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("step time %q: %v, want %q", v, err, want)
		}
	}
}

func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{"1200@2026-03-01T12:30:00Z", "1@x", "@", "", "5e3@2026-03-01T12:30:00.123456789+02:00",
		// A long value, quoted twice by its error (whole and in part),
		// of bytes %q writes four characters each.
		strings.Repeat("\x98", 4096) + "@" + strings.Repeat("\x98", 4096)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, r := range []struct {
			ann   string
			parse func(string) (float64, time.Time, error)
			limit float64
		}{{AnnProgress, ParseProgress, 1e15}, {AnnStepTime, ParseStepTime, 1e6}} {
			n, at, err := r.parse(v)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "annotation "+r.ann+"=") {
					t.Errorf("error %q does not name the annotation", err)
				}
				// It becomes an event on the pod: short, whatever the value.
				if n := len(err.Error()); n > 1024 {
					t.Errorf("error of %d bytes for a value of %d: %.200s", n, len(v), err)
				}
				continue
			}
			if !(n > 0) || n > r.limit || at.IsZero() {
				t.Errorf("%s %q read as %v at %v", r.ann, v, n, at)
			}
		}
	})
}

// The placer uses what was learned for new placements. The profile says
// n0 device 3 is the fastest GPU (0.9, the others 1), so without learning
// a new 1-GPU BERT pod is bound there. A finished run showed it at 2x the
// median GPU; with learning on, the same pod goes elsewhere.
func TestLearnedScoresSteerPlacement(t *testing.T) {
	info := `{"gang":"ns/s","round":"2026-03-01T12:00:00Z","pods":{"s-0":{"node":"n0","gpus":[3]}}}`
	for _, learn := range []bool{false, true} {
		cs, fc := newFake(t, node("n0", 4), profileConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "1", "n0,3", "0.9")),
			finished("s-0", "s", 1, "n0", []int{3}, info, 0, 2*179),
			pod("new", 1, map[string]string{AnnModel: "BERT", AnnIterations: "1000"}, ""))
		cfg := learnCfg()
		cfg.LearnScores = learn
		s := startRounds(t, cfg, cs)
		roundWait(s, context.Background(), learnT0.Add(400*time.Second))
		b := fc.binds["new"]
		if b == nil {
			t.Fatalf("learn %v: new pod not bound", learn)
		}
		got := b.Annotations[AnnGPUIndices]
		if (got == "3") == learn {
			t.Errorf("learn %v: new pod bound to n0 device %s", learn, got)
		}
	}
}

// Step times a running gang's pods report are observations of each
// pod's own GPUs. BERT (class B, 0.179 s per iteration on the median
// GPU) on n0 device 1 (g-0) and n1 device 2 (g-1, global GPU 6): g-0
// reports 0.358 s (y = 2: GPU 1 is pinned and steps half way, to 1.5),
// g-1 0.179 s (y = 1, its belief: nothing moves). No locality penalty
// although the gang spans nodes (a step leaves communication out), and
// the gang's own pace, 2 on both GPUs, would not have said which one is
// slow. The same reports are taken once; a newer one is taken again.
func TestLearnStepTimeOfRunningPods(t *testing.T) {
	at := learnAt
	mk := func(name, node string, idx int, step string) *corev1.Pod {
		p := finished(name, "g", 2, node, []int{idx}, twoNodeInfo, 2, 0)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(learnT0)}}
		p.Annotations[AnnStepTime] = step
		return p
	}
	cs, _ := newFake(t, node("n0", 4), node("n1", 4), mk("g-0", "n0", 1, "0.358@"+at(100)), mk("g-1", "n1", 2, "0.179@"+at(100)))
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0.Add(110*time.Second))
	obs := s.learn.observed
	if len(obs) != 2 {
		t.Fatalf("%d observations, want one per pod: %+v", len(obs), obs)
	}
	for i, w := range []struct {
		gpu int
		y   float64
	}{{1, 2}, {6, 1}} {
		if o := obs[i]; len(o.GPUs) != 1 || o.GPUs[0] != w.gpu || math.Abs(o.Y-w.y) > 1e-12 || o.Locality != 1 {
			t.Errorf("observation %d: %+v, want GPU %d at y %v, locality 1", i, o, w.gpu, w.y)
		}
	}
	for g, want := range map[int]float64{1: 1.5, 6: 1} {
		if b := s.learn.learner.Belief(variability.ClassB, g); math.Abs(b-want) > 1e-12 {
			t.Errorf("GPU %d believed %v, want %v", g, b, want)
		}
	}
	roundWait(s, context.Background(), learnT0.Add(120*time.Second))
	if len(s.learn.observed) != 0 {
		t.Errorf("the same reports taken again: %+v", s.learn.observed)
	}
	annotateSeen(t, cs, s, "g-0", AnnStepTime, "0.358@"+at(150))
	roundWait(s, context.Background(), learnT0.Add(160*time.Second))
	if b := s.learn.learner.Belief(variability.ClassB, 1); len(s.learn.observed) != 1 || b != 1.75 {
		t.Errorf("newer report: observed %+v, GPU 1 believed %v, want one observation and 1.75", s.learn.observed, b)
	}
}

// Reports that cannot be a GPU's pace are refused, each counted by source
// and reason, and the pod gets one warning event however many of its
// reports are refused. Class B's model (BERT) takes 0.179 s per
// iteration on the median GPU; the gang is g-0 on GPU 1 and g-1 on GPU 6,
// both believed at 1, and both pods started at learnT0.
func TestLearnRefusesImplausibleReports(t *testing.T) {
	at := learnAt
	running := func(name, node string, idx int, ann ...string) *corev1.Pod {
		p := finished(name, "g", 2, node, []int{idx}, twoNodeInfo, 0, 0)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(learnT0)}}
		for i := 0; i+1 < len(ann); i += 2 {
			p.Annotations[ann[i]] = ann[i+1]
		}
		return p
	}
	type want struct {
		source, reason string
	}
	for _, c := range []struct {
		name     string
		pods     []*corev1.Pod
		rejected want   // on g-0
		observed int    // observations the learner took
		kept     []int  // GPUs whose class-B belief must stay 1
		moved    string // annotation that a newer bad report gets (g-0's), or "" for a finished run
	}{
		{
			// 358 is milliseconds: y = 2000.
			name:     "step time in milliseconds",
			pods:     []*corev1.Pod{running("g-0", "n0", 1, AnnStepTime, "358@"+at(100)), running("g-1", "n1", 2, AnnStepTime, "0.179@"+at(100))},
			rejected: want{sourceStepTime, rejectPace}, observed: 1, kept: []int{1, 6}, moved: AnnStepTime,
		},
		{
			// The gang did 500 iterations in 100 s: 0.2 s each. g-0's 0.358 s
			// is over 1.5 x that; g-1's 0.25 s is not (y = 0.25/0.179), and the
			// progress itself is taken (y = 0.2/0.179/1.7).
			name: "step time slower than its gang",
			pods: []*corev1.Pod{running("g-0", "n0", 1, AnnStepTime, "0.358@"+at(100)),
				running("g-1", "n1", 2, AnnStepTime, "0.25@"+at(100), AnnProgress, "500@"+at(100))},
			rejected: want{sourceStepTime, rejectGang}, observed: 2, moved: AnnStepTime,
		},
		{
			// 50,000 iterations in 100 s: the global step of a checkpoint,
			// y = 0.002/0.179/1.7.
			name:     "progress counted from a checkpoint's step",
			pods:     []*corev1.Pod{running("g-0", "n0", 1, AnnProgress, "50000@"+at(100)), running("g-1", "n1", 2)},
			rejected: want{sourceProgress, rejectPace}, kept: []int{1, 6}, moved: AnnProgress,
		},
		{
			// 10 iterations in 295 s: y = 29.5/0.179/1.7.
			name: "finished run with too few iterations",
			pods: []*corev1.Pod{finished("g-0", "g", 2, "n0", []int{1}, twoNodeInfo, 2, 300, AnnIterations, "10"),
				finished("g-1", "g", 2, "n1", []int{2}, twoNodeInfo, 5, 290, AnnIterations, "10")},
			rejected: want{sourceRun, rejectPace}, kept: []int{1, 6},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := []runtime.Object{node("n0", 4), node("n1", 4)}
			for _, p := range c.pods {
				objs = append(objs, p)
			}
			cs, _ := newFake(t, objs...)
			s := startRounds(t, learnCfg(), cs)
			evc := fake.NewSimpleClientset()
			s.UseEventClient(evc)
			s.events.Start(context.Background())
			roundWait(s, context.Background(), learnT0.Add(310*time.Second))
			L := s.learn
			if len(L.rejected) != 1 || L.rejected[0].Pod != "ns/g-0" || L.rejected[0].Source != c.rejected.source || L.rejected[0].Reason != c.rejected.reason {
				t.Fatalf("rejected %+v, want one on ns/g-0 from %s for %s", L.rejected, c.rejected.source, c.rejected.reason)
			}
			if len(L.observed) != c.observed {
				t.Errorf("%d observations, want %d: %+v", len(L.observed), c.observed, L.observed)
			}
			for _, g := range c.kept {
				if b := L.learner.Belief(variability.ClassB, g); b != 1 {
					t.Errorf("GPU %d believed %v after a refused report, want 1", g, b)
				}
			}
			if c.moved != "" {
				// A newer report as bad as the first: refused and counted
				// again, with no second event.
				old := c.pods[0].Annotations[c.moved]
				num, _, _ := strings.Cut(old, "@")
				annotateSeen(t, cs, s, "g-0", c.moved, num+"@"+at(200))
				roundWait(s, context.Background(), learnT0.Add(320*time.Second))
			}
			wantCount := 1.0
			if c.moved != "" {
				wantCount = 2
			}
			if got := testutil.ToFloat64(s.metrics.learn.rejected.WithLabelValues(c.rejected.source, c.rejected.reason)); got != wantCount {
				t.Errorf("pal_learned_reports_rejected_total{%s,%s} = %v, want %v", c.rejected.source, c.rejected.reason, got, wantCount)
			}
			s.events.Stop()
			var evs []string
			for _, ev := range listEvents(t, evc, "ns") {
				if ev.Reason == ReasonLearnReportRejected {
					evs = append(evs, ev.Regarding.Name+": "+ev.Note)
				}
			}
			if len(evs) != 1 || !strings.HasPrefix(evs[0], "g-0: ") {
				t.Errorf("events %q, want one on g-0", evs)
			}
		})
	}
}

// A report is dated by its worker's clock, and one dated ahead of the
// scheduler's is a clock or reporting error: taken, its date became the
// learned ConfigMap's pal.io/learned-through, and a scheduler restarted
// from it counted every run and report up to that date as already
// learned: one pod's pal.io/progress dated 2999, at a plausible pace,
// stopped learning for the whole cluster. Such a report is refused (its
// pod warned once); one a little ahead, within MaxReportAhead (a round
// runs a little after its time, clocks drift), is taken. The gang is
// g-0 on GPU 1 and g-1 on GPU 6, started at learnT0; g-1 reports a step
// time at 300 s, and the round is at 310 s. A finished run's end is
// dated by its node's clock, and one that ended in 2100 (a node whose
// clock is off) is refused as well; the one-GPU run s beside it, ended
// at 300 s, is taken.
func TestLearnRefusesReportsFromTheFuture(t *testing.T) {
	const now = 310
	far := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	// The iterations that make the run to far look like the median GPU:
	// y = run / iterations / 0.179 / 1.7 = 1.
	farIters := strconv.FormatFloat(far.Sub(learnT0).Seconds()/0.179/1.7, 'f', 0, 64)
	soon := learnT0.Add(now*time.Second + MaxReportAhead - time.Second)
	end2100 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Sub(learnT0).Seconds()
	iters2100 := strconv.FormatFloat((end2100-5)/0.179/1.7, 'f', 0, 64)
	sInfo := `{"gang":"ns/s","round":"2026-03-01T12:00:00Z","pods":{"s-0":{"node":"n0","gpus":[3]}}}`
	running := func(name, node string, idx int, ann ...string) *corev1.Pod {
		p := finished(name, "g", 2, node, []int{idx}, twoNodeInfo, 0, 0)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(learnT0)}}
		for i := 0; i+1 < len(ann); i += 2 {
			p.Annotations[ann[i]] = ann[i+1]
		}
		return p
	}
	for _, c := range []struct {
		name     string
		ann      []string // g-0's
		source   string   // of the refusal; "" for none
		through  time.Time
		observed int
		pods     []*corev1.Pod // instead of g-0 with ann and g-1
	}{
		{name: "progress dated 2999", ann: []string{AnnProgress, farIters + "@" + far.Format(time.RFC3339)}, source: sourceProgress, through: learnT0.Add(300 * time.Second), observed: 1},
		{name: "step time dated 2999", ann: []string{AnnStepTime, "0.179@" + far.Format(time.RFC3339)}, source: sourceStepTime, through: learnT0.Add(300 * time.Second), observed: 1},
		{name: "step time a little ahead", ann: []string{AnnStepTime, "0.179@" + soon.Format(time.RFC3339)}, through: soon, observed: 2},
		{name: "run ended in 2100", source: sourceRun, through: learnT0.Add(300 * time.Second), observed: 1, pods: []*corev1.Pod{
			finished("g-0", "g", 2, "n0", []int{1}, twoNodeInfo, 2, end2100, AnnIterations, iters2100),
			finished("g-1", "g", 2, "n1", []int{2}, twoNodeInfo, 5, end2100-10, AnnIterations, iters2100),
			finished("s-0", "s", 1, "n0", []int{3}, sInfo, 121, 300)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pods := c.pods
			if pods == nil {
				pods = []*corev1.Pod{running("g-0", "n0", 1, c.ann...), running("g-1", "n1", 2, AnnStepTime, "0.179@"+learnAt(300))}
			}
			objs := []runtime.Object{node("n0", 4), node("n1", 4)}
			for _, p := range pods {
				objs = append(objs, p)
			}
			cs, _ := newFake(t, objs...)
			s := startRounds(t, learnCfg(), cs)
			roundWait(s, context.Background(), learnT0.Add(now*time.Second))
			L := s.learn
			if len(L.observed) != c.observed || !L.through.Equal(c.through) {
				t.Errorf("observed %+v, learned through %v; want %d observation(s), through %v", L.observed, L.through, c.observed, c.through)
			}
			if v := learnedCM(t, cs).Annotations[AnnLearnedThrough]; v != c.through.Format(time.RFC3339) {
				t.Errorf("the learned ConfigMap says it is learned through %s, want %s", v, c.through.Format(time.RFC3339))
			}
			if c.source == "" {
				if len(L.rejected) != 0 {
					t.Errorf("rejected %+v, want none", L.rejected)
				}
				return
			}
			if len(L.rejected) != 1 || L.rejected[0].Pod != "ns/g-0" || L.rejected[0].Source != c.source || L.rejected[0].Reason != rejectAhead {
				t.Errorf("rejected %+v, want one on ns/g-0 from %s for %s", L.rejected, c.source, rejectAhead)
			}
			if got := testutil.ToFloat64(s.metrics.learn.rejected.WithLabelValues(c.source, rejectAhead)); got != 1 {
				t.Errorf("pal_learned_reports_rejected_total{%s,%s} = %v, want 1", c.source, rejectAhead, got)
			}
		})
	}
}

// The learned ConfigMap is written beside the rounds, not in them: an
// apiserver that holds the write (here until the test lets it go) holds
// no round, and what the write was to say is written once it is let go.
// A write that fails leaves the ConfigMap behind: it is written again at
// the next interval, with what was learned meanwhile.
func TestLearnWriteDoesNotHoldTheRound(t *testing.T) {
	info := func(g string) string {
		return `{"gang":"ns/` + g + `","round":"2026-03-01T12:00:00Z","pods":{"` + g + `-0":{"node":"n0","gpus":[0]}}}`
	}
	cs, _ := newFake(t, node("n0", 2), finished("a-0", "a", 1, "n0", []int{0}, info("a"), 0, 2*179))
	release, fail := make(chan struct{}), false
	var mu sync.Mutex
	cs.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() != DefaultLearnedScoresConfigMap {
			return false, nil, nil
		}
		<-release
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return true, nil, apierrors.NewInternalError(errors.New("etcd timeout"))
		}
		return false, nil, nil
	})
	s := startRounds(t, learnCfg(), cs)
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		s.Round(ctx, learnT0.Add(400*time.Second))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the round waits on the learned ConfigMap's write")
	}
	close(release)
	<-done
	roundWait(s, ctx, learnT0.Add(410*time.Second))
	if got := learnedCM(t, cs).Annotations[AnnLearnedObservations]; got != "1" || s.learn.dirty {
		t.Fatalf("after the write was let go: %s=%q, dirty %v; want 1 and written", AnnLearnedObservations, got, s.learn.dirty)
	}

	// A failed write: behind, and written again at the next interval.
	mu.Lock()
	fail = true
	mu.Unlock()
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, finished("b-0", "b", 1, "n0", []int{1}, info("b"), -150, 3*179-150), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, s, "b-0", true)
	roundWait(s, ctx, learnT0.Add(420*time.Second))
	if s.learn.count != 2 || !s.learn.dirty {
		t.Fatalf("count %d, dirty %v after a failed write; want 2 and behind", s.learn.count, s.learn.dirty)
	}
	if got := testutil.ToFloat64(s.metrics.learn.writes.WithLabelValues("error")); got != 1 {
		t.Errorf("pal_learned_scores_writes_total{result=error} = %v, want 1", got)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	roundWait(s, ctx, learnT0.Add(430*time.Second))
	if got := learnedCM(t, cs).Annotations[AnnLearnedObservations]; got != "2" || s.learn.dirty {
		t.Errorf("the write after the failed one: %s=%q, dirty %v; want 2 and written", AnnLearnedObservations, got, s.learn.dirty)
	}
}

// A learned ConfigMap whose annotations do not read (hand edited) loses
// what they carried, not its beliefs: the scheduler starts from the
// learned scores, says what it did not read, and writes the beliefs back
// at its next write rather than the profile over them. A bad quarantine
// costs the carried quarantines; a bad learned-through time is taken as
// now (runs that ended before it are not counted again), a bad count as
// 0.
func TestLearnBadAnnotationsKeepBeliefs(t *testing.T) {
	for _, c := range []struct {
		name string
		ann  map[string]string
		now  bool // the learned-through time is taken as now
	}{
		{"quarantine", map[string]string{AnnQuarantined: "n0/2: slowdown lots (dcgm) since yesterday"}, false},
		{"learned-through and count", map[string]string{AnnLearnedThrough: "last tuesday", AnnLearnedObservations: "-3"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs, _ := newFake(t, node("n0", 4),
				profileConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "0.9", "n0,3", "1")),
				learnedConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "1.4", "n0,3", "1"), c.ann))
			before := time.Now()
			s, buf := startLogged(t, learnCfg(), cs)
			roundWait(s, context.Background(), learnT0)
			if s.learn.loadErr != nil {
				t.Fatalf("load error %v, want the beliefs read", s.learn.loadErr)
			}
			if v := s.raw.Values[variability.ClassA][2]; v != 1.4 {
				t.Errorf("GPU 2 starts at %v, want the learned 1.4", v)
			}
			if c.now && (s.learn.loadedThrough.Before(before) || s.learn.count != 0) {
				t.Errorf("learned through %v, count %d; want now (after %v) and 0", s.learn.loadedThrough, s.learn.count, before)
			}
			if len(s.learn.restored) != 0 {
				t.Errorf("quarantines carried: %v, want none", s.learn.restored)
			}
			for ann := range c.ann {
				if !strings.Contains(buf.String(), "learned ConfigMap's annotation not read") || !strings.Contains(buf.String(), ann) {
					t.Errorf("log does not say %s was not read:\n%s", ann, buf.String())
				}
			}
		})
	}
}
