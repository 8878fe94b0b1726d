package main

import (
	"strings"
	"testing"

	"github.com/palsched/pal/tenancy"
)

func TestCellsCheck(t *testing.T) {
	out, err := run(t, "cells", "check", "../../tenancy/testdata/h3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"1 chains, 2 nodes, 8 devices, 2 VCs",
		"  2      NODE (node)  4             2           1                 1",
		"  1      GPU          1             0           4                 0",
		"VC A: 4 x NODE/GPU; 4 devices",
		"VC B: 1 x NODE/NODE; 4 devices",
		"OK:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// H2's illegal assignment is rejected, naming file, line, VC and level.
func TestCellsCheckRejectsH2(t *testing.T) {
	_, err := run(t, "cells", "check", "../../tenancy/testdata/h2-illegal.yaml")
	want := `../../tenancy/testdata/h2-illegal.yaml:14: field "virtualClusters.VC1.virtualCells[1]": illegal initial VC assignment: chain NODE, level 1 (GPU): splittable -1 < 0; VCs reserving this level: VC1 (1, line 14)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if _, err := run(t, "cells", "check", "no-such-file.yaml"); err == nil {
		t.Fatal("a missing file passed")
	}
}

func TestCellsShow(t *testing.T) {
	out, err := run(t, "cells", "show", "../../tenancy/testdata/hived-design.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"chain 4-DGX2-V100-NODE: 4-DGX2-V100-NODE×2 → 2-DGX2-V100-NODE×2 → DGX2-V100-NODE×2",
		"    7/0 2-DGX2-V100-NODE [pinned VC1-YQW-DGX2 → VC VC1]\n      0.0.3.0 DGX2-V100-NODE: devices 0-15\n",
		"    1.0.0.0 DGX1-P100-NODE: devices 1,3,4,7,0,2,6,5\n",
		"  1.0.0.2 CT1-NODE: devices 8-9 (pinned inside: VC1-YQW-CT1 = 1.0.0.2/8)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchTenancy(t *testing.T) {
	out, err := run(t, "bench", "tenancy", "--nodes", "64", "--vcs", "4", "--reps", "200", "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"gpus":512`, `"vcs":4`, `"reps":200`, `"median_us":`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s: %s", want, out)
		}
	}
	if _, err := run(t, "bench", "tenancy", "--nodes", "63"); err == nil {
		t.Error("63 nodes in racks of 8 accepted")
	}
}

// The help states the limits the code enforces: 2^19 devices, 2^20
// nodes repeated by aliases.
func TestCellsCheckHelpStatesLimits(t *testing.T) {
	out, err := run(t, "cells", "check", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if tenancy.MaxDevices != 524288 || tenancy.MaxAliasNodes != 1048576 {
		t.Fatalf("limits changed (%d, %d): update the help and the README", tenancy.MaxDevices, tenancy.MaxAliasNodes)
	}
	for _, want := range []string{"at most 524,288 devices", "at most 1,048,576 nodes", "deployment file"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}

// A HiveD deployment file loads through the CLI, and the hostile files
// fail with file, line and field.
func TestCellsCheckAsFound(t *testing.T) {
	out, err := run(t, "cells", "check", "../../tenancy/testdata/hived-deploy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "hived-deploy.yaml: 1 chains, 3 nodes, 12 devices, 2 VCs") {
		t.Errorf("deployment file:\n%s", out)
	}
	for _, f := range []string{"nested-pinned.yaml:13: field \"physicalCluster.physicalCells[0].cellChildren[0].pinnedCellId\"",
		"huge-cellnumber.yaml:12: field \"virtualClusters.A.virtualCells[0]\"", "alias-bomb.yaml:11: field \"anchors.l6.cellChildren[4]\""} {
		name := f[:strings.Index(f, ":")]
		for _, cmd := range []string{"check", "show"} {
			_, err := run(t, "cells", cmd, "../../tenancy/testdata/bad/"+name)
			if err == nil || !strings.Contains(err.Error(), f) {
				t.Errorf("cells %s %s: got %v, want %s", cmd, name, err, f)
			}
		}
	}
}
