package schedule

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/palsched/pal/workload"
)

// TiresiasConfig sets the discretised 2D-LAS of Tiresias (Gu et al.,
// NSDI'19): jobs start in queue 0 and drop a queue each time their
// attained service crosses that queue's threshold; queues are served in
// order and FIFO inside a queue.
type TiresiasConfig struct {
	// Thresholds in service units (GPU-seconds when TwoD): a job in queue
	// q moves to q+1 once service >= Thresholds[q]. len+1 queues.
	Thresholds []float64
	// TwoD measures service as GPUs x seconds (dlas-gpu); false uses
	// wall seconds (dlas).
	TwoD bool
	// StarvationFactor S > 0 promotes a waiting job of a lower queue back
	// to queue 0 once it has waited S times the service it last ran for
	// (Tiresias' STARVELIMIT); 0 disables promotion.
	StarvationFactor float64
}

// DefaultTiresias is the Tiresias simulator's default: three queues,
// thresholds 3250 and 7200 GPU-seconds, no starvation promotion.
func DefaultTiresias() TiresiasConfig {
	return TiresiasConfig{Thresholds: []float64{3250, 7200}, TwoD: true}
}

// Validate checks that the thresholds increase.
func (c TiresiasConfig) Validate() error {
	for i, t := range c.Thresholds {
		if !(t > 0) || (i > 0 && t <= c.Thresholds[i-1]) {
			return fmt.Errorf("tiresias: thresholds must be positive and increasing, got %v", c.Thresholds)
		}
	}
	if c.StarvationFactor < 0 {
		return fmt.Errorf("tiresias: starvation factor must be >= 0, got %v", c.StarvationFactor)
	}
	return nil
}

type tiresiasState struct {
	queue int
	base  float64 // service at the last promotion: demotion counts service since then
	last  float64 // service when the job last stopped running
}

// TiresiasLAS keeps each job's queue across rounds: the queue is history,
// not a function of the current service alone, because starvation
// promotion moves a job up without undoing its service.
type TiresiasLAS struct {
	cfg   TiresiasConfig
	state map[int]*tiresiasState
}

// NewTiresiasLAS makes a 2D-LAS scheduler; cfg must be valid.
func NewTiresiasLAS(cfg TiresiasConfig) *TiresiasLAS {
	return &TiresiasLAS{cfg: cfg, state: map[int]*tiresiasState{}}
}

// Name implements policy.Scheduler.
func (t *TiresiasLAS) Name() string { return "tiresias-las" }

func (t *TiresiasLAS) service(j *workload.Job) float64 {
	if t.cfg.TwoD {
		return j.GPUService
	}
	return j.Attained
}

// Queue reports the queue a job is in (0 for unseen jobs).
func (t *TiresiasLAS) Queue(id int) int {
	if s := t.state[id]; s != nil {
		return s.queue
	}
	return 0
}

// Order implements policy.Scheduler. Demotion and promotion are applied
// from the jobs' current service and waiting time, then jobs are sorted by
// (priority, queue, submit time).
func (t *TiresiasLAS) Order(_ float64, jobs []*workload.Job) []*workload.Job {
	for _, j := range jobs {
		s := t.state[j.ID]
		if s == nil {
			s = &tiresiasState{}
			t.state[j.ID] = s
		}
		svc := t.service(j) - s.base
		for s.queue < len(t.cfg.Thresholds) && svc >= t.cfg.Thresholds[s.queue] {
			s.queue++
		}
		if j.Running() {
			s.last = svc
		} else if t.cfg.StarvationFactor > 0 && s.queue > 0 && s.last > 0 &&
			j.SinceScheduled >= t.cfg.StarvationFactor*s.last {
			s.queue, s.base, s.last = 0, t.service(j), 0
		}
	}
	slices.SortStableFunc(jobs, func(a, b *workload.Job) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		if qa, qb := t.state[a.ID].queue, t.state[b.ID].queue; qa != qb {
			return qa - qb
		}
		return cmp.Compare(a.Submit, b.Submit)
	})
	return jobs
}

// Forget drops a finished job's state.
func (t *TiresiasLAS) Forget(id int) { delete(t.state, id) }
