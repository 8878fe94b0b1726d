package reproduce

import (
	"github.com/palsched/pal/reproduce/migration"
	"github.com/palsched/pal/reproduce/pal"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/reproduce/sweep"
)

// grids are every room's grids that run in the one sweep: PAL's, and the
// migration study's, which vary PAL's Sia and Fig 20 grids by migration
// cost.
type grids struct {
	pal                *pal.Grids
	migSia, migSynergy []*sweep.Grid // by migration cost
}

func gridsOf(p paper.Plan) (*grids, error) {
	pg, err := pal.GridsOf(p)
	if err != nil {
		return nil, err
	}
	g := &grids{pal: pg}
	g.migSia, g.migSynergy = migration.Grids(p, *pg.Sia, *pg.Fig20)
	return g, nil
}

// list is the sweep's order: PAL's grids (pal.Grids.List), then the
// migration grids on Sia and on Synergy.
func (g *grids) list() []*sweep.Grid {
	out := append(g.pal.List(), g.migSia...)
	return append(out, g.migSynergy...)
}
