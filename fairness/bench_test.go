package fairness

import (
	"fmt"
	"testing"
)

// BenchmarkAuction times one auction (bids, PF with every bidder left out
// once, packing, payments, leftovers). Targets: 100 apps on 256 GPUs ≤
// 10 ms median, 1,000 apps on 4,096 GPUs ≤ 200 ms.
func BenchmarkAuction(b *testing.B) {
	for _, c := range []struct {
		apps, machines, per int
		f                   float64
	}{{100, 32, 8, 0.8}, {100, 32, 8, 0}, {1000, 512, 8, 0.8}} {
		b.Run(fmt.Sprintf("apps=%d/gpus=%d/f=%v", c.apps, c.machines*c.per, c.f), func(b *testing.B) {
			in, err := RandomInput(RandomOptions{Apps: c.apps, Machines: c.machines, GPUsPerMachine: c.per, HeldShare: 0.5, Speeds: true, Seed: 1})
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
