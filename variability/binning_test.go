package variability

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// The artifact's binning of its own seed-42 table, as the PAL artifact
// (scikit-learn KMeans, K = 2 + outliers, median-centroid normalisation)
// produces it.
func TestBinArtifactReproducesPinnedTable(t *testing.T) {
	g := readPinned(t)
	tests := []struct {
		class    Class
		counts   []int
		sf       []float64
		outliers []int
	}{
		{ClassA, []int{51, 12, 1}, []float64{0.9128, 1.0, 2.5946}, []int{35}},
		{ClassB, []int{44, 20}, []float64{0.9851, 1.0149}, nil},
		{ClassC, []int{31, 33}, []float64{0.9876, 1.0124}, nil},
		{ClassD, []int{7, 57}, []float64{0.9855, 1.0145}, nil},
	}
	for _, eng := range []Engine{EngineLloyd, EngineExact} {
		for _, tc := range tests {
			t.Run(eng.String()+"/"+tc.class.String(), func(t *testing.T) {
				b, err := Bin(g.Table.Values[tc.class], BinOptions{Engine: eng})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(b.Counts, tc.counts) {
					t.Errorf("counts %v, want %v", b.Counts, tc.counts)
				}
				if len(b.Centroids) != len(tc.sf) {
					t.Fatalf("centroids %v, want %v", b.Centroids, tc.sf)
				}
				for j, w := range tc.sf {
					if math.Abs(b.Centroids[j]-w) > 5e-5 {
						t.Errorf("bin %d sf %.5f, want %.4f", j, b.Centroids[j], w)
					}
				}
				if !slices.Equal(b.Outliers, tc.outliers) {
					t.Errorf("outliers %v, want %v", b.Outliers, tc.outliers)
				}
				for gpu, j := range b.Bin {
					if b.SF[gpu] != b.Centroids[j] {
						t.Fatalf("GPU %d sf %v is not its bin's %v", gpu, b.SF[gpu], b.Centroids[j])
					}
				}
				if b.HasSilhouette() {
					t.Error("artifact strategy should not compute a silhouette")
				}
				wantOutBin := make([]bool, len(tc.counts))
				if tc.class == ClassA {
					wantOutBin[2] = true
				}
				if !slices.Equal(b.OutlierBin, wantOutBin) {
					t.Errorf("outlier bins %v, want %v", b.OutlierBin, wantOutBin)
				}
			})
		}
	}
}

func TestOutliers(t *testing.T) {
	tests := []struct {
		name string
		x    []float64
		want []int
	}{
		// 19 values near 1 and one at 3: mean+3σ (ddof=1) ≈ 2.44.
		{"one slow", append(slices.Repeat([]float64{1}, 19), 3), []int{19}},
		{"fast side ignored", append(slices.Repeat([]float64{1}, 19), 0.001), nil},
		{"no spread", []float64{2, 2, 2}, nil},
		{"single", []float64{5}, nil},
		{"empty", nil, nil},
		{"huge", append(slices.Repeat([]float64{1e307}, 19), 1.7e308), []int{19}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Outliers(tc.x)
			if !slices.Equal(got, tc.want) {
				t.Errorf("outliers %v, want %v", got, tc.want)
			}
		})
	}
	// ddof=1 matters at the boundary: with 10 values {1×9, x} the sample
	// threshold is higher than the population one.
	x := append(slices.Repeat([]float64{0}, 9), 1)
	_, thr := Outliers(x)
	mean, sd := 0.1, math.Sqrt((9*0.01+0.81)/9)
	if math.Abs(thr-(mean+3*sd)) > 1e-12 {
		t.Errorf("threshold %v, want %v", thr, mean+3*sd)
	}
}

// Three well-separated groups plus one far outlier: the paper strategy's
// silhouette sweep finds the three groups and the outlier keeps its own
// normalised value.
func TestBinPaperFindsGroups(t *testing.T) {
	var x []float64
	for i := range 30 {
		x = append(x, 0.90+0.002*float64(i%5), 1.00+0.002*float64(i%5), 1.10+0.002*float64(i%5))
	}
	x = append(x, 3.0)
	b, err := Bin(x, BinOptions{Strategy: KPaper})
	if err != nil {
		t.Fatal(err)
	}
	if b.K != 4 || !slices.Equal(b.Counts, []int{30, 30, 30, 1}) {
		t.Fatalf("K=%d counts %v, want 4 bins 30/30/30/1", b.K, b.Counts)
	}
	if !slices.Equal(b.Outliers, []int{90}) || !slices.Equal(b.OutlierBin, []bool{false, false, false, true}) {
		t.Errorf("outliers %v bins %v", b.Outliers, b.OutlierBin)
	}
	med := median(x)
	if math.Abs(b.Norm-med) > 1e-15 || math.Abs(b.SF[90]-3.0/med) > 1e-12 {
		t.Errorf("norm %v sf %v, want median GPU %v and own score %v", b.Norm, b.SF[90], med, 3.0/med)
	}
	if !b.HasSilhouette() || b.Silhouette < 0.9 {
		t.Errorf("silhouette %v", b.Silhouette)
	}
	if !math.IsNaN(b.OutlierSilhouette) {
		t.Errorf("one outlier needs no sweep, got silhouette %v", b.OutlierSilhouette)
	}
	// The artifact strategy uses K = 2 + 1 on the same data.
	a, err := Bin(x, BinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.K != 3 {
		t.Errorf("artifact K = %d, want 3", a.K)
	}
}

func TestBinPaperOutlierSweep(t *testing.T) {
	// 2000 values around 1 and two groups of slow outliers.
	var x []float64
	for i := range 2000 {
		x = append(x, 1+0.001*float64(i%10))
	}
	x = append(x, 2.0, 2.01, 2.02, 4.0, 4.01, 4.02)
	b, err := Bin(x, BinOptions{Strategy: KPaper})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Outliers) != 6 {
		t.Fatalf("outliers %v", b.Outliers)
	}
	nOut := 0
	for j, o := range b.OutlierBin {
		if o {
			nOut++
			if b.Counts[j] != 3 {
				t.Errorf("outlier bin %d has %d GPUs, want 3", j, b.Counts[j])
			}
		}
	}
	if nOut != 2 || !(b.OutlierSilhouette > 0.9) {
		t.Errorf("%d outlier bins, silhouette %v; want 2 well separated", nOut, b.OutlierSilhouette)
	}
	for _, g := range b.Outliers {
		if b.SF[g] != x[g]/b.Norm {
			t.Errorf("outlier %d sf %v, want own %v", g, b.SF[g], x[g]/b.Norm)
		}
	}
}

func TestBinDeterministic(t *testing.T) {
	ps, err := LoadNamed("frontera")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Assign(ps, 2048, WithReplacement, NewRand(8), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []KStrategy{KArtifact, KPaper} {
		a, err := Bin(tb.Values[ClassA], BinOptions{Strategy: st, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			b, _ := Bin(tb.Values[ClassA], BinOptions{Strategy: st, Seed: 4})
			if !slices.Equal(a.SF, b.SF) || !slices.Equal(a.Counts, b.Counts) {
				t.Fatalf("%v: same seed, different bins", st)
			}
		}
	}
}

func TestBinEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		x       []float64
		opts    BinOptions
		wantK   int
		wantErr string
	}{
		{"identical artifact", []float64{1.2, 1.2, 1.2, 1.2}, BinOptions{}, 1, ""},
		{"identical paper", []float64{1.2, 1.2, 1.2, 1.2}, BinOptions{Strategy: KPaper}, 1, ""},
		{"two values paper", []float64{1, 1, 1, 2, 2, 2}, BinOptions{Strategy: KPaper}, 2, ""},
		{"one GPU", []float64{0.7}, BinOptions{}, 1, ""},
		{"two GPUs paper", []float64{0.7, 0.9}, BinOptions{Strategy: KPaper}, 2, ""},
		{"base k", []float64{1, 2, 3, 4, 5, 6}, BinOptions{BaseK: 4}, 4, ""},
		{"max k", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, BinOptions{Strategy: KPaper, MaxK: 2}, 2, ""},
		{"empty", nil, BinOptions{}, 0, "no GPUs"},
		{"zero", []float64{1, 0}, BinOptions{}, 0, "GPU 1 has value 0"},
		{"nan", []float64{math.NaN()}, BinOptions{}, 0, "GPU 0 has value NaN"},
		{"inf", []float64{1, math.Inf(1)}, BinOptions{}, 0, "+Inf"},
		{"bad strategy", []float64{1}, BinOptions{Strategy: KStrategy(7)}, 0, "unknown strategy"},
		{"too wide", []float64{5e-324, 5e-324, 1e300}, BinOptions{}, 0, "too wide"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Bin(tc.x, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.K != tc.wantK || len(b.Counts) != b.K || len(b.SF) != len(tc.x) {
				t.Fatalf("K=%d counts %v sf %v, want K=%d", b.K, b.Counts, b.SF, tc.wantK)
			}
		})
	}
}

func TestParseKStrategy(t *testing.T) {
	for in, want := range map[string]KStrategy{"artifact": KArtifact, "": KArtifact, "Paper": KPaper} {
		if got, err := ParseKStrategy(in); err != nil || got != want {
			t.Errorf("ParseKStrategy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseKStrategy("elbow"); err == nil {
		t.Error("no error for an unknown strategy")
	}
}

func FuzzBin(f *testing.F) {
	f.Add(1.0, 1.0, 1.0, 2.0, 9.0, uint64(0), false)
	f.Add(0.9, 1.1, 1.0, 1.05, 3.5, uint64(3), true)
	f.Add(5e-324, 1e308, 1.0, 1.0, 1.0, uint64(1), true)
	f.Fuzz(func(t *testing.T, a, b, c, d, e float64, seed uint64, paper bool) {
		x := []float64{a, b, c, d, e, a, c}
		st := KArtifact
		if paper {
			st = KPaper
		}
		bn, err := Bin(x, BinOptions{Strategy: st, Seed: seed, NInit: 2})
		if err != nil {
			return
		}
		sum := 0
		for _, n := range bn.Counts {
			sum += n
		}
		if sum != len(x) || len(bn.SF) != len(x) || bn.K != len(bn.Centroids) || !slices.IsSorted(bn.Centroids) {
			t.Fatalf("inconsistent binning %+v", bn)
		}
		for g, s := range bn.SF {
			if !(s > 0) || math.IsInf(s, 0) {
				t.Fatalf("GPU %d sf %v", g, s)
			}
		}
	})
}
