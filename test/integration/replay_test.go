//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/replay"
	"github.com/palsched/pal/workload"
)

// Two replays of the same trace on one cluster both finish: each names
// its pods after its own run id. On one 4-GPU node under FIFO and
// packed-sticky, job 1 (2 GPUs) gets devices 0,1 and job 2 (2 GPUs) 2,3,
// so each replay's records say node 0 with GPUs 0,1 and 2,3, origin
// trace, as pal sim --jobs-out would.
func TestReplayTwice(t *testing.T) {
	e := newEnv(t, 1, 4)
	cfg := testConfig()
	cfg.Period = kube.Duration{Duration: 2 * time.Second}
	cfg.AlignPeriod, cfg.ArrivalDelay = true, kube.Duration{}
	cfg.Scheduler, cfg.Placement = "fifo", "packed-sticky"
	e.runScheduler(cfg, "pal")
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte("job_id,num_gpus,submit_time,duration,model\n1,2,0,360,BERT\n2,2,0,360,BERT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.ReadTraceFile(path, workload.DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for i := range 2 {
		res, err := replay.Run(context.Background(), e.cs, replay.Options{Trace: tr, Round: 360, Speedup: 180,
			Namespace: "pal-replay", SchedulerName: "pal", Timeout: time.Minute, Log: t.Logf})
		if err != nil {
			t.Fatalf("replay %d: %v", i+1, err)
		}
		runs = append(runs, res.Run)
		for k, want := range [][]int{{0, 1}, {2, 3}} {
			r := res.Jobs[k]
			if r.ID != k+1 || r.Origin != "trace" || !slices.Equal(r.Nodes, []int{0}) || !slices.Equal(r.GPUIDs, want) {
				t.Errorf("replay %d job %d: id %d origin %q nodes %v gpu_ids %v; want id %d, trace, [0], %v", i+1, k+1, r.ID, r.Origin, r.Nodes, r.GPUIDs, k+1, want)
			}
		}
	}
	if runs[0] == runs[1] {
		t.Errorf("both replays ran as %s", runs[0])
	}
}
