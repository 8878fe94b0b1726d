package reproduce

import (
	"fmt"
	"slices"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/reproduce/migration"
	"github.com/palsched/pal/reproduce/sweep"
)

// Grids of a plan, one per figure family; Run shares identical runs
// between them (Fig 20 at L 1.7 is Fig 14's load-10 point).
type grids struct {
	sia, locality, fig20 *sweep.Grid
	synergy              map[string]*sweep.Grid // by scheduler
	migSia, migSynergy   []*sweep.Grid          // by migration cost
}

func gridsOf(p Plan) (*grids, error) {
	base, err := p.Base()
	if err != nil {
		return nil, err
	}
	if len(p.SynergySeeds) == 0 {
		return nil, fmt.Errorf("reproduce: no Synergy seed")
	}
	for _, k := range p.WaitTraces {
		if !slices.Contains(p.SiaTraces, k) {
			return nil, fmt.Errorf("reproduce: wait-time trace %d is not among the Fig 11 traces %v", k, p.SiaTraces)
		}
	}
	sia := base
	sia.Scheduler = "fifo"
	g := &grids{synergy: map[string]*sweep.Grid{}}
	waitKeep := func(pt sweep.Point) bool {
		for _, k := range p.WaitTraces {
			if pt.Trace == fmt.Sprintf("sia-philly/%d", k) && slices.Contains(fig12Placements, pt.Placement) {
				return true
			}
		}
		return false
	}
	g.sia = &sweep.Grid{Base: sia, Traces: siaNames(p.SiaTraces), Schedulers: []string{"fifo"}, Placements: placements, Keep: waitKeep}
	g.locality = &sweep.Grid{Base: sia, Traces: siaNames(p.LocalityTraces), Localities: p.LocalityPenalties,
		Schedulers: []string{"fifo"}, Placements: placements}

	// Synergy: the artifact preset, but its pinned inputs exist only for
	// 16x4, so GPU values are drawn (with replacement, seed 42) for 64x4.
	syn := base
	syn.Cluster = p.SynergyCluster
	syn.Round = p.SynergyRound
	syn.LocalityPenalty = p.SynergyL
	syn.Pinned = false
	track := p.SynergyTrack
	spec := sweep.SynergySpec{Jobs: p.SynergyJobs, Track: &track}
	for _, s := range synergySchedulers {
		loads := p.Loads[s]
		if s == "fifo" {
			loads = union(loads, p.UtilLoads)
		}
		var keep func(sweep.Point) bool
		if s == "fifo" {
			keep = func(pt sweep.Point) bool {
				return pt.Seed == p.SynergySeeds[0] && slices.Contains(p.UtilLoads, pt.Load) && slices.Contains(fig15Placements, pt.Placement)
			}
		}
		g.synergy[s] = &sweep.Grid{Base: syn, Traces: []string{sweep.SynergyTrace}, Loads: loads, Seeds: p.SynergySeeds,
			Schedulers: []string{s}, Placements: placements, Synergy: spec, Keep: keep}
	}
	g.fig20 = &sweep.Grid{Base: syn, Traces: []string{sweep.SynergyTrace}, Loads: []float64{p.Fig20Load},
		Localities: p.Fig20Penalties, Seeds: p.SynergySeeds, Schedulers: []string{"fifo"}, Placements: placements, Synergy: spec}
	g.migSia, g.migSynergy = migration.Grids(p, *g.sia, *g.fig20)
	return g, nil
}

func (g *grids) list() []*sweep.Grid {
	out := []*sweep.Grid{g.sia, g.locality}
	for _, s := range synergySchedulers {
		out = append(out, g.synergy[s])
	}
	out = append(out, g.fig20)
	out = append(out, g.migSia...)
	return append(out, g.migSynergy...)
}

// union is a ∪ b, sorted.
func union(a, b []float64) []float64 {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// placementRound times Fig 18's rounds. It is a variable so that tests can
// stand in a fake and keep wall-clock noise out of their assertions.
var placementRound = bench.PlacementRound
