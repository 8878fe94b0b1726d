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
	deps := func(pkg string) []string { return listDeps(t, pkg) }
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

// listDeps is what pkg's binary links (go list -deps), tests left out.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// plottingOnly are the module paths of the plotting library and what only
// it brings (go-latex's fonts and symbol tables): pal must not link them,
// pal-reproduce does.
var plottingOnly = []string{"gonum.org/v1/plot", "codeberg.org/go-latex/", "codeberg.org/go-fonts/", "codeberg.org/go-pdf/", "git.sr.ht/~sbinet/gg", "github.com/golang/freetype/", "github.com/ajstarks/svgo"}

// pal links no plotting library: its package initialisation (fonts
// parsed) was about half of pal's start-up above a bare Go program. The
// commands that draw are in cmd/pal-reproduce, and report/draw is the one
// package that imports gonum.org/v1/plot.
func TestResearchBinaryLinksNoPlotting(t *testing.T) {
	linked := func(deps []string) []string {
		var hit []string
		for _, p := range deps {
			for _, c := range plottingOnly {
				if strings.HasPrefix(p, c) {
					hit = append(hit, p)
				}
			}
		}
		return hit
	}
	pal := listDeps(t, ".")
	if !slices.Contains(pal, "github.com/palsched/pal/report") {
		t.Fatalf("go list -deps gave %d packages without package report: the check is broken", len(pal))
	}
	if bad := linked(pal); len(bad) > 0 {
		t.Errorf("pal links %d plotting packages, first %q: a package pal links imports gonum.org/v1/plot (only report/draw may; go list -deps -f '{{.ImportPath}}: {{.Imports}}' . says which), or a command that draws is in cmd/pal instead of cmd/pal-reproduce",
			len(bad), bad[:min(5, len(bad))])
	}
	rep := listDeps(t, "../pal-reproduce")
	for _, want := range []string{"gonum.org/v1/plot", "github.com/palsched/pal/report/draw"} {
		if !slices.Contains(rep, want) {
			t.Errorf("pal-reproduce does not link %s: the check looks at the wrong graph", want)
		}
	}
	if len(linked(rep)) < 5 {
		t.Errorf("pal-reproduce links only %v of the plotting packages: the prefixes are wrong", linked(rep))
	}
}

// pal writes no HTML page: report/page, the reproductions' index writer,
// and html/template with it stay out of its graph, so that no pal command
// pays for their package initialisation. pal-reproduce links them.
func TestResearchBinaryLinksNoPageWriter(t *testing.T) {
	const page, tmpl = "github.com/palsched/pal/report/page", "html/template"
	pal := listDeps(t, ".")
	for _, p := range []string{page, tmpl} {
		if slices.Contains(pal, p) {
			t.Errorf("pal links %s: a package pal links imports report/page (go list -deps -f '{{.ImportPath}}: {{.Imports}}' . says which); keep the page writer to pal-reproduce's rooms", p)
		}
	}
	rep := listDeps(t, "../pal-reproduce")
	for _, p := range []string{page, tmpl} {
		if !slices.Contains(rep, p) {
			t.Errorf("pal-reproduce does not link %s: the check looks at the wrong graph", p)
		}
	}
}
