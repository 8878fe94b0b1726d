package variability

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewScoresPinned(t *testing.T) {
	g := readPinned(t)
	loc := BPMainLocality(1.7)
	s, err := NewScores(g.Table, BinOptions{}, loc.ForClass)
	if err != nil {
		t.Fatal(err)
	}
	wantL := [NumClasses]float64{1.16, 1, 1, 1.10}
	if s.L != wantL {
		t.Errorf("L = %v, want %v", s.L, wantL)
	}
	for c := range Class(NumClasses) {
		if !slices.Equal(s.SF[c], s.Bins[c].SF) || len(s.SF[c]) != 64 {
			t.Errorf("class %s: SF does not match its bins", c)
		}
		if !slices.Equal(s.LV[c], LxV(s.SF[c], wantL[c])) {
			t.Errorf("class %s: LV not built with its L", c)
		}
		if &s.Raw.Values[c][0] != &g.Table.Values[c][0] {
			t.Errorf("class %s: Raw is not the input table", c)
		}
	}
	// Class A with the artifact's constant: the order the artifact prints.
	s, err = NewScores(g.Table, BinOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := FormatLxV(s.LV[ClassA]), "W0.913 → W1.000 → A1.552 → A1.700 → W2.595 → A4.411"; got != want {
		t.Errorf("class A order %s, want %s", got, want)
	}
}

func TestNewScoresErrors(t *testing.T) {
	ok := []float64{1, 2}
	tests := []struct {
		name string
		raw  *Table
		L    func(Class) float64
		want string
	}{
		{"nil", nil, nil, "no table"},
		{"empty", &Table{}, nil, "no GPUs"},
		{"ragged", &Table{Values: [NumClasses][]float64{ok, ok, {1}, ok}}, nil, "class C has 1 GPUs"},
		{"bad value", &Table{Values: [NumClasses][]float64{ok, ok, ok, {1, -1}}}, nil, "class D"},
		{"bad L", &Table{Values: [NumClasses][]float64{ok, ok, ok, ok}}, func(Class) float64 { return 0 }, "locality penalty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewScores(tc.raw, BinOptions{}, tc.L)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A Summit-sized cluster (27,648 GPUs) must bin quickly with the
// artifact strategy, even though K then reaches the hundreds.
func TestNewScoresLargeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("large cluster")
	}
	ps, err := LoadNamed("longhorn")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Assign(ps, 27648, WithReplacement, NewRand(42), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := NewScores(tb, BinOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("NewScores(27648 GPUs, artifact): %v; K = %d/%d/%d/%d", el,
		s.Bins[0].K, s.Bins[1].K, s.Bins[2].K, s.Bins[3].K)
	// Generous: shared CI machines are noisy; the benchmark tracks speed.
	if el > 5*time.Second {
		t.Errorf("took %v", el)
	}
	for c := range Class(NumClasses) {
		if s.Bins[c].K != 2+len(s.Bins[c].Outliers) && s.Bins[c].K != countDistinct(tb.Values[c]) {
			t.Errorf("class %s: K=%d with %d outliers", c, s.Bins[c].K, len(s.Bins[c].Outliers))
		}
	}
}

func benchmarkScores(b *testing.B, profile string, st KStrategy) {
	ps, err := LoadNamed(profile)
	if err != nil {
		b.Fatal(err)
	}
	tb, err := Assign(ps, 27648, WithReplacement, NewRand(42), nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := NewScores(tb, BinOptions{Strategy: st}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewScores27648Longhorn(b *testing.B) { benchmarkScores(b, "longhorn", KArtifact) }
func BenchmarkNewScores27648Frontera(b *testing.B) { benchmarkScores(b, "frontera", KArtifact) }
func BenchmarkNewScores27648LonghornPaper(b *testing.B) {
	benchmarkScores(b, "longhorn", KPaper)
}
