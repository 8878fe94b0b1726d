package kube

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/workload"
)

// creditJob is the job of the gang at key in the scheduler's state.
func creditJob(t *testing.T, w *world, key string) *workload.Job {
	t.Helper()
	g := w.s.state.Snapshot().ByKey[key]
	if g == nil || g.Job == nil {
		t.Fatalf("no gang %s", key)
	}
	return g.Job
}

// A running gang is credited, per round, the time since the last round
// (its attained service) and that time times its GPUs (Tiresias' GPU
// service, by which tiresias-las demotes it): a 16-GPU gang earns 16
// GPU-seconds a second, a 1-GPU pod one. Rounds 100 s apart.
func TestRoundCreditsGPUService(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Scheduler = "tiresias-las"
	w := newWorld(t, cfg, 1, 3, 8)
	t0 := time.Unix(1_700_000_000, 0)
	w.create("big-0", 8, gangAnn("big", 2), t0)
	w.create("big-1", 8, gangAnn("big", 2), t0)
	w.create("small", 1, nil, t0)
	w.deliver(-1)
	w.round(t0) // binds both: nothing credited yet (no period has passed)
	w.deliver(-1)
	for i := 1; i <= 3; i++ {
		w.round(t0.Add(time.Duration(i) * 100 * time.Second))
		w.deliver(-1)
	}
	// Rounds 1-3 each credit 100 s: 300 s attained; the gang's GPU
	// service 300 s x 16 GPUs, the pod's 300 s x 1.
	for _, c := range []struct {
		key               string
		attained, service float64
	}{{"ns/big", 300, 4800}, {"ns/pod:small", 300, 300}} {
		j := creditJob(t, w, c.key)
		if j.Attained != c.attained || j.GPUService != c.service {
			t.Errorf("%s: attained %v s, GPU service %v GPU-s; want %v and %v", c.key, j.Attained, j.GPUService, c.attained, c.service)
		}
	}
}

// The starvation guard raises a waiting job's priority in the first
// round at which it has waited the guard's time, not a round later: a
// guard of 300 s with rounds 100 s apart raises it in the third round
// after the one it arrived in (waited 100, 200, 300 s).
func TestStarvationGuardOnTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.StarvationGuard = Duration{300 * time.Second}
	w := newWorld(t, cfg, 1, 1, 8)
	t0 := time.Unix(1_700_000_000, 0)
	w.create("hog", 8, nil, t0)
	w.deliver(-1)
	w.round(t0) // the hog takes the node
	w.deliver(-1)
	w.create("waiter", 1, nil, t0)
	w.deliver(-1)
	w.round(t0.Add(100 * time.Second)) // the waiter's first round: waited 100 s
	for i, want := range []float64{200, 300} {
		w.deliver(-1)
		w.round(t0.Add(time.Duration(i+2) * 100 * time.Second))
		j := creditJob(t, w, "ns/pod:waiter")
		if j.SinceScheduled != want {
			t.Fatalf("after %v s the waiter has waited %v s", want, j.SinceScheduled)
		}
		if raised := j.Priority == 1; raised != (want >= 300) {
			t.Errorf("waited %v s of a 300 s guard: priority %d", want, j.Priority)
		}
	}
	if j := creditJob(t, w, "ns/pod:hog"); j.Priority == 1 || j.SinceScheduled != 0 {
		t.Errorf("the running hog: priority %d, waited %v s", j.Priority, j.SinceScheduled)
	}
	// Once it runs, its wait starts again from 0.
	w.finish("ns/hog")
	w.deliver(-1)
	w.round(t0.Add(400 * time.Second)) // binds the waiter
	w.deliver(-1)
	w.round(t0.Add(500 * time.Second))
	if j := creditJob(t, w, "ns/pod:waiter"); !j.Running() || j.SinceScheduled != 0 {
		t.Errorf("the waiter, running: %v GPUs, waited %v s; want its wait reset to 0", j.GPUsHeld, j.SinceScheduled)
	}
}

// A restarted scheduler credits a running gang from its bind-info as the
// scheduler that bound it went on crediting it: the restart cost it owed
// at the bind (debt: its moves' checkpoint-restarts) is paid before its
// iterations grow again, as Job.Progress pays it. Without the debt in
// the bind-info a restart credited the gang the whole time since its
// bind, and forecasts, backfill and move gains read it as nearer its end
// than the scheduler that ran throughout did.
func TestCreditBoundPaysDebtFirst(t *testing.T) {
	w := newWorld(t, testCfg(), 1, 1, 4)
	s := w.s
	bind := time.Unix(1_000_000, 0)
	for _, c := range []struct{ done, debt, since float64 }{
		{100, 150, 0}, {100, 150, 50}, {100, 150, 150}, {100, 150, 300}, {0, 0, 80}, {40, 120, 121},
	} {
		// The scheduler that ran throughout: the job as bound, then
		// Progress over the time since.
		ran := workload.NewJob(workload.Spec{ID: 1, GPUs: 4, Iterations: 1e6, IterTime: 1})
		ran.PM, ran.Loc, ran.Executed, ran.Debt = 1, 1, c.done, c.debt
		ran.Progress(c.since)

		// A fresh one reads the bind-info.
		raw := mustJSON(BindInfo{Gang: "ns/g", Round: bind.UTC().Format(time.RFC3339Nano), Done: c.done, Debt: c.debt,
			Pods: map[string]PodBind{"g-0": {Node: "n0", GPUs: []int{0, 1, 2, 3}}}})
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "g-0", Namespace: "ns", Annotations: map[string]string{AnnBindInfo: raw}}}
		fresh := workload.NewJob(workload.Spec{ID: 1, GPUs: 4, Iterations: 1e6, IterTime: 1})
		s.creditBound(&gang{Key: "ns/g", Bound: []*corev1.Pod{p}}, fresh, bind.Add(time.Duration(c.since*float64(time.Second))), 1)
		if math.Abs(fresh.Executed-ran.Executed) > 1e-9 || math.Abs(fresh.Debt-ran.Debt) > 1e-9 {
			t.Errorf("done %v, debt %v, %v s since the bind: a restart credits %v iterations owing %v s, the scheduler that ran throughout %v owing %v",
				c.done, c.debt, c.since, fresh.Executed, fresh.Debt, ran.Executed, ran.Debt)
		}
	}
}
