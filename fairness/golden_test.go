package fairness

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"testing"
)

// resultHash hashes everything an auction decides: n, k, the bidders,
// every app's ρ, bundle, c_i, kept part, lease share, gains, final GPUs
// and per-job split, the leftovers and the re-auction rounds.
func resultHash(r *Result) uint64 {
	h := fnv.New64a()
	word := func(x uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
	}
	ints := func(xs []int) {
		word(uint64(len(xs)))
		for _, x := range xs {
			word(uint64(int64(x)))
		}
	}
	word(uint64(r.N))
	word(uint64(r.K))
	word(uint64(r.Reauctions))
	ints(r.Bidders)
	ints(r.Leftover)
	for _, a := range r.Apps {
		word(math.Float64bits(a.Rho))
		word(math.Float64bits(a.Keep))
		word(math.Float64bits(a.LeaseShare))
		if a.Wants {
			word(1)
		}
		if a.Bidder {
			word(2)
		}
		ints(a.PF)
		ints(a.Kept)
		ints(a.Gained)
		ints(a.Final)
		word(uint64(len(a.Jobs)))
		for _, j := range a.Jobs {
			ints(j)
		}
	}
	return h.Sum64()
}

// TestAuctionGolden pins whole auctions on seeded random inputs (gangs
// and elastic jobs, with and without speeds, leftovers to non-bidders or
// re-auctioned, random and floor payments, f = 0 and 0.8) to outcomes
// recorded before bid tables were made cheaper to build: making them
// cheaper may change no decision.
func TestAuctionGolden(t *testing.T) {
	for _, c := range []struct {
		apps, machines, per int
		held                float64
		elastic             bool
		want                uint64
	}{
		{100, 32, 8, 0.5, false, 0x8e424547c3472a0b},
		{100, 32, 8, 0.5, true, 0xedf90cafc96d440b},
		{40, 16, 4, 0.3, false, 0xff9bec2cdec9b00d},
		{300, 64, 8, 0.6, false, 0x233be0447bbcd831},
		{60, 8, 8, 0.1, true, 0xfb8cb441ee1364c2},
	} {
		h := fnv.New64a()
		for seed := uint64(1); seed <= 2; seed++ {
			in, err := RandomInput(RandomOptions{Apps: c.apps, Machines: c.machines, GPUsPerMachine: c.per, HeldShare: c.held, Speeds: seed == 1, Elastic: c.elastic, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []float64{0, 0.8} {
				for _, lo := range []Leftover{NonbiddersFirst, Reauction} {
					for _, pay := range []Payment{PayRandom, PayFloor} {
						o := DefaultOptions()
						o.Knob, _ = NewKnob(f)
						o.Leftover, o.Payment, o.Seed = lo, pay, seed
						r, err := Run(in, o)
						if err != nil {
							t.Fatal(err)
						}
						binary.Write(h, binary.LittleEndian, resultHash(r))
					}
				}
			}
		}
		name := fmt.Sprintf("%d apps on %dx%d, held %v, elastic %v", c.apps, c.machines, c.per, c.held, c.elastic)
		if got := h.Sum64(); got != c.want {
			t.Errorf("%s: outcomes hash to %#x, want %#x", name, got, c.want)
		}
	}
}
