package hived

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/palsched/pal/report/draw"
)

// The quick HiveD experiment writes its files, and under HiveD, with
// guaranteed jobs only, every VC's mean queueing is within one round of
// its private cluster's and its preemptions are the private run's, for
// every intra-VC scheduler, on the synthetic setup and on Philly; against
// the VC alone under HiveD the anomaly is exactly 0 (the sanity check).
func TestRunHivedQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick HiveD experiment")
	}
	dir := t.TempDir()
	rep, err := RunHived(HivedOptions{Out: dir, Quick: true, Drawer: draw.Drawer{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"anomaly.csv", "hived.md", "anomaly-synthetic-yarn-cs-L085.png", "anomaly-philly-tiresias-1x.svg"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	order, vs := rep.Verdicts()
	if len(order) != 3*3 {
		t.Fatalf("%d groups, want 9 (3 workloads x 3 schedulers)", len(order))
	}
	for _, k := range order {
		v := vs[k]
		if v.MaxDiffRounds > 1 || !v.PreemptionsEqual || v.MaxAlone != 0 {
			t.Errorf("%v: hived against private %.3f rounds, preemptions %d vs %d, against alone %g s", k, v.MaxDiffRounds, v.HivedPre, v.PrivatePre, v.MaxAlone)
		}
	}
	if len(rep.Binding) != 4 || len(rep.Overhead) != 2 || len(rep.Variability) != 2 || math.IsNaN(vs[order[0]].QuotaFrag) {
		t.Errorf("binding %+v, overhead %+v, variability %+v", rep.Binding, rep.Overhead, rep.Variability)
	}
	if rep.Jobs != HivedQuickJobs || rep.Dropped["VC not among the large VCs"] != 18 {
		t.Fatalf("jobs %d, dropped %v", rep.Jobs, rep.Dropped)
	}
}
