//go:build integration

package integration

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The Indexed Job `pal sweep --kubernetes` prints is valid for a 1.37
// apiserver: a server-side dry run accepts it, and a real create keeps
// what the sweep needs (completions, indexed mode, per-index backoff, the
// pods' shard arguments and results volume).
func TestSweepJobManifest(t *testing.T) {
	out, err := exec.Command(palBin, "sweep", "--trace", "sia-philly/1", "--locality-penalty", "1,2", "--placement", "pal,tiresias",
		"--kubernetes", "--shards", "3", "--job-namespace", "jobs", "--image", "registry.example/pal:v1").Output()
	if err != nil {
		t.Fatalf("pal sweep --kubernetes: %v\n%s", err, out)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(out, &job); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	jobs := e.cs.BatchV1().Jobs("jobs")
	dry, err := jobs.Create(ctx, &job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("server-side dry run: %v", err)
	}
	if _, err := jobs.Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("a dry run stored the Job")
	}
	if _, err := jobs.Create(ctx, &job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []*batchv1.Job{dry, got} {
		s := j.Spec
		c := s.Template.Spec.Containers[0]
		if *s.Completions != 3 || *s.Parallelism != 3 || *s.CompletionMode != batchv1.IndexedCompletion || *s.BackoffLimitPerIndex != 2 ||
			c.Image != "registry.example/pal:v1" || !slices.Contains(c.Args, "--shard=$(JOB_COMPLETION_INDEX)/3") || !slices.Contains(c.Args, "--out=/results") ||
			s.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "pal-sweep-results" {
			t.Errorf("job as stored: completions %d mode %s args %q", *s.Completions, *s.CompletionMode, c.Args)
		}
	}
	_ = jobs.Delete(ctx, job.Name, metav1.DeleteOptions{})
}
