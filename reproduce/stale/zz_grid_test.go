package stale

import (
	"context"
	"fmt"
	"testing"

	"github.com/palsched/pal/reproduce/paper"
)

func TestZZGrid(t *testing.T) {
	plan := paper.FullPlan()
	plan.SynergySeeds = nil
	res, err := RunStale(context.Background(), plan, t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range res.Draws {
		for _, r := range rows {
			m := r.AvgJCT
			fmt.Printf("GRID %s s%d oracle %.0f stale %.0f learn %.0f  o/s %.4f l/s %.4f l/o %.4f g/o %.4f\n", r.Trace, res.DrawSeeds[i], m["oracle"], m["stale"], m["stale+learning"], m["oracle"]/m["stale"], m["stale+learning"]/m["stale"], m["stale+learning"]/m["oracle"], m["stale+gpu-learning"]/m["oracle"])
		}
	}
}
