package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/workload"
)

// fixedU is a random source whose Float64 draws are the given fractions
// (math/rand/v2 takes the low 53 bits of Uint64 over 2^53).
type fixedU struct {
	u []float64
	i int
}

func (f *fixedU) Uint64() uint64 {
	v := uint64(f.u[f.i%len(f.u)] * (1 << 53))
	f.i++
	return v
}

// The generator against a hand-computed sequence. Rows in file order are
// lines 2, 3, 4 (models a, b, c) but arrive in the order a, c, b; extras
// reuse rows in file order, so ids 3, 4, 5, 6 are a, b, c, a. At 2 jobs/h
// a gap is ceil(-ln(1-U)/2 h) in seconds:
//
//	U = 0.5:   -ln(0.5)/2*3600   = 1247.66 -> 1248
//	U = 0.75:  -ln(0.25)/2*3600  = 2495.33 -> 2496
//	U = 0.125: -ln(0.875)/2*3600 =  240.36 ->  241
//	U = 0.25:  -ln(0.75)/2*3600  =  517.83 ->  518
//
// starting after the trace's last arrival, 10 s.
func TestExtraGenGapsAndRowReuse(t *testing.T) {
	rows := []workload.Spec{
		{ID: 0, GPUs: 1, Submit: 0, Iterations: 1, Model: "a", Line: 2},
		{ID: 2, GPUs: 3, Submit: 5, Iterations: 1, Model: "c", Line: 4},
		{ID: 1, GPUs: 2, Submit: 10, Iterations: 1, Model: "b", Line: 3},
	}
	g := newExtraGen(rows, 2, rand.New(&fixedU{u: []float64{0.5, 0.75, 0.125, 0.25}}), nil)
	g.limit = 10
	want := []struct {
		id     int
		model  string
		submit float64
	}{{3, "a", 10 + 1248}, {4, "b", 1258 + 2496}, {5, "c", 3754 + 241}, {6, "a", 3995 + 518}}
	for _, w := range want {
		s := g.pop()
		if s.ID != w.id || s.Model != w.model || s.Submit != w.submit || s.Tracked || s.Line != 0 {
			t.Fatalf("extra %+v, want id %d model %s at %v, untracked", s, w.id, w.model, w.submit)
		}
	}
}

// Extras stop at the bound, and the result says so; the run still ends
// when the tracked job does.
func TestExtrasBounded(t *testing.T) {
	cl, _ := cluster.New(1, 1)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{spec(0, 1, 0, 100*3600)}} // 100 h alone
	res, err := Run(Config{Cluster: cl, Trace: tr, Scheduler: schedule.FIFO{}, Placer: mustPlacer(t, "packed-sticky"),
		Round: 360, Locality: ConstantLocality(1), ExtraLoad: 10, MaxExtras: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Extras != 5 || !res.ExtrasCapped {
		t.Fatalf("extras %d capped %v, want 5 and capped", res.Extras, res.ExtrasCapped)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].Completion != 100*3600 {
		t.Fatalf("jobs %+v, want job 0 done at 360000 s", res.Jobs)
	}
}
