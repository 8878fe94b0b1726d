package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Worked by hand on tenancy/testdata/draws* (nodes 0 and 1 at speed 1,
// 2 and 3 at 2; VCs w and o two node cells each), with w's jobs of one
// 2-GPU pod, 6000 s on median GPUs: job 0 at t = 0, job 1 at t = 10.
// Round 0: job 0 has not waited, nobody is pressed, and hived-speed binds
// the slowest node that keeps w's mean at or below 1.5: a slow node alone
// is 2, so the fastest, node 0 (JCT 6000 s). Round 60: job 1 has waited
// 50 s, w's queue (1 job for 4 GPUs) is longer than the chain's (1 for
// 8), so w binds the fastest free node, node 1 (JCT 50 + 6000 s); by
// speed share alone it would bind node 2 ((1+1+2+2)/4 = 1.5) and run at
// 2 (JCT 50 + 12000 s). w's mean JCT is 6025 s, its speed 1.
func TestSimHivedSpeedQueue(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(trace, []byte("job_id,num_gpus,pod_gpus,submit_time,duration_s,vc\n0,2,2,0,6000,w\n1,2,2,10,6000,w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := drawsRunTrace(t, trace, "--tenancy", "hived-speed", "--check-invariants")
	if w := out.Runs[0].VCs[0]; w.Jobs != 2 || w.MeanJCT != 6025 || w.Speed[0] != 1 {
		t.Errorf("hived-speed: %+v", out.Runs[0])
	}
}
