package schedule

import (
	"fmt"
	"math"

	"github.com/palsched/pal/policy"
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
	known bool    // in the dense table: the slot holds a job's state
}

// denseIDs bounds the job ids kept in TiresiasLAS's dense table: trace
// ids count up from 0, so a table indexed by id holds them all in a few
// bytes each, while a stray large id must not size the table.
const denseIDs = 1 << 22

// TiresiasLAS keeps each job's queue across rounds: the queue is history,
// not a function of the current service alone, because starvation
// promotion moves a job up without undoing its service.
//
// The state is read for every running job every round (a fifth of a
// 20,000-job run's CPU went to map lookups), so ids below denseIDs index
// a slice and only others use the map.
type TiresiasLAS struct {
	cfg   TiresiasConfig
	dense []tiresiasState
	state map[int]*tiresiasState
}

// NewTiresiasLAS makes a 2D-LAS scheduler; cfg must be valid.
func NewTiresiasLAS(cfg TiresiasConfig) *TiresiasLAS {
	return &TiresiasLAS{cfg: cfg, state: map[int]*tiresiasState{}}
}

// find is id's state, nil if it has none.
func (t *TiresiasLAS) find(id int) *tiresiasState {
	if uint(id) < denseIDs {
		if id < len(t.dense) && t.dense[id].known {
			return &t.dense[id]
		}
		return nil
	}
	return t.state[id]
}

// add gives id a fresh state; it has none.
func (t *TiresiasLAS) add(id int) *tiresiasState {
	if uint(id) < denseIDs {
		if id >= len(t.dense) {
			t.dense = append(t.dense, make([]tiresiasState, id+1-len(t.dense))...)
		}
		t.dense[id] = tiresiasState{known: true}
		return &t.dense[id]
	}
	s := &tiresiasState{}
	t.state[id] = s
	return s
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
	if s := t.find(id); s != nil {
		return s.queue
	}
	return 0
}

// Order implements policy.Scheduler. Demotion and promotion are applied
// from the jobs' current service and waiting time, then jobs are sorted by
// (priority, queue, submit time).
func (t *TiresiasLAS) Order(now float64, jobs []*workload.Job) []*workload.Job {
	return sortByKey(now, jobs, t.Key)
}

// Key implements policy.KeyedScheduler: it applies j's demotion or
// promotion and returns (priority, queue, submit time).
func (t *TiresiasLAS) Key(_ float64, j *workload.Job) policy.OrderKey {
	s := t.find(j.ID)
	if s == nil {
		s = t.add(j.ID)
	}
	*s = t.next(*s, j)
	return policy.OrderKey{Priority: j.Priority, Level: s.queue, Value: j.Submit}
}

// PeekKey implements policy.KeyedScheduler.
func (t *TiresiasLAS) PeekKey(_ float64, j *workload.Job) policy.OrderKey {
	var s tiresiasState
	if p := t.find(j.ID); p != nil {
		s = *p
	}
	s = t.next(s, j)
	return policy.OrderKey{Priority: j.Priority, Level: s.queue, Value: j.Submit}
}

// next is a job's state after this round's demotion or promotion.
func (t *TiresiasLAS) next(s tiresiasState, j *workload.Job) tiresiasState {
	svc := t.service(j) - s.base
	for s.queue < len(t.cfg.Thresholds) && svc >= t.cfg.Thresholds[s.queue] {
		s.queue++
	}
	if j.Running() {
		s.last = svc
	} else if t.promotes(s) && j.SinceScheduled >= t.cfg.StarvationFactor*s.last {
		s.queue, s.base, s.last = 0, t.service(j), 0
	}
	return s
}

func (t *TiresiasLAS) promotes(s tiresiasState) bool {
	return t.cfg.StarvationFactor > 0 && s.queue > 0 && s.last > 0
}

// WakeAfter implements policy.KeyedScheduler: a waiting job in a lower
// queue is promoted once it has waited StarvationFactor x its last run.
func (t *TiresiasLAS) WakeAfter(j *workload.Job) float64 {
	if s := t.find(j.ID); s != nil && t.promotes(*s) {
		return t.cfg.StarvationFactor * s.last
	}
	return math.Inf(1)
}

// Forget drops a finished job's state.
func (t *TiresiasLAS) Forget(id int) {
	if uint(id) < denseIDs {
		if id < len(t.dense) {
			t.dense[id] = tiresiasState{}
		}
		return
	}
	delete(t.state, id)
}
