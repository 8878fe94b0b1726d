package experiment

import (
	"testing"

	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/themis"
)

// Themis' payment draws follow the run's seed (they were always seed 0),
// and the elastic baselines are schedulers that place.
func TestSchedulerSeedAndBaselines(t *testing.T) {
	for _, seed := range []uint64{1, 42} {
		s, err := registry.NewScheduler(Options{Scheduler: SchedulerThemis, Seed: seed}.Spec(""))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.(*themis.Policy).PaymentSeed(); got != seed {
			t.Errorf("run seed %d: payment seed %d", seed, got)
		}
	}
	for _, n := range baseline.Names() {
		s, err := registry.NewScheduler(Options{Scheduler: n}.Spec(""))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*baseline.Policy); !ok || !PlacesToo(n) {
			t.Errorf("%s: scheduler %T, places too %v", n, s, PlacesToo(n))
		}
		if o := (Options{Scheduler: n, Round: 300}).Effective(); o.Placements != n || o.Round != 60 {
			t.Errorf("%s: effective placements %q round %v, want %q and 60", n, o.Placements, o.Round, n)
		}
	}
}

// An elastic baseline places every job itself: a --placement given with it
// is refused, naming both.
func TestBaselineRefusesPlacement(t *testing.T) {
	o := Options{Scheduler: "slaq", Placements: "pal"}
	o.Explicit.Flags = []string{"placement"}
	_, _, err := RunAllWith(o, Hooks{})
	const want = "--placement pal: --scheduler slaq places every job itself (it plans GPU counts and packs them), so a placement list would not be used; leave --placement out"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
