// Package schedule holds the scheduling policies: given the active jobs,
// the order in which placement considers them.
//
// FIFO, LAS and SRTF follow Blox (and so the PAL artifact): every job
// carries a priority (999, or 1 once the driver's starvation guard fires)
// that sorts first, then the policy's key, and ties keep the active set's
// order (arrival order), as Python's stable sort does. TiresiasLAS is the
// discretised two-dimensional LAS of the Tiresias paper.
package schedule

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// FIFO orders by submit time.
type FIFO struct{}

// Name implements policy.Scheduler.
func (FIFO) Name() string { return "fifo" }

// Order implements policy.Scheduler.
func (s FIFO) Order(now float64, jobs []*workload.Job) []*workload.Job {
	return sortByKey(now, jobs, s.Key)
}

// Key implements policy.KeyedScheduler.
func (FIFO) Key(_ float64, j *workload.Job) policy.OrderKey {
	return policy.OrderKey{Priority: j.Priority, Value: j.Submit}
}

// PeekKey implements policy.KeyedScheduler.
func (s FIFO) PeekKey(now float64, j *workload.Job) policy.OrderKey { return s.Key(now, j) }

// WakeAfter implements policy.KeyedScheduler: a FIFO key never changes
// while a job waits.
func (FIFO) WakeAfter(*workload.Job) float64 { return math.Inf(1) }

// Steady implements policy.Steady: WakeAfter is +Inf for every job.
func (FIFO) Steady() bool { return true }

// Fixed implements policy.Fixed: the key is the priority and the submit
// time.
func (FIFO) Fixed() bool { return true }

// LAS is Blox's continuous one-dimensional least-attained-service: the
// job that has run the least wall time goes first. It is not Tiresias'
// 2D-LAS (see TiresiasLAS).
type LAS struct{}

// Name implements policy.Scheduler.
func (LAS) Name() string { return "las" }

// Order implements policy.Scheduler.
func (s LAS) Order(now float64, jobs []*workload.Job) []*workload.Job {
	return sortByKey(now, jobs, s.Key)
}

// Key implements policy.KeyedScheduler.
func (LAS) Key(_ float64, j *workload.Job) policy.OrderKey {
	return policy.OrderKey{Priority: j.Priority, Value: j.Attained}
}

// PeekKey implements policy.KeyedScheduler.
func (s LAS) PeekKey(now float64, j *workload.Job) policy.OrderKey { return s.Key(now, j) }

// WakeAfter implements policy.KeyedScheduler: attained service changes
// only while a job runs.
func (LAS) WakeAfter(*workload.Job) float64 { return math.Inf(1) }

// Steady implements policy.Steady: WakeAfter is +Inf for every job.
func (LAS) Steady() bool { return true }

// ByAttained implements policy.ByAttained: Key is the priority and the
// attained service.
func (LAS) ByAttained() bool { return true }

// SRTF orders by remaining ideal time, iter_time x iterations minus the
// wall time attained, as Blox estimates it (slowdowns are ignored, so the
// estimate is what a scheduler without a profile would know).
type SRTF struct{}

// Name implements policy.Scheduler.
func (SRTF) Name() string { return "srtf" }

// Order implements policy.Scheduler.
func (s SRTF) Order(now float64, jobs []*workload.Job) []*workload.Job {
	return sortByKey(now, jobs, s.Key)
}

// Key implements policy.KeyedScheduler.
func (SRTF) Key(_ float64, j *workload.Job) policy.OrderKey {
	return policy.OrderKey{Priority: j.Priority, Value: j.IterTime*j.Iterations - j.Attained}
}

// PeekKey implements policy.KeyedScheduler.
func (s SRTF) PeekKey(now float64, j *workload.Job) policy.OrderKey { return s.Key(now, j) }

// WakeAfter implements policy.KeyedScheduler: the remaining-time estimate
// changes only while a job runs.
func (SRTF) WakeAfter(*workload.Job) float64 { return math.Inf(1) }

// Steady implements policy.Steady: WakeAfter is +Inf for every job.
func (SRTF) Steady() bool { return true }

// sortByKey is every keyed scheduler's Order: key each job once (in the
// given order, so stateful keys update as before), then sort stably, so
// ties keep the given (arrival) order as Blox's Python sort does.
func sortByKey(now float64, jobs []*workload.Job, key func(float64, *workload.Job) policy.OrderKey) []*workload.Job {
	type keyed struct {
		k policy.OrderKey
		j *workload.Job
	}
	ks := make([]keyed, len(jobs))
	for i, j := range jobs {
		ks[i] = keyed{key(now, j), j}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return a.k.Compare(b.k) })
	for i := range ks {
		jobs[i] = ks[i].j
	}
	return jobs
}

// New returns a scheduler by name: fifo, las, srtf or tiresias-las (with
// default Tiresias settings).
func New(name string) (policy.Scheduler, error) {
	switch strings.ToLower(name) {
	case "fifo":
		return FIFO{}, nil
	case "las":
		return LAS{}, nil
	case "srtf":
		return SRTF{}, nil
	case "tiresias-las", "tiresias", "2d-las":
		return NewTiresiasLAS(DefaultTiresias()), nil
	}
	return nil, fmt.Errorf("unknown scheduler %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the schedulers New knows.
func Names() []string { return []string{"fifo", "las", "srtf", "tiresias-las"} }
