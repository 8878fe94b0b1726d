package pal

import (
	"fmt"
	"slices"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// Grids are PAL's grids of a plan, one per figure family; the sweep that
// runs them shares identical runs (Fig 20 at L 1.7 is Fig 14's load-10
// point). Sia and Fig20 are exported as the bases other rooms vary (the
// migration study runs them again at each migration cost).
type Grids struct {
	Sia, Locality, Fig20 *sweep.Grid
	Synergy              map[string]*sweep.Grid // by scheduler
}

// GridsOf builds PAL's grids of the plan, or says which of its settings
// cannot be run.
func GridsOf(p paper.Plan) (*Grids, error) {
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
	g := &Grids{Synergy: map[string]*sweep.Grid{}}
	waitKeep := func(pt sweep.Point) bool {
		for _, k := range p.WaitTraces {
			if pt.Trace == fmt.Sprintf("sia-philly/%d", k) && slices.Contains(fig12Placements, pt.Placement) {
				return true
			}
		}
		return false
	}
	g.Sia = &sweep.Grid{Base: sia, Traces: paper.SiaNames(p.SiaTraces), Schedulers: []string{"fifo"}, Placements: paper.Placements, Keep: waitKeep}
	g.Locality = &sweep.Grid{Base: sia, Traces: paper.SiaNames(p.LocalityTraces), Localities: p.LocalityPenalties,
		Schedulers: []string{"fifo"}, Placements: paper.Placements}

	// Synergy: the artifact preset, but its pinned inputs exist only for
	// 16x4, so GPU values are drawn (with replacement, seed 42) for 64x4.
	syn := base
	syn.Cluster = p.SynergyCluster
	syn.Round = p.SynergyRound
	syn.LocalityPenalty = p.SynergyL
	syn.Pinned = false
	track := p.SynergyTrack
	spec := sweep.SynergySpec{Jobs: p.SynergyJobs, Track: &track}
	for _, s := range paper.SynergySchedulers {
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
		g.Synergy[s] = &sweep.Grid{Base: syn, Traces: []string{sweep.SynergyTrace}, Loads: loads, Seeds: p.SynergySeeds,
			Schedulers: []string{s}, Placements: paper.Placements, Synergy: spec, Keep: keep}
	}
	g.Fig20 = &sweep.Grid{Base: syn, Traces: []string{sweep.SynergyTrace}, Loads: []float64{p.Fig20Load},
		Localities: p.Fig20Penalties, Seeds: p.SynergySeeds, Schedulers: []string{"fifo"}, Placements: paper.Placements, Synergy: spec}
	return g, nil
}

// List is the grids in the order Figures reads their results: Sia,
// locality, one Synergy grid per scheduler of paper.SynergySchedulers,
// Fig 20.
func (g *Grids) List() []*sweep.Grid {
	out := []*sweep.Grid{g.Sia, g.Locality}
	for _, s := range paper.SynergySchedulers {
		out = append(out, g.Synergy[s])
	}
	return append(out, g.Fig20)
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
