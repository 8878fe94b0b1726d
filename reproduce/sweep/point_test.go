package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/experiment"
)

// Each sweep point's locality penalty, load and seed reach its run: every
// row equals a plain run (what `pal sim` does) of the same point, and the
// points differ from each other, so a sweep that dropped a dimension
// could not pass.
func TestRowEqualsSimRunOfItsPoint(t *testing.T) {
	// 24 jobs of 1-6 GPUs on 2x4 GPUs, arriving every 500 s.
	var b strings.Builder
	b.WriteString("job_id,num_gpus,submit_time,duration,model\n")
	models := []string{"resnet50", "vgg19", "BERT", "PointNet"}
	for i := range 24 {
		fmt.Fprintf(&b, "%d,%d,%d,%d,%s\n", i, 1+i*5%6, 500*i, 2000+1500*(i*7%5), models[i%4])
	}
	tr := filepath.Join(t.TempDir(), "small.csv")
	if err := os.WriteFile(tr, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := artifactBase(t)
	base.Cluster = "2x4"
	g := &Grid{
		Base:       base,
		Traces:     []string{tr},
		Schedulers: []string{"las"},
		Placements: []string{"random-sticky"},
		Loads:      []float64{1, 4},
		Localities: []float64{1.2, 2.5},
		Seeds:      []uint64{3, 9},
	}
	res, err := Run(context.Background(), []*Grid{g}, RunOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Rows) != 8 {
		t.Fatalf("%d rows, want 8", len(res[0].Rows))
	}
	seen := map[float64]bool{}
	for _, r := range res[0].Rows {
		o := base
		o.Trace, o.Scheduler, o.Placements = r.Trace, r.Scheduler, r.Placement
		o.LocalityPenalty, o.Seed, o.ExtraLoad = r.LocalityPenalty, r.Seed, r.Load
		o.Explicit.ExtraLoad = true
		_, runs, err := experiment.RunAll(o)
		if err != nil {
			t.Fatal(err)
		}
		if runs[0].Summary != r.Summary {
			t.Errorf("point L %g load %g seed %d: sweep %+v, sim %+v", r.LocalityPenalty, r.Load, r.Seed, r.Summary, runs[0].Summary)
		}
		seen[r.AvgJCT] = true
	}
	if len(seen) != 8 {
		t.Errorf("8 points gave only %d distinct average JCTs; the grid does not vary every dimension", len(seen))
	}
}
