package kube

import (
	"os"
	"testing"
	"time"
)

// Under tenancy hived pal_app_rho exports the apps of the VCs' last
// auctions. Two ways it kept apps for good: a VC whose last gang left
// runs no auction (its policy is not called without jobs), so the apps of
// its last one stayed in its record; and a cells change remakes the VCs'
// layers, and with them each VC's Themis, while the scheduler kept the
// old policies in its list beside the new ones and exported their apps
// too. Here app x (VC A) ends after a change of the cells ConfigMap (a
// comment added): its ρ is gone, and one policy per VC is left.
func TestThemisVCPoliciesAfterCellsChange(t *testing.T) {
	cfg := testCfg()
	cfg.Scheduler, cfg.Tenancy, cfg.Cells, cfg.CellsConfigMap = "themis", "hived", "testdata/two-vcs.yaml", "pal-cells"
	text, err := os.ReadFile(cfg.Cells)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, cfg, 1, 2, 4)
	w.setCells(cfg, string(text))
	at := time.Unix(1_700_000_000, 0)
	job := func(vc string) map[string]string {
		return map[string]string{AnnVC: vc, AnnModel: "BERT", AnnIterations: "100000"}
	}
	w.create("x-0", 4, job("A"), at)
	w.create("z-0", 4, job("B"), at)
	w.expect(&at, "x and z placed", "ns/x-0@n0[0,1,2,3] ns/z-0@n1[0,1,2,3]")
	if _, ok := w.s.th.rho["ns/pod:x-0"]; !ok {
		t.Fatalf("x has no ρ: %v", w.s.th.rho)
	}
	w.setCells(cfg, string(text)+"# changed\n")
	w.expect(&at, "the change", "ns/x-0@n0[0,1,2,3] ns/z-0@n1[0,1,2,3]")
	w.finish("ns/x-0")
	w.expect(&at, "x ends", "ns/z-0@n1[0,1,2,3]")
	w.expect(&at, "x gone", "ns/z-0@n1[0,1,2,3]")
	if r, ok := w.s.th.rho["ns/pod:x-0"]; ok {
		t.Errorf("x left, and its ρ %v is still exported (%d VC policies)", r, len(w.s.th.vcs))
	}
	if len(w.s.th.vcs) != 2 {
		t.Errorf("%d VC policies, want 2", len(w.s.th.vcs))
	}
}
