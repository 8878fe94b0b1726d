// Package paper is the convention every room of the paper experiments
// shares: the plan (what each figure's grid covers, full or quick), the
// Figure (a CSV, plots and tables, written the same way by every room),
// the placements' display names and looks, and the small text helpers
// the summaries use. It sits below the rooms, which never import each
// other, and below package reproduce, which runs them all.
package paper

import (
	"fmt"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/workload"
)

// Plan is the grid behind every figure. FullPlan is the paper's; QuickPlan
// keeps each figure but shrinks it to run in seconds for CI.
type Plan struct {
	Name string
	// Preset is the experiment preset (artifact: what produced the
	// paper's figures).
	Preset string

	// Sia-Philly (16x4, FIFO): Fig 11 over SiaTraces, Fig 12 wait times
	// for WaitTraces (a subset of SiaTraces, whose runs it reuses), Fig 13
	// over LocalityTraces × LocalityPenalties.
	SiaTraces         []int
	WaitTraces        []int
	LocalityTraces    []int
	LocalityPenalties []float64

	// Synergy (SynergyCluster, round SynergyRound, L SynergyL): Figs 14,
	// 16, 17 over Loads per scheduler; Fig 15 GPUs in use at UtilLoads
	// (FIFO); Fig 20 at Fig20Load over Fig20Penalties (FIFO).
	SynergyCluster string
	SynergyRound   float64
	SynergyL       float64
	SynergyJobs    int
	SynergyTrack   workload.TrackRange
	// SynergySeeds are independent draws (trace, GPU values, random
	// placement) averaged in Figs 14, 16, 17 and 20: one draw moves PAL's
	// gain by several points. Fig 15 shows the first seed's run.
	SynergySeeds []uint64
	Loads        map[string][]float64
	// HeadlineLoads are the loads the paper's "up to" claims for LAS and
	// SRTF range over (Figs 16 and 17 plot 8-14 jobs/hour).
	HeadlineLoads  []float64
	UtilLoads      []float64
	Fig20Load      float64
	Fig20Penalties []float64

	// Fig 18: placement time per round by cluster shape.
	Bench []BenchSize

	// Migration section: every cost (seconds per migration, and per
	// restart after a preemption) on SiaTraces and on Synergy at
	// MigrationLoad with SynergySeeds, FIFO.
	MigrationCosts []float64
	MigrationLoad  float64
}

// BenchSize is one cluster of Fig 18 and how many rounds to time on it.
type BenchSize struct {
	Nodes, GPUsPerNode, Reps int
}

// GPUs is the cluster size.
func (b BenchSize) GPUs() int { return b.Nodes * b.GPUsPerNode }

// SynergySchedulers are the schedulers of the Synergy figures, in figure order (14, 16, 17).
var SynergySchedulers = []string{"fifo", "las", "srtf"}

// Placements are the placements shown in every figure: the paper's two first (so that they get
// the most distinct colours), then the four baselines.
var Placements = []string{"pal", "pm-first", "packed-sticky", "packed-nonsticky", "random-sticky", "random-nonsticky"}

func loadRange(from, to, step float64) []float64 {
	var out []float64
	for x := from; x <= to+1e-9; x += step {
		out = append(out, x)
	}
	return out
}

// penalties lists from..to in steps of 0.1, computed from integers so that
// 1.7 is the double 1.7 (the preset's value) and runs are shared.
func penalties(from, to int) []float64 {
	var out []float64
	for k := from; k <= to; k++ {
		out = append(out, float64(k)/10)
	}
	return out
}

// FullPlan is the paper's evaluation: all eight Sia-Philly traces, the
// artifact's locality sweep on every trace (the artifact ran workload 6
// only), Synergy at 4-14 jobs/hour under FIFO, LAS and SRTF with ids
// 2000-3000 tracked out of 4000, Fig 20's L = 1.0-1.7 in steps of 0.1, and
// Fig 18 up to a Frontera-sized 27,648 GPUs.
func FullPlan() Plan {
	loads := loadRange(4, 14, 2)
	return Plan{
		Name:              "full",
		Preset:            "artifact",
		SiaTraces:         []int{1, 2, 3, 4, 5, 6, 7, 8},
		WaitTraces:        []int{3, 5},
		LocalityTraces:    []int{1, 2, 3, 4, 5, 6, 7, 8},
		LocalityPenalties: []float64{1.0, 1.5, 2.0, 2.5, 3.0},
		SynergyCluster:    "64x4",
		SynergyRound:      300,
		SynergyL:          1.7,
		SynergyJobs:       4000,
		SynergyTrack:      workload.TrackRange{First: 2000, Last: 3000},
		SynergySeeds:      []uint64{42, 1, 2},
		Loads:             map[string][]float64{"fifo": loads, "las": loads, "srtf": loads},
		HeadlineLoads:     []float64{8, 10, 12, 14},
		UtilLoads:         []float64{8, 10},
		Fig20Load:         10,
		Fig20Penalties:    penalties(10, 17),
		Bench: []BenchSize{
			{16, 4, 100}, {64, 4, 100}, {256, 4, 50}, {1024, 4, 20}, {4096, 4, 10}, {6912, 4, 10},
		},
		MigrationCosts: []float64{0, 30, 120, 600},
		MigrationLoad:  10,
	}
}

// QuickPlan keeps every figure on a reduced grid: traces 3 and 5 (the
// paper's worst and best) for Figs 11-12, workload 6 (the artifact's
// locality sweep) for Fig 13, Synergy at 8 and 10 jobs/hour (the loads of
// Fig 15, and Fig 20's 10) on 1000 jobs tracking 500-750, three penalties
// for Fig 20 and clusters up to 1,024 GPUs for Fig 18. Its numbers show
// the figures work, not the paper's values.
func QuickPlan() Plan {
	p := FullPlan()
	p.Name = "quick"
	p.SiaTraces = []int{3, 5}
	p.LocalityTraces = []int{6}
	p.SynergyJobs = 1000
	p.SynergyTrack = workload.TrackRange{First: 500, Last: 750}
	p.SynergySeeds = []uint64{42}
	loads := []float64{8, 10}
	p.Loads = map[string][]float64{"fifo": loads, "las": loads, "srtf": loads}
	p.HeadlineLoads = loads
	p.Fig20Penalties = []float64{1.0, 1.3, 1.7}
	p.Bench = []BenchSize{{16, 4, 20}, {64, 4, 20}, {256, 4, 5}}
	return p
}

// Base is the experiment preset the plan names.
func (p Plan) Base() (experiment.Options, error) {
	return experiment.Preset(p.Preset)
}

// SiaNames are the built-in trace names of Sia-Philly workloads ks.
func SiaNames(ks []int) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = fmt.Sprintf("sia-philly/%d", k)
	}
	return out
}
