package baseline

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

func spec(id, gpus, most int, submit, seconds float64, app string) workload.Spec {
	s := workload.Spec{ID: id, GPUs: gpus, Submit: submit, Iterations: seconds, Model: "synergy", IterTime: 1, Tracked: true, App: app}
	if most > gpus {
		s.MaxGPUs = most
	}
	return s
}

// run simulates jobs on one machine of gpus GPUs with 60 s rounds and
// 600 s leases and returns the job records by id.
func run(t *testing.T, name string, gpus int, jobs []workload.Spec) map[int]metrics.JobRecord {
	return runObserved(t, name, gpus, jobs, nil)
}

func runObserved(t *testing.T, name string, gpus int, jobs []workload.Spec, obs func(float64, []*workload.Job, [][]int)) map[int]metrics.JobRecord {
	t.Helper()
	cl, err := cluster.New(1, gpus)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
		Round: 60, Locality: sim.ConstantLocality(1), MaxExtras: -1, Observe: obs})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]metrics.JobRecord{}
	for _, r := range res.Jobs {
		out[r.ID] = r
	}
	return out
}

// Optimus starts both jobs (B, shorter, first), then gives the two spare
// GPUs to elastic A (one more GPU saves A 2000 s, then 667 s). At the
// lease end (600) B is done and A, 1800 s into its 4000, takes all 4
// GPUs: 2200 s of work in 550 s, done at the boundary 1200.
func TestOptimusMarginalGain(t *testing.T) {
	r := run(t, "optimus", 4, []workload.Spec{spec(0, 1, 4, 0, 4000, "A"), spec(1, 1, 1, 0, 600, "B")})
	if r[0].Completion != 1200 || r[1].Completion != 600 {
		t.Errorf("A done %v, B done %v; want 1200 and 600", r[0].Completion, r[1].Completion)
	}
}

// SLAQ: three equal 1-GPU jobs on 2 GPUs. At 0 every job's loss would
// drop alike and the first two start; at the lease end (600) the new job
// C gains most (loss 1 → 1/1.9) and A (loss 1/1.9 → 1/2.8) beats B only by
// order: A keeps GPU 0, B is preempted and C takes GPU 1.
func TestSLAQLossGain(t *testing.T) {
	at600 := map[int][]int{}
	obs := func(T float64, order []*workload.Job, alloc [][]int) {
		if T == 600 {
			for i, j := range order {
				at600[j.ID] = alloc[i]
			}
		}
	}
	r := runObserved(t, "slaq", 2, []workload.Spec{spec(0, 1, 1, 0, 6000, "A"), spec(1, 1, 1, 0, 6000, "B"), spec(2, 1, 1, 0, 6000, "C")}, obs)
	if r[2].FirstStart != 600 || r[0].FirstStart != 0 || r[1].FirstStart != 0 {
		t.Errorf("starts A %v B %v C %v, want 0, 0, 600", r[0].FirstStart, r[1].FirstStart, r[2].FirstStart)
	}
	if len(at600[0]) != 1 || at600[0][0] != 0 || at600[1] != nil || len(at600[2]) != 1 || at600[2][0] != 1 {
		t.Errorf("at 600: %v, want A [0], B none, C [1]", at600)
	}
}

// Gandiva's fair variant on one GPU: app X runs its first job from 0; Y
// arrives at 100 and waits (no preemption between leases); at 600 Y has
// the least service (0 against X's 600 GPU-s) and takes the GPU; at 1200
// both have 600 and X, seen first, has it back (its job 0 again). On two
// GPUs X runs two jobs from 0 and at 600 keeps one of them beside Y.
func TestGandivaFairShares(t *testing.T) {
	got := map[float64][]int{} // T → ids of the jobs given GPUs
	obs := func(T float64, order []*workload.Job, alloc [][]int) {
		if T == 600 || T == 1200 {
			for i, j := range order {
				if alloc[i] != nil {
					got[T] = append(got[T], j.ID)
				}
			}
		}
	}
	jobs := []workload.Spec{spec(0, 1, 1, 0, 6000, "X"), spec(1, 1, 1, 0, 6000, "X"), spec(2, 1, 1, 100, 6000, "Y")}
	r := runObserved(t, "gandiva-fair", 1, jobs, obs)
	if r[2].FirstStart != 600 || len(got[600]) != 1 || got[600][0] != 2 || len(got[1200]) != 1 || got[1200][0] != 0 {
		t.Errorf("Y starts %v; runs at 600 %v, at 1200 %v; want 600, [2], [0]", r[2].FirstStart, got[600], got[1200])
	}
	r = run(t, "gandiva-fair", 2, jobs)
	if r[2].FirstStart != 600 || r[0].FirstStart != 0 || r[1].FirstStart != 0 {
		t.Errorf("2 GPUs: starts %v %v %v, want 0, 0, 600", r[0].FirstStart, r[1].FirstStart, r[2].FirstStart)
	}
}

func TestNewRefusesUnknown(t *testing.T) {
	if _, err := New(Config{Name: "gandiva"}); err == nil {
		t.Error("unknown name accepted")
	}
	if _, err := New(Config{Name: "slaq", Lease: -1}); err == nil {
		t.Error("negative lease accepted")
	}
}
