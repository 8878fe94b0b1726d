package sim

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// Under the HiveD stage, as without one: with exact durations and no
// arrivals after T, a forecast made at T (from a copy of the stage's
// cells) gives every job waiting then the start and end the run gives
// it. Random traces (seeded) on 4 DGX-like 8-GPU nodes (GPU pairs and
// sockets inside) shared by VCs a (2 nodes), b and c (1 each); jobs of 1
// to 8 GPUs (16 in a), guaranteed at priority 0 or 1 or opportunistic;
// FIFO in each VC, packed-sticky inside it; a preempted opportunistic
// job takes 90 s to leave, its cells held meanwhile. Forecasts at three
// times after the last arrival. The run with forecasts ends exactly as
// one without: a forecast never changes the stage it copies.
func TestForecastMatchesRunUnderHiveD(t *testing.T) {
	compared, opp := 0, 0
	for seed := uint64(1); seed <= 10; seed++ {
		for _, speed := range []bool{false, true} {
			n, o := hivedForecastCase(t, seed, speed)
			compared, opp = compared+n, opp+o
		}
	}
	t.Logf("%d waiting jobs compared, %d of them opportunistic", compared, opp)
	if compared < 200 || opp < 20 {
		t.Errorf("only %d waiting jobs compared (%d opportunistic)", compared, opp)
	}
}

func hivedForecastCase(t *testing.T, seed uint64, speed bool) (int, int) {
	t.Helper()
	cells := &tenancy.Config{File: "dgx cells"}
	tenant.AddNodeVC(cells, "a", 2)
	tenant.AddNodeVC(cells, "b", 1)
	tenant.AddNodeVC(cells, "c", 1)
	l, err := tenant.NewLayout(cells)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 17))
	tr := &workload.Trace{Name: "t.csv"}
	at := 0.0
	vcs := []string{"a", "a", "b", "c"}
	for i := range 40 {
		at += r.Float64() * 120
		vc := vcs[r.IntN(len(vcs))]
		sizes := []int{1, 2, 2, 4, 8}
		if vc == "a" {
			sizes = append(sizes, 16)
		}
		sp := spec(i, sizes[r.IntN(len(sizes))], at, 60+r.Float64()*2400)
		sp.VC, sp.VCPriority = vc, r.IntN(2)
		if r.IntN(5) == 0 {
			sp.VCPriority = tenancy.Opportunistic
		}
		if sp.GPUs == 16 {
			sp.PodGPUs = 8
		}
		tr.Jobs = append(tr.Jobs, sp)
	}
	last := 60 * float64(int(at/60)+1) // the first boundary after the last arrival
	mk := func() Config {
		sc, err := tenant.NewPerVC(l, func() (policy.Scheduler, error) { return schedule.FIFO{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		h, err := tenant.NewHiveD(l)
		if err != nil {
			t.Fatal(err)
		}
		h.SetIntraVC(&tenant.IntraVC{NewPlacer: func() (policy.Placer, error) {
			p, err := place.New("packed-sticky")
			return place.PodGuard{Placer: p}, err
		}})
		if speed {
			// hived-pm's binding: GPU g has value 1 + (g*7 mod 5)/10.
			scores := tenant.UniformScores(l.Cluster)
			for k := range scores.SF {
				for g := range scores.SF[k] {
					scores.SF[k][g] = 1 + float64((g*7+k)%5)/10
				}
			}
			if err := h.UseScores(scores); err != nil {
				t.Fatal(err)
			}
		}
		return Config{Cluster: l.Cluster, Trace: tr, Scheduler: sc, Placer: mustPlacer(t, "packed-sticky"), Tenancy: h,
			CheckInvariants: true, Round: 60, Locality: ConstantLocality(1), Seed: seed,
			Costs: workload.Costs{Default: workload.MoveCost{Preemption: 90}}}
	}
	plain, err := Run(mk())
	if err != nil {
		t.Fatal(err)
	}
	cfg := mk()
	launches := map[int][]float64{}
	cfg.Observe = func(T float64, order []*workload.Job, alloc [][]int) {
		for i, j := range order {
			if alloc[i] != nil && !j.Running() {
				launches[j.ID] = append(launches[j.ID], T)
			}
		}
	}
	type forecast struct {
		at      float64
		waiting []*workload.Job
		out     map[int]Outcome
	}
	var fcs []forecast
	cfg.SnapshotAt = last
	cfg.SnapshotAlso = []float64{last + 300, last + 900}
	cfg.Snapshot = func(T float64, order []*workload.Job) {
		fc := forecast{at: T}
		for _, j := range order {
			if !j.Running() {
				fc.waiting = append(fc.waiting, j)
			}
		}
		f := mk()
		f.Tenancy = cfg.Tenancy // the run's own: the forecast forks it
		var err error
		if fc.out, err = Forward(f, T, order); err != nil {
			t.Fatal(err)
		}
		fcs = append(fcs, fc)
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Jobs, plain.Jobs) {
		t.Fatalf("seed %d: the run with forecasts differs from the run without", seed)
	}
	end := map[int]float64{}
	for _, j := range res.Jobs {
		end[j.ID] = j.Completion
	}
	n, opp := 0, 0
	for _, fc := range fcs {
		for _, j := range fc.waiting {
			actual := -1.0
			for _, s := range launches[j.ID] {
				if s > fc.at {
					actual = s
					break
				}
			}
			if got := fc.out[j.ID]; got.Start != actual || got.Finish != end[j.ID] {
				t.Errorf("seed %d speed %v: job %d (VC %s priority %d, %d GPUs) waiting at %v: forecast start %v end %v, run %v and %v",
					seed, speed, j.ID, j.VC, j.VCPriority, j.GPUs, fc.at, got.Start, got.Finish, actual, end[j.ID])
			}
			n++
			if j.VCPriority == tenancy.Opportunistic {
				opp++
			}
		}
	}
	if len(fcs) != 3 {
		t.Fatalf("seed %d: %d forecasts, want 3", seed, len(fcs))
	}
	return n, opp
}
