package bench

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// tenancyTrail drives the benchmark's HiveD stage (packed-sticky inside
// every VC) through steps random decisions and returns a hash of every
// answer, in order, and how many gangs were placed. Unlike the benchmark,
// a new gang may come anywhere in its VC's order (so the VC's placer
// suspends the gangs behind it), some gangs may not be preempted, some
// take time to leave (so a victim still holds its cells a while), some
// rounds ask for nothing new, and a gang that ends may be running or
// waiting (always when its VC has more than 40 gangs).
func tenancyTrail(t *testing.T, nodes, vcs, steps int, seed uint64) (uint64, int) {
	t.Helper()
	l, h, err := tenancyHiveD(nodes, 8, vcs)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x601d))
	env := &policy.Env{Cluster: l.Cluster, Rand: rand.New(rand.NewPCG(seed, 1))}
	names := l.VCs()
	jobs := map[string][]*workload.Job{}
	hash := fnv.New64a()
	word := func(x int) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(int64(x)))
		hash.Write(b[:])
	}
	placed, now := 0, 0.0
	for step := 0; step < steps; step++ {
		vc := names[rng.IntN(len(names))]
		order := jobs[vc]
		if rng.IntN(10) > 0 {
			shape := gangShapes[rng.IntN(len(gangShapes))]
			n := 0
			for _, p := range shape {
				n += p
			}
			pod := shape[0]
			if len(shape) == 1 && rng.IntN(3) == 0 {
				pod = 0 // may spread
			}
			j := workload.NewJob(workload.Spec{ID: step + 1, GPUs: n, PodGPUs: pod, VC: vc, Iterations: 1, IterTime: 1, Model: workload.NoModel})
			switch rng.IntN(6) {
			case 0:
				j.MoveCost.Preemption = math.Inf(1)
			case 1:
				j.MoveCost.Preemption = 30
			}
			at := rng.IntN(len(order) + 1)
			order = append(order[:at:at], append([]*workload.Job{j}, order[at:]...)...)
			jobs[vc] = order
		}
		if rng.IntN(4) == 0 {
			now += 20
			h.SetNow(now)
		}
		out := h.Place(env, order, nil)
		word(step)
		for i, x := range order {
			x.GPUsHeld = out[i]
			word(len(out[i]))
			for _, g := range out[i] {
				word(g)
			}
			if out[i] != nil {
				placed++
			}
		}
		if len(order) > 0 && (rng.IntN(2) == 0 || len(order) > 40) {
			k := rng.IntN(len(order))
			h.Finish(order[k])
			order[k].GPUsHeld = nil
			jobs[vc] = append(order[:k:k], order[k+1:]...)
		}
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	return hash.Sum64(), placed
}

// TestTenancyDecisionsGolden pins every answer of the HiveD stage with
// packed-sticky placers on seeded random decisions to the answers
// recorded before the VC layer kept its placers' free sets between
// decisions: keeping them is a speed-up that may change no decision.
func TestTenancyDecisionsGolden(t *testing.T) {
	for _, c := range []struct {
		nodes, vcs, steps int
		seed              uint64
		hash              uint64
		placed            int
	}{
		{64, 3, 3000, 1, 0x4d3e3594624b6a2a, 52757},
		{64, 3, 3000, 2, 0x931cae53e7dc5c88, 54128},
		{128, 5, 3000, 3, 0xcca7f0e7e7ff17b6, 64801},
		{256, 7, 3000, 4, 0x497ab19a5579006b, 86193},
	} {
		hash, placed := tenancyTrail(t, c.nodes, c.vcs, c.steps, c.seed)
		if hash != c.hash || placed != c.placed {
			t.Errorf("%d nodes, %d VCs, seed %d: answers hash to %#x with %d placed, want %#x with %d", c.nodes, c.vcs, c.seed, hash, placed, c.hash, c.placed)
		}
	}
}
