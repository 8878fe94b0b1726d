//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/replay"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// learnDegraded are the GPUs that run at 1.6x the median while the
// profile says they are the fastest (0.9): gpu-node-000 device 3 and
// gpu-node-001 device 1.
var learnDegraded = map[kube.GPUKey]bool{{Node: "gpu-node-000", Index: 3}: true, {Node: "gpu-node-001", Index: 1}: true}

// learnTrue is the GPUs' true value (every class): 1.6 degraded, 1 else.
func learnTrue(k kube.GPUKey) float64 {
	if learnDegraded[k] {
		return 1.6
	}
	return 1
}

// pal-kube scheduler with learnScores on, on 2 nodes x 4 GPUs whose profile
// ConfigMap believes the two degraded GPUs fastest (0.9, the others 1).
// A replay of ten BERT jobs (class B, 16,080 iterations of 0.179 s:
// 8 rounds of 360 s on a median GPU; eight 1-GPU jobs, then two 2-GPU
// jobs) has kwok finish every pod after
// the time its true GPUs take (13 rounds on a degraded GPU). After it,
// the learned ConfigMap holds all 8 devices, counts all 10 runs, and
// ranks the two degraded GPUs last for class B: each above every healthy
// GPU. With the replay's pods deleted, a restarted scheduler exports the
// learned value of a degraded GPU from its first round.
func TestLearnScoresFromReplay(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	csv := "node,gpu_index,class,score\n"
	for n := range 2 {
		for g := range 4 {
			k := kube.GPUKey{Node: fmt.Sprintf("gpu-node-%03d", n), Index: g}
			v := 1.0
			if learnDegraded[k] {
				v = 0.9
			}
			for _, c := range "ABCD" {
				csv += fmt.Sprintf("%s,%d,%c,%g\n", k.Node, g, c, v)
			}
		}
	}
	if _, err := e.cs.CoreV1().ConfigMaps("pal-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system"}, Data: map[string]string{kube.ScoresKey: csv}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const round, speedup = 360.0, 180.0 // 2 s of wall time a round
	cfg := testConfig()
	cfg.Period = kube.Duration{Duration: time.Duration(round / speedup * float64(time.Second))}
	cfg.AlignPeriod, cfg.ArrivalDelay = true, kube.Duration{}
	cfg.Scheduler, cfg.Placement = "fifo", "pal"
	cfg.TimeScale = speedup
	cfg.LearnScores = true
	cfg.LearnedScoresWriteInterval = kube.Duration{Duration: time.Second}
	_, stop := e.runScheduler(cfg, "pal")

	trace := "job_id,num_gpus,submit_time,duration,model\n"
	for i := range 10 {
		gpus := 1
		if i >= 8 {
			gpus = 2
		}
		trace += fmt.Sprintf("%d,%d,0,16080,BERT\n", i+1, gpus)
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.ReadTraceFile(path, workload.DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	truth := func(_ variability.Class, pods []kube.PodBind) float64 {
		slow := 0.0
		for _, pb := range pods {
			for _, x := range pb.GPUs {
				slow = max(slow, learnTrue(kube.GPUKey{Node: pb.Node, Index: x}))
			}
		}
		if len(pods) > 1 && pods[0].Node != pods[len(pods)-1].Node {
			slow *= cfg.LocalityPenalty
		}
		return slow
	}
	res, err := replay.Run(ctx, e.cs, replay.Options{Trace: tr, Round: round, Speedup: speedup,
		Namespace: "pal-replay", SchedulerName: "pal", Timeout: 3 * time.Minute, Log: t.Logf, Slowdown: truth})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	for _, p := range res.Placements {
		t.Logf("job %d on %+v", p.JobID, p.Pods)
	}
	// The last runs are learned in the round after they end; stopping
	// writes what the ConfigMap lacks.
	time.Sleep(2 * cfg.Period.Duration)
	stop()

	cm, err := e.cs.CoreV1().ConfigMaps("pal-system").Get(ctx, kube.DefaultLearnedScoresConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no learned ConfigMap: %v", err)
	}
	t.Logf("learned ConfigMap (%s observations):\n%s", cm.Annotations[kube.AnnLearnedObservations], cm.Data[kube.ScoresKey])
	if got := cm.Annotations[kube.AnnLearnedObservations]; got != "10" {
		t.Errorf("%s = %q, want all 10 runs", kube.AnnLearnedObservations, got)
	}
	ns, err := kube.ReadNodeScores("learned", strings.NewReader(cm.Data[kube.ScoresKey]))
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 8 {
		t.Fatalf("learned ConfigMap covers %d devices, want 8", len(ns))
	}
	b := variability.ClassB
	worstHealthy, bestDegraded := 0.0, 99.0
	for k, v := range ns {
		if learnDegraded[k] {
			bestDegraded = min(bestDegraded, v[b])
		} else {
			worstHealthy = max(worstHealthy, v[b])
		}
	}
	if !(bestDegraded > worstHealthy) {
		t.Errorf("class B: the degraded GPUs are not ranked last: slowest healthy %v, fastest degraded %v", worstHealthy, bestDegraded)
	}

	// A restarted scheduler starts from the ConfigMap: with the replay's
	// pods gone (nothing to learn from again), its first round exports
	// the learned beliefs, not the profile's 0.9.
	if err := e.cs.CoreV1().Pods("pal-replay").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "replay pods gone", func() bool {
		l, err := e.cs.CoreV1().Pods("pal-replay").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	s2, _ := e.runScheduler(cfg, "restarted")
	want := fmt.Sprintf(`pal_learned_score{class="B",gpu="3",node="gpu-node-000"} %s`, strconv.FormatFloat(ns[kube.GPUKey{Node: "gpu-node-000", Index: 3}][b], 'g', -1, 64))
	var last string
	e.eventually(15*time.Second, "restarted scheduler exports the learned score", func() bool {
		rec := httptest.NewRecorder()
		s2.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		last = rec.Body.String()
		return strings.Contains(last, want+"\n")
	})
}

// Step times on the dev cluster: a BERT gang of two 1-GPU pods (0.179 s
// per iteration on the median GPU; no profile, so every GPU is believed
// the median) is bound by PAL; then, as their workers would, the test
// annotates pod 0 with a 2x step time (0.358 s) and pod 1 with the
// median's. Through the apiserver and the scheduler's informers, the
// learned ConfigMap ends with pod 0's device at 1.5 for class B (half way
// to 2, one observation) and pod 1's at 1, and the gauge says the same.
// The gang's own pace (2 on both) could not have told the two apart.
func TestLearnStepTimesOnDevCluster(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Scheduler, cfg.Placement = "fifo", "pal"
	cfg.LearnScores = true
	cfg.LearnedScoresWriteInterval = kube.Duration{}
	s, _ := e.runScheduler(cfg, "pal")
	names := e.gang("st", 2, 1, map[string]string{kube.AnnModel: "BERT"})
	e.eventually(30*time.Second, "the gang bound", func() bool { return e.bound(names...) })
	dev := func(name string) kube.GPUKey {
		p := e.pod(name)
		idx, err := kube.ParseIndices(p.Annotations[kube.AnnGPUIndices])
		if err != nil || len(idx) != 1 {
			t.Fatalf("pod %s: %s=%q: %v", name, kube.AnnGPUIndices, p.Annotations[kube.AnnGPUIndices], err)
		}
		return kube.GPUKey{Node: p.Spec.NodeName, Index: idx[0]}
	}
	slow, fast := dev(names[0]), dev(names[1])
	at := time.Now().UTC().Format(time.RFC3339)
	for name, step := range map[string]string{names[0]: "0.358", names[1]: "0.179"} {
		e.annotate(name, kube.AnnStepTime, step+"@"+at)
	}
	b := variability.ClassB
	var ns kube.NodeScores
	e.eventually(30*time.Second, "the learned ConfigMap holds the slow device", func() bool {
		cm, err := e.cs.CoreV1().ConfigMaps("pal-system").Get(ctx, kube.DefaultLearnedScoresConfigMap, metav1.GetOptions{})
		if err != nil {
			return false
		}
		ns, err = kube.ReadNodeScores("learned", strings.NewReader(cm.Data[kube.ScoresKey]))
		return err == nil && ns[slow][b] != 1
	})
	if ns[slow][b] != 1.5 || ns[fast][b] != 1 {
		t.Errorf("learned class B: %+v at %v and %+v at %v, want 1.5 and 1", slow, ns[slow][b], fast, ns[fast][b])
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := fmt.Sprintf(`pal_learned_score{class="B",gpu="%d",node="%s"} 1.5`, slow.Index, slow.Node)
	if !strings.Contains(rec.Body.String(), want+"\n") {
		t.Errorf("/metrics lacks %s", want)
	}

	// A worker that reports milliseconds (179 for 0.179 s, a pace of
	// 1000) is refused: a warning event on its pod, the counter, and the
	// device it would have slowed still at 1.
	e.annotate(names[1], kube.AnnStepTime, "179@"+time.Now().UTC().Add(time.Second).Format(time.RFC3339))
	e.eventually(30*time.Second, "a LearnReportRejected event on the pod", func() bool {
		return len(e.events(names[1], kube.ReasonLearnReportRejected)) == 1
	})
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, w := range []string{`pal_learned_reports_rejected_total{reason="implausible_pace",source="step-time"} 1`,
		fmt.Sprintf(`pal_learned_score{class="B",gpu="%d",node="%s"} 1`, fast.Index, fast.Node)} {
		if !strings.Contains(rec.Body.String(), w+"\n") {
			t.Errorf("/metrics lacks %s", w)
		}
	}
}
