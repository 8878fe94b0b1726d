package tenancy

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	// The real configs and the hostile ones: nested pinned cells, a huge
	// cellNumber, an alias flood, a deployment file, v0.2 names, CPU SKUs.
	seeds := []string{"testdata/hived-design.yaml", "testdata/h3.yaml", "testdata/hived-deploy.yaml", "testdata/old-names.yaml",
		"testdata/mixed-skus.yaml", "testdata/bad/nested-pinned.yaml", "testdata/bad/huge-cellnumber.yaml", "testdata/bad/alias-bomb.yaml"}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 4}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n")))
	f.Add([]byte("physicalCluster: {cellTypes: {N: {childCellType: G, childCellNumber: 2, isNodeLevel: true}}, physicalCells: [{cellType: N, cellAddress: a, pinnedCellId: p}]}\nvirtualClusters: {V: {pinnedCells: [{pinnedCellId: p}]}}\n"))
	f.Add([]byte("physicalCluster: &x\n  cellTypes: *x\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\ndata:\n  hivedscheduler.yaml: |\n    physicalCluster: {}\n    ---\n    virtualClusters: {}\n"))
	f.Add([]byte("physicalCluster: {cellTypes: {N: {childCellType: G, childCellNumber: 2, isNodeLevel: true}}, physicalCells: [{cellType: N, cellAddress: a, reservationId: p}]}\nvirtualClusters: {V: {reservedCells: [{reservationId: p}]}}\n---\nkind: Service\napiVersion: v1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			// Whatever the file holds, its error is a few lines.
			if n := len(err.Error()); n > 2048 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
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
	for _, path := range []string{"testdata/hived-design.yaml", "testdata/h3.yaml", "testdata/mixed-skus.yaml"} {
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
		if s.MaxNode() != s2.MaxNode() {
			t.Fatalf("%s: round trip changes the largest node from %d to %d GPUs", path, s.MaxNode(), s2.MaxNode())
		}
		if x.String() != y.String() || s.dump() != s2.dump() {
			t.Fatalf("%s: round trip differs:\n%s\nvs\n%s", path, x.String(), y.String())
		}
	}
}

// Inputs found in the wild, or built to exhaust the machine, fail fast
// with an error naming file, line and field.
func TestHostileInputs(t *testing.T) {
	const types = "physicalCluster:\n  cellTypes:\n    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}\n"
	cases := []struct{ name, file, text, want string }{
		{"nested pinned", "testdata/bad/nested-pinned.yaml", "",
			`testdata/bad/nested-pinned.yaml:13: field "physicalCluster.physicalCells[0].cellChildren[0].pinnedCellId": pinned cell "P-GPU" (line 13) lies inside pinned cell "P-NODE" (line 10); pinned cells may not overlap`},
		// 10,000,000 cells wanted at level 2 of a chain with 2 free ones:
		// splittable 2 - 10,000,000.
		{"huge cellNumber", "testdata/bad/huge-cellnumber.yaml", "",
			`testdata/bad/huge-cellnumber.yaml:12: field "virtualClusters.A.virtualCells[0]": illegal initial VC assignment: chain NODE, level 2 (NODE): splittable -9999998 < 0; VCs reserving this level: A (10000000, line 12)`},
		// l0 is 3 nodes (mapping, key, value) and l_k is 3 + 9 x
		// size(l_(k-1)) (mapping, key, list, nine aliases): 30, 273, 2460,
		// 22143, 199290. The aliases of l1..l5 repeat 9 x (3 + 30 + 273 +
		// 2460 + 22143) = 224,181 nodes; each alias in l6 adds 199,290, so
		// the fifth (index 4, line 11) is the first past 2^20 = 1,048,576
		// (1,220,631).
		{"alias flood", "testdata/bad/alias-bomb.yaml", "",
			`testdata/bad/alias-bomb.yaml:11: field "anchors.l6.cellChildren[4]": alias *l5: aliases would repeat more than 1048576 YAML nodes in all; write the cells out`},
		{"alias cycle", "c.yaml", "physicalCluster: &x\n  cellTypes: *x\n",
			`c.yaml:1: field "physicalCluster": anchor &x contains an alias to itself`},
		{"second document", "c.yaml", types + "  physicalCells: [{cellType: NODE, cellAddress: n0}]\nvirtualClusters: {A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}}\n---\nvirtualClusters: {B: {}}\n",
			"c.yaml:7: a second cells document (the first starts at line 1); it would be ignored, so this file is refused"},
		{"stray document", "c.yaml", "foo: 1\n---\n" + types,
			"c.yaml:3: a second cells document (the first starts at line 1); it would be ignored, so this file is refused"},
		{"two ConfigMaps", "c.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: {hivedscheduler.yaml: 'physicalCluster: {}'}\n---\napiVersion: v1\nkind: ConfigMap\ndata:\n  hivedscheduler.yaml: |\n    physicalCluster: {}\n",
			"c.yaml:8: a second cells document (the first starts at line 3); it would be ignored, so this file is refused"},
		// The embedded text starts on the line after "|" (line 5), so its
		// line 4 (childCellNumber: 0) is line 9 of the file.
		{"embedded error", "c.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  hivedscheduler.yaml: |\n    physicalCluster:\n      cellTypes:\n        NODE:\n          childCellType: GPU\n          childCellNumber: 0\n",
			`c.yaml:9: field "physicalCluster.cellTypes.NODE.childCellNumber": must be positive, got 0`},
		{"embedded second document", "c.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  hivedscheduler.yaml: |\n    physicalCluster: {}\n    ---\n    virtualClusters: {}\n",
			`c.yaml:7: field "data.hivedscheduler.yaml": holds a second YAML document; it would be ignored, so this file is refused`},
		{"deployment without cells", "c.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
			"c.yaml: empty document: want physicalCluster and virtualClusters (or a HiveD ConfigMap holding hivedscheduler.yaml)"},
		{"both pinned names", "c.yaml", types + "  physicalCells: [{cellType: NODE, cellAddress: n0, pinnedCellId: P, reservationId: P}]\n",
			`c.yaml:4: field "physicalCluster.physicalCells[0].reservationId": pinnedCellId and its old name reservationId both given`},
		{"both pinned lists", "c.yaml", types + "  physicalCells: [{cellType: NODE, cellAddress: n0}]\nvirtualClusters:\n  A:\n    pinnedCells: []\n    reservedCells: []\n",
			`c.yaml:8: field "virtualClusters.A.reservedCells": pinnedCells and its old name reservedCells both given`},
	}
	for _, c := range cases {
		data := []byte(c.text)
		if c.file != "c.yaml" {
			var err error
			if data, err = os.ReadFile(c.file); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Parse(c.file, data)
		if err == nil {
			_, err = New(cfg)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
}

// Configs as HiveD users have them load with HiveD's meaning: the
// deployment file's ConfigMap, and v0.2's names for pinned cells.
func TestConfigsAsFound(t *testing.T) {
	cases := []struct {
		file    string
		devices map[string]int // hand-counted from the file
		warning string
	}{
		// vc1 one K80-NODE (4), vc2 two (8).
		{"testdata/hived-deploy.yaml", map[string]int{"vc1": 4, "vc2": 8},
			"testdata/hived-deploy.yaml: skipping Kubernetes objects that hold no cells: document 2 (ServiceAccount hivedscheduler-account, line 40), document 3 (Service hivedscheduler-service, line 45); ignoring fields this scheduler does not use: data.policy.cfg, webServerAddress"},
		// A: the pinned node n0 (4) and one more node (4); B: one node.
		{"testdata/old-names.yaml", map[string]int{"A": 8, "B": 4},
			"testdata/old-names.yaml: reading HiveD v0.2's reservationId and reservedCells as pinnedCellId and pinnedCells"},
	}
	for _, c := range cases {
		s, err := Load(c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		for vc, want := range c.devices {
			if got := s.VCDevices(vc); got != want {
				t.Errorf("%s: VC %s holds %d devices, want %d", c.file, vc, got, want)
			}
		}
		if got := s.Config().Warning(); got != c.warning {
			t.Errorf("%s: warning\n %q\nwant %q", c.file, got, c.warning)
		}
		if err := s.Check(); err != nil {
			t.Errorf("%s: %v", c.file, err)
		}
	}
	// The pinned node is VC A's for good: it is off the free lists.
	s, _ := Load("testdata/old-names.yaml")
	if p := s.pinned["A-NODE"]; p == nil || p.Addr != "n0" || p.vcell == nil || p.vcell.vcc.vc.Name != "A" {
		t.Errorf("A-NODE not pinned to n0 for VC A: %+v", p)
	}
}

// Every cells file the project ships still loads, with the devices each
// VC holds counted by hand from the file (pinned cells included, CPU
// cells not), and passes Check: HiveD's design cluster and its
// reconfigured form, HiveD's deployment file, v0.2's names, the examples
// the docs run and the kube tests' files. A cells file added to one of
// these directories must be added here; h2-illegal.yaml is refused on
// purpose (TestCellsCheckRejectsH2).
func TestShippedConfigsLoad(t *testing.T) {
	want := map[string]map[string]int{
		// VC1: six DGX-2 nodes (3 x 2 cells, 16 GPUs each) and a pair of
		// them (32), pinned: one CT1 GPU, a DGX-2 pair (32), two IB DGX-2
		// nodes (32). VC2: two DGX-1 nodes (8 each), two CPU sockets (4
		// each), one CT1 node (2).
		"testdata/hived-design.yaml": {"VC1": 96 + 32 + 1 + 32 + 32, "VC2": 16 + 8 + 2},
		// The same for VC1; VC2 keeps one DGX-1 node instead of two.
		"testdata/hived-design-reconfigured.yaml":         {"VC1": 96 + 32 + 1 + 32 + 32, "VC2": 8 + 8 + 2},
		"testdata/hived-deploy.yaml":                      {"vc1": 4, "vc2": 8},
		"testdata/old-names.yaml":                         {"A": 8, "B": 4},
		"testdata/h3.yaml":                                {"A": 4, "B": 4},
		"testdata/draws.yaml":                             {"w": 4, "o": 4},
		"testdata/mixed-skus.yaml":                        {"A": 4, "B": 4},
		"testdata/pools-pinned.yaml":                      {"A": 4 + 4, "B": 4},
		"testdata/pools-skus.yaml":                        {"A": 4 + 4},
		"../docs/reference/examples/cells-two-for-a.yaml": {"A": 8, "B": 4},
		"../docs/reference/examples/cells-one-for-a.yaml": {"A": 4, "B": 8},
		"../kube/testdata/two-vcs.yaml":                   {"A": 4, "B": 4},
		"../kube/testdata/pinned.yaml":                    {"A": 4, "B": 4},
		"../kube/testdata/gpu-cells.yaml":                 {"A": 4, "B": 4},
	}
	refused := []string{"testdata/h2-illegal.yaml"}
	var found []string
	for _, dir := range []string{"testdata", "../docs/reference/examples", "../kube/testdata"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "physicalCluster") {
				found = append(found, filepath.ToSlash(f))
			}
		}
	}
	listed := append(slices.Collect(maps.Keys(want)), refused...)
	slices.Sort(found)
	slices.Sort(listed)
	if !slices.Equal(found, listed) {
		t.Errorf("cells files found %v, listed %v: list every shipped cells file with its VCs' devices", found, listed)
	}
	for _, f := range slices.Sorted(maps.Keys(want)) {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s no longer loads: %v", f, err)
			continue
		}
		got := map[string]int{}
		for _, vc := range s.VCs() {
			got[vc] = s.VCDevices(vc)
		}
		if !maps.Equal(got, want[f]) {
			t.Errorf("%s: VC devices %v, want %v", f, got, want[f])
		}
		if err := s.Check(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range refused {
		if _, err := Load(f); err == nil {
			t.Errorf("%s loads; it is there to be refused", f)
		}
	}
}

// The sizes setup asks for per job are the config's, computed once.
func TestSizes(t *testing.T) {
	// Node n0 holds 4 GPUs of chain N4 and 2 of chain N2 (one node in
	// two chains, devices 0-3 and 4-5): 6 devices, the largest node.
	text := `physicalCluster:
  cellTypes:
    N4: {childCellType: G, childCellNumber: 4, isNodeLevel: true}
    N2: {childCellType: H, childCellNumber: 2, isNodeLevel: true}
    R: {childCellType: N4, childCellNumber: 2}
  physicalCells:
  - {cellType: R, cellChildren: [{cellAddress: n0}, {cellAddress: n1}]}
  - {cellType: N2, cellAddress: n0, cellChildren: [{cellAddress: 4}, {cellAddress: 5}]}
  - {cellType: N2, cellAddress: n2, pinnedCellId: P}
virtualClusters:
  A: {virtualCells: [{cellType: R, cellNumber: 1}]}
  B: {virtualCells: [{cellType: N2.H, cellNumber: 1}], pinnedCells: [{pinnedCellId: P}]}
`
	cfg, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MaxNode(); got != 6 {
		t.Errorf("MaxNode %d, want 6", got)
	}
	// A: one rack of two 4-GPU nodes; B: one GPU and the pinned 2-GPU node.
	for vc, want := range map[string][2]int{"A": {8, 4}, "B": {3, 2}} {
		if d, p := s.VCDevices(vc), s.MaxPod(vc); d != want[0] || p != want[1] {
			t.Errorf("VC %s: %d devices, largest pod %d; want %d, %d", vc, d, p, want[0], want[1])
		}
	}
}

// A VC's cells are counted against the chain before any is built: a
// mistyped cellNumber costs no memory. 200,000 NODE cells of 4 GPUs
// would be a million virtual cells (about 100 MB) if built first.
func TestCountsBeforeBuilding(t *testing.T) {
	text := "physicalCluster:\n  cellTypes:\n    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}\n" +
		"  physicalCells: [{cellType: NODE, cellAddress: n0}, {cellType: NODE, cellAddress: n1}]\n" +
		"virtualClusters: {A: {virtualCells: [{cellType: NODE, cellNumber: 200000}]}}\n"
	cfg, err := Parse("n.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = New(cfg)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "splittable -199998 < 0") {
		t.Fatalf("got %v, want splittable -199998", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("refusing the VC allocated %d bytes; want under 4 MB", got)
	}
}
