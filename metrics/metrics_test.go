package metrics

import (
	"math"
	"testing"
)

func TestQuantile(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {0.5, 5.5}, {0.99, 9.91}, {1, 10}} {
		if got := Quantile(x, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestSummarizeCountsOnlyTracked(t *testing.T) {
	recs := []JobRecord{
		{Tracked: true, Arrival: 100, Completion: 360, JCT: 260, Wait: 260 - 360, Preemptions: 1},
		{Tracked: true, Arrival: 200, Completion: 1080, JCT: 880, Migrations: 2},
		{Tracked: false, Arrival: 50, Completion: 5000, JCT: 4950, Preemptions: 4},
	}
	s := Summarize(recs, 720, 1440)
	if s.Jobs != 2 || s.AvgJCT != 570 || s.Makespan != 980 || s.EndTime != 1080 {
		t.Fatalf("summary = %+v", s)
	}
	// sorted[int(0.99*2)] = sorted[1]
	if s.P99JCTIndex != 880 || s.Utilization != 0.5 {
		t.Fatalf("p99 index %v util %v", s.P99JCTIndex, s.Utilization)
	}
	if s.Preemptions != 5 || s.Migrations != 2 {
		t.Fatalf("preemptions/migrations over all jobs: %+v", s)
	}
}

func TestGeoMean(t *testing.T) {
	if g := GeoMean([]float64{1, 4}); math.Abs(g-2) > 1e-12 {
		t.Fatal(g)
	}
	if g := GeoMean([]float64{0.5, 2}); math.Abs(g-1) > 1e-12 {
		t.Fatal(g)
	}
	if g := GeoMean(nil); !math.IsNaN(g) {
		t.Fatal(g)
	}
}

func TestQuantileEdges(t *testing.T) {
	if q := Quantile([]float64{1, 2, 3, 4}, 0.5); q != 2.5 {
		t.Fatal(q)
	}
	if q := Quantile([]float64{7}, 0.99); q != 7 {
		t.Fatal(q)
	}
	if q := Quantile(nil, 0.5); !math.IsNaN(q) {
		t.Fatal(q)
	}
}
