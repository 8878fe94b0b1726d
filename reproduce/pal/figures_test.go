package pal

import (
	"math"
	"testing"

	"github.com/palsched/pal/report"
)

func TestSpreadIsWide(t *testing.T) {
	narrow := []report.Series{{Y: []float64{19.9, 20.8}}, {Y: []float64{20.1}}}
	wide := []report.Series{{Y: []float64{3, 20}}}
	if spreadIsWide(narrow) || !spreadIsWide(wide) {
		t.Fatal("want narrow zoomed and wide from zero")
	}
}

// The overhead ratio reads as a plain speed-up, three digits kept.
func TestTimesFaster(t *testing.T) {
	for x, want := range map[float64]string{274766: "about 275,000 times", 39219: "about 39,200 times", 123.4: "about 123 times", 2.5: "2.5 times", 0: "", 1234567: "about 1,230,000 times"} {
		if got := timesFaster(x); got != want {
			t.Errorf("%v: %q, want %q", x, got, want)
		}
	}
}

// Each claim's verdict, on hand-picked numbers around the 5-point
// tolerance, a sign change, a zero reference and missing values.
func TestHeadlineVerdict(t *testing.T) {
	art := -36.2
	nan := math.NaN()
	for _, tc := range []struct {
		h    Headline
		want string
	}{
		{Headline{Paper: -43, Ours: -42.9}, "reproduces"},
		{Headline{Paper: -43, Ours: -48}, "reproduces"},
		{Headline{Paper: -43, Ours: -56.8}, "holds, stronger here"},
		{Headline{Paper: -15, Ours: -2.7}, "holds, weaker here"},
		{Headline{Paper: 28, Ours: 3}, "holds, weaker here"},
		{Headline{Paper: -9, Ours: 4}, "does not hold"},
		{Headline{Paper: 0, Ours: -1.8}, "reproduces"},
		{Headline{Paper: 0, Ours: -7}, "does not hold"},
		{Headline{Paper: nan, Artifact: &art, Ours: -42.3}, "holds, stronger here"},
		{Headline{Paper: nan, Ours: -1}, "no reference"},
		{Headline{Paper: -4, Ours: nan}, "not measured"},
	} {
		if got := tc.h.Verdict(); got != tc.want {
			t.Errorf("paper %v, ours %v: %q, want %q", tc.h.Paper, tc.h.Ours, got, tc.want)
		}
	}
}
