package registry

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/policy/themis"
)

// Each scheduler name builds its policy with the Spec's knobs, and bad
// knobs or names fail with a message naming them.
func TestNewScheduler(t *testing.T) {
	cases := map[string]struct {
		spec    Spec
		name    string
		wantErr string
	}{
		"fifo":                       {spec: Spec{Scheduler: "fifo"}, name: "fifo"},
		"tiresias with knobs":        {spec: Spec{Scheduler: "tiresias-las", TiresiasThresholds: []float64{100, 200}, TiresiasStarvation: 2}, name: "tiresias-las"},
		"tiresias, bad thresholds":   {spec: Spec{Scheduler: "tiresias-las", TiresiasThresholds: []float64{200, 100}}, wantErr: "tiresias: thresholds must be positive and increasing, got [200 100]"},
		"themis":                     {spec: Spec{Scheduler: SchedulerThemis, Seed: 7}, name: "themis"},
		"elastic baseline":           {spec: Spec{Scheduler: "slaq"}, name: "slaq"},
		"unknown":                    {spec: Spec{Scheduler: "nope"}, wantErr: "x"},
		"knobs of another scheduler": {spec: Spec{Scheduler: "las", TiresiasStarvation: 2}, name: "las"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewScheduler(tc.spec)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got %s, want an error", s.Name())
				}
				if tc.wantErr != "x" && err.Error() != tc.wantErr {
					t.Fatalf("error %q, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tc.name {
				t.Errorf("name %q, want %q", s.Name(), tc.name)
			}
		})
	}
	s, _ := NewScheduler(Spec{Scheduler: SchedulerThemis, Seed: 7})
	if got := s.(*themis.Policy).PaymentSeed(); got != 7 {
		t.Errorf("themis payment seed %d, want the spec's 7", got)
	}
	if s, _ := NewScheduler(Spec{Scheduler: "tiresias-las"}); s.(*schedule.TiresiasLAS) == nil {
		t.Error("tiresias-las is not a *schedule.TiresiasLAS")
	}
	for _, n := range baseline.Names() {
		if !PlacesToo(n) {
			t.Errorf("PlacesToo(%s) = false", n)
		}
	}
	if !PlacesToo(SchedulerThemis) || PlacesToo("fifo") {
		t.Error("PlacesToo: themis places, fifo does not")
	}
}

// The tie-break reaches PM-First and PAL; an unknown one is refused.
func TestNewPlacer(t *testing.T) {
	p, err := NewPlacer(Spec{Placement: "pm-first", TieBreak: "paper"})
	if err != nil {
		t.Fatal(err)
	}
	if tb := p.(*place.PMFirst).TieBreak; tb != place.PMFirstPaper {
		t.Errorf("pm-first tie-break %v, want paper", tb)
	}
	p, err = NewPlacer(Spec{Placement: "pal"})
	if err != nil {
		t.Fatal(err)
	}
	if tb := p.(*place.PAL).TieBreak; tb != place.PMFirstArtifact {
		t.Errorf("pal default tie-break %v, want artifact", tb)
	}
	const want = `--pmfirst-tiebreak "odd": want artifact or paper`
	if _, err := NewPlacer(Spec{Placement: "pal", TieBreak: "odd"}); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := NewPlacer(Spec{Placement: "nope"}); err == nil {
		t.Error("unknown placement accepted")
	}
}

// Each tenancy name builds its stage; none builds none.
func TestNewTenancy(t *testing.T) {
	c, err := cluster.Parse("2x4")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := tenant.UniformCells(c)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tenant.NewLayout(cells)
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{"": "<nil>", "none": "<nil>", "quota": "*tenant.Quota", "hived": "*tenant.HiveD", "hived-pm": "*tenant.HiveD", "hived-speed": "*tenant.HiveD"} {
		st, err := NewTenancy(Spec{Tenancy: mode}, l, &tenant.IntraVC{})
		if err != nil {
			t.Fatalf("%q: %v", mode, err)
		}
		if got := typeName(st); got != want {
			t.Errorf("tenancy %q: stage %s, want %s", mode, got, want)
		}
		if h, ok := st.(*tenant.HiveD); ok && mode == "hived-speed" && h.Name() != "hived-speed" {
			t.Errorf("tenancy hived-speed: stage named %s", h.Name())
		}
	}
	const want = `tenancy "private": want none, quota, hived, hived-pm or hived-speed`
	if _, err := NewTenancy(Spec{Tenancy: "private"}, l, nil); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func typeName(st any) string {
	switch st.(type) {
	case nil:
		return "<nil>"
	case *tenant.Quota:
		return "*tenant.Quota"
	case *tenant.HiveD:
		return "*tenant.HiveD"
	}
	return "other"
}
