package stale

import (
	"bytes"
	"fmt"
	"github.com/palsched/pal/data"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/variability"
)

// remeasured is the table `pal profile build` makes from five benchmark
// runs per GPU and class of t, each with up to 5% uniform noise (drawn
// with seed): the same profile measured again.
func remeasured(t *testing.T, tbl *variability.Table, per int, seed uint64) *variability.Table {
	t.Helper()
	models := [variability.NumClasses]string{"resnet50", "BERT", "vgg19", "PointNet"}
	rng := variability.NewRand(seed)
	m := &variability.Measurements{Name: "remeasured"}
	for g := range tbl.NumGPUs() {
		for c := range variability.NumClasses {
			for range 5 {
				m.Rows = append(m.Rows, variability.Measurement{Node: strconv.Itoa(g / per), GPUIndex: g % per, Model: models[c],
					IterTime: 0.2 * tbl.Values[c][g] * (1 + 0.05*(2*rng.Float64()-1))})
			}
		}
	}
	classOf := func(model string) (variability.Class, error) {
		for c, name := range models {
			if name == model {
				return variability.Class(c), nil
			}
		}
		return 0, fmt.Errorf("no class for %s", model)
	}
	gs, _, err := variability.Build(m, variability.BuildOptions{ClassOf: classOf, Nodes: tbl.NumGPUs() / per, GPUsPerNode: per})
	if err != nil {
		t.Fatal(err)
	}
	return gs.Table
}

// staleRemeasures is how many times remeasuredBand measures the old
// profile again.
const staleRemeasures = 20

// remeasured is what remeasuredBand measured: stale and stale + learning
// on Sia-Philly 4 (the section's degradation draw) believing the old
// profile measured again with noise seeds 1..staleRemeasures.
type remeasuredRuns struct {
	stale, learn []float64
	// band is the stale runs' median absolute deviation over their
	// median: how far, typically, a stale run moves when its profile is
	// measured again.
	band float64
}

var remeasuredOnce struct {
	sync.Once
	r   remeasuredRuns
	err error
}

// remeasuredBand measures how much "stale" itself depends on the noise
// of the profile it believes. A profile is a measurement: `pal profile
// build` from five runs per GPU with up to 5% noise leaves each value
// about 1.3% off, and on a table as continuous as the pinned one that
// moves its bins. Running stale on the profile measured again is the
// spread within which one stale run cannot be told from another.
func remeasuredBand(t *testing.T) remeasuredRuns {
	t.Helper()
	remeasuredOnce.Do(func() {
		r := &remeasuredOnce.r
		pinned := pinnedTable(t)
		dir, err := os.MkdirTemp("", "remeasured")
		if err != nil {
			remeasuredOnce.err = err
			return
		}
		defer os.RemoveAll(dir)
		truth, _ := degrade(pinned, StaleFraction, StaleFactor, StaleSeed)
		tru := filepath.Join(dir, "truth.csv")
		if err := writeTable(tru, truth, 4, nil); err != nil {
			remeasuredOnce.err = err
			return
		}
		for s := uint64(1); s <= staleRemeasures; s++ {
			old := filepath.Join(dir, fmt.Sprintf("old%d.csv", s))
			if err := writeTable(old, remeasured(t, pinned, 4, s), 4, nil); err != nil {
				remeasuredOnce.err = err
				return
			}
			st, err := siaRun("sia-philly/4", old, tru, false)
			if err != nil {
				remeasuredOnce.err = err
				return
			}
			le, err := siaRun("sia-philly/4", old, tru, true)
			if err != nil {
				remeasuredOnce.err = err
				return
			}
			r.stale, r.learn = append(r.stale, st), append(r.learn, le)
		}
		m := metrics.Median(r.stale)
		dev := make([]float64, len(r.stale))
		for i, v := range r.stale {
			dev[i] = math.Abs(v - m)
		}
		r.band = metrics.Median(dev) / m
	})
	if remeasuredOnce.err != nil {
		t.Fatal(remeasuredOnce.err)
	}
	return remeasuredOnce.r
}

// siaRun is one FIFO PAL run of a Sia-Philly trace believing believed
// while the GPUs run at actual ("" = believed).
func siaRun(trace, believed, actual string, learn bool) (float64, error) {
	o, err := paper.FullPlan().Base()
	if err != nil {
		return 0, err
	}
	o.Trace, o.Scheduler, o.Placements = trace, "fifo", "pal"
	o.GPUScores, o.ActualGPUScores, o.LearnScores = believed, actual, learn
	_, runs, err := experiment.RunAll(o)
	if err != nil {
		return 0, err
	}
	return runs[0].AvgJCT, nil
}

// On Sia-Philly 4, with the old profile measured again 20 times, learning
// beats stale: its median average JCT is below stale's. Measured: stale
// 21,720-26,882 s (median 23,871), stale + learning 22,042-23,691 s
// (median 22,806), learning ahead on 15 of the 20; the section's own
// stale run (21,745 s, the profile as pinned) is the second-best of the
// 21 stale runs. The band, stale's median absolute deviation, is 5.1%.
func TestStaleRemeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("40 simulations of Sia-Philly 4")
	}
	r := remeasuredBand(t)
	wins := 0
	for i := range r.stale {
		t.Logf("noise seed %d: stale %.0f stale+learning %.0f", i+1, r.stale[i], r.learn[i])
		if r.learn[i] < r.stale[i] {
			wins++
		}
	}
	ms, ml := metrics.Median(r.stale), metrics.Median(r.learn)
	t.Logf("median stale %.0f, stale+learning %.0f; learning ahead on %d of %d; band %.2f%%", ms, ml, wins, len(r.stale), 100*r.band)
	if !(ml < ms) {
		t.Errorf("median stale+learning %.0f is not below median stale %.0f over %d re-measured profiles", ml, ms, len(r.stale))
	}
	if !(r.band > 0 && r.band < 0.1) {
		t.Errorf("stale's spread under re-measurement is %.2f%%, want within (0, 10%%)", 100*r.band)
	}
}

// pinnedTable is the artifact's pinned 16x4 table, the section's old
// Sia-Philly profile.
func pinnedTable(t *testing.T) *variability.Table {
	t.Helper()
	b, err := fs.ReadFile(data.Reference, "reference/pal-artifact-gpu-pmscores.csv")
	if err != nil {
		t.Fatal(err)
	}
	p, err := variability.ReadGPUScores("pal-artifact-gpu-pmscores.csv", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return p.Table
}
