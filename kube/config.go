package kube

import (
	"encoding/json"
	"fmt"
	"github.com/palsched/pal/policy/backfill"
	"math"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Config is `pal-kube scheduler --config FILE`. Every field has a default (see
// DefaultConfig), so no file is needed; a file only lists what it changes.
// The policy fields are the simulator's own options with the same names
// and defaults, so a cluster and a `pal sim` run can be set up alike.
type Config struct {
	// SchedulerName is the spec.schedulerName of the pods this scheduler
	// owns.
	SchedulerName string `json:"schedulerName"`
	// Namespace holds the variability ConfigMap and the leader Lease.
	Namespace string `json:"namespace"`
	// Period is the time between rounds.
	Period Duration `json:"period"`
	// ArrivalDelay: a round runs this long after new pods arrive, instead
	// of waiting for the next period (0 turns it off).
	ArrivalDelay Duration `json:"arrivalDelay"`
	// AlignPeriod starts rounds at multiples of Period on the wall clock,
	// so that a replay can put arrivals between rounds.
	AlignPeriod bool `json:"alignPeriod"`

	// Scheduler: fifo, las, srtf, tiresias-las or themis (as `pal sim
	// --scheduler`). Themis places too: its auctions pick the GPUs, and
	// Placement is not used.
	Scheduler string `json:"scheduler"`
	// Placement: pal, pm-first, packed-sticky, packed-nonsticky,
	// random-sticky or random-nonsticky, or a non-sticky one's
	// migration-aware variant (pal-ma, pm-first-ma, packed-nonsticky-ma,
	// random-nonsticky-ma). The default is pal-ma: here a migration is
	// the eviction of a whole gang and a restart from its checkpoint, so
	// a running gang moves only when the move's expected gain over its
	// remaining work beats MigrationCost.
	Placement string `json:"placement"`
	// Backfill: none (no gang starts behind one that waits) or easy (a
	// gang behind the first waiting one starts if its estimated run time,
	// from pal.io/iterations and its model, ends before that gang's
	// reservation, or if it uses none of the reserved GPUs; see
	// docs/kubernetes.md).
	Backfill string `json:"backfill"`
	// ForecastEvery N > 0 runs a forecast every N-th planned round: the
	// round's policies run on from its state with no arrivals, and each
	// waiting gang's estimated start goes on its pods
	// (pal.io/estimated-start), into its waiting event and into the gauge
	// pal_gang_estimated_start_seconds (0: off; not with themis or a
	// tenancy).
	ForecastEvery int `json:"forecastEvery"`
	// MigrationCost is the progress a gang loses to one migration
	// (checkpoint, eviction, rescheduling, restart, warm-up), which the
	// migration-aware placements weigh a move against (0: moves are
	// free and they behave as their base placement). The remaining work
	// they weigh is the pal.io/iterations estimate; a gang without one
	// counts as nearly done and is moved only when it must be.
	MigrationCost Duration `json:"migrationCost"`
	// TimeScale is how many seconds of the jobs' time pass per second of
	// wall time: 1 on a real cluster; a replay that compresses a trace
	// (pal-kube replay --speedup) sets its speedup, so that the progress the
	// scheduler credits a running gang (and so the work a move's gain is
	// weighed against) is in the trace's seconds, as in pal sim.
	TimeScale float64 `json:"timeScale"`
	// PreemptBarePods lets a round preempt a gang that has a bare pod (a
	// pod with no controller ownerReference): evicting a bare pod deletes
	// it and nothing recreates it, so by default such a gang is never
	// evicted and keeps its GPUs until it ends. A bare pod is never
	// evicted to migrate it, whatever this says. The same holds for the
	// gang of a batch/v1 Job that the eviction would fail (its backoffLimit
	// spent, see jobs.go).
	PreemptBarePods bool `json:"preemptBarePods"`
	// PreemptPastBudgets lets a waiting gang of higher pod priority (whose
	// preemptionPolicy is not Never) preempt a running gang whose
	// PodDisruptionBudgets refuse its eviction, as kube-scheduler's
	// preemption does: the victim's pods get a DisruptionTarget
	// condition and are deleted, since the Eviction API would refuse
	// them. Off (the default), such a gang is never preempted while its
	// budgets refuse it. A protected gang is still never migrated, never
	// preempted for a gang of its priority or lower, and never when it
	// has a bare pod or its Job would fail (see budgets_past.go). Not
	// with scheduler themis or a tenancy, which do not order by pod
	// priority.
	PreemptPastBudgets bool      `json:"preemptPastBudgets"`
	PMFirstTieBreak    string    `json:"pmfirstTieBreak"`
	LocalityPenalty    float64   `json:"localityPenalty"`
	KStrategy          string    `json:"kStrategy"`
	Seed               uint64    `json:"seed"`
	StarvationGuard    Duration  `json:"starvationGuard"`
	TiresiasThresholds []float64 `json:"tiresiasThresholds"`
	TiresiasStarvation float64   `json:"tiresiasStarvation"`
	// Models is a model table YAML (empty: the embedded one); ClassMap is
	// artifact or paper, as in `pal sim`.
	Models   string `json:"models"`
	ClassMap string `json:"classMap"`

	// VariabilityConfigMap names the ConfigMap (in Namespace) written by
	// `pal-kube profile export --kubernetes`; empty or absent: every GPU runs at
	// the median.
	VariabilityConfigMap string `json:"variabilityConfigMap"`
	// LearnScores, LearnedScoresConfigMap and LearnedScoresWriteInterval
	// turn on learning PM-scores from the gangs' own run times and say
	// where what was learned is kept (learn.go).
	LearnScores                bool     `json:"learnScores"`
	LearnedScoresConfigMap     string   `json:"learnedScoresConfigMap"`
	LearnedScoresWriteInterval Duration `json:"learnedScoresWriteInterval"`
	// LearnForgetAfter: what was learned of a node (its beliefs, the
	// slowdowns DCGM's hints carried over a restart, its quarantine) is
	// kept while the node is away, so that one that comes back (a
	// reboot, a repair, a drain and delete) starts from it; a node with
	// no Node object for longer than this is forgotten, in memory and in
	// the next learned ConfigMap write (learn_forget.go). 0: never
	// (the table and the metrics grow with every node name ever seen).
	LearnForgetAfter Duration `json:"learnForgetAfter"`
	// EvictedWorkConfigMap keeps, in Namespace, the work credited to the
	// gangs the scheduler evicted until their pods come back, so that a
	// restarted scheduler or another replica taking over credits it too
	// (evicted_store.go). Empty: kept in memory only.
	EvictedWorkConfigMap string `json:"evictedWorkConfigMap"`
	// EvictedWorkWriteInterval: at most one write of EvictedWorkConfigMap
	// per interval (and one when a term ends). 0: after every round that
	// changes the records.
	EvictedWorkWriteInterval Duration `json:"evictedWorkWriteInterval"`
	// QuarantineAbove, with learnScores, quarantines a GPU whose believed
	// slowdown (DCGM's hints included) reaches it, until it falls below
	// halfway back to 1: its class's slowest score in every class, under
	// hived* a bad cell of one device, a Warning event on its node,
	// pal_gpu_quarantined, and the reason in the learned ConfigMap
	// (quarantine.go). 0: off.
	QuarantineAbove float64 `json:"quarantineAbove"`
	// DCGM is where NVIDIA's DCGM exporters are: their throttled GPUs
	// become pal_gpu_* metrics and, with learnScores, a prior for the
	// learner (dcgm.go).
	DCGM DCGMConfig `json:"dcgm"`

	LeaderElection LeaderElection `json:"leaderElection"`

	// MetricsAddr serves /metrics, /healthz and /readyz ("" turns it off).
	// The default port, 10261, is not one of the control plane's own
	// (kube-scheduler serves on 10259, kube-controller-manager on 10257).
	MetricsAddr string `json:"metricsAddr"`
	// QPS and Burst limit the scheduler's own API requests.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// EventQPS and EventBurst limit the events it posts, on a client of
	// their own, so that events never take a bind's turn (as
	// kube-scheduler does).
	EventQPS   float32 `json:"eventQPS"`
	EventBurst int     `json:"eventBurst"`
	// BindQPS and BindBurst limit the binder's requests (Bindings,
	// Evictions, and the GETs that settle a bind whose answer was an
	// error), on a client of their own: binds are the scheduler's
	// throughput, and neither the informers nor the status writes take
	// their turn (a round never waits on them either; see package
	// kube/bind).
	BindQPS   float32 `json:"bindQPS"`
	BindBurst int     `json:"bindBurst"`
	// BindWorkers is how many binds run at once.
	BindWorkers int `json:"bindWorkers"`

	// Tenancy: none, quota, hived, hived-pm or hived-speed (as `pal sim --tenancy`);
	// Cells is the HiveD cells file it needs (as `pal sim --cells`). Pods
	// name their VC and priority in pal.io/vc and pal.io/priority.
	Tenancy string `json:"tenancy"`
	Cells   string `json:"cells"`
	// CellsConfigMap names a ConfigMap (in Namespace) holding the cells
	// (key hivedscheduler.yaml, HiveD's, or cells.yaml) that the scheduler
	// watches under hived: a change is applied under the running gangs,
	// an infeasible one refused (the config in force stays).
	CellsConfigMap string `json:"cellsConfigMap"`

	// Themis holds the knobs of scheduler themis (lease, knob); see
	// ThemisConfig.
	Themis ThemisConfig `json:"themis"`
}

// LeaderElection configures the Lease that keeps two replicas from binding
// at once.
type LeaderElection struct {
	Enabled       bool     `json:"enabled"`
	LeaseName     string   `json:"leaseName"`
	LeaseDuration Duration `json:"leaseDuration"`
	RenewDeadline Duration `json:"renewDeadline"`
	RetryPeriod   Duration `json:"retryPeriod"`
}

// Duration is a time.Duration written as "10s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"10s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"10s\": %v", err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// DefaultMigrationCost is a gang eviction and restart from a checkpoint:
// minutes of lost GPU time (pal-reproduce's migration section measures
// 30 s to 10 min; 2 min is its middle).
const DefaultMigrationCost = 2 * time.Minute

// DefaultMetricsAddr is where /metrics, /healthz and /readyz are served
// unless the config says otherwise: loopback only, on a port no
// Kubernetes component uses.
const DefaultMetricsAddr = "127.0.0.1:10261"

// The simulator's artifact preset, which the driver's defaults follow:
// the same scheduler, tie-break, locality penalty, K strategy, seed,
// starvation guard and class map as `pal sim` with no flags (cmd/pal's
// tests check that the two agree). The driver does not import the
// simulator's option package, so the values are written out here.
var artifact = struct {
	Scheduler, TieBreak, KStrategy, ClassMap string
	LocalityPenalty, StarvationGuard         float64
	Seed                                     uint64
}{
	Scheduler: "fifo", TieBreak: "artifact", KStrategy: "artifact", ClassMap: "artifact",
	LocalityPenalty: 1.7, StarvationGuard: 3.6e6, Seed: 42,
}

// DefaultConfig is what runs with no --config: the simulator's artifact
// preset for the policies, 10 s rounds, a round 1 s after new pods arrive.
func DefaultConfig() Config {
	o := artifact
	return Config{
		SchedulerName:   "pal",
		Namespace:       "pal-system",
		Period:          Duration{10 * time.Second},
		ArrivalDelay:    Duration{time.Second},
		Scheduler:       o.Scheduler,
		Placement:       "pal-ma",
		MigrationCost:   Duration{DefaultMigrationCost},
		TimeScale:       1,
		PMFirstTieBreak: o.TieBreak,
		LocalityPenalty: o.LocalityPenalty,
		KStrategy:       o.KStrategy,
		Seed:            o.Seed,
		StarvationGuard: Duration{time.Duration(o.StarvationGuard * float64(time.Second))},
		ClassMap:        o.ClassMap,
		// Tiresias' own defaults, written out so that --print-config
		// shows what scheduler tiresias-las runs with.
		TiresiasThresholds:   registry.DefaultTiresiasThresholds(),
		VariabilityConfigMap: "pal-variability",
		LeaderElection: LeaderElection{
			Enabled:       true,
			LeaseName:     "pal-scheduler",
			LeaseDuration: Duration{15 * time.Second},
			RenewDeadline: Duration{10 * time.Second},
			RetryPeriod:   Duration{2 * time.Second},
		},
		MetricsAddr: DefaultMetricsAddr,
		QPS:         200,
		Burst:       400,
		EventQPS:    200,
		EventBurst:  400,
		BindQPS:     500,
		BindBurst:   1000,
		BindWorkers: 32,
		Tenancy:     "none",
		Backfill:    "none",
		Themis:      defaultThemisConfig(),

		LearnedScoresConfigMap:     DefaultLearnedScoresConfigMap,
		LearnedScoresWriteInterval: Duration{DefaultLearnedScoresWriteInterval},
		LearnForgetAfter:           Duration{DefaultLearnForgetAfter},
		EvictedWorkConfigMap:       DefaultEvictedWorkConfigMap,
		EvictedWorkWriteInterval:   Duration{DefaultEvictedWorkWriteInterval},
		DCGM:                       defaultDCGMConfig(),
	}
}

// LoadConfig reads a YAML config over the defaults. Unknown fields are
// errors (a typo must not silently fall back to a default).
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if path == "" {
		return c, c.Validate()
	}
	b, err := readBounded(path, maxConfigBytes)
	if err != nil {
		return c, err
	}
	f, err := parseConfigFile(path, b)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("%s: %v", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, f.locate(err)
	}
	return c, nil
}

// Validate checks every field and names the one that is wrong.
func (c *Config) Validate() error {
	switch {
	case c.SchedulerName == "":
		return fmt.Errorf("field schedulerName: must not be empty")
	case c.Namespace == "":
		return fmt.Errorf("field namespace: must not be empty")
	case c.Period.Duration <= 0:
		return fmt.Errorf("field period: must be positive, got %v", c.Period)
	case c.ArrivalDelay.Duration < 0:
		return fmt.Errorf("field arrivalDelay: must be >= 0, got %v", c.ArrivalDelay)
	case !(c.LocalityPenalty > 0) || math.IsInf(c.LocalityPenalty, 0):
		return fmt.Errorf("field localityPenalty: must be positive and finite, got %v", c.LocalityPenalty)
	case c.ForecastEvery < 0:
		return fmt.Errorf("field forecastEvery: must be >= 0 (0: off), got %d", c.ForecastEvery)
	case c.ForecastEvery > 0 && (c.Scheduler == registry.SchedulerThemis || c.Tenancy != "" && c.Tenancy != "none"):
		return fmt.Errorf("field forecastEvery: not with scheduler themis or a tenancy, whose leases and cells a forecast cannot copy")
	case c.StarvationGuard.Duration < 0:
		return fmt.Errorf("field starvationGuard: must be >= 0, got %v", c.StarvationGuard)
	case c.MigrationCost.Duration < 0:
		return fmt.Errorf("field migrationCost: must be >= 0, got %v", c.MigrationCost)
	case !(c.TimeScale > 0) || math.IsInf(c.TimeScale, 0):
		return fmt.Errorf("field timeScale: must be a positive number (1 on a real cluster), got %v", c.TimeScale)
	case c.QPS <= 0 || c.Burst <= 0:
		return fmt.Errorf("fields qps and burst: must be positive")
	case c.EventQPS <= 0 || c.EventBurst <= 0:
		return fmt.Errorf("fields eventQPS and eventBurst: must be positive")
	case c.BindQPS <= 0 || c.BindBurst <= 0:
		return fmt.Errorf("fields bindQPS and bindBurst: must be positive")
	case c.BindWorkers <= 0 || c.BindWorkers > 1024:
		return fmt.Errorf("field bindWorkers: must be 1..1024, got %d", c.BindWorkers)
	case c.PreemptPastBudgets && (c.Scheduler == registry.SchedulerThemis || c.Tenancy != "" && c.Tenancy != "none"):
		return fmt.Errorf("field preemptPastBudgets: not with scheduler themis or a tenancy, which do not order gangs by pod priority")
	}
	if c.LeaderElection.Enabled {
		le := c.LeaderElection
		if le.LeaseName == "" || le.RetryPeriod.Duration <= 0 || le.RenewDeadline.Duration <= le.RetryPeriod.Duration ||
			le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
			return fmt.Errorf("field leaderElection: want a lease name and leaseDuration > renewDeadline > retryPeriod > 0")
		}
	}
	if _, err := c.policies(); err != nil {
		return err
	}
	if err := c.validateBackfill(); err != nil {
		return err
	}
	if _, err := variability.ParseKStrategy(c.KStrategy); err != nil {
		return fmt.Errorf("field kStrategy: %v", err)
	}
	if _, err := c.models(); err != nil {
		return err
	}
	if _, err := c.validateTenancy(); err != nil {
		return err
	}
	if err := c.validateEvictedWork(); err != nil {
		return err
	}
	if err := c.validateAppliedCells(); err != nil {
		return err
	}
	if err := c.validateLearn(); err != nil {
		return err
	}
	if err := c.validateDCGM(); err != nil {
		return err
	}
	return c.validateThemis()
}

type policies struct {
	sched policy.Scheduler
	place policy.Placer
}

// policies builds the round's scheduler and placer exactly as the
// simulator does.
func (c *Config) policies() (policies, error) {
	// The seed is the artifact preset's, as the simulator's scheduler
	// had before the registry moved out of its options.
	s, err := registry.NewScheduler(registry.Spec{
		Scheduler: c.Scheduler, TiresiasThresholds: c.TiresiasThresholds, TiresiasStarvation: c.TiresiasStarvation,
		Seed: artifact.Seed,
	})
	if err != nil {
		return policies{}, fmt.Errorf("field scheduler: %v", err)
	}
	p, err := c.newPlacer()
	if err != nil {
		return policies{}, fmt.Errorf("field placement/pmfirstTieBreak: %v", err)
	}
	return policies{s, p}, nil
}

// backfillMode reads field backfill ("" is none). Greedy backfill is the
// simulator's yardstick, not a policy: it can hold a big gang back for
// as long as small ones keep coming.
func (c *Config) backfillMode() (backfill.Mode, error) {
	m, err := backfill.ParseMode(strings.ToLower(c.Backfill))
	if err != nil || m == backfill.Greedy {
		return "", fmt.Errorf("field backfill: %s: want none or easy (greedy, which may starve a gang, is only pal sim's yardstick)", quote.Value(c.Backfill))
	}
	return m, nil
}

func (c *Config) validateBackfill() error {
	m, err := c.backfillMode()
	if err != nil || m == backfill.None {
		return err
	}
	switch {
	case c.Scheduler == registry.SchedulerThemis:
		return fmt.Errorf("field backfill: %s: not with scheduler themis, whose leases and auctions place every gang", m)
	case c.Tenancy != "" && c.Tenancy != "none":
		return fmt.Errorf("field backfill: %s: not with tenancy %s (a VC's placer keeps strict order)", m, c.Tenancy)
	}
	return nil
}

// newPlacer builds the config's placement with its tie-break.
func (c *Config) newPlacer() (policy.Placer, error) {
	return registry.NewPlacer(registry.Spec{Placement: strings.ToLower(c.Placement), TieBreak: c.PMFirstTieBreak})
}

func (c *Config) models() (*workload.Models, error) {
	cm, err := workload.ParseClassMap(c.ClassMap)
	if err != nil {
		return nil, fmt.Errorf("field classMap: %v", err)
	}
	m := workload.DefaultModels()
	if c.Models != "" {
		if m, err = workload.LoadModels(c.Models); err != nil {
			return nil, fmt.Errorf("field models: %v", err)
		}
	}
	return m.WithClassMap(cm), nil
}
