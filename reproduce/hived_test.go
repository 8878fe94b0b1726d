package reproduce

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The quick HiveD experiment writes its files, and under HiveD every VC's
// queueing equals its queueing alone on the same cells (anomaly exactly 0,
// H8 on the real trace), for every scheduler and load.
func TestRunHivedQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 18 Philly simulations")
	}
	dir := t.TempDir()
	rep, err := RunHived(HivedOptions{Out: dir, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"anomaly.csv", "hived.md", "anomaly-yarn-cs-normal.png", "anomaly-tiresias-high.svg"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	f, err := os.Open(filepath.Join(rep.Dir, "anomaly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	hived := 0
	for _, r := range recs[1:] {
		if r[2] != "hived" {
			continue
		}
		hived++
		if a, _ := strconv.ParseFloat(r[8], 64); a != 0 {
			t.Errorf("hived anomaly %v for %v", a, r)
		}
	}
	if hived != 3*2*11 {
		t.Fatalf("%d hived rows, want 66 (3 schedulers x 2 loads x 11 VCs)", hived)
	}
	if len(rep.Binding) != 2 || rep.Binding[1].Preemptions < rep.Binding[0].Preemptions || rep.Binding[0].Opportunists != HivedQuickJobs/5 {
		t.Errorf("binding study %+v: static binding should preempt at least as often as dynamic", rep.Binding)
	}
	if len(rep.Overhead) != 2 || len(rep.Fragmentation) != 2 {
		t.Errorf("overhead %+v, fragmentation %v", rep.Overhead, rep.Fragmentation)
	}
	if len(rep.Variability) != 2 || rep.Variability[0].Tenancy != "hived" || !(rep.Variability[1].MeanJCT > 0) {
		t.Errorf("variability study %+v", rep.Variability)
	}
	if rep.Jobs != HivedQuickJobs || rep.Dropped["VC not among the large VCs"] != 18 {
		t.Fatalf("jobs %d, dropped %v", rep.Jobs, rep.Dropped)
	}
}
