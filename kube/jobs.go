package kube

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/workload"
)

// jobTable keeps each gang's workload.Job across rounds: the scheduling
// orders read service attained and starvation priority from it, so it
// must outlive a single round. Gangs that left the cluster are dropped at
// the end of each round.
type jobTable struct {
	byKey  map[string]*workload.Job
	seen   map[string]bool
	nextID int
	epoch  float64 // Unix seconds that are time 0 of Job.Submit
	// cost is every job's move cost (Config.MigrationCost), which the
	// migration-aware placements read from the job.
	cost workload.MoveCost
}

func newJobTable(epoch float64) *jobTable {
	return &jobTable{byKey: map[string]*workload.Job{}, seen: map[string]bool{}, nextID: 1, epoch: epoch}
}

// get returns the gang's job, creating it on first sight. Its submit time
// is the earliest creation time among the members seen so far.
func (t *jobTable) get(g *gang) *workload.Job {
	t.seen[g.key] = true
	submit := math.Inf(1)
	for _, ps := range [][]*corev1.Pod{g.pending, g.bound} {
		for _, p := range ps {
			submit = math.Min(submit, float64(p.CreationTimestamp.UnixNano())/1e9-t.epoch)
		}
	}
	j := t.byKey[g.key]
	if j == nil {
		j = workload.NewJob(workload.Spec{
			ID: t.nextID, GPUs: g.spec.gpus * g.spec.size, Submit: submit, Iterations: g.spec.iters,
			Model: g.spec.model, IterTime: g.spec.iterTime, Class: g.spec.class, Tracked: true,
		})
		j.MoveCost = t.cost
		t.nextID++
		t.byKey[g.key] = j
	}
	if submit < j.Submit {
		j.Submit = submit
	}
	return j
}

// sweep forgets gangs not seen since the last sweep.
func (t *jobTable) sweep() {
	for k := range t.byKey {
		if !t.seen[k] {
			delete(t.byKey, k)
		}
	}
	clear(t.seen)
}
