package variability

import "testing"

func TestQuarantineHysteresis(t *testing.T) {
	q, err := NewQuarantine(3, 1.5, DefaultQuarantineBelow(1.5))
	if err != nil {
		t.Fatal(err)
	}
	if q.Below != 1.25 {
		t.Fatalf("Below = %g, want 1.25", q.Below)
	}
	// GPU 1: in at 1.5, stays at 1.3 (above the release), out at 1.2.
	steps := []struct {
		s           float64
		changed, on bool
	}{
		{1.49, false, false}, {1.5, true, true}, {2, false, true}, {1.3, false, true},
		{1.25, false, true}, {1.2, true, false}, {1.4, false, false}, {1.6, true, true},
	}
	for i, st := range steps {
		ch, on := q.Update(1, st.s)
		if ch != st.changed || on != st.on {
			t.Fatalf("step %d slowdown %g: changed %v on %v, want %v %v", i, st.s, ch, on, st.changed, st.on)
		}
	}
	if q.Count() != 1 || !q.On(1) || q.On(0) || q.On(7) {
		t.Fatalf("Count %d, On(1) %v On(0) %v On(7) %v", q.Count(), q.On(1), q.On(0), q.On(7))
	}
	for _, bad := range [][2]float64{{1, 1}, {0.5, 0.4}, {2, 2}, {2, 0.9}} {
		if _, err := NewQuarantine(1, bad[0], bad[1]); err == nil {
			t.Errorf("NewQuarantine(%g, %g): no error", bad[0], bad[1])
		}
	}
}

func TestSlowdownIsTheWorstClass(t *testing.T) {
	prof, bel := &Table{}, &Table{}
	for c := range prof.Values {
		prof.Values[c] = []float64{1, 0.8}
		bel.Values[c] = []float64{1, 0.8}
	}
	bel.Values[2][1] = 1.6 // class C: twice its profile
	bel.Values[0][0] = 0.5 // faster than the profile: not a slowdown
	b := func(c Class, g int) float64 { return bel.Values[c][g] }
	if got := Slowdown(b, prof, 1); got != 2 {
		t.Errorf("GPU 1 slowdown %g, want 2", got)
	}
	if got := Slowdown(b, prof, 0); got != 1 {
		t.Errorf("GPU 0 slowdown %g, want 1", got)
	}
}
