package fairexp

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/workload"
)

// Plan is what `pal reproduce themis` runs: one app workload on one
// cluster, Themis against the baselines, and Themis' sweeps.
type Plan struct {
	Cluster string
	Gen     workload.ThemisOptions
	Seed    uint64 // PM-score draws
	Quick   bool
}

// DefaultPlan is Themis-sized: 64 GPUs (the paper's strategy-proofness
// simulation size), 40 Philly-derived apps arriving at 1 an hour, each job
// capped at 24 h so that one Philly outlier does not set every app's ρ.
func DefaultPlan() Plan {
	return Plan{Cluster: "8x8", Seed: 42, Gen: workload.ThemisOptions{Apps: 40, Rate: 1, Seed: 42, MaxJobs: 100, SingleShare: 0.1, MaxSeconds: 24 * 3600}}
}

// QuickPlan is a small version for tests and --quick.
func QuickPlan() Plan {
	p := DefaultPlan()
	p.Quick = true
	p.Cluster = "4x4"
	p.Gen.Apps, p.Gen.MaxJobs, p.Gen.Rate, p.Gen.MaxSeconds = 12, 12, 2, 6*3600
	return p
}

// job is one simulation of the plan.
type job struct {
	exp, label string
	x          float64
	policy     string
	rateMul    float64
	cfg        themis.Config
	round      float64
	res        *Result
	err        error
}

// Outcome is everything a reproduction produced.
type Outcome struct {
	Tables  map[string]*report.Table
	Figures []string
	Summary string
}

// Reproduce runs the plan into dir: CSVs, PNG/SVG plots, themis.md and
// index.html.
func Reproduce(p Plan, dir string) (*Outcome, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := themis.Config{Auction: fairness.DefaultOptions()}
	with := func(f func(*themis.Config)) themis.Config {
		c := base
		c.Auction = base.Auction
		f(&c)
		return c
	}
	var jobs []*job
	add := func(j *job) { jobs = append(jobs, j) }
	for _, pol := range Policies() {
		add(&job{exp: "macro", label: pol, policy: pol, rateMul: 1, cfg: base})
	}
	for i := 0; i <= 10; i++ {
		f := float64(i) / 10
		k, _ := fairness.NewKnob(f)
		add(&job{exp: "knob", label: fmt.Sprintf("f=%.1f", f), x: f, policy: "themis", rateMul: 1, cfg: with(func(c *themis.Config) { c.Auction.Knob = k })})
	}
	ckpt := 20.0 // seconds lost per checkpoint/restore (a 1-min lease must still make progress)
	for _, m := range []float64{1, 2, 5, 10, 20, 40} {
		add(&job{exp: "lease", label: fmt.Sprintf("%g min", m), x: m, policy: "themis", rateMul: 1, cfg: with(func(c *themis.Config) { c.Lease = m * 60 })})
	}
	for _, mul := range []float64{1, 2, 4} {
		for _, pol := range []string{"themis", "tiresias", "srtf"} {
			add(&job{exp: "contention", label: fmt.Sprintf("%s ×%g", pol, mul), x: mul, policy: pol, rateMul: mul, cfg: base})
		}
	}
	for _, ab := range []struct {
		name string
		f    func(*themis.Config)
	}{
		{"full", func(*themis.Config) {}},
		{"placement-blind bids", func(c *themis.Config) { c.Auction.PlacementBlind = true }},
		{"no leftovers", func(c *themis.Config) { c.Auction.Leftover = fairness.NoLeftover }},
		{"leftovers to bidders only", func(c *themis.Config) { c.Auction.Leftover = fairness.BiddersOnly }},
		{"no payments", func(c *themis.Config) { c.Auction.Payment = fairness.PayOff }},
		{"variability-blind bids", func(c *themis.Config) { c.Auction.VariabilityBlind = true }},
	} {
		add(&job{exp: "ablation", label: ab.name, policy: "themis", rateMul: 1, cfg: with(ab.f)})
	}
	// Truthfulness: the liar is the first placement-sensitive multi-job
	// app; it inflates its slowdown by x.
	in1, err := p.inputs(1)
	if err != nil {
		return nil, err
	}
	liar := pickLiar(in1.Trace)
	if liar != "" {
		for _, pay := range []bool{true, false} {
			for _, x := range []float64{0, 0.2, 0.34, 0.5, 0.75, 1} {
				add(&job{exp: "truth", label: fmt.Sprintf("payments=%v x=%g", pay, x), x: x, policy: "themis", rateMul: 1,
					cfg: with(func(c *themis.Config) {
						c.Auction.Payment = map[bool]fairness.Payment{true: fairness.PayRandom, false: fairness.PayOff}[pay]
						c.Misreport = map[string]float64{liar: x}
					})})
			}
		}
	}
	inputs := map[float64]*experiment.Inputs{1: in1}
	for _, j := range jobs {
		if inputs[j.rateMul] == nil {
			if inputs[j.rateMul], err = p.inputs(j.rateMul); err != nil {
				return nil, err
			}
		}
	}
	runAll(jobs, func(j *job) {
		j.res, j.err = Run(Spec{Inputs: inputs[j.rateMul], Policy: j.policy, Themis: j.cfg, Round: j.round, MoveCost: leaseCost(j, ckpt)})
	})
	for _, j := range jobs {
		if j.err != nil {
			return nil, fmt.Errorf("%s %s: %w", j.exp, j.label, j.err)
		}
		if len(j.res.Violations) > 0 {
			return nil, fmt.Errorf("%s %s: invariant violated: %s", j.exp, j.label, j.res.Violations[0])
		}
	}
	o, err := p.write(dir, jobs, liar, ckpt, in1)
	if err != nil {
		return nil, err
	}
	var tables []*report.Table
	for _, k := range []string{"macro", "knob", "lease", "contention", "ablation", "truth"} {
		tables = append(tables, o.Tables[k])
	}
	if err := report.WriteIndex(dir, "Themis: finish-time fairness", []report.Section{
		{Title: "Summary", Markdown: o.Summary},
		{Title: "Figures", Figures: o.Figures},
		{Title: "Tables", Tables: tables},
	}); err != nil {
		return nil, err
	}
	return o, nil
}

// leaseCost charges the lease sweep a checkpoint per lease change.
func leaseCost(j *job, ckpt float64) workload.MoveCost {
	if j.exp == "lease" {
		return workload.MoveCost{Migration: ckpt, Preemption: ckpt}
	}
	return workload.MoveCost{}
}

func runAll(jobs []*job, f func(*job)) {
	var wg sync.WaitGroup
	next := make(chan *job)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for j := range next {
				f(j)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

// inputs prepares the plan's workload with arrivals sped up by rateMul.
func (p Plan) inputs(rateMul float64) (*experiment.Inputs, error) {
	g := p.Gen
	g.Rate *= rateMul
	jobs, err := workload.GenerateThemisEmbedded(g)
	if err != nil {
		return nil, err
	}
	eo, _ := experiment.Preset("paper")
	eo.Cluster, eo.Trace, eo.Seed = p.Cluster, fmt.Sprintf("themis-apps×%g", rateMul), p.Seed
	eo.Explicit.Preset = true
	return experiment.PrepareWith(eo, &workload.Trace{Name: eo.Trace, Jobs: jobs, HasApp: true})
}

// pickLiar is the app whose lie could matter most: a placement-sensitive
// app of multi-GPU gangs (a 1-GPU job never spreads, so its spread factor
// is moot) with the most jobs, ties to the earlier app.
func pickLiar(tr *workload.Trace) string {
	models := workload.DefaultModels()
	count := map[string]int{}
	var order []string
	ok := map[string]bool{}
	for i := range tr.Jobs {
		j := &tr.Jobs[i]
		if count[j.App] == 0 {
			order = append(order, j.App)
		}
		count[j.App]++
		s, _ := models.Sensitivity(j.Model)
		ok[j.App] = s < 1 && j.GPUs > 1
	}
	best := ""
	for _, a := range order {
		if ok[a] && count[a] > 1 && (best == "" || count[a] > count[best]) {
			best = a
		}
	}
	return best
}

func (p Plan) write(dir string, jobs []*job, liar string, ckpt float64, in *experiment.Inputs) (*Outcome, error) {
	out := &Outcome{Tables: map[string]*report.Table{}}
	by := func(exp string) []*job {
		var l []*job
		for _, j := range jobs {
			if j.exp == exp {
				l = append(l, j)
			}
		}
		return l
	}
	row := func(t *report.Table, label string, r *Result) {
		t.AddRow(label, r.Fairness.MaxRho, r.Fairness.MeanRho, r.Fairness.Jain, r.GPUTime/3600, r.Placement, r.Jobs.AvgJCT/3600, r.Jobs.Makespan/3600, r.LeaseChanges)
	}
	cols := []string{"run", "max_rho", "mean_rho", "jain", "gpu_time_h", "placement_score", "avg_jct_h", "makespan_h", "lease_changes"}
	for _, exp := range []string{"macro", "knob", "lease", "contention", "ablation"} {
		t := report.NewTable(exp, cols...)
		for _, j := range by(exp) {
			row(t, j.label, j.res)
		}
		out.Tables[exp] = t
	}
	truth := report.NewTable("truth", "payments", "inflation", "liar_rho", "liar_gpu_h", "max_rho", "mean_rho")
	var liarRho = map[bool][]float64{}
	var liarX []float64
	for _, j := range by("truth") {
		pay := strings.Contains(j.label, "payments=true")
		var st fairness.AppStat
		for _, a := range j.res.Apps {
			if a.Name == liar {
				st = a
			}
		}
		truth.AddRow(pay, j.x, st.Rho, gpuHours(j.res, liar), j.res.Fairness.MaxRho, j.res.Fairness.MeanRho)
		liarRho[pay] = append(liarRho[pay], st.Rho)
		if pay {
			liarX = append(liarX, j.x*100)
		}
	}
	out.Tables["truth"] = truth
	for name, t := range out.Tables {
		f, err := os.Create(filepath.Join(dir, "themis-"+name+".csv"))
		if err != nil {
			return nil, err
		}
		if err := t.WriteCSV(f); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	// Plots.
	series := func(exp string, y func(*Result) float64) report.Series {
		s := report.Series{Name: exp}
		for _, j := range by(exp) {
			s.X, s.Y = append(s.X, j.x), append(s.Y, y(j.res))
		}
		return s
	}
	maxRho := func(r *Result) float64 { return r.Fairness.MaxRho }
	gpuH := func(r *Result) float64 { return r.GPUTime / 3600 }
	charts := []struct {
		base string
		c    report.LineChart
	}{
		{"themis-knob-maxrho", report.LineChart{Title: "Fairness knob: max ρ", XLabel: "f", YLabel: "max ρ", Mark: report.LinesPoints, Series: []report.Series{named(series("knob", maxRho), "max ρ")}}},
		{"themis-knob-gputime", report.LineChart{Title: "Fairness knob: GPU time", XLabel: "f", YLabel: "GPU time (h)", Mark: report.LinesPoints, Series: []report.Series{named(series("knob", gpuH), "GPU time")}}},
		{"themis-lease-maxrho", report.LineChart{Title: fmt.Sprintf("Lease length (checkpoint %g s per change)", ckpt), XLabel: "lease (min)", YLabel: "max ρ", Mark: report.LinesPoints, LogX: true, Series: []report.Series{named(series("lease", maxRho), "max ρ")}}},
		{"themis-lease-gputime", report.LineChart{Title: fmt.Sprintf("Lease length: GPU time (checkpoint %g s per change)", ckpt), XLabel: "lease (min)", YLabel: "GPU time (h)", Mark: report.LinesPoints, LogX: true, Series: []report.Series{named(series("lease", gpuH), "GPU time")}}},
	}
	cont := report.LineChart{Title: "Contention: max ρ", XLabel: "arrival rate ×", YLabel: "max ρ", Mark: report.LinesPoints, LogY: true}
	for _, pol := range []string{"themis", "tiresias", "srtf"} {
		s := report.Series{Name: pol}
		for _, j := range by("contention") {
			if j.policy == pol {
				s.X, s.Y = append(s.X, j.x), append(s.Y, j.res.Fairness.MaxRho)
			}
		}
		cont.Series = append(cont.Series, s)
	}
	charts = append(charts, struct {
		base string
		c    report.LineChart
	}{"themis-contention", cont})
	if liar != "" {
		tc := report.LineChart{Title: "Truthfulness: the liar's ρ (" + liar + ")", XLabel: "slowdown inflation (%)", YLabel: "liar's ρ", Mark: report.LinesPoints}
		for _, pay := range []bool{true, false} {
			tc.Series = append(tc.Series, report.Series{Name: fmt.Sprintf("payments %v", onOff(pay)), X: liarX, Y: liarRho[pay]})
		}
		charts = append(charts, struct {
			base string
			c    report.LineChart
		}{"themis-truth", tc})
	}
	for _, ch := range charts {
		pl, err := ch.c.Plot()
		if err != nil {
			return nil, err
		}
		if err := report.SavePlot(pl, dir, ch.base); err != nil {
			return nil, err
		}
		out.Figures = append(out.Figures, ch.base)
	}
	out.Summary = p.summary(by, liar, ckpt, in)
	if err := os.WriteFile(filepath.Join(dir, "themis.md"), []byte(out.Summary), 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

func named(s report.Series, n string) report.Series { s.Name = n; return s }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// gpuHours is the GPU time an app's jobs held, from the run's records.
func gpuHours(r *Result, app string) float64 {
	for _, a := range r.Apps {
		if a.Name == app {
			return a.Held / 3600
		}
	}
	return 0
}

func (p Plan) summary(by func(string) []*job, liar string, ckpt float64, in *experiment.Inputs) string {
	var b strings.Builder
	g := p.Gen
	fmt.Fprintf(&b, "# Themis: finish-time fairness, ours beside the paper's\n\n")
	fmt.Fprintf(&b, "Workload: `pal trace themis --apps %d --rate %g --seed %d --max-jobs %d --single-share %g --max-hours %g` (%d jobs), cluster %s, PM-scores drawn with seed %d from %s; Themis with 60 s rounds, baselines with 300 s; every policy charged each model's spread factor.\n\n",
		g.Apps, g.Rate, g.Seed, g.MaxJobs, g.SingleShare, g.MaxSeconds/3600, len(in.Trace.Jobs), p.Cluster, p.Seed, in.RawFrom)
	macro := by("macro")
	var th *Result
	bestOther, worstOther := math.Inf(1), 0.0
	gpuOther := map[string]float64{}
	for _, j := range macro {
		if j.policy == "themis" {
			th = j.res
			continue
		}
		bestOther = min(bestOther, j.res.Fairness.MaxRho)
		worstOther = max(worstOther, j.res.Fairness.MaxRho)
		gpuOther[j.policy] = j.res.GPUTime
	}
	b.WriteString("| claim | paper | ours |\n|---|---|---|\n")
	if th != nil {
		fmt.Fprintf(&b, "| fairness (max ρ) vs the baselines | ≥ 2.25× better | %.2f× better than the best baseline (%.2f vs %.2f), %.2f× than the worst |\n",
			bestOther/th.Fairness.MaxRho, th.Fairness.MaxRho, bestOther, worstOther/th.Fairness.MaxRho)
		var effs []string
		pols := mapsKeys(gpuOther)
		slices.Sort(pols)
		for _, pol := range pols {
			effs = append(effs, fmt.Sprintf("%s %+.1f%%", pol, 100*(gpuOther[pol]/th.GPUTime-1)))
		}
		fmt.Fprintf(&b, "| efficiency (GPU time) vs the baselines | 5–250%% better | baselines use more GPU time by: %s |\n", strings.Join(effs, ", "))
	}
	knob := by("knob")
	bestF, bestRho := 0.0, math.Inf(1)
	for _, j := range knob {
		if j.res.Fairness.MaxRho < bestRho-1e-9 {
			bestF, bestRho = j.x, j.res.Fairness.MaxRho
		}
	}
	fmt.Fprintf(&b, "| best fairness knob | f = 0.8 (f = 1 backfires) | lowest max ρ at f = %.1f (%.3f); f = 0: %.3f, f = 0.8: %.3f, f = 1: %.3f |\n",
		bestF, bestRho, knob[0].res.Fairness.MaxRho, knob[8].res.Fairness.MaxRho, knob[10].res.Fairness.MaxRho)
	lease := by("lease")
	fmt.Fprintf(&b, "| lease length | shorter is fairer, overhead grows; 10 min chosen | max ρ from %s at 1 min to %.3f at 40 min; lease changes %d → %d (checkpoint %g s each) |\n",
		fmt.Sprintf("%.3f", lease[0].res.Fairness.MaxRho), lease[len(lease)-1].res.Fairness.MaxRho, lease[0].res.LeaseChanges, lease[len(lease)-1].res.LeaseChanges, ckpt)
	if liar != "" {
		var on, off []string
		for _, j := range by("truth") {
			var rho float64
			for _, a := range j.res.Apps {
				if a.Name == liar {
					rho = a.Rho
				}
			}
			s := fmt.Sprintf("%g%%: %.3f", 100*j.x, rho)
			if strings.Contains(j.label, "payments=true") {
				on = append(on, s)
			} else {
				off = append(off, s)
			}
		}
		fmt.Fprintf(&b, "| truthfulness (liar %s's ρ by slowdown inflation) | no gain; sharp loss past ~34%% | payments on: %s; off: %s |\n", liar, strings.Join(on, ", "), strings.Join(off, ", "))
	}
	b.WriteString("\nAblations (max ρ, GPU time):\n\n")
	for _, j := range by("ablation") {
		fmt.Fprintf(&b, "- %s: %.3f, %.1f GPU-h, placement %.3f\n", j.label, j.res.Fairness.MaxRho, j.res.GPUTime/3600, j.res.Placement)
	}
	b.WriteString("\nContention (max ρ at arrival rate ×1, ×2, ×4):\n\n")
	for _, pol := range []string{"themis", "tiresias", "srtf"} {
		var v []string
		for _, j := range by("contention") {
			if j.policy == pol {
				v = append(v, fmt.Sprintf("%.3f", j.res.Fairness.MaxRho))
			}
		}
		fmt.Fprintf(&b, "- %s: %s\n", pol, strings.Join(v, ", "))
	}
	b.WriteString(`
Why the gaps: the paper's numbers come from its 85-app production trace on a
YARN testbed and a 64-GPU simulation with its authors' estimator; ours come
from a Philly-derived synthetic workload (job lengths and sizes from Philly,
apps of 1–100 jobs), our [D] definitions of ρ (T_id floored at the app's
longest job) and our bundle-size auction, all in THEMIS-HIVED.md. Gavel
here is its finish-time-fairness program per job (not per app), solved
exactly by bisection (one GPU type), run in deficit order on 300 s rounds.
`)
	return b.String()
}

func mapsKeys(m map[string]float64) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	return k
}
