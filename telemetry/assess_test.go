package telemetry

import (
	"math"
	"testing"
)

// The busy median of an 8-GPU node, worked by hand. Six GPUs run at
// 1000, 1200, 1250, 1350, 1400 and 1600 MHz (100% busy), one busy GPU
// reports 0 MHz (a broken clock reading, not a speed) and one is idle at
// 300 MHz. The median is over the six busy clocks that are readings:
// (1250 + 1350)/2 = 1300. At the default threshold 0.9 (1170 MHz) the
// 1000 MHz GPU is a low clock with ratio 1000/1300 and prior 1.3; the
// 1200 MHz one (ratio 12/13 = 0.923) is not. Taking the upper middle
// value (1350) would flag it (0.889); counting the 0 MHz reading would
// make the median 1250 and the 1000 MHz GPU's prior 1.25.
func TestAssessEvenBusyMedian(t *testing.T) {
	busy := func(i int, mhz float64) GPU { return GPU{Hostname: "n", GPU: i, SMClock: mhz, Util: 100} }
	gpus := []GPU{
		busy(0, 1000), busy(1, 1200), busy(2, 1250), busy(3, 1350),
		busy(4, 1400), busy(5, 1600), busy(6, 0),
		{Hostname: "n", GPU: 7, SMClock: 300, Util: 0},
	}
	fs := Assess(gpus, 0)
	if f := fs[0]; !f.LowClock || math.Abs(f.ClockRatio-1000.0/1300) > 1e-12 || math.Abs(f.Prior-1.3) > 1e-12 {
		t.Errorf("1000 MHz GPU: low %v ratio %v prior %v; want low, 1000/1300, 1.3", f.LowClock, f.ClockRatio, f.Prior)
	}
	if f := fs[1]; f.LowClock || f.Degraded() || f.Prior != 1 || math.Abs(f.ClockRatio-1200.0/1300) > 1e-12 {
		t.Errorf("1200 MHz GPU: low %v ratio %v prior %v; want not flagged, ratio 12/13", f.LowClock, f.ClockRatio, f.Prior)
	}
	for _, i := range []int{2, 3, 4, 5} {
		if fs[i].Degraded() {
			t.Errorf("GPU %d at %v MHz flagged", i, gpus[i].SMClock)
		}
	}
	if f := fs[7]; f.Degraded() || f.Prior != 1 {
		t.Errorf("idle GPU: %+v, want not flagged", f)
	}
	// Two busy GPUs only: the median is their mean, 1100; 1000/1100 =
	// 0.909 is not low, and neither is 1200.
	fs = Assess([]GPU{busy(0, 1000), busy(1, 1200)}, 0)
	if fs[0].LowClock || fs[1].LowClock || math.Abs(fs[0].ClockRatio-1000.0/1100) > 1e-12 {
		t.Errorf("two busy GPUs: %+v %+v, want neither low, ratio 10/11", fs[0], fs[1])
	}
}
