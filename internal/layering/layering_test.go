package layering

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rules are the tree's rules beyond the layers' order (docs/packages.md
// says them in words).
var rules = Rules{
	Options: "experiment",
	OptionsUsers: map[string]string{
		"cmd/pal":           "the CLI turns flags into options",
		"cmd/pal-kube":      "replay builds a trace's options and writes pal sim's per-job rows",
		"cmd/pal-reproduce": "the sections' seed flags default to the simulator's seed",
		"reproduce/...":     "the paper experiments run presets",
		"hack/hivedspeed":   "the HiveD speed measurement runs the simulator's tenancy settings",
	},
	Drivers:     []string{"sim", "kube"},
	Experiments: "reproduce",
	RoomBases:   []string{"reproduce/paper", "reproduce/sweep", "reproduce/themisrun"},
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// The tree's imports follow docs/packages.md: every package is mapped,
// every mapped package exists, no import runs up a layer, and the rules
// hold.
func TestTreeFollowsPackageMap(t *testing.T) {
	r := root(t)
	f, err := os.Open(filepath.Join(r, "docs", "packages.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := ReadMap("docs/packages.md", f)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := Scan(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 30 {
		t.Fatalf("found %d packages under %s; the scan is broken", len(pkgs), r)
	}
	for _, v := range Check(m, pkgs, rules) {
		t.Error(v)
	}
	// The rules name real packages (a rename must carry them along).
	for _, p := range append([]string{rules.Options, rules.Experiments}, rules.Drivers...) {
		if _, ok := m.Layer[p]; !ok {
			t.Errorf("rule names %s, which is not in the package map", p)
		}
	}
	for p := range rules.OptionsUsers {
		if _, ok := m.Layer[strings.TrimSuffix(p, "/...")]; !ok {
			t.Errorf("rule names %s, which is not in the package map", p)
		}
	}
}

// A hand-built tree with one of each violation gets exactly one message
// for each, and a clean one none.
func TestCheckFindsEachViolation(t *testing.T) {
	const doc = "# Packages\n\n## Layer 0: base\n\n### `cluster`\ntext\n\n## Layer 1: core\n\n### `policy`\n\n### `experiment`\n\n" +
		"## Layer 2: drivers\n\n### `sim`\n\n### `kube`\n\n## Layer 3: rooms\n\n### `reproduce/base`\n\n### `reproduce/a`\n\n### `reproduce/b`\n\n" +
		"## Layer 4: top\n\n### `reproduce`\n\n### `gone`\n"
	m, err := ReadMap("map.md", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if m.Layer["cluster"] != 0 || m.Layer["sim"] != 2 || m.Layer["reproduce"] != 4 || m.Names[1] != "core" {
		t.Fatalf("map read as %v %v", m.Layer, m.Names)
	}
	r := Rules{Options: "experiment", OptionsUsers: map[string]string{"reproduce/...": ""}, Drivers: []string{"sim", "kube"}, Experiments: "reproduce", RoomBases: []string{"reproduce/base"}}
	clean := []Package{
		{Path: "cluster"}, {Path: "policy", Imports: []string{"cluster"}}, {Path: "experiment", Imports: []string{"policy"}},
		{Path: "sim", Imports: []string{"policy"}}, {Path: "kube", Imports: []string{"policy"}, TestImports: []string{"cluster"}},
		{Path: "reproduce", Imports: []string{"experiment", "sim", "reproduce/a"}}, {Path: "gone"},
		{Path: "reproduce/base", Imports: []string{"experiment"}}, {Path: "reproduce/a", Imports: []string{"reproduce/base"}}, {Path: "reproduce/b"},
	}
	if v := Check(m, clean, r); len(v) != 0 {
		t.Fatalf("clean tree: %q", v)
	}
	bad := []Package{
		{Path: "cluster", Imports: []string{"policy"}},
		{Path: "policy", Imports: []string{"experiment"}},
		{Path: "experiment"},
		{Path: "sim", Imports: []string{"kube"}, TestImports: []string{"reproduce"}},
		{Path: "kube", Imports: []string{"experiment"}},
		{Path: "reproduce"},
		{Path: "extra"},
		{Path: "reproduce/base", Imports: []string{"reproduce/a"}},
		{Path: "reproduce/a", Imports: []string{"reproduce/b", "reproduce"}},
		{Path: "reproduce/b"},
	}
	want := []string{
		"cluster (layer 0, base) imports policy (layer 1, core): an import from a lower layer to a higher one",
		"driver kube imports experiment: a driver builds its policies from policy/registry, not from the simulator's options",
		"driver sim imports driver kube: the drivers share the core, not each other",
		"driver sim imports reproduce: the paper experiments sit above the drivers",
		"kube imports experiment: only reproduce/... may build on the simulator's options",
		"package extra is not in the package map",
		"policy imports experiment: only reproduce/... may build on the simulator's options",
		"reproduce/a (layer 3, rooms) imports reproduce (layer 4, top): an import from a lower layer to a higher one",
		"room reproduce/a imports room reproduce/b: the paper experiments share only reproduce/base and the layers below them",
		"the package map lists gone, which is not a package",
	}
	if got := Check(m, bad, r); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A malformed map fails with the file and line.
func TestReadMapErrors(t *testing.T) {
	cases := map[string]struct{ doc, want string }{
		"package before a layer": {"# P\n### `a`\n", "m.md:2: package a before any layer heading"},
		"listed twice":           {"## Layer 0: a\n### `x`\n## Layer 1: b\n### `x`\n", "m.md:4: package x listed twice (first in layer 0)"},
		"layers out of order":    {"## Layer 1: a\n## Layer 0: b\n", "m.md:2: layer 0 after layer 1: list the layers from the lowest up"},
		"empty":                  {"# nothing\n", "m.md: no packages (want `## Layer N: name` headings with a `### `+\"`path`\"+` heading per package)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadMap("m.md", strings.NewReader(tc.doc))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReadMap(f *testing.F) {
	f.Add("## Layer 0: a\n### `x`\n")
	f.Add("## Layer 99999999999999999999: a\n")
	f.Add("### `x`\n## Layer 0: a")
	// Long headings, of invalid bytes (which %q writes four characters
	// each) and of digits.
	f.Add("## Layer 0: a\n### `" + strings.Repeat("\xff", 8000) + "`\n### `" + strings.Repeat("\xff", 8000) + "`\n")
	f.Add("## Layer " + strings.Repeat("9", 8000) + ": a\n")
	f.Fuzz(func(t *testing.T, doc string) {
		m, err := ReadMap("f.md", strings.NewReader(doc))
		if err != nil {
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		for p, l := range m.Layer {
			if _, ok := m.Names[l]; !ok || p == "" {
				t.Fatalf("package %q in unnamed layer %d", p, l)
			}
		}
	})
}
