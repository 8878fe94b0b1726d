package workload

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MoveCost is what moving a running job costs, in seconds of lost
// progress: a checkpoint, a restart on the new GPUs and the warm-up until
// it trains at speed again. Migration is paid when a running job moves to
// other GPUs in one round; Preemption when a suspended job restarts. The
// job holds its GPUs while it pays, so the GPU time lost is the cost times
// its gang size.
type MoveCost struct {
	Migration  float64 `json:"migration_s"`
	Preemption float64 `json:"preemption_s"`
}

// Free reports whether moves cost nothing (the PAL artifact's model).
func (c MoveCost) Free() bool { return c.Migration == 0 && c.Preemption == 0 }

// Validate checks both costs are finite seconds >= 0; what names the
// source (a flag, a model-table row) in the error.
func (c MoveCost) Validate(what string) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"migration", c.Migration}, {"preemption", c.Preemption}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s: %s cost must be finite seconds >= 0, got %v", what, f.name, f.v)
		}
	}
	return nil
}

// Costs is a run's price list: one cost for every job, except for models
// whose row in the model table names its own (Model.MigrationCost,
// Model.PreemptionCost). The zero value is free moves.
type Costs struct {
	Default MoveCost
	// Models, if set, supplies per-model overrides.
	Models *Models
}

// For is the cost of moving a job of spec s.
func (c *Costs) For(s *Spec) MoveCost {
	out := c.Default
	if c.Models == nil {
		return out
	}
	if md, ok := c.Models.byName[s.Model]; ok {
		if md.MigrationCost != nil {
			out.Migration = *md.MigrationCost
		}
		if md.PreemptionCost != nil {
			out.Preemption = *md.PreemptionCost
		}
	}
	return out
}

// Free reports whether every move of every job is free, so that a driver
// may skip adding costs of zero.
func (c *Costs) Free() bool { return c.Default.Free() && len(c.overridden()) == 0 }

func (c *Costs) overridden() []string {
	if c.Models == nil {
		return nil
	}
	var out []string
	for name, md := range c.Models.byName {
		if md.MigrationCost != nil || md.PreemptionCost != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// String says what a move costs, for run headers.
func (c *Costs) String() string {
	s := "free (the PAL artifact's model)"
	if !c.Default.Free() {
		s = fmt.Sprintf("migration %s s, preemption %s s of lost progress per move (GPU time lost: that x the job's GPUs)",
			secs(c.Default.Migration), secs(c.Default.Preemption))
	}
	var per []string
	for _, name := range c.overridden() {
		mc := c.For(&Spec{Model: name})
		per = append(per, fmt.Sprintf("%s %s/%s s", name, secs(mc.Migration), secs(mc.Preemption)))
	}
	if len(per) > 0 {
		s += "; model table (migration/preemption): " + strings.Join(per, ", ")
	}
	return s
}

func secs(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
