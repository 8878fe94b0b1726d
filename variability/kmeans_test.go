package variability

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
)

func threeGroups() []float64 {
	var x []float64
	for i := range 20 {
		x = append(x, 1+float64(i%5)*0.01, 5+float64(i%4)*0.01, 9+float64(i%3)*0.01)
	}
	return x
}

func TestKMeans1DKnownClusters(t *testing.T) {
	for _, eng := range []Engine{EngineLloyd, EngineExact} {
		t.Run(eng.String(), func(t *testing.T) {
			x := threeGroups()
			f, err := KMeans1D(x, 3, KMeansOptions{Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Counts, []int{20, 20, 20}) {
				t.Errorf("counts %v", f.Counts)
			}
			want := []float64{1.02, 5.015, 9.0095}
			for j := range want {
				if math.Abs(f.Centroids[j]-want[j]) > 1e-3 {
					t.Errorf("centroid %d = %v, want %v", j, f.Centroids[j], want[j])
				}
			}
			for i, v := range x {
				if want := int(v / 4); f.Labels[i] != want {
					t.Fatalf("value %v labelled %d, want %d", v, f.Labels[i], want)
				}
			}
		})
	}
}

// bruteInertia is the best inertia over every split of sorted x into k
// runs, which in 1-D is the global optimum.
func bruteInertia(x []float64, k int) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	var best = math.Inf(1)
	var rec func(start, left int, acc float64)
	rec = func(start, left int, acc float64) {
		if left == 1 {
			best = min(best, acc+sse(s[start:]))
			return
		}
		for end := start + 1; end <= len(s)-left+1; end++ {
			rec(end, left-1, acc+sse(s[start:end]))
		}
	}
	rec(0, k, 0)
	return best
}

func sse(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s
}

func TestKMeans1DEnginesAgainstBruteForce(t *testing.T) {
	rng := NewRand(7)
	for trial := range 200 {
		n := 2 + rng.IntN(10)
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Round(rng.NormFloat64()*100) / 10 // some ties
		}
		k := 1 + rng.IntN(min(n, 5))
		k = min(k, countDistinct(x))
		want := bruteInertia(x, k)
		ex, err := KMeans1D(x, k, KMeansOptions{Engine: EngineExact})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ex.Inertia-want) > 1e-9*(1+want) {
			t.Fatalf("trial %d: exact inertia %v, brute force %v (x=%v k=%d)", trial, ex.Inertia, want, x, k)
		}
		ll, err := KMeans1D(x, k, KMeansOptions{Seed: uint64(trial)})
		if err != nil {
			t.Fatal(err)
		}
		if ll.Inertia < want-1e-9*(1+want) {
			t.Fatalf("trial %d: lloyd inertia %v below the optimum %v", trial, ll.Inertia, want)
		}
		if len(ll.Centroids) != k || len(ex.Centroids) != k {
			t.Fatalf("trial %d: %d/%d clusters, want %d", trial, len(ll.Centroids), len(ex.Centroids), k)
		}
		for _, f := range []*KMeansFit{ex, ll} {
			if !slices.IsSorted(f.Centroids) {
				t.Fatalf("centroids not ascending: %v", f.Centroids)
			}
			sum := 0
			for _, c := range f.Counts {
				if c == 0 {
					t.Fatalf("empty cluster: %v", f.Counts)
				}
				sum += c
			}
			if sum != n {
				t.Fatalf("counts %v do not add up to %d", f.Counts, n)
			}
		}
	}
}

func TestKMeans1DDeterministic(t *testing.T) {
	ps, err := LoadNamed("longhorn")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Assign(ps, 4096, WithReplacement, NewRand(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := tb.Values[ClassA]
	a, err := KMeans1D(x, 40, KMeansOptions{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, _ := KMeans1D(x, 40, KMeansOptions{Seed: 9})
		if !slices.Equal(a.Labels, b.Labels) || !slices.Equal(a.Centroids, b.Centroids) {
			t.Fatal("same seed, different result")
		}
	}
}

func TestKMeans1DEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		x       []float64
		k       int
		opts    KMeansOptions
		wantK   int
		wantErr string
	}{
		{"identical", []float64{2, 2, 2, 2}, 3, KMeansOptions{}, 1, ""},
		{"fewer distinct than k", []float64{1, 1, 2, 2, 3}, 5, KMeansOptions{}, 3, ""},
		{"fewer distinct exact", []float64{1, 1, 2, 2, 3}, 5, KMeansOptions{Engine: EngineExact}, 3, ""},
		{"single", []float64{4}, 2, KMeansOptions{}, 1, ""},
		{"huge range", []float64{-1.7e308, -1.6e308, 1.6e308, 1.7e308}, 2, KMeansOptions{}, 2, ""},
		{"tiny values", []float64{5e-324, 1e-323, 1, 1.0000001}, 2, KMeansOptions{}, 2, ""},
		{"empty", nil, 2, KMeansOptions{}, 0, "no values"},
		{"k zero", []float64{1}, 0, KMeansOptions{}, 0, "at least 1"},
		{"nan", []float64{1, math.NaN()}, 2, KMeansOptions{}, 0, "value 1 is NaN"},
		{"inf", []float64{math.Inf(1)}, 1, KMeansOptions{}, 0, "+Inf"},
		{"bad engine", []float64{1, 2}, 2, KMeansOptions{Engine: Engine(5)}, 0, "unknown engine"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := KMeans1D(tc.x, tc.k, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Centroids) != tc.wantK {
				t.Fatalf("K = %d, want %d (centroids %v)", len(f.Centroids), tc.wantK, f.Centroids)
			}
			for _, c := range f.Centroids {
				if math.IsNaN(c) || math.IsInf(c, 0) {
					t.Fatalf("centroid %v", c)
				}
			}
			if tc.wantK == 2 && (f.Labels[0] != 0 || f.Labels[len(f.Labels)-1] != 1) {
				t.Errorf("labels %v", f.Labels)
			}
		})
	}
}

func TestSeedPlusPlusPicksDistinctDataValues(t *testing.T) {
	x := threeGroups()
	d := newDistinct(x)
	rng := NewRand(5)
	for k := 1; k <= len(d.v); k++ {
		c := d.seedPlusPlus(k, rng)
		if len(c) != k || !slices.IsSorted(c) || len(slices.Compact(slices.Clone(c))) != k {
			t.Fatalf("k=%d: centres %v", k, c)
		}
		for _, v := range c {
			if !slices.Contains(d.v, v) {
				t.Fatalf("centre %v is not a data value", v)
			}
		}
	}
}

// bruteSilhouette is the textbook O(n²) definition.
func bruteSilhouette(x []float64, labels []int) float64 {
	n := len(x)
	size := map[int]int{}
	for _, l := range labels {
		size[l]++
	}
	total := 0.0
	for i := range x {
		if size[labels[i]] == 1 {
			continue
		}
		sum := map[int]float64{}
		for j := range x {
			sum[labels[j]] += math.Abs(x[i] - x[j])
		}
		a := sum[labels[i]] / float64(size[labels[i]]-1)
		b := math.Inf(1)
		for l, s := range sum {
			if l != labels[i] {
				b = min(b, s/float64(size[l]))
			}
		}
		if m := max(a, b); m > 0 {
			total += (b - a) / m
		}
	}
	return total / float64(n)
}

func TestSilhouette1DMatchesBruteForce(t *testing.T) {
	rng := NewRand(11)
	for trial := range 300 {
		n := 3 + rng.IntN(40)
		k := 2 + rng.IntN(min(n-2, 6))
		x := make([]float64, n)
		l := make([]int, n)
		for i := range x {
			x[i] = math.Round(rng.Float64()*20) / 4 // ties on purpose
			l[i] = rng.IntN(k) * 7                  // labels need not be 0..k-1
		}
		l[0], l[1] = 0, 7 // at least two clusters
		want := bruteSilhouette(x, l)
		distinctLabels := len(slices.Compact(slices.Sorted(slices.Values(l))))
		if distinctLabels > n-1 {
			continue
		}
		if got := Silhouette1D(x, l); math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d: %v, brute force %v (x=%v l=%v)", trial, got, want, x, l)
		}
	}
}

func TestSilhouette1DKnown(t *testing.T) {
	tests := []struct {
		name string
		x    []float64
		l    []int
		want float64
	}{
		{"perfect", []float64{1, 1, 5, 5}, []int{0, 0, 1, 1}, 1},
		{"one cluster", []float64{1, 2, 3}, []int{0, 0, 0}, math.NaN()},
		{"all singletons", []float64{1, 2, 3}, []int{0, 1, 2}, math.NaN()},
		{"too few", []float64{1, 2}, []int{0, 1}, math.NaN()},
		{"length mismatch", []float64{1, 2, 3}, []int{0, 1}, math.NaN()},
		{"singleton scores zero", []float64{0, 0, 10}, []int{0, 0, 1}, 2.0 / 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Silhouette1D(tc.x, tc.l)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// The sweep's O(n) silhouette on contiguous runs must agree with the
// general one.
func TestDistinctSilhouetteMatchesGeneral(t *testing.T) {
	rng := NewRand(21)
	for trial := range 200 {
		n := 3 + rng.IntN(60)
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Round(rng.ExpFloat64()*40) / 8
		}
		d := newDistinct(x)
		k := 2 + rng.IntN(5)
		c, err := d.cluster(k, KMeansOptions{Seed: uint64(trial)})
		if err != nil {
			t.Fatal(err)
		}
		c = d.prune(c)
		got := d.silhouette(d.bounds(c, nil))
		want := Silhouette1D(x, d.fit(c).Labels)
		if math.IsNaN(got) != math.IsNaN(want) || (!math.IsNaN(want) && math.Abs(got-want) > 1e-9) {
			t.Fatalf("trial %d: %v, general %v", trial, got, want)
		}
	}
}

func FuzzKMeans1D(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 8, 64}, 2, false)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 239, 127}, 3, true)
	f.Fuzz(func(t *testing.T, raw []byte, k int, exact bool) {
		var x []float64
		for len(raw) >= 8 && len(x) < 64 {
			x = append(x, math.Float64frombits(binary.LittleEndian.Uint64(raw)))
			raw = raw[8:]
		}
		k = k%12 + 1
		if k < 1 {
			k += 12
		}
		opts := KMeansOptions{NInit: 2}
		if exact {
			opts.Engine = EngineExact
		}
		fit, err := KMeans1D(x, k, opts)
		if err != nil {
			return
		}
		sum := 0
		for _, c := range fit.Counts {
			if c == 0 {
				t.Fatalf("empty cluster in %v", fit.Counts)
			}
			sum += c
		}
		if sum != len(x) || len(fit.Labels) != len(x) || len(fit.Centroids) > k || !slices.IsSorted(fit.Centroids) {
			t.Fatalf("inconsistent fit %+v for %v", fit, x)
		}
		for _, c := range fit.Centroids {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				t.Fatalf("centroid %v for %v", c, x)
			}
		}
		_ = Silhouette1D(x, fit.Labels)
	})
}
