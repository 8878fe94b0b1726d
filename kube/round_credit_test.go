package kube

import (
	"testing"
	"time"

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
