//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/internal/doctest"
)

// TestDocsKubernetesGuide runs the walk-through of docs/kubernetes.md as a
// reader would, in one shell: every sh block there that names this test
// (the docs test, which starts no cluster, checks that they do), in page
// order, from a scratch directory that sees the checkout's files. The
// blocks check themselves: kubectl wait fails unless the gangs are bound.
func TestDocsKubernetesGuide(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is needed to run the Kubernetes guide under CI (.ci/run installs Debian's kubectl)")
		}
		t.Skip("kubectl not found: the Kubernetes guide's walk-through is not run")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doctest.Parse("docs/kubernetes.md", src)
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, b := range blocks {
		if b.Kind != doctest.Skip || b.Test != "TestDocsKubernetesGuide" {
			continue
		}
		for _, c := range b.Commands {
			script = append(script, c.Text)
		}
	}
	if len(script) < 8 {
		t.Fatalf("found %d commands of the walk-through in docs/kubernetes.md", len(script))
	}
	work := t.TempDir()
	if err := doctest.LinkCheckout(root, work); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the cluster and the scheduler the guide started
	// are stopped.
	t.Cleanup(func() {
		stop := exec.Command("bash", "-c", `[ -f pal-dev/scheduler.pid ] && kill $(cat pal-dev/scheduler.pid) 2>/dev/null; [ -d pal-dev ] && pal-bin/pal-kube dev-cluster down --dir pal-dev`)
		stop.Dir = work
		stop.Run()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(work, "pal-dev", "scheduler.log"))
		t.Fatalf("the guide's walk-through failed: %v\n%s\nscheduler log:\n%s", err, out, log)
	}
	for _, want := range []string{"pod/bert-0 condition met", "pod/bert-1 condition met", "pod/resnet-7 condition met", "dev cluster down"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk-through's output lacks %q:\n%s", want, out)
		}
	}
}
