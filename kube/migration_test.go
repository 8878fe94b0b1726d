package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The default placement is migration-aware PAL with a 2-minute migration
// cost, and a negative cost is an error naming its field.
func TestDefaultIsMigrationAware(t *testing.T) {
	c := DefaultConfig()
	pol, err := c.policies()
	if err != nil {
		t.Fatal(err)
	}
	if pol.place.Name() != "pal-ma" || c.MigrationCost.Duration != 2*time.Minute {
		t.Fatalf("default placement %s, migration cost %v; want pal-ma and 2m", pol.place.Name(), c.MigrationCost)
	}
	// The metrics port is none of the control plane's own (kube-scheduler
	// 10259, kube-controller-manager 10257, kubelet 10250).
	if c.MetricsAddr != "127.0.0.1:10261" {
		t.Errorf("default metricsAddr %q, want 127.0.0.1:10261", c.MetricsAddr)
	}
	f := t.TempDir() + "/c.yaml"
	if err := writeFile(f, "migrationCost: -1s"); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(f); err == nil || !strings.Contains(err.Error(), "field migrationCost") {
		t.Errorf("negative migrationCost: %v", err)
	}
}

// A running 1-GPU pod (owned by a StatefulSet, which recreates it) on a
// GPU 20% slower than the free one on the other node. Plain PAL evicts it
// to move it; migration-aware PAL keeps it unless the gain over its
// remaining work beats the cost: with 10 BERT iterations left (10 x
// 0.179 s x 0.18 = 0.3 s of gain) it stays at any cost above that; with a
// million left (about 32,000 s of gain) it moves even at a 2-minute cost.
// The same pod bare (no controller) is never moved: evicting it would
// delete it for good; also when preemptBarePods lets a round preempt it,
// a migration is refused and the pod is told so.
func TestRoundMovesAGangOnlyWhenItPays(t *testing.T) {
	scores := "node,gpu_index,class,score\n"
	for _, c := range []string{"A", "B", "C", "D"} {
		scores += "slow,0," + c + ",1.2\nfast,0," + c + ",1.0\n"
	}
	for _, tc := range []struct {
		placement, iters  string
		cost              time.Duration
		bare, preemptBare bool
		evicted           bool
	}{
		{"pal", "10", 2 * time.Minute, false, false, true},
		{"pal-ma", "10", 0, false, false, true},
		{"pal-ma", "10", 2 * time.Minute, false, false, false},
		{"pal-ma", "1000000", 2 * time.Minute, false, false, true},
		{"pal", "10", 0, true, false, false},
		{"pal-ma", "1000000", 2 * time.Minute, true, false, false},
		{"pal", "10", 0, true, true, false},
		{"pal-ma", "1000000", 0, true, true, false},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pal-system", Name: "pal-variability"},
			Data: map[string]string{ScoresKey: scores}}
		run := pod("r", 1, map[string]string{AnnGPUIndices: "0", AnnModel: "BERT", AnnIterations: tc.iters}, "slow")
		run.Status.Phase = corev1.PodRunning
		if !tc.bare {
			run = owned(run)
		}
		objs := []runtime.Object{node("slow", 1), node("fast", 1), cm, run}
		cs, fc := newFake(t, objs...)
		cfg := DefaultConfig()
		cfg.LeaderElection.Enabled = false
		cfg.Placement, cfg.MigrationCost, cfg.PreemptBarePods = tc.placement, Duration{tc.cost}, tc.preemptBare
		s := startRounds(t, cfg, cs)
		roundWait(s, context.Background(), time.Now())
		if got := len(fc.evicted) > 0; got != tc.evicted {
			t.Errorf("%s, %s iterations, cost %v, bare %v, preemptBarePods %v: evicted %v (%v), want %v; wait reasons %q",
				tc.placement, tc.iters, tc.cost, tc.bare, tc.preemptBare, got, fc.evicted, tc.evicted, s.lastWhy)
		}
		// Told only when a placement asked for the move (pal-ma with a
		// non-zero cost keeps it by itself).
		want := "kept on slow GPU 0: the " + tc.placement + " placement would migrate it, but its bare pods ns/r would be deleted and nothing would recreate them"
		if tc.preemptBare && tc.placement == "pal" && s.lastWhy["ns/pod:r"] != want {
			t.Errorf("%s, preemptBarePods on: told %q, want %q", tc.placement, s.lastWhy["ns/pod:r"], want)
		}
		if tc.preemptBare && tc.placement == "pal-ma" && s.lastWhy["ns/pod:r"] != "" {
			t.Errorf("pal-ma, preemptBarePods on: told %q; the bare pod's migration cost must keep it in place by itself", s.lastWhy["ns/pod:r"])
		}
	}
}

// A running gang under a sticky placer stays where it is, also when the
// placer sees a view of the cluster (another scheduler's pod holds a GPU
// on n0, so GPU ids are renumbered): its GPUs are handed to the placer in
// the view's ids as held, and the answer is mapped back to the same real
// GPUs, so nothing is evicted round after round while a new gang
// arrives. (The parity replay's migrations under "pal" are not this: PAL
// is non-sticky and the simulator moves the same jobs; see
// test/integration/parity_test.go.)
func TestStickyPlacerKeepsRunningGangInView(t *testing.T) {
	for _, placement := range []string{"packed-sticky", "random-sticky", "spread"} {
		r0 := pod("r-0", 1, gangAnn("r", 2, AnnGPUIndices, "2", AnnModel, "BERT"), "n1")
		r1 := pod("r-1", 1, gangAnn("r", 2, AnnGPUIndices, "3", AnnModel, "BERT"), "n1")
		// Another scheduler's pod: PAL counts it on n0's highest device, 3.
		other := pod("other", 1, nil, "n0")
		other.Spec.SchedulerName = "default-scheduler"
		for _, p := range []*corev1.Pod{r0, r1, other} {
			p.Status.Phase = corev1.PodRunning
		}
		objs := []runtime.Object{node("n0", 4), node("n1", 4), r0, r1, other}
		cs, fc := newFake(t, objs...)
		cfg := DefaultConfig()
		cfg.LeaderElection.Enabled = false
		cfg.Placement = placement
		s := startRounds(t, cfg, cs)
		roundWait(s, context.Background(), time.Now())
		q := pod("q-0", 1, gangAnn("q", 1, AnnModel, "BERT"), "")
		if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInformer(t, s, "q-0", true)
		for range 3 {
			roundWait(s, context.Background(), time.Now())
		}
		if len(fc.evicted) > 0 {
			t.Errorf("%s: evicted %v; a sticky placer must keep the running gang on n1 GPUs 2,3 (wait reasons %q)", placement, fc.evicted, s.lastWhy)
		}
		b := fc.binds["q-0"]
		if b == nil {
			t.Fatalf("%s: q-0 not bound (binds %v, wait reasons %q)", placement, keys(fc.binds), s.lastWhy)
		}
		n, idx := b.Target.Name, b.Annotations[AnnGPUIndices]
		if (n == "n0" && idx == "3") || (n == "n1" && (idx == "2" || idx == "3")) {
			t.Errorf("%s: q-0 bound to %s GPU %s, a GPU already in use", placement, n, idx)
		}
	}
}

// JobBackoff is the Job controller's recreation delay: 10 s doubled per
// failed pod, at most 6 minutes.
func TestJobBackoff(t *testing.T) {
	for pods, want := range map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 4: 80 * time.Second,
		6: 320 * time.Second, 7: 6 * time.Minute, 64: 6 * time.Minute} {
		if got := JobBackoff(pods); got != want {
			t.Errorf("JobBackoff(%d) = %v, want %v", pods, got, want)
		}
	}
}

// A move of a Job's gang is weighed against migrationCost plus the Job
// controller's backoff for the pods it recreates. A gang of four 1-GPU
// BERT pods runs on node slow (4 GPUs scoring 1.2 for every class); node
// fast (4 GPUs at 1.0) is free. pal-ma's expected gain is the remaining
// work times the slowdown it saves: binned, the scores are taken over
// their mean 1.1 (1.0909 and 0.9091, 0.1818 apart), so 5,000 BERT
// iterations of 0.179 s gain 5,000 x 0.179 x 0.1818 = 163 s, and a
// million 32,545 s. With migrationCost 2m:
//
//   - owned by a StatefulSet (recreated at once), 163 s > 120 s: moved;
//   - owned by a batch/v1 Job, 163 s < 120 + 80 s (the backoff for 4
//     failed pods, 10 s doubled three times): kept;
//   - owned by a Job, a million iterations: moved, the eviction saying
//     what it weighed, and the gang owing the 200 s as lost progress;
//   - the same, but the Job has 3 failed pods of backoffLimit 6, so the
//     4 the eviction fails would fail the Job: kept, the gang told why;
//   - the same, with a podFailurePolicy that ignores DisruptionTarget:
//     moved, since the evictions do not count;
//   - the same, with backoffLimit 2 and no failed pod: kept, since 4
//     evicted pods would already fail it.
func TestJobGangMoveCost(t *testing.T) {
	scores := "node,gpu_index,class,score\n"
	for g := range 4 {
		for _, c := range []string{"A", "B", "C", "D"} {
			scores += fmt.Sprintf("slow,%d,%s,1.2\nfast,%d,%s,1.0\n", g, c, g, c)
		}
	}
	yes := true
	ignore := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}}}
	for _, tc := range []struct {
		owner, iters string
		failed       int32
		policy       *batchv1.PodFailurePolicy
		limit        int32 // backoffLimit, 0: unset (6)
		moved        bool
		kept         string // what the gang is told when it is kept
	}{
		{owner: "StatefulSet", iters: "5000", moved: true},
		{owner: "Job", iters: "5000", moved: false},
		{owner: "Job", iters: "1000000", moved: true},
		{owner: "Job", iters: "1000000", failed: 3, kept: "Job ns/train would fail: it has 3 failed pods of backoffLimit 6, and the eviction fails 4 more"},
		{owner: "Job", iters: "1000000", failed: 3, policy: ignore, moved: true},
		{owner: "Job", iters: "1000000", limit: 2, kept: "Job ns/train would fail: it has 0 failed pods of backoffLimit 2, and the eviction fails 4 more"},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pal-system", Name: "pal-variability"},
			Data: map[string]string{ScoresKey: scores}}
		objs := []runtime.Object{node("slow", 4), node("fast", 4), cm}
		if tc.owner == "Job" {
			par := int32(4)
			var limit *int32
			if tc.limit > 0 {
				limit = &tc.limit
			}
			objs = append(objs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", UID: "uid-train"},
				Spec:   batchv1.JobSpec{Parallelism: &par, BackoffLimit: limit, PodFailurePolicy: tc.policy},
				Status: batchv1.JobStatus{Failed: tc.failed}})
		}
		for i := range 4 {
			p := running(pod(fmt.Sprintf("w-%d", i), 1, gangAnn("w", 4, AnnGPUIndices, itoa(i), AnnModel, "BERT", AnnIterations, tc.iters), "slow"))
			api := "apps/v1"
			if tc.owner == "Job" {
				api = "batch/v1"
			}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: api, Kind: tc.owner, Name: "train", UID: "uid-train", Controller: &yes}}
			objs = append(objs, p)
		}
		cs, fc := newFake(t, objs...)
		s, log := startLogged(t, testCfg(), cs)
		roundWait(s, context.Background(), time.Now())
		if got := len(fc.evicted) == 4; got != tc.moved || len(fc.evicted)%4 != 0 {
			t.Errorf("owner %s, %s iterations, %d failed: evicted %v, want moved %v; log:\n%s", tc.owner, tc.iters, tc.failed, fc.evicted, tc.moved, log)
		}
		if tc.kept != "" && !strings.Contains(log.String(), tc.kept) {
			t.Errorf("owner %s, %d failed, backoffLimit %d: the log does not say %q:\n%s", tc.owner, tc.failed, tc.limit, tc.kept, log)
		}
		if tc.owner == "Job" && tc.moved {
			want := "a move it weighed against a migration cost of 200 s (migrationCost 120 s, and 80 s of the Job controller's backoff before it recreates 4 pods)"
			if !strings.Contains(log.String(), want) {
				t.Errorf("the eviction does not say %q:\n%s", want, log)
			}
			if j := s.state.Snapshot().ByKey["ns/w"].Job; j.Debt != 200 {
				t.Errorf("debt %v, want 200 s", j.Debt)
			}
		}
	}
}

// Under preemptBarePods with the non-migration-aware pal placement, a
// bare pod's gang that the plan would migrate is kept (its pods would be
// deleted for good), and a launch the plan put on its GPUs used to wait
// for them forever while others were free. Nodes fast (1 GPU, score 1.0)
// and slow (1 GPU, 1.2): bare pod r runs on slow; q (1 GPU) arrives. PAL
// places r first, on the faster free GPU (fast), and q on what is left,
// r's own GPU: r's move is refused, and the order is placed once more
// without r, whose GPU is then taken, so q goes to fast at once.
func TestKeptBarePodDoesNotBlockLaunch(t *testing.T) {
	scores := "node,gpu_index,class,score\n"
	for _, c := range []string{"A", "B", "C", "D"} {
		scores += "slow,0," + c + ",1.2\nfast,0," + c + ",1.0\n"
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pal-system", Name: "pal-variability"},
		Data: map[string]string{ScoresKey: scores}}
	r := running(pod("r", 1, map[string]string{AnnGPUIndices: "0", AnnModel: "BERT", AnnIterations: "1000"}, "slow"))
	q := pod("q", 1, map[string]string{AnnModel: "BERT"}, "")
	q.CreationTimestamp = metav1.NewTime(r.CreationTimestamp.Add(time.Minute))
	cs, fc := newFake(t, node("slow", 1), node("fast", 1), cm, r, q)
	cfg := testCfg()
	cfg.Placement, cfg.PreemptBarePods = "pal", true
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())
	if len(fc.evicted) > 0 {
		t.Fatalf("evicted %v: the bare pod r must be kept", fc.evicted)
	}
	if b := fc.binds["q"]; b == nil || b.Target.Name != "fast" || b.Annotations[AnnGPUIndices] != "0" {
		t.Fatalf("q bound %+v, want fast GPU 0 (wait reasons %q)", b, s.lastWhy)
	}
	want := "kept on slow GPU 0: the pal placement would migrate it, but its bare pods ns/r would be deleted and nothing would recreate them"
	if s.lastWhy["ns/pod:r"] != want {
		t.Errorf("r told %q, want %q", s.lastWhy["ns/pod:r"], want)
	}
}
