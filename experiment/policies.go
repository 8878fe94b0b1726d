package experiment

import (
	"fmt"

	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/themis"
)

// NewScheduler builds the scheduling order o names, with its Tiresias knobs.
// Every driver (the simulator, the Kubernetes scheduler) builds it here.
func NewScheduler(o Options) (policy.Scheduler, error) {
	if o.Scheduler == SchedulerThemis {
		return newThemis(o.Seed)
	}
	if baseline.Is(o.Scheduler) {
		return baseline.New(baseline.Config{Name: o.Scheduler})
	}
	s, err := schedule.New(o.Scheduler)
	if err != nil {
		return nil, err
	}
	if _, ok := s.(*schedule.TiresiasLAS); ok && (o.TiresiasThresholds != nil || o.TiresiasStarvation != 0) {
		cfg := schedule.DefaultTiresias()
		if o.TiresiasThresholds != nil {
			cfg.Thresholds = o.TiresiasThresholds
		}
		cfg.StarvationFactor = o.TiresiasStarvation
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		s = schedule.NewTiresiasLAS(cfg)
	}
	return s, nil
}

// NewPlacer builds a placement by name with PM-First's tie-break setting.
func NewPlacer(name, tieBreak string) (policy.Placer, error) {
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

// newThemis is Themis with its defaults, placing as well as scheduling.
// The run's seed drives its randomized hidden payments (and is printed
// with the run's inputs as its seed).
func newThemis(seed uint64) (*themis.Policy, error) {
	return themis.New(themis.Config{Auction: fairness.DefaultOptions(), Seed: seed})
}
