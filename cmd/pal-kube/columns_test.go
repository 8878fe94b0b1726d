package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/variability"
)

// The export's UUID map refuses a column it does not have.
func TestUUIDMapUnknownColumn(t *testing.T) {
	gs, err := variability.ReadGPUScores("g.csv", strings.NewReader("GPU_ID,Node_ID,GPU_UUID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,u0,1,1,1,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(t.TempDir(), "map.csv")
	if err := os.WriteFile(m, []byte("uuid,node,index,host\nu0,n0,0,h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = gpuKeys(gs, m, "node-%d")
	want := m + `:1: field "host": unknown column (known columns: uuid,node,index; --allow-extra-columns ignores unknown columns)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
