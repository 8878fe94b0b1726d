// Package themisrun runs app workloads under Themis or a baseline
// scheduler on the simulator and reports finish-time fairness per app
// beside the usual job metrics, so that every policy is judged by the
// same ρ. `pal themis sim` runs one; reproduce/themis, the Themis paper's
// room of the paper experiments, runs its sweeps on it and draws them (it
// is apart so that pal links no report writer).
//
// Every policy is charged the same placement model: a job whose GPUs span
// machines runs at its model's spread factor (workload's model table), so
// the comparison is about decisions, not about different physics.
package themisrun

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/baseline"
	"github.com/palsched/pal/policy/ftf"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// Policies are Themis and the strong (packing) baselines.
func Policies() []string { return []string{"themis", "tiresias", "gandiva", "srtf", "gavel"} }

// BlindPolicies are the placement-blind baselines, as the Themis authors'
// simulator ran them: tiresias-blind auctions every free GPU on its own
// lease to the job with the least attained GPU service, wherever the GPU
// is, and grows elastic jobs GPU by GPU up to max_gpus (package baseline).
func BlindPolicies() []string { return []string{"tiresias-blind"} }

// PaperBaselines are the Themis paper's other baselines under the same
// 600 s leases (package baseline): Gandiva's fair variant, SLAQ, Optimus,
// and gandiva-score, the authors' Gandiva (GPU by GPU to the largest
// effective speed-up |G|·S(G)).
func PaperBaselines() []string {
	var out []string
	for _, n := range baseline.Names() {
		if !slices.Contains(BlindPolicies(), n) {
			out = append(out, n)
		}
	}
	return out
}

// Spec is one run: inputs (cluster, scores, trace) prepared by the
// experiment package, plus the policy and Themis' knobs.
type Spec struct {
	Inputs *experiment.Inputs
	Models *workload.Models
	Policy string
	Round  float64 // 0: 60 s for themis, the inputs' round otherwise
	Themis themis.Config
	// MoveCost charges every migration and restart (the lease sweep's
	// checkpoint cost; zero: free).
	MoveCost workload.MoveCost
	// Flat runs every GPU at the median speed (no PM-scores: neither the
	// simulator's slowdowns nor any policy's score-aware choices).
	Flat bool
	// Levels give the cluster the authors' slot / machine / rack levels:
	// the simulator then charges every job S(G) at the widest level its
	// GPUs cross (slot, machine or rack factor of its model), and Themis
	// bids on the same S(G). nil: machines only, spread jobs charged
	// their spread factor.
	Levels *fairness.Levels
}

// Result is one run's outcome.
type Result struct {
	Policy    string               `json:"policy"`
	Round     float64              `json:"round_s"`
	Jobs      metrics.Summary      `json:"jobs"`
	Fairness  fairness.FairSummary `json:"fairness"`
	GPUTime   float64              `json:"gpu_time_s"` // GPU-seconds held by jobs
	Placement float64              `json:"placement_score"`
	Auctions  int                  `json:"auctions,omitempty"`
	// LeaseChanges counts launches and migrations auctions caused.
	LeaseChanges int      `json:"lease_changes,omitempty"`
	Violations   []string `json:"violations,omitempty"`
	// JobMaxRho is the largest per-job ρ (fairness.JobRhos), the
	// metric the authors' simulator prints.
	JobMaxRho float64            `json:"job_max_rho"`
	WallMS    float64            `json:"wall_ms"`
	Apps      []fairness.AppStat `json:"-"`
}

// Locality charges a spread job its model's spread factor (as a
// slowdown, 1/factor).
func Locality(models *workload.Models) sim.LocalityFunc {
	return func(s *workload.Spec) float64 {
		f, _ := models.Sensitivity(s.Model)
		return 1 / f
	}
}

// Run simulates one policy on the spec's inputs.
func Run(sp Spec) (*Result, error) {
	in := sp.Inputs
	models := sp.Models
	if models == nil {
		models = workload.DefaultModels()
	}
	var (
		sched policy.Scheduler
		pl    policy.Placer
		th    *themis.Policy
		err   error
	)
	round := sp.Round
	switch sp.Policy {
	case "themis":
		cfg := sp.Themis
		cfg.Models = models
		cfg.Levels = sp.Levels
		if th, err = themis.New(cfg); err != nil {
			return nil, err
		}
		sched, pl = th, th
		if round == 0 {
			round = themis.DefaultRound
		}
	case "tiresias":
		sched, pl = schedule.NewTiresiasLAS(schedule.DefaultTiresias()), must(place.New("packed-sticky"))
	case "gandiva":
		sched, pl = schedule.FIFO{}, must(place.New("packed-nonsticky"))
	case "srtf":
		sched, pl = schedule.SRTF{}, must(place.New("packed-sticky"))
	case "gavel":
		sched, pl = ftf.New(in.Cluster.Size()), must(place.New("packed-sticky"))
	case "gandiva-fair", "slaq", "optimus", "tiresias-blind", "gandiva-score":
		b, err := baseline.New(baseline.Config{Name: sp.Policy, Lease: sp.Themis.Lease, Levels: sp.Levels, Models: models})
		if err != nil {
			return nil, err
		}
		sched, pl = b, b
		if round == 0 {
			round = themis.DefaultRound // the same rounds as Themis
		}
	default:
		return nil, fmt.Errorf("unknown policy %q (known: %s)", sp.Policy, strings.Join(slices.Concat(Policies(), BlindPolicies(), PaperBaselines()), ", "))
	}
	if round == 0 {
		round = in.Opts.Round
	}
	raw, scores := in.Raw, in.Scores
	if sp.Flat {
		raw, scores = nil, nil
	}
	var placementSum, placementGPUs float64
	topo, err := themis.Topology(in.Cluster, sp.Levels)
	if err != nil {
		return nil, err
	}
	var placement sim.PlacementFunc
	if sp.Levels != nil {
		placement = func(j *workload.Spec, g []int) float64 {
			return 1 / topo.Placement(g, themis.SensitivityOf(models, j.Model))
		}
	}
	cfg := sim.Config{Placement: placement,
		Cluster: in.Cluster, Trace: in.Trace, Scheduler: sched, Placer: pl, Round: round,
		Locality: Locality(models), Raw: raw, Scores: scores, Seed: in.Opts.Seed, Track: in.Track,
		MaxExtras: -1, Costs: workload.Costs{Default: sp.MoveCost},
		Observe: func(_ float64, order []*workload.Job, alloc [][]int) {
			if th != nil {
				return // Themis accounts its own placements
			}
			for i, g := range alloc {
				if len(g) > 0 {
					placementSum += topo.Placement(g, themis.SensitivityOf(models, order[i].Model)) * float64(len(g))
					placementGPUs += float64(len(g))
				}
			}
		},
	}
	start := time.Now()
	res, err := sim.Run(cfg)
	if err != nil {
		return nil, err
	}
	out := &Result{Policy: sp.Policy, Round: round, Jobs: res.Summary, WallMS: float64(time.Since(start).Microseconds()) / 1000}
	for _, r := range res.Rounds {
		out.GPUTime += float64(r.GPUsInUse) * round
	}
	if th != nil {
		st := th.Stats()
		out.Placement, out.Auctions, out.LeaseChanges, out.Violations = st.PlacementScore, st.Auctions, st.LeaseChanges, st.Violations
	} else if placementGPUs > 0 {
		out.Placement = placementSum / placementGPUs
	}
	m := fairness.Measure(in.Trace, res.Jobs, in.Cluster.Size())
	out.Apps, out.Fairness, out.JobMaxRho = m.PerApp, m.FairSummary, m.JobMaxRho
	return out, nil
}

func must(p policy.Placer, err error) policy.Placer {
	if err != nil {
		panic(err) // built-in names
	}
	return p
}
