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
	"cmp"
	"fmt"
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
func (FIFO) Order(_ float64, jobs []*workload.Job) []*workload.Job {
	slices.SortStableFunc(jobs, func(a, b *workload.Job) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		return cmp.Compare(a.Submit, b.Submit)
	})
	return jobs
}

// LAS is Blox's continuous one-dimensional least-attained-service: the
// job that has run the least wall time goes first. It is not Tiresias'
// 2D-LAS (see TiresiasLAS).
type LAS struct{}

// Name implements policy.Scheduler.
func (LAS) Name() string { return "las" }

// Order implements policy.Scheduler.
func (LAS) Order(_ float64, jobs []*workload.Job) []*workload.Job {
	slices.SortStableFunc(jobs, func(a, b *workload.Job) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		return cmp.Compare(a.Attained, b.Attained)
	})
	return jobs
}

// SRTF orders by remaining ideal time, iter_time x iterations minus the
// wall time attained, as Blox estimates it (slowdowns are ignored, so the
// estimate is what a scheduler without a profile would know).
type SRTF struct{}

// Name implements policy.Scheduler.
func (SRTF) Name() string { return "srtf" }

// Order implements policy.Scheduler.
func (SRTF) Order(_ float64, jobs []*workload.Job) []*workload.Job {
	slices.SortStableFunc(jobs, func(a, b *workload.Job) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		return cmp.Compare(a.IterTime*a.Iterations-a.Attained, b.IterTime*b.Iterations-b.Attained)
	})
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
