package themis

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The quick reproduction runs every experiment with no invariant broken
// (Reproduce fails on any), writes every file, and shows the paper's
// headline: Themis' max ρ is below every baseline's.
func TestReproduceQuick(t *testing.T) {
	dir := t.TempDir()
	o, err := Reproduce(QuickPlan(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"themis.md", "themis-macro.csv", "themis-seeds.csv", "themis-seeds-summary.csv", "themis-acceptance.csv", "themis-band.csv", "themis-efficiency.csv", "themis-paperlike.csv", "themis-knob.csv", "themis-lease.csv", "themis-contention.csv", "themis-ablation.csv", "themis-truth.csv", "themis-knob-maxrho.png", "themis-contention.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if n := len(o.Tables["paperlike"].Cells()); n != len(PaperPolicies())+1 {
		t.Errorf("paperlike has %d rows, want %d", n, len(PaperPolicies())+1)
	}
	rows := o.Tables["macro"].Cells()
	if len(rows) != len(Policies()) {
		t.Fatalf("macro has %d rows", len(rows))
	}
	// rows[i][1] is max_rho as printed.
	var themisRho float64
	others := map[string]float64{}
	for _, r := range rows {
		var v float64
		if _, err := fmt.Sscan(r[1], &v); err != nil {
			t.Fatal(err)
		}
		if r[0] == "themis" {
			themisRho = v
		} else {
			others[r[0]] = v
		}
	}
	for p, v := range others {
		if themisRho > v {
			t.Errorf("themis max ρ %v above %s's %v", themisRho, p, v)
		}
	}
}
