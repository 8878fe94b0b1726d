// Package registry builds a round's policies by name: the scheduling
// order, the placement, Themis and the tenancy stage. Both drivers (the
// simulator through package experiment, and the Kubernetes scheduler)
// build them here from one Spec, so a name means the same policy with the
// same knobs under either driver. The Spec is the registry's own type:
// the simulator's options fill it, and nothing here knows of presets.
package registry

import (
	"fmt"

	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/policy/themis"
)

// Spec names a round's policies and carries their knobs.
type Spec struct {
	// Scheduler is the order: fifo, las, srtf, tiresias-las, themis, or
	// an elastic baseline (gandiva-fair, slaq, optimus).
	Scheduler string
	// TiresiasThresholds (GPU-seconds) and TiresiasStarvation tune
	// tiresias-las; nil and 0 keep its defaults.
	TiresiasThresholds []float64
	TiresiasStarvation float64
	// Seed draws Themis' randomized hidden payments.
	Seed uint64
	// Placement names the placer (unused when the scheduler places too);
	// TieBreak is PM-First's and PAL's tie-break: artifact (the default)
	// or paper.
	Placement string
	TieBreak  string
	// Tenancy is the tenancy stage: none (or ""), quota, hived,
	// hived-pm or hived-speed.
	Tenancy string
}

// SchedulerThemis is the scheduler that hands whole rounds to Themis'
// leases and partial-allocation auctions (policy/themis, defaults: f =
// 0.8, 600 s leases, payments on).
const SchedulerThemis = "themis"

// PlacesToo reports whether a scheduler also places (Themis and the
// elastic baselines of package baseline: gandiva-fair, slaq, optimus), so
// that a placement name does not apply.
func PlacesToo(scheduler string) bool {
	return scheduler == SchedulerThemis || baseline.Is(scheduler)
}

// DefaultTiresiasThresholds are tiresias-las' queue thresholds
// (GPU-seconds) when none are given.
func DefaultTiresiasThresholds() []float64 { return schedule.DefaultTiresias().Thresholds }

// NewScheduler builds the scheduling order s names, with its Tiresias knobs.
// Every driver (the simulator, the Kubernetes scheduler) builds it here.
func NewScheduler(o Spec) (policy.Scheduler, error) {
	if o.Scheduler == SchedulerThemis {
		return NewThemis(o.Seed)
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

// NewPlacer builds the placement s names with PM-First's tie-break setting.
func NewPlacer(s Spec) (policy.Placer, error) {
	var tb place.PMFirstTieBreak
	switch s.TieBreak {
	case "", "artifact":
		tb = place.PMFirstArtifact
	case "paper":
		tb = place.PMFirstPaper
	default:
		return nil, fmt.Errorf("--pmfirst-tiebreak %q: want artifact or paper", s.TieBreak)
	}
	p, err := place.New(s.Placement)
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

// NewThemis is Themis with its defaults, placing as well as scheduling.
// The run's seed drives its randomized hidden payments (and is printed
// with the run's inputs as its seed).
func NewThemis(seed uint64) (*themis.Policy, error) {
	return themis.New(themis.Config{Auction: fairness.DefaultOptions(), Seed: seed})
}

// PerVC wraps the order sched under tenancy: each VC orders its own queue
// with a scheduler of its own, built from s. Themis is returned as it is
// (it orders apps across VCs; each VC's placement runs a Themis of its
// own, see VCThemis).
func PerVC(s Spec, l *tenant.Layout, sched policy.Scheduler) (policy.Scheduler, error) {
	if _, ok := sched.(*themis.Policy); ok {
		return sched, nil
	}
	return tenant.NewPerVC(l, func() (policy.Scheduler, error) { return NewScheduler(s) })
}

// VCThemis makes one VC's placer when the top-level scheduler is Themis:
// a Themis of the VC's own over its cells (its apps, leases and
// contention are the VC's), on the top-level policy's clock.
func VCThemis(s Spec, top *themis.Policy) func() (policy.Placer, error) {
	return func() (policy.Placer, error) {
		p, err := NewThemis(s.Seed)
		if err != nil {
			return nil, err
		}
		return themis.InVC{Policy: p, Clock: top.Now}, nil
	}
}

// NewTenancy builds the tenancy stage s.Tenancy names over the layout l,
// each VC placing through iv: a *tenant.Quota for quota, a *tenant.HiveD
// for hived, hived-pm and hived-speed (the caller gives hived-pm and
// hived-speed their scores), nil for
// none.
func NewTenancy(s Spec, l *tenant.Layout, iv *tenant.IntraVC) (policy.Tenancy, error) {
	switch s.Tenancy {
	case "", "none":
		return nil, nil
	case "quota":
		q := tenant.NewQuota(l)
		q.SetIntraVC(iv)
		return q, nil
	case "hived", "hived-pm", "hived-speed":
		h, err := tenant.NewHiveD(l)
		if err != nil {
			return nil, err
		}
		h.SetIntraVC(iv)
		if s.Tenancy == "hived-speed" {
			h.BalanceSpeeds()
		}
		return h, nil
	}
	return nil, fmt.Errorf("tenancy %q: want none, quota, hived, hived-pm or hived-speed", s.Tenancy)
}
