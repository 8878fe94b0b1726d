package variability

import (
	"strings"
	"testing"
)

// The apps table and the GPU table refuse a column they do not have; a
// profile, a measurement tool's own dump, takes any.
func TestUnknownColumns(t *testing.T) {
	const hint = "; --allow-extra-columns ignores unknown columns)"
	_, err := ReadApps("a.csv", strings.NewReader("app,dram_util,fu_util,sm_util\nx,1,2,3\n"))
	if want := `a.csv:1: field "sm_util": unknown column (known columns: app,dram_util,fu_util` + hint; err == nil || err.Error() != want {
		t.Errorf("apps: got %v, want %s", err, want)
	}
	// Case folds: the artifact's dump spells columns as it likes.
	in := ",gpu_id,GPU_UUID,Local_GPU_ID,Node_ID,IP_addr,IN_USE,JOB_IDS,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,u,0,0,ip,0,,1,1,1,1\n"
	if _, err := ReadGPUScores("g.csv", strings.NewReader(in)); err != nil {
		t.Errorf("artifact dump: %v", err)
	}
	_, err = ReadGPUScores("g.csv", strings.NewReader("GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD,node_id\n0,0,1,1,1,1,0\n"))
	if want := `g.csv:1: field "node_id": column appears twice in the header`; err == nil || err.Error() != want {
		t.Errorf("scores: got %v, want %s", err, want)
	}
	_, err = ReadGPUScores("g.csv", strings.NewReader("GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD,PerfVar_class\n0,0,1,1,1,1,1\n"))
	if want := `g.csv:1: field "PerfVar_class": unknown column (known columns: GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD,GPU_UUID,uuid,Local_GPU_ID,IP_addr,IN_USE,JOB_IDS,node_name,gpu_index` + hint; err == nil || err.Error() != want {
		t.Errorf("scores: got %v, want %s", err, want)
	}
	if _, err := ReadProfile("p.csv", strings.NewReader("perf,uuid,kern_sum\n1,a,3\n")); err != nil {
		t.Errorf("profile: %v", err)
	}
}
