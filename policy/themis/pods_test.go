package themis_test

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// Jobs whose pods may not span nodes (PodGPUs, a Kubernetes gang's pods)
// get GPUs that split into whole pods per node at every round, and the
// policy's leases cover exactly those GPUs. The auction's bundles are
// GPUs, blind to pods: on generated apps on 4x4 GPUs with pods of 2 GPUs
// (and 3- and 1-GPU jobs of one pod), its plans split pods across nodes
// until the policy checked them.
func TestPodsStayWithinNodes(t *testing.T) {
	jobs, err := workload.GenerateThemisEmbedded(workload.ThemisOptions{Apps: 25, Rate: 6, Seed: 4, MaxJobs: 12, SingleShare: 0.1, Kill: 0.3, MaxSeconds: 6 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	pods := 0
	for i := range jobs {
		switch g := jobs[i].GPUs; {
		case g%2 == 0:
			jobs[i].PodGPUs = 2
		case g <= 4:
			jobs[i].PodGPUs = g
		}
		if jobs[i].PodGPUs > 0 {
			pods++
		}
	}
	if pods == 0 {
		t.Fatal("no job with pods")
	}
	cl, err := cluster.New(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := themis.New(themis.Config{Auction: fairness.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	bad, placed := 0, 0
	_, err = sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
		Round: themis.DefaultRound, Locality: sim.ConstantLocality(1), MaxExtras: -1,
		Observe: func(now float64, order []*workload.Job, alloc [][]int) {
			for i, j := range order {
				g := alloc[i]
				if j.PodGPUs <= 0 || g == nil {
					continue
				}
				placed++
				if !place.PodsFit(cl, g, j.PodGPUs) {
					if bad++; bad <= 3 {
						t.Errorf("t=%g: job %d (pods of %d GPUs) given %v", now, j.ID, j.PodGPUs, g)
					}
				}
				for _, x := range g {
					if app, _ := p.Lease(x, now); app != themis.AppOf(&j.Spec) {
						t.Errorf("t=%g: job %d runs on GPU %d, leased to %q", now, j.ID, x, app)
						return
					}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Errorf("%d of %d placements split a pod across nodes", bad, placed)
	}
	if v := p.Stats().Violations; len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
