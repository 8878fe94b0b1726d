package paper

import (
	"math"
	"reflect"
	"testing"
)

// The synthetic generator's arrivals match the load by hand: at L = 0.85
// over 7 days (168 h), the whole-node tenant (32 GPUs, 8-GPU jobs of mean
// 2 h) draws 0.85 x 32 / (8 x 2) = 1.7 jobs/h, 285.6 expected; each 1-GPU
// tenant (32 GPUs, mean 1 h) 0.85 x 32 / 1 = 27.2 jobs/h, 4,569.6 expected.
// Counts are Poisson: each must fall within 4 standard deviations (sqrt of
// the mean: 16.9 and 67.6). Mean run times within 4 standard errors of 2 h
// and 1 h (exponential: sd = mean). Jobs come in submit order, numbered
// from 0, one pod each; the same seed gives the same trace, another seed
// another.
func TestSyntheticHived(t *testing.T) {
	cells, tr := SyntheticHived(0.85, 7, 1)
	if len(cells.PhysicalCells) != 12 || len(cells.VCs) != 3 {
		t.Fatalf("%d nodes, %d VCs; want 12 and 3", len(cells.PhysicalCells), len(cells.VCs))
	}
	want := map[string][2]float64{"whole-node": {285.6, 7200}, "one-gpu-a": {4569.6, 3600}, "one-gpu-b": {4569.6, 3600}}
	n := map[string]int{}
	run := map[string]float64{}
	for i, j := range tr.Jobs {
		if j.ID != i || (i > 0 && j.Submit < tr.Jobs[i-1].Submit) || j.PodGPUs != j.GPUs || j.VCPriority != 0 {
			t.Fatalf("job %d: %+v", i, j)
		}
		n[j.VC]++
		run[j.VC] += j.Iterations * j.IterTime
		if (j.VC == "whole-node") != (j.GPUs == 8) {
			t.Fatalf("job %d of %s has %d GPUs", i, j.VC, j.GPUs)
		}
	}
	for vc, w := range want {
		if d := math.Abs(float64(n[vc]) - w[0]); d > 4*math.Sqrt(w[0]) {
			t.Errorf("%s: %d jobs, want %.1f ± %.1f", vc, n[vc], w[0], 4*math.Sqrt(w[0]))
		}
		mean := run[vc] / float64(n[vc])
		if d := math.Abs(mean - w[1]); d > 4*w[1]/math.Sqrt(float64(n[vc])) {
			t.Errorf("%s: mean run %.0f s, want %.0f", vc, mean, w[1])
		}
	}
	_, again := SyntheticHived(0.85, 7, 1)
	_, other := SyntheticHived(0.85, 7, 2)
	if !reflect.DeepEqual(tr.Jobs, again.Jobs) || reflect.DeepEqual(tr.Jobs[:10], other.Jobs[:10]) {
		t.Error("seed 1 twice should give one trace, seed 2 another")
	}
}
