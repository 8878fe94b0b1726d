package experiment

import (
	"fmt"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
)

func newScheduler(name string) (policy.Scheduler, error) {
	return schedule.New(name)
}

func newPlacer(name, tieBreak string) (policy.Placer, error) {
	var tb place.PMFirstTieBreak
	switch tieBreak {
	case "", "artifact":
		tb = place.PMFirstArtifact
	case "paper":
		tb = place.PMFirstPaper
	default:
		return nil, fmt.Errorf("--pmfirst-tiebreak %q: want artifact or paper", tieBreak)
	}
	p, err := place.New(name)
	if err != nil {
		return nil, err
	}
	switch q := p.(type) {
	case *place.PMFirst:
		q.TieBreak = tb
	case *place.PAL:
		q.TieBreak = tb
	}
	return p, nil
}
