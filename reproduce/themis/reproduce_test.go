package themis

import (
	"fmt"
	"github.com/palsched/pal/reproduce/themisrun"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/report/draw"
)

// The quick reproduction runs every experiment with no invariant broken
// (Reproduce fails on any), writes every file, and shows the paper's
// headline: Themis' max ρ is below every baseline's.
func TestReproduceQuick(t *testing.T) {
	dir := t.TempDir()
	o, err := Reproduce(QuickPlan(), dir, draw.Drawer{})
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
	// The report says in numbers why the 2.25× claim fails where it
	// does, and judges GPU time against the placement-blind baselines.
	for _, want := range []string{"| why not against the best baseline, in numbers |", "seed 1: Themis' max ρ", "lower GPU time than every placement-blind baseline", "tiresias-blind "} {
		if !strings.Contains(o.Summary, want) {
			t.Errorf("themis.md lacks %q", want)
		}
	}
	rows := o.Tables["macro"].Cells()
	if len(rows) != len(themisrun.Policies()) {
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

// worstApp and rhoOf read the app with the largest ρ and an app's ρ.
func TestWorstApp(t *testing.T) {
	r := &themisrun.Result{Apps: []fairness.AppStat{{AppRun: fairness.AppRun{Name: "a"}, Rho: 1.5}, {AppRun: fairness.AppRun{Name: "b"}, Rho: 2.5}, {AppRun: fairness.AppRun{Name: "c"}, Rho: 2.5}}}
	if w := worstApp(r); w != "b" {
		t.Errorf("worst %q, want b (the earlier of the ties)", w)
	}
	if x := rhoOf(r, "a"); x != 1.5 {
		t.Errorf("ρ of a %v, want 1.5", x)
	}
	if x := rhoOf(r, "z"); !math.IsNaN(x) {
		t.Errorf("ρ of an absent app %v, want NaN", x)
	}
}
