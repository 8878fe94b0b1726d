package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dgxCells is 4 nodes of 8 GPUs (GPU pairs and sockets inside) shared by
// VCs a (2 nodes), b and c (1 each).
const dgxCells = `physicalCluster:
  cellTypes:
    PCIE: {childCellType: GPU, childCellNumber: 2}
    SOCKET: {childCellType: PCIE, childCellNumber: 2}
    NODE: {childCellType: SOCKET, childCellNumber: 2, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
  - {cellType: NODE, cellAddress: n2}
  - {cellType: NODE, cellAddress: n3}
virtualClusters:
  a: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
  b: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  c: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`

// Under --tenancy hived and hived-pm as without tenancy: with exact
// durations and no arrival after the forecast's time, every job waiting
// then gets, in --forecast-out, the first start and the completion that
// --jobs-out records for it in the same run (a job preempted before
// then: the completion). Random traces of 30 jobs (seeded) in VCs a, b
// and c of dgxCells, 1 to 8 GPUs (16 in a, in pods of 8), one in five
// opportunistic; FIFO in each VC, packed-sticky; forecasts at the last
// arrival and 600 s later.
func TestSimForecastMatchesJobsOutUnderHiveD(t *testing.T) {
	dir := t.TempDir()
	cells := filepath.Join(dir, "cells.yaml")
	if err := os.WriteFile(cells, []byte(dgxCells), 0o644); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		var b strings.Builder
		b.WriteString("job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,priority\n")
		at := 0
		for i := range 30 {
			at += r.IntN(200)
			vc := []string{"a", "a", "b", "c"}[r.IntN(4)]
			gpus, pod := []int{1, 2, 4, 8}[r.IntN(4)], ""
			if vc == "a" && r.IntN(5) == 0 {
				gpus, pod = 16, "8"
			}
			prio := r.IntN(2)
			if r.IntN(5) == 0 {
				prio = -1
			}
			fmt.Fprintf(&b, "%d,%d,%s,%d,%d,%s,%d\n", i, gpus, pod, at, 60+r.IntN(3000), vc, prio)
		}
		tr := filepath.Join(dir, fmt.Sprintf("t%d.csv", seed))
		if err := os.WriteFile(tr, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"hived", "hived-pm"} {
			for _, T := range []int{at, at + 600} {
				jobs, fc := filepath.Join(dir, "jobs.csv"), filepath.Join(dir, "fc.csv")
				if out, err := run(t, "sim", "--trace", tr, "--cells", cells, "--tenancy", mode, "--round", "60", "--placement", "packed-sticky",
					"--forecast-at", fmt.Sprint(T), "--forecast-out", fc, "--jobs-out", jobs); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				actual := map[string][]string{}
				for _, r := range readJobsOut(t, jobs)[1:] {
					actual[r[0]+"/"+r[1]] = r
				}
				for _, r := range readJobsOut(t, fc)[1:] {
					a := actual[r[0]+"/"+r[2]]
					want := a[8] + "," + a[9] // first start, completion
					if a[13] != "0" {
						want = r[6] + "," + a[9] // preempted before: the end has to match
					}
					if got := r[6] + "," + r[7]; got != want {
						t.Errorf("seed %d %s: job %s forecast at %s: start, end %s; the run: %s", seed, mode, r[2], r[1], got, want)
					}
					compared++
				}
			}
		}
	}
	t.Logf("%d forecasts compared", compared)
	if compared < 100 {
		t.Errorf("only %d waiting jobs compared", compared)
	}
}

// --what-if tenancy=none on a hand case: 2 nodes x 4 GPUs, VCs A and B of
// one node each, FIFO, packed-sticky, 100 s rounds, every job at 0:
// job 0 (A, 4 GPUs, 1000 s) and job 2 (B, 4 GPUs, 300 s) start at 0;
// job 1 (A, 4 GPUs, 500 s) and job 3 (B, 2 GPUs, 200 s) wait. Under the
// cells (the run) job 1 waits for A's node: 1000-1500; job 3 for B's:
// 300-500. Waits 1000 and 300 (mean 650), JCTs 1500 and 500 (mean 1000).
// With one queue over both nodes from the next round, job 1 ranks ahead
// of job 2 (same arrival, lower id), so the sticky frame suspends job 2
// for it at 100: job 1 runs 100-600, job 2 resumes 600-800 (200 s
// left), and job 3, behind it, runs 800-1000. Waits 100 and 800 (mean
// 450), JCTs 600 and 1000 (mean 800): A's wait falls from 1000 to 100,
// B's rises from 300 to 800, as A takes B's node.
func TestSimForecastWhatIfTenancy(t *testing.T) {
	dir := t.TempDir()
	cells, tr, scores := filepath.Join(dir, "cells.yaml"), filepath.Join(dir, "t.csv"), filepath.Join(dir, "s.csv")
	var sc strings.Builder
	sc.WriteString("GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n")
	for g := range 8 {
		fmt.Fprintf(&sc, "%d,%d,1,1,1,1\n", g, g/4)
	}
	for name, text := range map[string]string{
		cells: "physicalCluster:\n  cellTypes:\n    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}\n  physicalCells:\n" +
			"  - {cellType: NODE, cellAddress: n0}\n  - {cellType: NODE, cellAddress: n1}\n" +
			"virtualClusters:\n  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n",
		tr:     "job_id,num_gpus,submit_time,duration_s,vc\n0,4,0,1000,A\n1,4,0,500,A\n2,4,0,300,B\n3,2,0,200,B\n",
		scores: sc.String(),
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fc := filepath.Join(dir, "fc.csv")
	out, err := run(t, "sim", "--trace", tr, "--cells", cells, "--tenancy", "hived", "--gpu-scores", scores, "--locality-penalty", "1",
		"--round", "100", "--placement", "packed-sticky", "--forecast-at", "0", "--forecast-out", fc, "--what-if", "tenancy=none")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := "# forecast what-if tenancy=none, packed-sticky (waiting jobs; themis figures are not forecast)\n" +
		"waiting_jobs now what-if\nstarted 2 of 2 2 of 2\nmean_wait_s 650.0 450.0\nmean_jct_s 1000.0 800.0\n" +
		"mean_wait_s VC A 1000.0 (1 of 1) 100.0 (1 of 1)\nmean_wait_s VC B 300.0 (1 of 1) 800.0 (1 of 1)"
	if got := strings.Join(lines, "\n"); !strings.Contains(got, want) {
		t.Errorf("output lacks\n%s\n\n%s", want, out)
	}
}
