package policy

import "github.com/palsched/pal/workload"

// Tenancy is the stage between scheduling and placement when tenants
// share the cluster: it decides, for the jobs in scheduler order, which may
// run and where, calling the placer for what it leaves to placement. Its
// answer has a Placer's shape (out[i] is order[i]'s ascending GPU list, or
// nil). Unlike a placer it keeps state across rounds (a tenant's bound
// cells), so the driver tells it when a job leaves the cluster.
type Tenancy interface {
	Name() string
	Place(env *Env, order []*workload.Job, placer Placer) [][]int
	// Finish releases what a finished job held.
	Finish(j *workload.Job)
	// Check verifies the stage's invariants (nil if they hold); drivers
	// call it every round when asked to.
	Check() error
}
