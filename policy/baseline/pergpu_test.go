package baseline

import (
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// allocAt records, per round time, each job's GPUs.
type allocAt map[float64]map[int][]int

func (a allocAt) observe(T float64, order []*workload.Job, alloc [][]int) {
	if a[T] == nil {
		a[T] = map[int][]int{}
	}
	for i, j := range order {
		a[T][j.ID] = alloc[i]
	}
}

// Tiresias as the authors ran it, one machine of 2 GPUs: elastic A (1..2,
// 6000 one-GPU seconds) is alone at 0 and takes both GPUs. B (1 GPU,
// 600 s) arrives at 100 and waits: the GPUs are leased to 600. At 600
// both leases end; B has the least service (0 against A's 1200 GPU-s) and
// wins GPU 0, A wins GPU 1 back. At 1200 B is done, A's lease ends, and A
// takes both again: 6000 − 1200 − 600 = 4200 one-GPU seconds left, 2100 s
// on two, done at 3300.
func TestTiresiasBlindLeastService(t *testing.T) {
	got := allocAt{}
	r := runObserved(t, "tiresias-blind", 2, []workload.Spec{spec(0, 1, 2, 0, 6000, "A"), spec(1, 1, 1, 100, 600, "B")}, got.observe)
	if !slices.Equal(got[0][0], []int{0, 1}) || got[120][1] != nil || !slices.Equal(got[600][1], []int{0}) || !slices.Equal(got[600][0], []int{1}) {
		t.Errorf("A at 0 %v; B at 120 %v; at 600 A %v B %v; want [0 1], none, [1], [0]", got[0][0], got[120][1], got[600][0], got[600][1])
	}
	if r[1].FirstStart != 600 || r[1].Completion != 1200 || r[0].Completion != 3300 {
		t.Errorf("B %v–%v, A done %v; want 600–1200, 3300", r[1].FirstStart, r[1].Completion, r[0].Completion)
	}
}

// Gandiva as the authors ran it, same jobs: at 600 A and B both bid 1 for
// GPU 0 and A wins on the older last assignment (it started at 0, B
// arrived at 100); for GPU 1 A bids 2 × S = 2 against B's 1. A keeps both
// GPUs to its end (6000 / 2 = 3000 s) and B waits until then.
func TestGandivaScoreGrowsFirst(t *testing.T) {
	r := run(t, "gandiva-score", 2, []workload.Spec{spec(0, 1, 2, 0, 6000, "A"), spec(1, 1, 1, 100, 600, "B")})
	if r[0].Completion != 3000 || r[1].FirstStart != 3000 || r[1].Completion != 3600 {
		t.Errorf("A done %v, B %v–%v; want 3000, 3000–3600", r[0].Completion, r[1].FirstStart, r[1].Completion)
	}
}

// Two machines of 2 GPUs, two elastic 1..2 jobs at 0. Tiresias deals the
// GPUs round-robin (equal service, fewer GPUs first): A 0 and 2, B 1 and
// 3, both across machines. Gandiva's bid makes A outbid B for GPU 1
// (2 × 1 against 1) and packs: A 0 and 1, B 2 and 3.
func TestPerGPUPlacement(t *testing.T) {
	models, err := workload.ParseModels("m.yaml", []byte("models:\n  - {name: half, iter_time_s: 1, class: A, spread_factor: 0.5}\n  - {name: whole, iter_time_s: 1, class: A}\n"))
	if err != nil {
		t.Fatal(err)
	}
	first := func(nodes, per int, name, model string, jobs ...workload.Spec) map[int][]int {
		cl, err := cluster.New(nodes, per)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(Config{Name: name, Models: models})
		if err != nil {
			t.Fatal(err)
		}
		for i := range jobs {
			jobs[i].Model = model
		}
		got := allocAt{}
		if _, err := sim.Run(sim.Config{Cluster: cl, Trace: &workload.Trace{Name: "t", Jobs: jobs}, Scheduler: p, Placer: p,
			Round: 60, Locality: sim.ConstantLocality(1), MaxExtras: -1, Observe: got.observe}); err != nil {
			t.Fatal(err)
		}
		return got[0]
	}
	two := func() []workload.Spec {
		return []workload.Spec{spec(0, 1, 2, 0, 6000, "A"), spec(1, 1, 2, 0, 6000, "B")}
	}
	if g := first(2, 2, "tiresias-blind", "whole", two()...); !slices.Equal(g[0], []int{0, 2}) || !slices.Equal(g[1], []int{1, 3}) {
		t.Errorf("tiresias-blind: %v, want A [0 2], B [1 3]", g)
	}
	if g := first(2, 2, "gandiva-score", "whole", two()...); !slices.Equal(g[0], []int{0, 1}) || !slices.Equal(g[1], []int{2, 3}) {
		t.Errorf("gandiva-score: %v, want A [0 1], B [2 3]", g)
	}
	// Two machines of one GPU: A bids 2 × S for GPU 1, 2 when spreading
	// is free (A takes both) and 2 × 0.5 = 1 with the spread factor 0.5,
	// a tie with B's 1 that B, with fewer GPUs, wins.
	if g := first(2, 1, "gandiva-score", "whole", two()...); !slices.Equal(g[0], []int{0, 1}) || g[1] != nil {
		t.Errorf("gandiva-score, spread 1: %v, want A [0 1], B none", g)
	}
	if g := first(2, 1, "gandiva-score", "half", two()...); !slices.Equal(g[0], []int{0}) || !slices.Equal(g[1], []int{1}) {
		t.Errorf("gandiva-score, spread 0.5: %v, want A [0], B [1]", g)
	}
}

// A rigid 2-GPU gang under the per-GPU auction takes its minimum at once:
// at 0 gang G (2 GPUs) and 1-GPU job S arrive on 3 GPUs; G, first by id,
// wins GPU 0 and with it GPU 1; S takes GPU 2.
func TestPerGPUGang(t *testing.T) {
	got := allocAt{}
	runObserved(t, "tiresias-blind", 3, []workload.Spec{spec(0, 2, 2, 0, 6000, "G"), spec(1, 1, 1, 0, 6000, "S")}, got.observe)
	if !slices.Equal(got[0][0], []int{0, 1}) || !slices.Equal(got[0][1], []int{2}) {
		t.Errorf("at 0: %v, want G [0 1], S [2]", got[0])
	}
}
