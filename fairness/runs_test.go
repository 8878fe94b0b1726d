package fairness

import (
	"reflect"
	"testing"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/workload"
)

// AppRuns on hand-built records: app x has a rigid 2-GPU job (100
// iterations of 3 s) and an elastic 1..4-GPU job (200 of 1 s); job 2 has
// no app and is an app of its own; job 3 is untracked load and counts
// nowhere; job 4 belongs to y, which arrives at the same time as job-2
// and so sorts after it by name.
func TestAppRunsByHand(t *testing.T) {
	tr := &workload.Trace{Jobs: []workload.Spec{
		{ID: 0, GPUs: 2, Iterations: 100, IterTime: 3, App: "x"},
		{ID: 1, GPUs: 1, MaxGPUs: 4, Iterations: 200, IterTime: 1, App: "x"},
		{ID: 2, GPUs: 1, Iterations: 50, IterTime: 2},
		{ID: 3, GPUs: 1, Iterations: 10, IterTime: 1, App: "x"},
		{ID: 4, GPUs: 1, Iterations: 10, IterTime: 1, App: "y"},
	}}
	recs := []metrics.JobRecord{
		{ID: 4, GPUs: 1, Tracked: true, Arrival: 10, Completion: 30, Run: 10, GPUSeconds: 10},
		{ID: 0, GPUs: 2, Tracked: true, Arrival: 0, Completion: 400, Run: 300, GPUSeconds: 600},
		// Elastic: the record's GPUs is its minimum, 1; it held 4 GPUs
		// for 60 s and 2 for 40 s.
		{ID: 1, GPUs: 1, Tracked: true, Arrival: 5, Completion: 500, Run: 100, GPUSeconds: 4*60 + 2*40},
		{ID: 2, GPUs: 1, Tracked: true, Arrival: 10, Completion: 120, Run: 100, GPUSeconds: 100},
		{ID: 3, GPUs: 1, Tracked: false, Arrival: 0, Completion: 900, Run: 10, GPUSeconds: 10},
	}
	want := []AppRun{
		// W = 100·3·2 + 200·1·1; D = 2 + 4; critical max(300, 200/4);
		// held 300·2 + (4·60 + 2·40), not 300·2 + 100·1.
		{Name: "x", Arrival: 0, Finish: 500, Work: 800, Demand: 6, Jobs: 2, Critical: 300, Held: 920},
		{Name: "job-2", Arrival: 10, Finish: 120, Work: 100, Demand: 1, Jobs: 1, Critical: 100, Held: 100},
		{Name: "y", Arrival: 10, Finish: 30, Work: 10, Demand: 1, Jobs: 1, Critical: 10, Held: 10},
	}
	if got := AppRuns(tr, recs); !reflect.DeepEqual(got, want) {
		t.Errorf("AppRuns:\n got %+v\nwant %+v", got, want)
	}
	// The elastic job's ideal is its run on all 4 GPUs.
	jobs := JobRuns(tr, recs)
	if len(jobs) != 4 || jobs[2] != (JobRun{Arrival: 5, Finish: 500, Ideal: 50, GPUs: 4}) {
		t.Errorf("JobRuns: %+v", jobs)
	}
}
