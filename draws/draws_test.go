package draws

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/workload"
)

// SpreadOf by nearest rank: of ten starts, p10 is the 1st, p50 the 5th,
// p90 the 9th; a draw with no start (-1) sorts after every start, so
// the percentiles that land on one read -1.
func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		name   string
		starts []float64
		want   Spread
	}{
		{"one draw", []float64{300}, Spread{300, 300, 300}},
		{"ten draws", []float64{1000, 100, 900, 200, 800, 300, 700, 400, 600, 500}, Spread{100, 500, 900}},
		{"two never", []float64{-1, 100, 200, 300, 400, 500, 600, 700, 800, -1}, Spread{100, 500, -1}},
		{"all never", []float64{-1, -1}, Spread{-1, -1, -1}},
		{"none", nil, Spread{-1, -1, -1}},
	} {
		if got := SpreadOf(c.starts); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The lognormal factor has mean 1 and the asked CV (over 200,000 draws,
// within 1%), CV 0 gives exactly 1, and a key's factor does not depend
// on what else was drawn.
func TestLognormal(t *testing.T) {
	l, err := NewLognormal(0.5)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var s, s2 float64
	const n = 200000
	for range n {
		x := l.Draw(r)
		s += x
		s2 += x * x
	}
	mean := s / n
	cv := math.Sqrt(s2/n-mean*mean) / mean
	if math.Abs(mean-1) > 0.01 || math.Abs(cv-0.5) > 0.01 {
		t.Errorf("mean %.4f cv %.4f, want 1 and 0.5", mean, cv)
	}
	zero, _ := NewLognormal(0)
	if f := zero.Factor(3, 9); f != 1 {
		t.Errorf("cv 0: factor %v, want 1", f)
	}
	if a, b := l.Factor(3, 9), l.Factor(3, 9); a != b || a == l.Factor(3, 10) || a == l.Factor(4, 9) {
		t.Errorf("factor of key 9 seed 3: %v then %v; key 10 %v, seed 4 %v", a, b, l.Factor(3, 10), l.Factor(4, 9))
	}
	for _, cv := range []float64{-0.1, math.Inf(1), math.NaN()} {
		if _, err := NewLognormal(cv); err == nil || !strings.Contains(err.Error(), "--duration-noise") {
			t.Errorf("cv %v: error %v", cv, err)
		}
	}
}

// Perturb scales only what is left of a stated work: a job 600 of 1000
// iterations in keeps its 600 and has 400 x f; a job whose work is not
// stated (+Inf) and one that is done keep theirs. The jobs themselves
// are not changed.
func TestPerturb(t *testing.T) {
	l, _ := NewLognormal(0.5)
	mk := func(id int, it, ex float64) *workload.Job {
		return &workload.Job{Spec: workload.Spec{ID: id, GPUs: 1, Iterations: it, IterTime: 1}, Executed: ex}
	}
	jobs := []*workload.Job{mk(0, 1000, 600), mk(1, math.Inf(1), 5), mk(2, 50, 50)}
	got := Perturb(jobs, l, 7, 0)
	r := rand.New(rand.NewPCG(7, 0))
	want := 600 + 400*l.Draw(r)
	if got[0].Iterations != want || got[0].Executed != 600 {
		t.Errorf("job 0: %v of %v, want 600 of %v", got[0].Executed, got[0].Iterations, want)
	}
	if !math.IsInf(got[1].Iterations, 1) || got[2].Iterations != 50 {
		t.Errorf("unstated or done work changed: %v, %v", got[1].Iterations, got[2].Iterations)
	}
	if jobs[0].Iterations != 1000 {
		t.Errorf("the job itself changed: %v", jobs[0].Iterations)
	}
	if again := Perturb(jobs, l, 7, 1); again[0].Iterations == got[0].Iterations {
		t.Errorf("draws 0 and 1 gave the same work %v", got[0].Iterations)
	}
}

// Over spreads each job's start over its draws, in the order run gives
// them, and refuses a bad count of draws or starts.
func TestOver(t *testing.T) {
	jobs := []*workload.Job{{Spec: workload.Spec{ID: 0, GPUs: 1, Iterations: 100, IterTime: 1}}}
	sp, err := Over(jobs, 10, 0, 1, func(d int, js []*workload.Job) ([]float64, error) {
		return []float64{float64(100 * (d + 1)), js[0].Iterations}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Spread{{100, 500, 900}, {100, 100, 100}}; !slices.Equal(sp, want) {
		t.Errorf("%+v, want %+v", sp, want)
	}
	for _, k := range []int{0, MaxDraws + 1} {
		if _, err := Over(jobs, k, 0, 1, nil); err == nil || !strings.Contains(err.Error(), "--forecast-draws") {
			t.Errorf("k %d: error %v", k, err)
		}
	}
	_, err = Over(jobs, 2, 0, 1, func(d int, _ []*workload.Job) ([]float64, error) { return make([]float64, d+1), nil })
	if err == nil || !strings.Contains(err.Error(), "draw 1: 2 starts, want 1") {
		t.Errorf("ragged starts: error %v", err)
	}
}

// Arrivals after from: about rate x span of them (1 a second over
// 10,000 s: 10,000 within 3%), ascending, after from and by until,
// copies of the given jobs with fresh ids, untracked, seeded.
func TestArrivals(t *testing.T) {
	jobs := []*workload.Job{{Spec: workload.Spec{ID: 4, GPUs: 2, Tracked: true}}, {Spec: workload.Spec{ID: 9, GPUs: 8, Tracked: true}}}
	a, err := Arrivals(jobs, 1, 500, 10500, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := float64(len(a)); math.Abs(n-10000) > 300 {
		t.Errorf("%d arrivals, want about 10,000", len(a))
	}
	for i, s := range a {
		if s.ID != 10+i || s.Tracked || !(s.Submit > 500 && s.Submit <= 10500) || i > 0 && s.Submit < a[i-1].Submit || s.GPUs != 2 && s.GPUs != 8 {
			t.Fatalf("arrival %d: %+v", i, s)
		}
	}
	if b, _ := Arrivals(jobs, 1, 500, 10500, 3); !slices.Equal(a, b) {
		t.Errorf("same seed, different arrivals")
	}
	if _, err := Arrivals(jobs, -1.0/3600, 0, 1, 3); err == nil || !strings.Contains(err.Error(), "--assume-arrivals -1") {
		t.Errorf("negative rate: error %v", err)
	}
}
