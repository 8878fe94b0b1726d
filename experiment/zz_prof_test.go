package experiment

import (
	"github.com/palsched/pal/workload"
	"os"
	"testing"
)

func TestZZProf(t *testing.T) {
	sched := os.Getenv("ZZ_SCHED")
	if sched == "" {
		t.Skip()
	}
	o, _ := Preset("artifact")
	o.Trace = os.Getenv("ZZ_TRACE")
	o.Cluster = os.Getenv("ZZ_CL")
	o.Round = 300
	o.ExtraLoad = 0
	o.Pinned = false
	o.Scheduler = sched
	o.Placements = os.Getenv("ZZ_PL")
	_ = workload.Spec{}
	if _, _, err := RunAll(o); err != nil {
		t.Fatal(err)
	}
}
