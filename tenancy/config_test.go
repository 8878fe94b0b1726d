package tenancy

import (
	"os"
	"strings"
	"testing"
)

// Broken files get an error naming file, line and field.
func TestConfigErrors(t *testing.T) {
	base := func(types, cells, vcs string) string {
		return "physicalCluster:\n  cellTypes:\n" + types + "  physicalCells:\n" + cells + "virtualClusters:\n" + vcs
	}
	okTypes := "    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}\n"
	okCells := "  - {cellType: NODE, cellAddress: n0}\n"
	okVCs := "  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"
	cases := []struct{ name, text, want string }{
		{"syntax", "physicalCluster: [\n", "bad.yaml:"},
		{"empty", "", "bad.yaml: empty document"},
		{"no VCs", "physicalCluster:\n  cellTypes: {}\n  physicalCells: []\n", `field "virtualClusters": missing`},
		{"child number", base("    NODE: {childCellType: GPU, childCellNumber: 0, isNodeLevel: true}\n", okCells, okVCs),
			`bad.yaml:3: field "physicalCluster.cellTypes.NODE.childCellNumber": must be positive`},
		{"child number type", base("    NODE: {childCellType: GPU, childCellNumber: four, isNodeLevel: true}\n", okCells, okVCs),
			`bad.yaml:3: field "physicalCluster.cellTypes.NODE.childCellNumber": want an integer, got "four"`},
		{"bool", base("    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: maybe}\n", okCells, okVCs),
			`bad.yaml:3: field "physicalCluster.cellTypes.NODE.isNodeLevel"`},
		{"cycle", base("    A: {childCellType: B, childCellNumber: 2}\n    B: {childCellType: A, childCellNumber: 2, isNodeLevel: true}\n", "  - {cellType: A}\n", okVCs), "cycle"},
		{"unknown type", base(okTypes, "  - {cellType: NOPE, cellAddress: n0}\n", okVCs), `bad.yaml:5: field "physicalCluster.physicalCells[0].cellType": unknown cell type "NOPE"`},
		{"no node name", base(okTypes, "  - {cellType: NODE}\n", okVCs), `bad.yaml:5: field "physicalCluster.physicalCells[0].cellAddress": node-level cell`},
		{"no node level", base("    NODE: {childCellType: GPU, childCellNumber: 4}\n", okCells, okVCs), "contains no node-level type"},
		{"two nodes", base("    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}\n    RACK: {childCellType: NODE, childCellNumber: 2, isNodeLevel: true}\n", "  - {cellType: RACK}\n", okVCs), "contains node-level type"},
		{"dup device", base(okTypes, okCells+okCells, okVCs), "defined twice"},
		{"too many children", base(okTypes, "  - {cellType: NODE, cellAddress: n0, cellChildren: [{}, {}, {}, {}, {}]}\n", okVCs), "has 4 children, 5 given"},
		{"bad gpu index", base(okTypes, "  - {cellType: NODE, cellAddress: n0, cellChildren: [{cellAddress: x}]}\n", okVCs), "index inside the node"},
		{"vc chain", base(okTypes, okCells, "  A: {virtualCells: [{cellType: RACK, cellNumber: 1}]}\n"), `bad.yaml:7: field "virtualClusters.A.virtualCells[0].cellType": VC A: "RACK" is not the type of any physical cell`},
		{"vc path", base(okTypes, okCells, "  A: {virtualCells: [{cellType: NODE.CPU, cellNumber: 1}]}\n"), `"CPU" is not a child type of NODE`},
		{"vc number", base(okTypes, okCells, "  A: {virtualCells: [{cellType: NODE, cellNumber: -1}]}\n"), "must not be negative"},
		{"pinned", base(okTypes, okCells, "  A: {pinnedCells: [{pinnedCellId: P}]}\n"), `unknown pinned cell "P"`},
		{"too big", base(okTypes, okCells, "  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}\n"), "bad.yaml:7: field \"virtualClusters.A.virtualCells[0]\": illegal initial VC assignment: chain NODE, level 2 (NODE): splittable -1"},
		{"dup key", base(okTypes, okCells, okVCs+okVCs), `duplicate key (first at line 7)`},
		{"list", base(okTypes, "  cellType: NODE\n", okVCs), "want a list"},
	}
	for _, c := range cases {
		cfg, err := Parse("bad.yaml", []byte(c.text))
		if err == nil {
			_, err = New(cfg)
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.want)
		}
	}
}

// HiveD's extender settings are ignored with one warning line.
func TestConfigWarnsOnce(t *testing.T) {
	cfg, err := Parse("w.yaml", []byte(`webServerAddress: ":9096"
waitingPodSchedulingBlockMilliSec: 50
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 2, isNodeLevel: true, extra: 1}
  physicalCells: [{cellType: NODE, cellAddress: n0}]
virtualClusters: {A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := "w.yaml: ignoring fields this scheduler does not use: physicalCluster.cellTypes.NODE.extra, waitingPodSchedulingBlockMilliSec, webServerAddress"
	if got := cfg.Warning(); got != want {
		t.Fatalf("warning %q, want %q", got, want)
	}
}

// FuzzParse: no input makes the parser or the validation panic, and a
// config that loads passes the checker.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/hived-design.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 4}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n")))
	f.Add([]byte("physicalCluster: {cellTypes: {N: {childCellType: G, childCellNumber: 2, isNodeLevel: true}}, physicalCells: [{cellType: N, cellAddress: a, pinnedCellId: p}]}\nvirtualClusters: {V: {pinnedCells: [{pinnedCellId: p}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		// Huge clusters are legal up to MaxDevices but too slow to fuzz.
		if types, err := buildTypes(cfg); err == nil {
			n := 0
			for _, p := range cfg.PhysicalCells {
				if t := types[p.CellType]; t != nil {
					n += t.leaves
				}
			}
			if n > 1<<12 {
				return
			}
		}
		s, err := New(cfg)
		if err != nil {
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("a config that loads fails the checker: %v", err)
		}
	})
}

// WriteYAML round-trips: the written file loads into the same cluster.
func TestWriteYAMLRoundTrip(t *testing.T) {
	for _, path := range []string{"testdata/hived-design.yaml", "testdata/h3.yaml"} {
		s, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteYAML(&b, s.Config()); err != nil {
			t.Fatal(err)
		}
		back, err := Parse("back.yaml", []byte(b.String()))
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b.String())
		}
		s2, err := New(back)
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b.String())
		}
		var x, y strings.Builder
		if err := s.WriteTree(&x); err != nil {
			t.Fatal(err)
		}
		if err := s2.WriteTree(&y); err != nil {
			t.Fatal(err)
		}
		if x.String() != y.String() || s.dump() != s2.dump() {
			t.Fatalf("%s: round trip differs:\n%s\nvs\n%s", path, x.String(), y.String())
		}
	}
}
