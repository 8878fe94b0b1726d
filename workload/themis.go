package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/palsched/pal/internal/quote"
)

// ThemisOptions shape a Themis-style workload: apps (hyper-parameter
// searches) of several jobs that all train one model, built from the
// Philly trace's job durations and sizes.
type ThemisOptions struct {
	Apps int     // how many apps
	Rate float64 // mean app arrivals per hour (Poisson; the first at 0)
	Seed uint64
	// MaxJobs is the most jobs in an app (Themis: up to 100); an app has
	// one job with probability SingleShare (Themis: about 10%), else
	// U{2..MaxJobs}.
	MaxJobs     int
	SingleShare float64
	// Kill is the share of jobs in multi-job apps that the app's
	// hyper-parameter optimiser stops early, each after U(10%, 50%) of its
	// length (0: none).
	Kill float64
	// ModelNames are the models apps train, equally likely (nil: every
	// model in the table except "synergy").
	ModelNames []string
	// Models resolves model names; nil means DefaultModels().
	Models *Models
	// MaxSeconds caps a job's sampled Philly run time (0: no cap beyond
	// the Philly filter's 166.7 h).
	MaxSeconds float64
	// Elastic > 0 makes every job elastic from 1 to Elastic GPUs (the
	// authors' macro workload: max_parallelism 4). A job keeps the GPU-
	// seconds of its Philly draw on min(its Philly GPUs, Elastic) GPUs,
	// written as iterations on one GPU ([D]: the macro trace's own job
	// lengths are not known here).
	Elastic int
}

// Independent streams per quantity, so that changing Rate moves arrivals
// only and the same apps are compared across a contention sweep.
const (
	streamThemisArrival uint64 = 0x7468617272
	streamThemisApps    uint64 = 0x7468617070
)

// Validate checks the options.
func (o *ThemisOptions) Validate() error {
	switch {
	case o.Apps <= 0 || o.Apps > MaxThemisApps:
		return fmt.Errorf("--apps %d: want 1..%d", o.Apps, MaxThemisApps)
	case !(o.Rate > 0) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("--rate %v: want a positive number of apps per hour", o.Rate)
	case o.MaxJobs < 1 || o.MaxJobs > 10000:
		return fmt.Errorf("--max-jobs %d: want 1..10000", o.MaxJobs)
	case !(o.SingleShare >= 0 && o.SingleShare <= 1):
		return fmt.Errorf("--single-share %v: want a share in [0, 1]", o.SingleShare)
	case !(o.Kill >= 0 && o.Kill <= 1):
		return fmt.Errorf("--kill %v: want a share in [0, 1]", o.Kill)
	case !(o.MaxSeconds >= 0) || math.IsInf(o.MaxSeconds, 0):
		return fmt.Errorf("--max-hours: want a finite number >= 0")
	case o.Elastic < 0 || o.Elastic > MaxElasticGPUs:
		return fmt.Errorf("--elastic %d: want 0 (rigid gangs) or 1..%d", o.Elastic, MaxElasticGPUs)
	}
	return nil
}

// MaxThemisApps bounds a generated workload.
const MaxThemisApps = 100000

// GenerateThemis builds a Themis-style trace from kept Philly jobs (see
// ReadPhillyJobs). Every job of app k arrives with the app, trains the
// app's model, uses the GPU count of one Philly job drawn for the app (a
// search's trials share their resources) and runs for the duration of
// its own Philly draw, as iterations of the model's iteration time. Job
// ids are 0.. in arrival order; apps are named app-0, app-1, ....
func GenerateThemis(samples []PhillyJob, opt ThemisOptions) ([]Spec, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("no Philly jobs to draw from")
	}
	models := opt.Models
	if models == nil {
		models = DefaultModels()
	}
	names := opt.ModelNames
	if len(names) == 0 {
		for _, n := range models.Names() {
			if n != "synergy" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no models to train")
	}
	for _, n := range names {
		if _, _, ok := models.Lookup(n); !ok {
			return nil, fmt.Errorf("unknown model %s (known: %s)", quote.Value(n), models.knownList())
		}
	}
	arr := rand.New(rand.NewPCG(opt.Seed, streamThemisArrival))
	rng := rand.New(rand.NewPCG(opt.Seed, streamThemisApps))
	var out []Spec
	t := 0.0
	for k := range opt.Apps {
		if k > 0 {
			t += poissonGap(arr, opt.Rate)
		}
		model := names[rng.IntN(len(names))]
		iter, class, _ := models.Lookup(model)
		jobs := 1
		if opt.MaxJobs > 1 && rng.Float64() >= opt.SingleShare {
			jobs = 2 + rng.IntN(opt.MaxJobs-1)
		}
		gpus := samples[rng.IntN(len(samples))].GPUs
		for range jobs {
			sec := samples[rng.IntN(len(samples))].Seconds
			if opt.MaxSeconds > 0 {
				sec = min(sec, opt.MaxSeconds)
			}
			if jobs > 1 && rng.Float64() < opt.Kill {
				sec *= 0.1 + 0.4*rng.Float64()
			}
			sp := Spec{
				ID: len(out), GPUs: gpus, Submit: t, Iterations: math.Max(1, math.Round(sec/iter)),
				Model: model, IterTime: iter, Class: class, Tracked: true, App: fmt.Sprintf("app-%d", k),
			}
			if opt.Elastic > 0 {
				sp.GPUs = 1
				sp.Iterations = math.Max(1, math.Round(sec*float64(min(gpus, opt.Elastic))/iter))
				if opt.Elastic > 1 {
					sp.MaxGPUs = opt.Elastic
				}
			}
			out = append(out, sp)
		}
	}
	return out, nil // arrivals never decrease, so ids are in arrival order
}

// GenerateThemisEmbedded draws from the embedded Philly trace.
func GenerateThemisEmbedded(opt ThemisOptions) ([]Spec, error) {
	jobs, err := embeddedPhillyJobs()
	if err != nil {
		return nil, err
	}
	return GenerateThemis(jobs, opt)
}
