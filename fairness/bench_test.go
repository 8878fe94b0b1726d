package fairness

import (
	"fmt"
	"testing"
)

// BenchmarkAuction times one auction (bids, PF with every bidder left out
// once, packing, payments, leftovers). Targets: 100 apps on 256 GPUs ≤
// 5 ms median, 1,000 apps on 4,096 GPUs ≤ 200 ms. Seed 42 is the
// auction `pal bench auction` times by default.
func BenchmarkAuction(b *testing.B) {
	for _, c := range []struct {
		apps, machines, per int
		f                   float64
		seed                uint64
	}{{100, 32, 8, 0.8, 1}, {100, 32, 8, 0.8, 42}, {100, 32, 8, 0, 1}, {1000, 512, 8, 0.8, 1}} {
		b.Run(fmt.Sprintf("apps=%d/gpus=%d/f=%v/seed=%d", c.apps, c.machines*c.per, c.f, c.seed), func(b *testing.B) {
			in, err := RandomInput(RandomOptions{Apps: c.apps, Machines: c.machines, GPUsPerMachine: c.per, HeldShare: 0.5, Speeds: true, Seed: c.seed})
			if err != nil {
				b.Fatal(err)
			}
			o := DefaultOptions()
			o.Knob, _ = NewKnob(c.f)
			for b.Loop() {
				if _, err := Run(in, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
