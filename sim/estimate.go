package sim

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// Estimate is the simulator's own model of how long j runs, from a round
// boundary, until it finishes on gpus: its debt first, then its remaining
// iterations at the pace those GPUs give it (its slowest GPU's raw value
// times the locality factor), the pace it keeps while it stays there. A
// running job on its own GPUs runs at the pace fixed at its launch. The
// simulator completes a job at the first boundary at or after that time,
// which rounds two estimates the same way, so "ends by the reservation"
// reads the same before and after quantising. Backfill reads it for its
// reservations (package backfill); with the same config it is exact.
func (c *Config) Estimate(_ *policy.Env, j *workload.Job, gpus []int) float64 {
	pm, loc := j.PM, j.Loc
	if !j.Running() || !round.Same(j.GPUsHeld, gpus) {
		pm, loc = pmOf(c.Raw, j, gpus), c.loc(c.Cluster, j, gpus)
	}
	return j.Debt + j.Remaining()*j.IterTime*pm*loc
}
