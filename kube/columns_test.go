package kube

import (
	"strings"
	"testing"
)

// The scores ConfigMap refuses a column it does not have.
func TestNodeScoresUnknownColumn(t *testing.T) {
	_, err := ReadNodeScores("cm", strings.NewReader("node,gpu_index,class,score,uuid\nn0,0,A,1,u\n"))
	want := `cm:1: field "uuid": unknown column (known columns: node,gpu_index,class,score; --allow-extra-columns ignores unknown columns)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
