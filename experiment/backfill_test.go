package experiment

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// On the eight Sia-Philly workloads (the artifact's settings: pinned GPU
// values, background arrivals, FIFO), a job that EASY backfill reserves
// GPUs for starts no later than the first reservation it was given plus
// one round: the simulator's own model is the estimate, so every job
// backfilled past it ends by then or keeps off its GPUs.
func TestBackfillReservationHoldsOnSiaPhilly(t *testing.T) {
	reserved := 0
	for w := 1; w <= 8; w++ {
		for _, pl := range []string{"pal", "packed-sticky"} {
			o, _ := Preset("artifact")
			o.Trace, o.Placements, o.Backfill = fmt.Sprintf("sia-philly/%d", w), pl, "easy"
			in, err := Prepare(o)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := in.Config(pl)
			if err != nil {
				t.Fatal(err)
			}
			bp := backfill.Unwrap(cfg.Placer)
			first := map[int]float64{}
			cfg.Observe = func(T float64, _ []*workload.Job, _ [][]int) {
				if r := bp.Last; r.JobID >= 0 && r.GPUs != nil {
					if _, seen := first[r.JobID]; !seen {
						first[r.JobID] = T + r.In
					}
				}
			}
			res, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range res.Jobs {
				if r, ok := first[j.ID]; ok {
					reserved++
					if j.FirstStart > r+cfg.Round+1e-6 {
						t.Errorf("workload %d %s: job %d reserved for %.2f s, started %.2f s", w, pl, j.ID, r, j.FirstStart)
					}
				}
			}
		}
	}
	t.Logf("%d reserved jobs checked", reserved)
	if reserved < 100 {
		t.Errorf("only %d jobs were reserved for", reserved)
	}
}
