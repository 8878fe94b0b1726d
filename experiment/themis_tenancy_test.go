package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Themis under quota is refused with the flags named (a quota VC places
// on the shared cluster); hived, hived-pm and private run.
func TestThemisTenancyRefused(t *testing.T) {
	o, _ := Preset("artifact")
	o.Scheduler, o.Tenancy = SchedulerThemis, "quota"
	if err := o.validateTenancy(); err == nil || !strings.Contains(err.Error(), "--tenancy quota with --scheduler themis: not supported") {
		t.Errorf("quota: %v", err)
	}
	for _, mode := range []string{"hived", "hived-pm", "private"} {
		o.Tenancy = mode
		if err := o.validateTenancy(); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
}

// pal sim --scheduler themis --tenancy hived: each VC runs a Themis of its
// own over its cells. Two VCs of one 4-GPU node each; in VC A app x's
// 4-GPU job runs from 0 s and app y's 2-GPU job arrives at 100 s (admitted
// at 120 s, 60 s rounds): y waits for x's 600 s lease, then wins the
// auction at 600 s (x and y both hold nothing on a lease, ρ +Inf, and the
// tie goes to y, waiting since 100 s), x is preempted, and x's gang of 4
// cannot run beside y until y ends (its 300 s of work end before its own
// lease does, so y is never preempted). App z in VC B runs from 0 s and is
// never preempted: it is alone in its VC.
func TestThemisInsideHiveD(t *testing.T) {
	dir := t.TempDir()
	cells := filepath.Join(dir, "cells.yaml")
	trace := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(cells, []byte(`physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trace, []byte("job_id,num_gpus,submit_time,duration_s,model,app,vc\n"+
		"1,4,0,100000,BERT,x,A\n2,2,100,300,BERT,y,A\n3,4,0,100000,BERT,z,B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, _ := Preset("artifact")
	o.Scheduler, o.Trace, o.ExtraLoad, o.Tenancy, o.Cells = SchedulerThemis, trace, 0, "hived", cells
	_, runs, err := RunAll(o)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int]string{}
	for _, r := range runs[0].JobRecords {
		byID[r.ID] = fmt.Sprintf("start %g preemptions %d", r.FirstStart, r.Preemptions)
	}
	want := map[int]string{1: "start 0 preemptions 1", 2: "start 600 preemptions 0", 3: "start 0 preemptions 0"}
	for id, w := range want {
		if byID[id] != w {
			t.Errorf("job %d: %s, want %s", id, byID[id], w)
		}
	}
}
