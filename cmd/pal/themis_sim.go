package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/reproduce/themisrun"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// themisSimOpts are the flags of `pal themis sim`.
type themisSimOpts struct {
	gen                       themisGenFlags
	trace, cluster, profile   string
	topology                  string
	policies, output, appsOut string
	payments, leftover        string
	valuation, slowdowns      string
	metric, rounding          string
	round, lease, f, noise    float64
	placementBlind, varBlind  bool
	flat                      bool
	seed                      uint64
}

func newThemisSimCmd() *cobra.Command {
	var o themisSimOpts
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate an app workload under Themis and baselines; report finish-time fairness",
		Long: `Sim runs one app workload (--trace FILE with an app column, or one generated
with the pal trace themis flags) under each --policy and reports, per policy,
the jobs' average JCT and makespan, the mean placement score (GPU-weighted
S(G): 1 = every job inside one machine), the auctions, and then the ρ table
pal sim prints for a trace with apps: max, p95 and mean ρ, the apps with
ρ > 2, Jain's index over the apps' ρ and the GPU time, every time in
seconds. pal sim runs the same measurement under its own schedulers and
placements (--scheduler themis with Themis' defaults); this command adds
Themis' knobs, the Themis paper's baselines as policies and its placement
model.

Policies: themis (leases and partial-allocation auctions; 60 s rounds unless
--round says otherwise), tiresias (2D-LAS, packed sticky placement), gandiva
(FIFO with packed non-sticky placement), srtf (packed sticky) and gavel
(Gavel's finish-time-fairness min-max program per job, run in deficit order,
packed sticky); tiresias-blind and gandiva-score are Tiresias and Gandiva
as the Themis authors' simulator ran them: every free GPU on its own
600 s lease, auctioned GPU by GPU (elastic jobs grow to max_gpus) to the
least attained GPU service wherever the GPU is (tiresias-blind) or to the
largest effective speed-up |G|·S(G) after the grant (gandiva-score);
gandiva-fair (Gandiva's fair variant: equal GPU time per app), slaq
(GPUs to the largest predicted loss drop) and optimus (GPUs to the largest
cut in remaining time) re-plan every 600 s lease with 60 s rounds and give
elastic jobs (max_gpus) more than their minimum. Every policy
is charged the same placement model: a job spread over machines runs at its
model's spread_factor (the model table), and every GPU runs at its PM-score
drawn from --profile.

An app's ρ after the run is (finish − arrival) / (W / min(GPUs / N_avg, D)),
with W its ideal GPU-seconds, D the sum of its jobs' gang sizes and N_avg the
time-average number of apps alive during its life.`,
		Example: `  pal themis sim --apps 30 --rate 4 --cluster 8x8 --output table
  pal trace themis --apps 100 --seed 2 > apps.csv && pal themis sim --trace apps.csv --policy themis --apps-out apps-rho.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.gen.applyPreset(cmd); err != nil {
				return err
			}
			if o.gen.preset == "macro" {
				if !cmd.Flags().Changed("topology") && !cmd.Flags().Changed("cluster") {
					o.topology = MacroTopology
				}
				if !cmd.Flags().Changed("slowdowns") {
					o.slowdowns = MacroSlowdowns
				}
			}
			return runThemisSim(cmd.OutOrStdout(), o)
		},
	}
	o.gen.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace CSV with an app column (default: generate one with the flags above)")
	f.StringVar(&o.cluster, "cluster", "8x8", "cluster shape NODESxGPUS")
	f.StringVar(&o.topology, "topology", "", "the authors' levels RACKSxMACHINESxSLOTSxGPUS (e.g. 2x2x2x4 = 32 GPUs; replaces --cluster): jobs run at their model's slot, spread or rack factor for the widest level their GPUs cross, and Themis bids on it")
	f.StringVar(&o.profile, "profile", variability.DefaultProfile, "variability profile set for the GPUs' PM-scores")
	f.StringVar(&o.policies, "policy", "themis,tiresias,gandiva,srtf,gavel", "comma list of policies")
	f.Float64Var(&o.round, "round", 0, "round length in seconds (0: 60 for themis, 300 for the others)")
	f.Float64Var(&o.lease, "lease", themis.DefaultLease, "Themis lease in seconds")
	f.Float64Var(&o.f, "fairness-knob", 0.8, "fairness knob f in [0, 1]: the ⌊(1-f)·n⌋ worst-off apps bid")
	f.StringVar(&o.rounding, "knob-rounding", "floor", "floor or ceil of (1-f)·n")
	f.StringVar(&o.payments, "pa-payments", "on", "hidden payments: on (= random: keep c_i of the bundle in expectation, whole grants drawn from --sim-seed), lease (keep it for c_i of the lease), floor (round down: a gang keeps nothing) or off (the authors' simulator)")
	f.StringVar(&o.valuation, "valuation", "speedup", "what bids are worth: speedup (the effective speed-up Σ|G|·S(G), homogeneous) or rho (1/ρ)")
	f.StringVar(&o.slowdowns, "slowdowns", "ours", "placement slowdown table: ours (the model table's), authors (the Themis authors' simulator's cross-machine / cross-rack factors for the models it knows, e.g. vgg19 0.70 / 0.50) or macro (their macro workload's 0.8 / 0.7 / 0.6 across slots / machines / racks for every model; slots count only with --topology)")
	f.StringVar(&o.leftover, "leftover", "reauction", "leftover GPUs: reauction (the next worst-off bid again), nonbidders-first, bidders-only or none")
	f.StringVar(&o.metric, "metric", "themis", "ρ's denominator in bids: themis or gavel")
	f.BoolVar(&o.placementBlind, "placement-blind", false, "bid as if every spread factor were 1 (ablation)")
	f.BoolVar(&o.varBlind, "variability-blind", false, "bid without PM-scores (ablation; Themis' own bids)")
	f.BoolVar(&o.flat, "flat", false, "every GPU at the median speed: no PM-scores in the simulator or in any policy (with --round 300, the like-for-like efficiency comparison)")
	f.Float64Var(&o.noise, "remaining-noise", 0, "p: each app's remaining-work estimate × U(1-p, 1+p) (0: oracle)")
	f.Uint64Var(&o.seed, "sim-seed", DefaultSeed, "seed of the GPU PM-score draws, the remaining-work noise and the payment draws")
	f.StringVar(&o.appsOut, "apps-out", "", "write one CSV row per app and policy (ρ and its terms)")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "table, json or csv")
	return cmd
}

func (o *themisSimOpts) themisConfig() (themis.Config, error) {
	var c themis.Config
	if !(o.lease > 0) {
		return c, fmt.Errorf("--lease %v: must be a positive number of seconds", o.lease)
	}
	c.Lease = o.lease
	c.RemainingNoise = o.noise
	c.Seed = o.seed
	a := fairness.DefaultOptions()
	var err error
	if a.Knob, err = fairness.NewKnob(o.f); err != nil {
		return c, fmt.Errorf("--fairness-knob: %v", err)
	}
	switch o.rounding {
	case "floor":
	case "ceil":
		a.Knob.Ceil = true
	default:
		return c, fmt.Errorf("--knob-rounding %q: want floor or ceil", o.rounding)
	}
	if a.Payment, err = fairness.ParsePayment(o.payments); err != nil {
		return c, fmt.Errorf("--pa-payments: %v", err)
	}
	if a.Valuation, err = fairness.ParseValuation(o.valuation); err != nil {
		return c, fmt.Errorf("--valuation: %v", err)
	}
	a.Seed = o.seed
	if a.Leftover, err = fairness.ParseLeftover(o.leftover); err != nil {
		return c, fmt.Errorf("--leftover: %v", err)
	}
	if a.Metric, err = fairness.ParseMetric(o.metric); err != nil {
		return c, fmt.Errorf("--metric: %v", err)
	}
	a.PlacementBlind, a.VariabilityBlind = o.placementBlind, o.varBlind
	c.Auction = a
	return c, c.Validate()
}

// themisInputs builds the cluster, PM-scores and trace shared by every
// policy of a run.
func (o *themisSimOpts) themisInputs() (*experiment.Inputs, string, error) {
	models := workload.DefaultModels()
	var (
		tr   *workload.Trace
		from string
		err  error
	)
	if o.trace != "" {
		if tr, err = workload.ReadTraceFile(o.trace, models); err != nil {
			return nil, "", err
		}
		from = o.trace
	} else {
		jobs, err := o.gen.generate()
		if err != nil {
			return nil, "", err
		}
		tr = &workload.Trace{Name: "generated", Jobs: jobs, HasApp: true}
		from = o.gen.describe()
	}
	eo, _ := experiment.Preset("paper")
	eo.Trace, eo.Cluster, eo.Profile, eo.Seed, eo.Round = tr.Name, o.cluster, o.profile, o.seed, 300
	if lv, err := o.levels(); err != nil {
		return nil, "", err
	} else if lv != nil {
		eo.Cluster = fmt.Sprintf("%dx%d", lv.Machines(), lv.GPUsPerMachine())
	}
	eo.Explicit.Preset = true
	in, err := experiment.PrepareWith(eo, tr)
	if err != nil {
		return nil, "", err
	}
	return in, from, nil
}

// levels parses --topology (nil when not given).
func (o *themisSimOpts) levels() (*fairness.Levels, error) {
	if o.topology == "" {
		return nil, nil
	}
	l, err := fairness.ParseLevels(o.topology)
	if err != nil {
		return nil, fmt.Errorf("--topology: %v", err)
	}
	return &l, nil
}

func runThemisSim(w io.Writer, o themisSimOpts) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.round < 0 {
		return fmt.Errorf("--round %v: must be >= 0", o.round)
	}
	cfg, err := o.themisConfig()
	if err != nil {
		return err
	}
	models, err := themisrun.ModelsWithSlowdowns(o.slowdowns)
	if err != nil {
		return fmt.Errorf("--slowdowns: %v", err)
	}
	levels, err := o.levels()
	if err != nil {
		return err
	}
	in, from, err := o.themisInputs()
	if err != nil {
		return err
	}
	var results []*themisrun.Result
	for _, p := range splitList(o.policies) {
		r, err := themisrun.Run(themisrun.Spec{Inputs: in, Models: models, Policy: p, Round: o.round, Themis: cfg, Flat: o.flat, Levels: levels})
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		results = append(results, r)
	}
	if o.appsOut != "" {
		if err := writeApps(o.appsOut, "policy", themisFairRuns(results)); err != nil {
			return err
		}
	}
	inputs := map[string]any{
		"trace": from, "jobs": len(in.Trace.Jobs), "cluster": in.Cluster.String(), "profile": o.profile, "sim_seed": o.seed,
		"gpu_values": in.RawFrom, "lease_s": o.lease, "fairness_knob": o.f, "knob_rounding": o.rounding, "pa_payments": o.payments, "valuation": o.valuation, "slowdowns": o.slowdowns, "flat": o.flat,
		"leftover": o.leftover, "metric": o.metric, "placement_blind": o.placementBlind, "variability_blind": o.varBlind,
		"remaining_noise": o.noise, "placement_model": "spread jobs run at their model's spread_factor (model table)",
	}
	if levels != nil {
		inputs["topology"] = levels.String()
		inputs["placement_model"] = "jobs run at their model's slot, spread or rack factor for the widest level their GPUs cross"
	}
	switch o.output {
	case "json":
		return writeJSON(w, map[string]any{"inputs": inputs, "runs": results})
	case "csv":
		for _, k := range slices.Sorted(maps.Keys(inputs)) {
			fmt.Fprintf(w, "# %s: %v\n", k, inputs[k])
		}
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"policy", "round_s", "apps", "max_rho", "p95_rho", "apps_rho_gt_2", "mean_rho", "jain", "gpu_time_s", "placement_score", "avg_jct_s", "makespan_s", "auctions", "lease_changes", "violations"})
		g := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
		for _, r := range results {
			_ = cw.Write([]string{r.Policy, g(r.Round), strconv.Itoa(r.Fairness.Apps), g(r.Fairness.MaxRho), g(r.Fairness.P95Rho), strconv.Itoa(r.Fairness.Over2), g(r.Fairness.MeanRho), g(r.Fairness.Jain),
				g(r.GPUTime), g(r.Placement), g(r.Jobs.AvgJCT), g(r.Jobs.Makespan), strconv.Itoa(r.Auctions), strconv.Itoa(r.LeaseChanges), strconv.Itoa(len(r.Violations))})
		}
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintf(w, "trace: %s (%d jobs)  cluster: %s  lease: %g s  f: %g  payments: %s  valuation: %s  leftover: %s  sim seed: %d\n",
		from, len(in.Trace.Jobs), in.Cluster, o.lease, o.f, o.payments, o.valuation, o.leftover, o.seed)
	if levels != nil {
		fmt.Fprintf(w, "topology: %s (racks x machines x slots x GPUs)  slowdowns: %s\n", levels, o.slowdowns)
	}
	// Times in seconds, as pal sim prints them; the ρ table below is
	// pal sim's own.
	t := newTable(w)
	t.AppendHeader(table.Row{"policy", "round (s)", "jobs", "avg JCT (s)", "makespan (s)", "placement", "auctions", "lease changes"})
	for _, r := range results {
		t.AppendRow(table.Row{r.Policy, r.Round, r.Jobs.Jobs, f2(r.Jobs.AvgJCT), f0(r.Jobs.Makespan), f3(r.Placement), r.Auctions, r.LeaseChanges})
	}
	t.Render()
	printFairness(w, "policy", themisFairRuns(results))
	for _, r := range results {
		for _, v := range r.Violations {
			fmt.Fprintf(w, "INVARIANT VIOLATED (%s): %s\n", r.Policy, v)
		}
	}
	return nil
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// themisFairRuns are pal themis sim's results as the rows the shared
// fairness outputs take.
func themisFairRuns(results []*themisrun.Result) []fairRun {
	out := make([]fairRun, len(results))
	for i, r := range results {
		out[i] = fairRun{r.Policy, &fairness.RunFairness{FairSummary: r.Fairness, JobMaxRho: r.JobMaxRho, GPUTime: r.GPUTime, PerApp: r.Apps}}
	}
	return out
}
