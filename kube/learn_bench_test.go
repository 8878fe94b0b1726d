package kube

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/variability"
)

// The bookkeeping a learning round does besides the learner itself, at
// 27,648 GPUs (6912 nodes x 4): the per-GPU belief gauges and the copy of
// every belief by device (syncKnown). It runs in every round that
// learned something, beside a placement round of a few milliseconds.
// One GPU's belief moves per iteration, as when one gang ended.
func BenchmarkLearnBookkeeping27648(b *testing.B) {
	const nodes, per = 6912, 4
	n := nodes * per
	tab := &variability.Table{}
	for c := range tab.Values {
		tab.Values[c] = make([]float64, n)
		for g := range n {
			tab.Values[c][g] = 0.9 + 0.2*float64(g%97)/96
		}
	}
	vs, err := variability.NewScores(tab, variability.BinOptions{Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	l, err := variability.NewLearner(tab, vs, variability.LearnOptions{Bin: variability.BinOptions{Seed: 1}, Every: variability.RebinEvery(n)})
	if err != nil {
		b.Fatal(err)
	}
	L := newLearnStage()
	L.learner = l
	for g := range n {
		L.keys = append(L.keys, GPUKey{fmt.Sprintf("node-%d", g/per), g % per})
	}
	s := &Scheduler{learn: L, metrics: NewMetrics()}
	s.setLearnedGauges()
	L.syncKnown()
	b.ResetTimer()
	for i := range b.N {
		g := (i * 7919) % n
		l.Observe(variability.ClassA, []int{g}, 1.5)
		s.setLearnedGauges()
		L.syncKnown()
	}
}
