//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/palsched/pal/internal/helmbin"
)

// The Helm chart, rendered by helm with its default values into the
// namespace the dev cluster made, applies to the apiserver, and the
// scheduler does its whole job under the chart's service account, role
// and config, with nothing more allowed: the check TestDeployAndRBAC runs
// on deploy/.
func TestChartInstallAndRBAC(t *testing.T) {
	helm, err := helmbin.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the chart test needs helm under CI: %v", err)
		}
		t.Skipf("chart test: %v", err)
	}
	out, err := helmbin.Template(helm, filepath.Join("..", "..", "deploy", "chart"), "pal", "pal-system")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 1, 4)
	objs := map[string]runtime.Object{}
	applyManifests(t, e.cs, "helm template deploy/chart", out, objs)
	if len(objs) != 10 { // with the admission policy and its binding
		t.Errorf("applied %d kinds from the chart, want 10", len(objs))
	}
	checkInstalled(t, e, "deploy/chart", objs)
}
