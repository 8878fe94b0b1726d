package main

import (
	"testing"
	"time"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/kube"
)

// The Kubernetes driver's defaults are the simulator's artifact preset,
// written out in kube (which does not import experiment): the two must
// agree field by field.
func TestKubeDefaultsFollowArtifactPreset(t *testing.T) {
	o, err := experiment.Preset("artifact")
	if err != nil {
		t.Fatal(err)
	}
	c := kube.DefaultConfig()
	got := []any{c.Scheduler, c.PMFirstTieBreak, c.LocalityPenalty, c.KStrategy, c.Seed, c.StarvationGuard.Duration, c.ClassMap}
	want := []any{o.Scheduler, o.TieBreak, o.LocalityPenalty, o.KStrategy, o.Seed, time.Duration(o.StarvationGuard * float64(time.Second)), o.ClassMap}
	names := []string{"scheduler", "pmfirstTieBreak", "localityPenalty", "kStrategy", "seed", "starvationGuard", "classMap"}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("kube default %s = %v, the artifact preset has %v", names[i], got[i], want[i])
		}
	}
}
