package main

import (
	"testing"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/replay"
)

// A replay some of whose jobs failed exits non-zero, naming each failed
// job and why, and saying that they are not in the CSVs.
func TestReplayFailedJobsError(t *testing.T) {
	if err := failedJobs(&replay.Result{Jobs: make([]metrics.JobRecord, 3)}, 3); err != nil {
		t.Errorf("no job failed: %v", err)
	}
	res := &replay.Result{Jobs: make([]metrics.JobRecord, 1), Failed: []replay.JobFailure{
		{JobID: 4, Reason: "pod p-1 ended Failed (OOMKilled: killed)"},
		{JobID: 9, Reason: "pod q-0 is bound to n1 without a usable pal.io/bind-info"},
	}}
	want := "2 of 3 jobs failed (not in --jobs-out or --placements-out; the other 1 are):\n" +
		"  job 4: pod p-1 ended Failed (OOMKilled: killed)\n" +
		"  job 9: pod q-0 is bound to n1 without a usable pal.io/bind-info"
	if err := failedJobs(res, 3); err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
