// Package workload holds what a scheduler is asked to run: job
// specifications, the per-model table that turns a trace's iteration
// counts into time, trace readers and generators, and each job's runtime
// state while a driver runs it.
package workload

import (
	"fmt"

	"github.com/palsched/pal/variability"
)

// Spec is a job as submitted. It never changes once read.
//
// The fields a driver's round loop reads for every running job (ID,
// demand and the most an elastic job may use, submit time, length,
// class) come first, in 56 bytes: see Job.
type Spec struct {
	ID   int
	GPUs int // gang size: all or nothing
	// Class sits beside GPUs: a placer's pass over the order reads the
	// two of every job (a Job's Spec starts in its second cache line, so
	// both lie in it).
	Class variability.Class
	// MaxGPUs (optional column max_gpus) makes the job elastic: it runs on
	// any GPU count from GPUs to MaxGPUs, its iterations going faster in
	// proportion to its GPUs (as in the Themis authors' simulator: a job
	// on k GPUs gains k/GPUs times the iterations of its minimum, times
	// the placement factor of those k). 0, or GPUs, is a rigid gang.
	MaxGPUs    int
	Submit     float64 // seconds, unrounded
	Iterations float64 // total iterations to run
	IterTime   float64 // seconds per iteration on a median GPU
	Model      string
	Tracked    bool // counted in metrics; untracked jobs are background load
	// App groups jobs for finish-time fairness (one hyper-parameter
	// search); "" means the job is an app of its own.
	App string

	// Tenancy (optional trace columns vc, priority, pod_gpus): the tenant's
	// virtual cluster ("" = the only one), its priority inside the VC
	// (HiveD's: -1 opportunistic, 0..1000 guaranteed) and the GPUs of each
	// pod (0: the job may spread freely; else GPUs/PodGPUs pods, none of
	// which spans nodes).
	VC         string
	VCPriority int
	PodGPUs    int
	// PinnedCell (optional column pinned_cell) runs the job inside one of
	// its VC's pinned cells; LeafCellType (leaf_cell_type) restricts it
	// to one device type of the cells. "" means any.
	PinnedCell   string
	LeafCellType string

	Source string // file the job came from, for error messages
	Line   int    // 1-based line in Source (0 for generated jobs)
	// Seconds says the row gave its length as duration_s (seconds on a
	// median GPU) rather than duration (iterations), so that a message
	// about the length names the column the user wrote.
	Seconds bool
}

// Elastic reports whether the job may run on more GPUs than its minimum.
func (s *Spec) Elastic() bool { return s.MaxGPUs > s.GPUs }

// Most is the most GPUs the job can use (GPUs for a rigid gang).
func (s *Spec) Most() int { return max(s.GPUs, s.MaxGPUs) }

// Fits reports whether the job can run on n GPUs: exactly GPUs for a
// rigid gang, GPUs..MaxGPUs for an elastic job.
func (s *Spec) Fits(n int) bool { return n == s.GPUs || (n > s.GPUs && n <= s.MaxGPUs) }

// IdealRuntime is the run time on median GPUs inside one node.
func (s *Spec) IdealRuntime() float64 { return s.Iterations * s.IterTime }

// DurationField is the trace column the job's length came from.
func (s *Spec) DurationField() string {
	if s.Seconds {
		return "duration_s"
	}
	return "duration"
}

// DurationText is the job's length as its row gave it, for messages:
// "N iterations x T s (model) = S s" or "S s".
func (s *Spec) DurationText() string {
	if s.Seconds {
		return fmt.Sprintf("%.6g s", s.IdealRuntime())
	}
	return fmt.Sprintf("%g iterations x %g s (%s) = %.6g s", s.Iterations, s.IterTime, s.Model, s.IdealRuntime())
}

// DurationHint is the reminder a message about a too-long row ends
// with: iterations are easily mistaken for seconds, seconds are not.
func (s *Spec) DurationHint() string {
	if s.Seconds {
		return ""
	}
	return "; the duration column counts iterations, not seconds (duration_s takes seconds)"
}

// Job is a Spec plus the state a driver keeps while running it. Policies
// read it; only the driver writes it.
//
// Field order is for the round loop, which visits every running job
// several times a round (credit, key, placement, apply): a simulation of
// a million jobs keeps tens of thousands running, more than the CPU's
// cache holds, so each visit waits on memory for every cache line of a job
// it touches. The state it touches every round comes first and the Spec
// (whose first fields it reads) right after it, so that inside the
// simulator's job record they share three cache lines; what is read only
// at a launch or a preemption follows the Spec (LastGPUs to MoveCost, in
// one line of that record), then what is read only at the end.
type Job struct {
	Executed       float64 // iterations done (fractional)
	Attained       float64 // seconds spent running (wall time, 1-D service)
	GPUService     float64 // GPU-seconds spent running (2-D service)
	PM, Loc        float64 // slowdown factors in force while running
	Debt           float64 // see MoveCost
	RoundsRun      int
	Priority       int     // lower runs first; 999 by default, 1 after starvation
	SinceScheduled float64 // seconds waiting since it last ran (or arrived)
	// GPUsHeld is in the second cache line of a Job with Spec's ID,
	// GPUs and Class, which a placer's pass over the order reads of
	// every job (whether it runs, its size, its class); in the
	// simulator's record, 32 bytes on, it still lies within one line.
	GPUsHeld   []int // ascending; nil when not running
	Migrations int

	Spec

	// LastGPUs are the GPUs it held when it last stopped running
	// (preempted or finished); a running job's are GPUsHeld.
	LastGPUs    []int
	FirstStart  float64 // -1 until first launched
	Preemptions int

	// MoveCost is what moving this job costs (set by the driver when the
	// job arrives; placers weigh it against a move's gain). Debt is the
	// lost progress still to pay, in seconds: every migration and every
	// preemption adds its cost once, and the job pays it off before it
	// progresses again. LostGPUSeconds is what it has paid, times its GPUs.
	MoveCost MoveCost

	Completion float64 // -1 until finished

	LostGPUSeconds float64
	// MoveGain sums the time the placer expected each of the job's
	// migrations to save (policy.MoveJudge); MinMoveMargin is the
	// smallest gain minus migration cost among them (meaningful only
	// when Migrations > 0). A migration-aware placer keeps it positive.
	MoveGain, MinMoveMargin float64
}

// DefaultPriority is Blox's priority of every job until starvation.
const DefaultPriority = 999

// NewJob makes the runtime state of a submitted job.
func NewJob(s Spec) *Job {
	return &Job{Spec: s, Priority: DefaultPriority, FirstStart: -1, Completion: -1}
}

// Running reports whether the job holds GPUs.
func (j *Job) Running() bool { return j.GPUsHeld != nil }

// Progress runs the job for d seconds on GPUs at slowdown PM x Loc: a
// debt left by a move is paid first (no progress until it is), the rest
// advances Executed. It returns the debt paid. Both drivers credit a
// running job with it, so a move's gain is weighed against the same
// remaining work in each.
func (j *Job) Progress(d float64) (paid float64) {
	if j.Debt > 0 {
		// Restoring after a move: no progress until it is paid.
		paid = min(j.Debt, d) // math.Min's rules (NaN, signed zeros), inlined
		j.Debt -= paid
		j.Executed += (d - paid) / (j.PM * j.Loc * j.IterTime)
		return paid
	}
	// Same operation order as the PAL artifact: the effective iteration
	// time first, then the division.
	j.Executed += d / (j.PM * j.Loc * j.IterTime)
	return 0
}

// Remaining is the iterations left.
func (j *Job) Remaining() float64 { return j.Iterations - j.Executed }
