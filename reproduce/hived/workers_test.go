package hived

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/reproduce/paper"
)

// Running settings at once changes no figure: the same tasks, sharing one
// trace and one cells config between schedulers as RunHived does, give the
// same rows one at a time and three at once, in task order. (Under -race
// this is also the check that the shared trace and config are only read.)
func TestRunAnomaliesWorkersAlike(t *testing.T) {
	cells, tr := paper.SyntheticHived(0.85, 0.5, 3)
	var tasks []anomalyTask
	for _, hs := range hivedSchedulers {
		tasks = append(tasks, anomalyTask{wl: "synthetic", load: "L=0.85", cells: cells, tr: tr, hs: hs, long: hs.sched == "fifo"})
	}
	quiet := func(string, ...any) {}
	one, err := runAnomalies(tasks, HivedRound, 1, quiet)
	if err != nil {
		t.Fatal(err)
	}
	three, err := runAnomalies(tasks, HivedRound, 3, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tasks {
		if len(one[i].Rows) == 0 {
			t.Fatalf("task %d: no rows", i)
		}
		// Printed, not DeepEqual: rows hold NaN (no whole-node jobs), never equal to itself.
		if a, b := fmt.Sprintf("%+v", one[i].Rows), fmt.Sprintf("%+v", three[i].Rows); a != b {
			t.Errorf("task %d (%s): rows differ between 1 and 3 workers:\n%s\n%s", i, tasks[i].hs.label, a, b)
		}
		if got := one[i].Rows[0].Scheduler; got != tasks[i].hs.label {
			t.Errorf("task %d: rows of %q, want %q (out of task order)", i, got, tasks[i].hs.label)
		}
	}
}
