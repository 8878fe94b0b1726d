package experiment

import (
	"strings"
	"testing"
)

// Themis under a tenancy stage is refused with the flags named (it used
// to panic in the stage: no placement named themis); private, each VC
// alone, runs.
func TestThemisTenancyRefused(t *testing.T) {
	for _, mode := range []string{"quota", "hived", "hived-pm"} {
		o, _ := Preset("artifact")
		o.Scheduler, o.Tenancy = SchedulerThemis, mode
		err := o.validateTenancy()
		if err == nil || !strings.Contains(err.Error(), "--tenancy "+mode+" with --scheduler themis: not supported") {
			t.Errorf("%s: %v", mode, err)
		}
	}
	o, _ := Preset("artifact")
	o.Scheduler, o.Tenancy = SchedulerThemis, "private"
	if err := o.validateTenancy(); err != nil {
		t.Errorf("private: %v", err)
	}
}
