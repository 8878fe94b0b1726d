package themis_test

import (
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/workload"
)

// A fresh policy's first auction over running jobs that hold no lease
// (a driver restarted and found them running, with no lease on record)
// plans them anew: on one 4-GPU machine, x (3 GPUs, on 0-2) and y (1 GPU,
// on 3) are planned as y on GPU 0 and x on 1-3. With KeepRunning (a
// driver that never moves a running job) each stays on the GPUs it
// holds, and its app's lease is on those.
func TestKeepRunningLeasesTheHeldGPUs(t *testing.T) {
	for _, keep := range []bool{false, true} {
		cl, err := cluster.New(1, 4)
		if err != nil {
			t.Fatal(err)
		}
		p, err := themis.New(themis.Config{Lease: 60, Auction: fairness.DefaultOptions(), KeepRunning: keep})
		if err != nil {
			t.Fatal(err)
		}
		x, y := workload.NewJob(spec(0, 3, 0, 3000, "x")), workload.NewJob(spec(1, 1, 0, 3000, "y"))
		x.GPUsHeld, y.GPUsHeld = []int{0, 1, 2}, []int{3}
		order := []*workload.Job{x, y}
		for _, j := range order {
			if err := cl.Assign(j.ID, j.GPUsHeld); err != nil {
				t.Fatal(err)
			}
		}
		p.Order(0, order)
		out := p.Place(&policy.Env{Cluster: cl}, order)
		moved := false
		for i, j := range order {
			if !slices.Equal(out[i], j.GPUsHeld) {
				moved = true
				if keep {
					t.Errorf("KeepRunning: job %d on %v planned on %v", j.ID, j.GPUsHeld, out[i])
				}
			}
			for _, g := range out[i] {
				if app, _ := p.Lease(g, 0); app != themis.AppOf(&j.Spec) {
					t.Errorf("keep %v: job %d planned on GPU %d, leased to %q", keep, j.ID, g, app)
				}
			}
			if keep {
				for _, g := range j.GPUsHeld {
					if app, _ := p.Lease(g, 0); app != themis.AppOf(&j.Spec) {
						t.Errorf("KeepRunning: job %d runs on GPU %d, leased to %q", j.ID, g, app)
					}
				}
			}
		}
		if !keep && !moved {
			t.Logf("without KeepRunning the auction kept both jobs where they run: %v", out)
		}
		if v := p.Stats().Violations; len(v) > 0 {
			t.Errorf("keep %v: violations: %v", keep, v)
		}
	}
}

// JobLeases holds the lease of a job the last auction gave GPUs while it
// was not running, so that a driver records it with the job's start; it
// held running jobs' only.
func TestJobLeasesHoldsALaunchedJobsGrant(t *testing.T) {
	cl, err := cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := themis.New(themis.Config{Lease: 60, Auction: fairness.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	x := workload.NewJob(spec(0, 2, 0, 3000, "x"))
	p.Order(10, []*workload.Job{x})
	if out := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{x}); len(out[0]) != 2 {
		t.Fatalf("x given %v, want 2 GPUs", out[0])
	}
	if got := p.JobLeases(10); got[0] != 70 {
		t.Errorf("JobLeases %v, want x's lease until 70", got)
	}
}

// A driver's view may pass GPUs from a job that ended straight to a job
// of another app that was running elsewhere (HiveD gives a VC's cell
// that a finished gang frees to the VC's lazily preempted gang, which
// runs on): the ended job's app, with no job left, keeps no lease on
// them. Its lease stayed (only a free GPU's lease ended), the GPUs were
// offered as unleased and granted to the running job's app over it
// ('lease: GPU 0 is leased to app 0 until 600 s; app 1 cannot have it').
func TestLeaseOfAGoneAppEndsUnderAnotherAppsJob(t *testing.T) {
	p, err := themis.New(themis.Config{Lease: 600, Auction: fairness.DefaultOptions(), KeepRunning: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := workload.NewJob(spec(0, 4, 0, 3000, "a")), workload.NewJob(spec(1, 4, 0, 3000, "b"))
	cl, err := cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	p.Order(0, []*workload.Job{a})
	if out := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{a}); len(out[0]) != 4 {
		t.Fatalf("a given %v, want 4 GPUs", out[0])
	}
	// a ended; b, running, holds the view's GPUs now.
	cl, err = cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	b.GPUsHeld = []int{0, 1, 2, 3}
	if err := cl.Assign(b.ID, b.GPUsHeld); err != nil {
		t.Fatal(err)
	}
	p.Order(10, []*workload.Job{b})
	out := p.Place(&policy.Env{Cluster: cl}, []*workload.Job{b})
	if !slices.Equal(out[0], b.GPUsHeld) {
		t.Errorf("b on %v planned on %v", b.GPUsHeld, out[0])
	}
	if app, _ := p.Lease(0, 10); app != "b" {
		t.Errorf("b's GPU 0 leased to %q", app)
	}
	if v := p.Stats().Violations; len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
