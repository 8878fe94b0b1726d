package variability

import (
	"math"
	"strings"
	"testing"
)

func TestLxV(t *testing.T) {
	type e struct {
		across  bool
		product float64
	}
	tests := []struct {
		name string
		sf   []float64
		L    float64
		want []e
	}{
		{
			// Paper §III-C1, plus the (W, 2.55) entry the artifact keeps.
			name: "paper example",
			sf:   []float64{1.06, 0.89, 2.55, 0.94, 0.89, 1.06},
			L:    1.5,
			want: []e{{false, 0.89}, {false, 0.94}, {false, 1.06}, {true, 1.335}, {true, 1.41}, {true, 1.59}, {false, 2.55}, {true, 3.825}},
		},
		{
			// L = 1: every pair ties and within stays first (stable sort).
			name: "no penalty",
			sf:   []float64{1.0, 0.9},
			L:    1,
			want: []e{{false, 0.9}, {true, 0.9}, {false, 1.0}, {true, 1.0}},
		},
		{
			// Equal products of different bins keep first-appearance order.
			name: "cross ties",
			sf:   []float64{2, 1},
			L:    2,
			want: []e{{false, 1}, {false, 2}, {true, 2}, {true, 4}},
		},
		{name: "single bin", sf: []float64{1, 1, 1}, L: 1.7, want: []e{{false, 1}, {true, 1.7}}},
		{name: "empty", sf: nil, L: 1.7, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LxV(tc.sf, tc.L)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Across != w.across || math.Abs(g.Product-w.product) > 1e-12 {
					t.Errorf("entry %d = %v, want across=%v product=%v", i, g, w.across, w.product)
				}
				wantV := g.Product
				if g.Across {
					wantV = g.Product / tc.L
				}
				if math.Abs(g.V-wantV) > 1e-12 {
					t.Errorf("entry %d V=%v, want %v", i, g.V, wantV)
				}
			}
		})
	}
	// In the cross-ties case the within entry of v=2 came from the second
	// distinct value, the across of v=1 from the first: first appearance
	// is by GPU index, so v=2's entries were appended first.
	got := LxV([]float64{2, 1}, 2)
	if got[1].V != 2 || got[2].V != 1 {
		t.Errorf("tie order %v: want W2 (v=2) before A2 (v=1)", got)
	}
}

func TestFormatLxV(t *testing.T) {
	got := FormatLxV(LxV([]float64{0.89, 0.94, 1.06, 2.55}, 1.5))
	want := "W0.890 → W0.940 → W1.060 → A1.335 → A1.410 → A1.590 → W2.550 → A3.825"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestLocalityModel(t *testing.T) {
	c := ConstantLocality(1.7)
	m := BPMainLocality(1.7)
	tests := []struct {
		name  string
		model LocalityModel
		class Class
		job   string
		gpus  int
		wantC float64
		wantJ float64
	}{
		{"constant", c, ClassA, "resnet50", 16, 1.7, 1.7},
		{"bp-main A", m, ClassA, "resnet50", 16, 1.16, 1.16},
		{"bp-main B", m, ClassB, "PointNet", 8, 1.0, 1.10},
		{"bp-main D", m, ClassD, "pointnet", 16, 1.10, 1.25},
		{"bp-main dcgan", m, ClassC, "DCGAN", 12, 1.0, 1.0},
		{"bp-main vgg19", m, ClassC, "vgg19", 1, 1.0, 1.0},
		{"bp-main unknown size", m, ClassA, "resnet50", 8, 1.16, 1.0},
		{"bp-main unknown model", m, ClassA, "GPT2", 4, 1.16, 1.0},
		{"other class", m, Class(7), "x", 1, 1.7, 1.0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.model.ForClass(tc.class); got != tc.wantC {
				t.Errorf("ForClass = %v, want %v", got, tc.wantC)
			}
			if got := tc.model.ForJob(tc.job, tc.gpus); got != tc.wantJ {
				t.Errorf("ForJob = %v, want %v", got, tc.wantJ)
			}
		})
	}
	for _, tc := range []struct {
		m    LocalityModel
		want []string
	}{
		{c, []string{"traversal: constant L=1.7", "runtime: constant L=1.7"}},
		{m, []string{"per-class L {A:1.16 B:1 C:1 D:1.1}", "pointnet:6→1,8→1.1,12→1.2,16→1.25", "unknown → 1"}},
	} {
		d := tc.m.Describe()
		for _, w := range tc.want {
			if !strings.Contains(d, w) {
				t.Errorf("Describe() = %q, missing %q", d, w)
			}
		}
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []LocalityModel{ConstantLocality(0), ConstantLocality(math.NaN()), {Across: 1, PerClass: map[Class]float64{ClassA: -1}}, {Across: 1, PerJob: map[string]map[int]float64{}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
