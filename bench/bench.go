// Package bench measures the cost of scheduling decisions on synthetic,
// loaded clusters. Its first question is how long one placement round
// takes: the simulator calls Place once per round and a real scheduler
// would call it once per scheduling tick, so that number bounds both the
// speed of a simulation and the cluster size a live scheduler can serve.
//
// Everything here is deterministic from a seed, so two runs time the same
// work and regressions show up as time, not as a different workload.
package bench

import (
	"fmt"
	"github.com/palsched/pal/metrics"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// RoundOptions describes one placement-round benchmark.
type RoundOptions struct {
	// Placement is a name place.New accepts ("pal", "pm-first", ...).
	Placement string
	// Nodes and GPUsPerNode give the cluster shape.
	Nodes, GPUsPerNode int
	// Queue is the number of jobs waiting or running (at most MaxQueue); 0 draws jobs until
	// their cumulative demand reaches 1.5x the cluster, so that the round
	// fills the cluster and stops at the first job that does not fit, as a
	// busy simulation round does.
	Queue int
	// Reps is the number of timed rounds (0 means 200).
	Reps int
	// Seed fixes the GPU values, the queue and the running set.
	Seed uint64
	// Profile is a variability profile set for variability.LoadProfileSet
	// ("" means longhorn, the artifact's).
	Profile string
	// MigrationCost is every job's migration cost in seconds, which the
	// migration-aware placements ("pal-ma", ...) weigh (0: free moves).
	MigrationCost float64
	// HeldFrom names the placement whose untimed first round decides where
	// the running jobs sit ("": the placement under test). Another
	// placer's layout makes a non-sticky placer move jobs, which is the
	// work a migration-aware one weighs.
	HeldFrom string
}

// Stats summarises the timed rounds. Times are wall-clock microseconds
// per Place call.
type Stats struct {
	MedianUS, P99US, MeanUS float64
	// FirstUS is the untimed set-up round that decided the running jobs;
	// it includes any per-cluster index a placer builds on first use and
	// reuses afterwards, which the timed rounds do not pay.
	FirstUS float64
	Reps    int
	GPUs    int
	Jobs    int
}

// Round is a prepared benchmark: a loaded cluster, its scores, a queue in
// scheduler order and the placer under test. Place runs one round; it can
// be called repeatedly because placers never change jobs or the cluster.
type Round struct {
	env     *policy.Env
	order   []*workload.Job
	placer  policy.Placer
	firstUS float64
}

// sizeMix is a Sia/Philly-like demand mix: mostly single-GPU jobs, then
// powers of two with a thinning tail. Weights are relative.
var sizeMix = []struct {
	gpus   int
	weight float64
}{
	{1, 45}, {2, 15}, {4, 20}, {8, 10}, {16, 6}, {32, 3}, {64, 1},
}

// NewRound builds the cluster, draws per-GPU values from the profile, bins
// them the artifact's way, draws the queue and runs one untimed round whose
// allocation becomes the running state of about half of the placed jobs.
func NewRound(opts RoundOptions) (*Round, error) {
	if opts.Nodes <= 0 || opts.GPUsPerNode <= 0 {
		return nil, fmt.Errorf("bench: cluster %dx%d: need at least one node and one GPU per node", opts.Nodes, opts.GPUsPerNode)
	}
	if opts.Queue < 0 || opts.Queue > MaxQueue {
		return nil, fmt.Errorf("bench: queue %d: want 0..%d jobs", opts.Queue, MaxQueue)
	}
	placer, err := place.New(opts.Placement)
	if err != nil {
		return nil, err
	}
	c, err := cluster.New(opts.Nodes, opts.GPUsPerNode)
	if err != nil {
		return nil, err
	}
	sc, err := scores(c.Size(), opts.Profile, opts.Seed)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x62656e6368)) // "bench"
	order := queue(rng, c.Size(), opts.Queue)
	for _, j := range order {
		j.MoveCost.Migration = opts.MigrationCost
	}
	r := &Round{
		env: &policy.Env{Cluster: c, Scores: sc, Rand: rand.New(rand.NewPCG(opts.Seed, 1)),
			Locality: func(*workload.Spec) float64 { return benchLocality }},
		order:  order,
		placer: placer,
	}
	start := time.Now()
	alloc := r.Place()
	r.firstUS = micros(time.Since(start))
	if opts.HeldFrom != "" {
		from, err := place.New(opts.HeldFrom)
		if err != nil {
			return nil, err
		}
		alloc = from.Place(r.env, order)
	}
	// Running jobs hold a valid allocation: one the placer itself produced,
	// so sticky placers see a consistent cluster and non-sticky ones can
	// find jobs whose GPUs do not change.
	for i, g := range alloc {
		if g != nil && rng.IntN(2) == 0 {
			order[i].GPUsHeld = slices.Clone(g)
		}
	}
	return r, nil
}

// Place runs one placement round and returns its allocation.
func (r *Round) Place() [][]int { return r.placer.Place(r.env, r.order) }

// GPUs is the cluster size.
func (r *Round) GPUs() int { return r.env.Cluster.Size() }

// Jobs is the queue length.
func (r *Round) Jobs() int { return len(r.order) }

// PlacementRound builds a Round and times opts.Reps calls of Place.
func PlacementRound(opts RoundOptions) (Stats, error) {
	r, err := NewRound(opts)
	if err != nil {
		return Stats{}, err
	}
	reps := opts.Reps
	if reps <= 0 {
		reps = 200
	}
	us := make([]float64, reps)
	for i := range us {
		start := time.Now()
		r.Place()
		us[i] = micros(time.Since(start))
	}
	return summarise(us, r), nil
}

func summarise(us []float64, r *Round) Stats {
	s := Stats{Reps: len(us), GPUs: r.GPUs(), Jobs: r.Jobs(), FirstUS: r.firstUS}
	s.MedianUS, s.P99US, s.MeanUS = timeSummary(us)
	return s
}

// timeSummary is the median, 99th percentile and mean of timings.
func timeSummary(us []float64) (median, p99, mean float64) {
	sum := 0.0
	for _, x := range us {
		sum += x
	}
	sorted := slices.Clone(us)
	slices.Sort(sorted)
	return metrics.Quantile(sorted, 0.5), metrics.Quantile(sorted, 0.99), sum / float64(len(us))
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// scores draws every GPU's raw values with replacement (the artifact's
// sampling) and bins them with the artifact's K strategy and the default
// locality penalty, giving placement the same kind of score table a
// simulation of that cluster would.
func scores(gpus int, profile string, seed uint64) (*policy.Scores, error) {
	if profile == "" {
		profile = variability.DefaultProfile
	}
	profiles, err := variability.LoadProfileSet(profile)
	if err != nil {
		return nil, err
	}
	raw, err := variability.Assign(profiles, gpus, variability.WithReplacement, variability.NewRand(seed), nil)
	if err != nil {
		return nil, err
	}
	vs, err := variability.NewScores(raw, variability.BinOptions{Strategy: variability.KArtifact, Seed: seed}, nil)
	if err != nil {
		return nil, err
	}
	return policy.ScoresFrom(vs), nil
}

// queue draws jobs in FIFO order with the size mix (sizes larger than the
// cluster are redrawn) and uniformly random classes. n = 0 draws until the
// demand reaches 1.5x the cluster.
func queue(rng *rand.Rand, size, n int) []*workload.Job {
	total := 0.0
	for _, m := range sizeMix {
		total += m.weight
	}
	draw := func() int {
		for {
			x := rng.Float64() * total
			for _, m := range sizeMix {
				if x < m.weight {
					if m.gpus <= size {
						return m.gpus
					}
					break
				}
				x -= m.weight
			}
		}
	}
	var order []*workload.Job
	demand := 0
	for i := 0; n > 0 && i < n || n == 0 && 2*demand < 3*size; i++ {
		g := draw()
		demand += g
		order = append(order, workload.NewJob(workload.Spec{
			ID: i, GPUs: g, Submit: float64(i), Iterations: 1000, IterTime: 1,
			Model: "bench", Class: variability.Class(rng.IntN(variability.NumClasses)), Tracked: true,
		}))
	}
	return order
}

// benchLocality is the artifact's locality penalty, which migration-aware
// placements weigh in a move's gain.
const benchLocality = 1.7

// MaxQueue bounds a benchmark queue: ten times a Summit-sized cluster's
// GPUs, far more than a round ever sees, and small enough to fit memory.
const MaxQueue = 1_000_000
