package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// clusterOnly are the module paths pal must not link: the Kubernetes
// client and API types, controller frameworks and the Prometheus client.
// They belong to pal-kube (see the package doc for why).
var clusterOnly = []string{"k8s.io/", "sigs.k8s.io/", "github.com/prometheus/"}

// pal's import graph (what the binary links, not its tests') holds none
// of the cluster's packages, and pal-kube's does: a command that needs the
// client goes in cmd/pal-kube.
func TestResearchBinaryLinksNoClusterClient(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	pal := deps(".")
	if !slices.Contains(pal, "github.com/palsched/pal/sim") || !slices.Contains(pal, "github.com/spf13/cobra") {
		t.Fatalf("go list -deps gave %d packages without the simulator or cobra: the check is broken", len(pal))
	}
	var bad []string
	for _, p := range pal {
		for _, c := range clusterOnly {
			if strings.HasPrefix(p, c) {
				bad = append(bad, p)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("pal links %d cluster packages (client-go among them: %v), first %q: they belong in cmd/pal-kube (go list -deps -f '{{.ImportPath}}: {{.Imports}}' . says which import brings them)",
			len(bad), slices.ContainsFunc(bad, func(p string) bool { return strings.HasPrefix(p, "k8s.io/client-go/") }), bad[:min(5, len(bad))])
	}
	if kube := deps("../pal-kube"); !slices.Contains(kube, "k8s.io/client-go/kubernetes") {
		t.Errorf("pal-kube does not link k8s.io/client-go/kubernetes: the check looks at the wrong graph")
	}
}
