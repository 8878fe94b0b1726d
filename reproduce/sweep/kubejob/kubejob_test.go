package kubejob

import (
	"slices"
	"strings"
	"testing"
)

// Each pod runs as many workers as its CPU request, rounded up to whole
// CPUs (at least one); a request that is not a positive quantity is
// refused by name, as the apiserver would refuse it.
func TestWorkersFromCPU(t *testing.T) {
	for _, tc := range []struct {
		cpu     string
		workers string // "" when refused
	}{
		{"2", "--workers=2"}, {"1500m", "--workers=2"}, {"0.5", "--workers=1"}, {"1m", "--workers=1"},
		{"3000m", "--workers=3"}, {"3001m", "--workers=4"}, {"4e0", "--workers=4"}, {"2k", "--workers=2000"},
		{"0", ""}, {"-1", ""}, {"two", ""}, {"2 ", ""}, {"2x", ""}, {"", ""}, {"1.5.0", ""},
	} {
		j, err := Build(Spec{Name: "s", Image: "pal:1", Shards: 2, Claim: "c", CPU: tc.cpu, Memory: "1Gi"})
		if tc.workers == "" {
			if err == nil || !strings.Contains(err.Error(), "--pod-cpu") {
				t.Errorf("cpu %q: got %v, want a --pod-cpu error", tc.cpu, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("cpu %q: %v", tc.cpu, err)
			continue
		}
		if args := j.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, tc.workers) {
			t.Errorf("cpu %q: args %q, want %s", tc.cpu, args, tc.workers)
		}
	}
	for _, mem := range []string{"2Gi", "512Mi", "1e9", "100M"} {
		if _, err := Build(Spec{Name: "s", Image: "pal:1", Shards: 1, Claim: "c", CPU: "1", Memory: mem}); err != nil {
			t.Errorf("memory %q: %v", mem, err)
		}
	}
	for _, mem := range []string{"2GB", "0Gi", "Gi"} {
		if _, err := Build(Spec{Name: "s", Image: "pal:1", Shards: 1, Claim: "c", CPU: "1", Memory: mem}); err == nil || !strings.Contains(err.Error(), "--pod-memory") {
			t.Errorf("memory %q: got %v, want a --pod-memory error", mem, err)
		}
	}
}
