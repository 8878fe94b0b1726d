package fairness

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/workload"
)

// AppName is a job's app: its trace's app column, or the job itself
// ("job-ID") when the column is empty, so every job belongs to one app.
func AppName(s *workload.Spec) string {
	if s.App != "" {
		return s.App
	}
	return fmt.Sprintf("job-%d", s.ID)
}

// AppRuns groups a run's finished tracked jobs into apps, by AppName,
// ordered by first arrival then name: what AppStats needs to give each
// app its ρ. Both the Themis room and the simulator's options read a
// run's fairness through it, so every command computes the same ρ.
func AppRuns(tr *workload.Trace, recs []metrics.JobRecord) []AppRun {
	spec := specsByID(tr)
	byApp := map[string]*AppRun{}
	var names []string
	for _, r := range recs {
		s := spec[r.ID]
		if s == nil || !r.Tracked {
			continue
		}
		key := AppName(s)
		a := byApp[key]
		if a == nil {
			a = &AppRun{Name: key, Arrival: math.Inf(1), Finish: math.Inf(-1)}
			byApp[key] = a
			names = append(names, key)
		}
		a.Arrival = math.Min(a.Arrival, r.Arrival)
		a.Finish = math.Max(a.Finish, r.Completion)
		a.Work += s.Iterations * s.IterTime * float64(s.GPUs)
		a.Demand += s.Most()
		a.Jobs++
		a.Critical = math.Max(a.Critical, s.Iterations*s.IterTime*float64(s.GPUs)/float64(s.Most()))
		a.Held += r.GPUSeconds
	}
	out := make([]AppRun, 0, len(names))
	for _, n := range names {
		out = append(out, *byApp[n])
	}
	slices.SortStableFunc(out, func(a, b AppRun) int {
		if a.Arrival != b.Arrival {
			return int(math.Copysign(1, a.Arrival-b.Arrival))
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// JobRuns are a run's finished tracked jobs, for JobRhos. An elastic
// job's ideal is its run time on all the GPUs it can use.
func JobRuns(tr *workload.Trace, recs []metrics.JobRecord) []JobRun {
	spec := specsByID(tr)
	var out []JobRun
	for _, r := range recs {
		if s := spec[r.ID]; s != nil && r.Tracked {
			out = append(out, JobRun{Arrival: r.Arrival, Finish: r.Completion, Ideal: s.Iterations * s.IterTime * float64(s.GPUs) / float64(s.Most()), GPUs: s.Most()})
		}
	}
	return out
}

func specsByID(tr *workload.Trace) map[int]*workload.Spec {
	spec := make(map[int]*workload.Spec, len(tr.Jobs))
	for i := range tr.Jobs {
		spec[tr.Jobs[i].ID] = &tr.Jobs[i]
	}
	return spec
}

// RunFairness is one run's finish-time fairness: every app's ρ, their
// summary, the largest per-job ρ and the GPU time the jobs held.
type RunFairness struct {
	FairSummary
	// JobMaxRho is the largest per-job ρ (JobRhos), the metric the
	// Themis authors' simulator prints.
	JobMaxRho float64 `json:"job_max_rho"`
	// GPUTime is the GPU-seconds held by jobs over the run, tracked or
	// not (the caller fills it from its rounds).
	GPUTime float64   `json:"gpu_time_s"`
	PerApp  []AppStat `json:"-"` // every app's ρ and its terms
}

// Measure is the fairness of a run of trace tr on clusterGPUs GPUs from
// its job records; GPUTime is left for the caller.
func Measure(tr *workload.Trace, recs []metrics.JobRecord, clusterGPUs int) RunFairness {
	var f RunFairness
	f.PerApp = AppStats(AppRuns(tr, recs), clusterGPUs)
	f.FairSummary = Summarize(f.PerApp)
	for _, r := range JobRhos(JobRuns(tr, recs), clusterGPUs) {
		f.JobMaxRho = max(f.JobMaxRho, r)
	}
	return f
}
