// Package metrics turns what happened to each job in a run into the
// numbers schedulers are compared by: job completion time (mean, median,
// tail), makespan, waiting, GPU utilisation, preemptions and migrations.
//
// Two 99th percentiles are reported because the PAL artifact prints
// sorted(jct)[int(0.99 n)] while its plot scripts (and most papers) use
// linear interpolation between order statistics.
package metrics

import (
	"math"
	"slices"
)

// JobRecord is one job's life in a run.
type JobRecord struct {
	ID      int    `json:"id"`
	Model   string `json:"model"`
	Class   string `json:"class"`
	GPUs    int    `json:"gpus"`
	Tracked bool   `json:"tracked"`
	// Origin is "trace" for a trace row, "extra-pinned" or
	// "extra-generated" for a background arrival (set by the caller that
	// knows the trace; empty when unknown).
	Origin     string  `json:"origin,omitempty"`
	Arrival    float64 `json:"arrival_s"`
	FirstStart float64 `json:"first_start_s"`
	Completion float64 `json:"completion_s"`
	JCT        float64 `json:"jct_s"`
	Run        float64 `json:"run_s"` // time holding GPUs (whole rounds)
	// GPUSeconds is the GPU time the job held: each round it ran times
	// the GPUs it held then. An elastic job holds more than GPUs (its
	// minimum) when it is given more, so Run × GPUs undercounts it.
	GPUSeconds  float64 `json:"gpu_s"`
	Wait        float64 `json:"wait_s"` // JCT minus run time: queueing plus suspensions
	Preemptions int     `json:"preemptions"`
	Migrations  int     `json:"migrations"`
	// LostGPUSeconds is the GPU time the job's moves cost it: the lost
	// progress it paid (MoveCost per migration or preemption) times its
	// GPUs. 0 when moves are free.
	LostGPUSeconds float64 `json:"lost_gpu_s"`
	// MoveGain is the time the placer expected the job's migrations to
	// save, summed, and MinMoveMargin the smallest gain minus migration
	// cost among them (both 0 without a migration, or when the placer
	// does not price moves).
	MoveGain      float64 `json:"move_gain_s,omitempty"`
	MinMoveMargin float64 `json:"min_move_margin_s,omitempty"`
	// Tenancy: the job's VC and priority, and where it last ran (node and
	// GPU ids, ascending).
	VC       string `json:"vc,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Nodes    []int  `json:"nodes,omitempty"`
	GPUIDs   []int  `json:"gpu_ids,omitempty"`
}

// Summary aggregates the tracked jobs of one run.
type Summary struct {
	Jobs        int     `json:"jobs"`
	AvgJCT      float64 `json:"avg_jct_s"`
	P50JCT      float64 `json:"p50_jct_s"`
	P99JCT      float64 `json:"p99_jct_s"`
	P99JCTIndex float64 `json:"p99_jct_artifact_s"` // sorted[int(0.99 n)]
	MaxJCT      float64 `json:"max_jct_s"`
	AvgWait     float64 `json:"avg_wait_s"`
	// Makespan is last completion minus first arrival of tracked jobs;
	// EndTime is the last completion on the simulator clock (from 0).
	Makespan    float64 `json:"makespan_s"`
	EndTime     float64 `json:"end_time_s"`
	Utilization float64 `json:"utilization"`
	Preemptions int     `json:"preemptions"`
	Migrations  int     `json:"migrations"`
	// LostGPUSeconds sums JobRecord.LostGPUSeconds over every job, like
	// Preemptions and Migrations.
	LostGPUSeconds float64 `json:"lost_gpu_s"`
}

// Summarize computes the summary over the tracked jobs. busyGPUSeconds and
// capacityGPUSeconds give utilisation over the run.
func Summarize(recs []JobRecord, busyGPUSeconds, capacityGPUSeconds float64) Summary {
	var t Tally
	for i := range recs {
		t.Add(&recs[i])
	}
	return t.Summary(busyGPUSeconds, capacityGPUSeconds)
}

// Tally is Summarize one record at a time, for a driver that does not
// keep every record. Records must come in the order Summarize would see
// them (sums are taken in that order, so results match bit for bit).
type Tally struct {
	s           Summary
	jct         []float64
	first, last float64
	started     bool
}

// Add counts one finished job.
func (t *Tally) Add(r *JobRecord) {
	if !t.started {
		t.first, t.last, t.started = math.Inf(1), math.Inf(-1), true
	}
	s := &t.s
	s.Preemptions += r.Preemptions
	s.Migrations += r.Migrations
	s.LostGPUSeconds += r.LostGPUSeconds
	if !r.Tracked {
		return
	}
	t.jct = append(t.jct, r.JCT)
	s.AvgWait += r.Wait
	t.first = math.Min(t.first, r.Arrival)
	t.last = math.Max(t.last, r.Completion)
}

// Summary is the summary of the jobs added so far.
func (t *Tally) Summary(busyGPUSeconds, capacityGPUSeconds float64) Summary {
	s := t.s
	jct := t.jct
	s.Jobs = len(jct)
	if s.Jobs == 0 {
		return s
	}
	s.AvgJCT = Mean(jct)
	s.AvgWait /= float64(s.Jobs)
	jct = slices.Clone(jct)
	slices.Sort(jct)
	s.P50JCT = Quantile(jct, 0.5)
	s.P99JCT = Quantile(jct, 0.99)
	s.P99JCTIndex = jct[int(0.99*float64(len(jct)))]
	s.MaxJCT = jct[len(jct)-1]
	s.Makespan = t.last - t.first
	s.EndTime = t.last
	if capacityGPUSeconds > 0 {
		s.Utilization = busyGPUSeconds / capacityGPUSeconds
	}
	return s
}

// Mean is the arithmetic mean, summed in order (so results are
// reproducible bit for bit).
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	return sum / float64(len(x))
}

// Quantile is the linearly interpolated quantile of sorted data
// (pandas' default, numpy's "linear").
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := p * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Median is Quantile 0.5 of unsorted data (the mean of the two middle
// values for an even count); it sorts a copy.
func Median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return Quantile(s, 0.5)
}

// GeoMean is the geometric mean of positive values.
func GeoMean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += math.Log(v)
	}
	return math.Exp(s / float64(len(x)))
}
