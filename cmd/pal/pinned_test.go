package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pinnedCells: two nodes of 4 GPUs; VC A holds node-0 by dynamic binding
// (a NODE cell), VC B is pinned to node-1 (pinned cell B-NODE).
const pinnedCells = `physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: node-0}
  - {cellType: NODE, cellAddress: node-1, pinnedCellId: B-NODE}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {pinnedCells: [{pinnedCellId: B-NODE}]}
`

// A VC pinned to one node runs its guaranteed 4-GPU job on that node, at
// once, beside the other VC's 4-GPU job on the other node; without
// pinned_cell the job is refused naming the pinned cell to ask for.
func TestPinnedCellJob(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cells := write("cells.yaml", pinnedCells)
	trace := write("trace.csv", "job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,pinned_cell\n0,4,4,0,600,A,\n1,4,4,0,600,B,B-NODE\n")
	scores := write("scores.csv", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n"+
		"0,0,1,1,1,1\n1,0,1,1,1,1\n2,0,1,1,1,1\n3,0,1,1,1,1\n4,1,1,1,1,1\n5,1,1,1,1,1\n6,1,1,1,1,1\n7,1,1,1,1,1\n")
	jobs := filepath.Join(dir, "jobs.csv")
	args := []string{"sim", "--trace", trace, "--cells", cells, "--tenancy", "hived", "--placement", "packed-sticky",
		"--round", "60", "--gpu-scores", scores, "--check-invariants", "--jobs-out", jobs}
	if out, err := run(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	recs := readJobsOut(t, jobs)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// Job 1 (VC B) on node 1, GPUs 4-7, from t = 0; job 0 (VC A) on node 0.
	want := map[string][3]string{"0": {"0.00", "0", "0;1;2;3"}, "1": {"0.00", "1", "4;5;6;7"}}
	for _, r := range recs[1:] {
		w, ok := want[r[col["job_id"]]]
		if !ok {
			continue
		}
		got := [3]string{r[col["first_start_s"]], r[col["nodes"]], r[col["gpu_ids"]]}
		if got != w {
			t.Errorf("job %s: start, nodes, GPUs = %v, want %v", r[col["job_id"]], got, w)
		}
		delete(want, r[col["job_id"]])
	}
	if len(want) > 0 {
		t.Errorf("jobs missing from the output: %v", want)
	}
	for _, c := range []struct{ trace, want string }{
		{"job_id,num_gpus,pod_gpus,submit_time,duration_s,vc\n0,4,4,0,600,B\n",
			`:2: field "pinned_cell": job 0: VC B's cells are all pinned (pinned cells B-NODE): name one in pinned_cell`},
		{"job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,pinned_cell\n0,4,4,0,600,A,B-NODE\n",
			`:2: field "pinned_cell": job 0: pinned cell "B-NODE" is not VC A's (VC A has no pinned cells)`},
		{"job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,pinned_cell\n0,4,4,0,600,B,X\n",
			`:2: field "pinned_cell": job 0: unknown pinned cell "X"`},
		{"job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,pinned_cell,priority\n0,4,4,0,600,B,B-NODE,-1\n",
			`:2: field "pinned_cell": job 0: an opportunistic job cannot ask for pinned cell "B-NODE"`},
		{"job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,leaf_cell_type\n0,4,4,0,600,A,K80\n",
			`:2: field "leaf_cell_type": job 0: unknown leaf cell type "K80" (the cells have GPU)`},
		{"job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,pinned_cell,leaf_cell_type\n0,4,4,0,600,B,B-NODE,GPU\n", ""},
	} {
		p := write("bad.csv", c.trace)
		args[2] = p
		_, err := run(t, args...)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.trace, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), p+c.want) {
			t.Errorf("%q:\n got %v\nwant %s%s", c.trace, err, p, c.want)
		}
	}
}

// The two cases of pinned cells and leaf types beside ordinary cells
// (tenancy/testdata/pools-*), run through `pal sim` and derived by hand in
// policy/tenant's pools_test.go, where the same traces run on the stage
// itself. Three 4-GPU nodes, n1 pinned as A-PIN, VC A = one node cell +
// A-PIN: the pinned 2-GPU jobs share n1 (GPUs 4-7), the unpinned 4-GPU job
// gets A's node cell, bound to n0, and the second unpinned one waits for it
// until 600 s although A-PIN is idle from 300 s. Nodes k0 (K80 x4) and v0
// (V100 x4) in one VC: the V100 job runs on v0, the job naming nothing on
// the first leaf type with room (K80), the K80 job on k0; the 4-GPU job
// naming nothing waits for room and runs on v0 from 600 s, the second V100
// job after it from 900 s. The same under packed-sticky and spread; and
// --tenancy private (each VC alone, through the same pools) runs too.
func TestPoolsSim(t *testing.T) {
	const dir = "../../tenancy/testdata/"
	cases := []struct {
		name, scores string
		want         map[string][3]string // job id → start, nodes, GPUs
	}{{
		name: "pools-pinned", scores: "uniform-12-gpus.csv",
		want: map[string][3]string{"0": {"0.00", "1", "4;5"}, "1": {"0.00", "1", "6;7"}, "2": {"0.00", "0", "0;1;2;3"},
			"3": {"0.00", "2", "8;9;10;11"}, "4": {"600.00", "0", "0;1;2;3"}},
	}, {
		name: "pools-skus", scores: "h3-uniform-gpus.csv",
		want: map[string][3]string{"0": {"0.00", "1", "4;5;6;7"}, "1": {"0.00", "0", "0;1"}, "2": {"0.00", "0", "2;3"},
			"3": {"600.00", "1", "4;5;6;7"}, "4": {"900.00", "1", "4;5;6;7"}},
	}}
	for _, c := range cases {
		for _, tenancy := range []string{"hived", "private"} {
			for _, placement := range []string{"packed-sticky", "spread"} {
				jobs := filepath.Join(t.TempDir(), "jobs.csv")
				args := []string{"sim", "--trace", dir + c.name + "-trace.csv", "--cells", dir + c.name + ".yaml", "--tenancy", tenancy,
					"--placement", placement, "--round", "60", "--gpu-scores", dir + c.scores, "--check-invariants", "--jobs-out", jobs}
				out, err := run(t, args...)
				if err != nil {
					t.Fatalf("%s %s %s: %v\n%s", c.name, tenancy, placement, err, out)
				}
				if tenancy == "private" {
					continue // its GPU ids are the private clusters'
				}
				recs := readJobsOut(t, jobs)
				col := map[string]int{}
				for i, h := range recs[0] {
					col[h] = i
				}
				for _, r := range recs[1:] {
					w := c.want[r[col["job_id"]]]
					if got := [3]string{r[col["first_start_s"]], r[col["nodes"]], r[col["gpu_ids"]]}; got != w {
						t.Errorf("%s %s: job %s: start, nodes, GPUs = %v, want %v", c.name, placement, r[col["job_id"]], got, w)
					}
				}
			}
		}
	}
}
