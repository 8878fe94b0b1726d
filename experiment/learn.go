package experiment

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// truthInputs are what the GPUs really do when it differs from what the
// scheduler believes (--actual-gpu-scores, --gpu-events), and whether
// beliefs are learnt online (--learn-scores).
type truthInputs struct {
	actual    *variability.Table // nil: the believed table (in.Raw)
	actualSrc string
	events    []variability.GPUEvent
	hints     []variability.GPUHint
}

// loadTruth reads --actual-gpu-scores and --gpu-events.
func (in *Inputs) loadTruth() error {
	o := in.Opts
	switch o.LearnFrom {
	case "", "job":
	case "gpu":
		if !o.LearnScores {
			return fmt.Errorf("--learn-from gpu: needs --learn-scores")
		}
	default:
		return fmt.Errorf("--learn-from %s: want job or gpu", quote.Value(o.LearnFrom))
	}
	if o.ActualGPUScores != "" {
		t, err := in.readGPUTable("--actual-gpu-scores", o.ActualGPUScores)
		if err != nil {
			return err
		}
		in.truth.actual, in.truth.actualSrc = t, o.ActualGPUScores
	}
	var err error
	if in.truth.events, err = readTimedFile(in, o.GPUEvents, variability.ReadGPUEvents, func(e *variability.GPUEvent) (int, int) { return e.GPU, e.Line }); err != nil {
		return err
	}
	if o.GPUEventsKnown {
		if o.GPUEvents == "" {
			return fmt.Errorf("--gpu-events-known: needs --gpu-events (it tells the scheduler of each one)")
		}
		if o.LearnScores {
			return fmt.Errorf("--gpu-events-known: the scheduler is told the truth, so --learn-scores has nothing to learn; use one or the other")
		}
	}
	if o.QuarantineAbove != 0 {
		if _, err := variability.NewQuarantine(1, o.QuarantineAbove, variability.DefaultQuarantineBelow(o.QuarantineAbove)); err != nil {
			return fmt.Errorf("--quarantine-above: %w", err)
		}
		if !o.LearnScores && !o.GPUEventsKnown {
			return fmt.Errorf("--quarantine-above %g: needs --learn-scores or --gpu-events-known (a slowdown the scheduler knows of)", o.QuarantineAbove)
		}
		if o.Tenancy == "quota" {
			return fmt.Errorf("--quarantine-above: not with --tenancy quota (it has no bad cells; use hived, hived-pm or hived-speed)")
		}
	}
	if o.GPUHints != "" && !o.LearnScores {
		return fmt.Errorf("--gpu-hints %s: needs --learn-scores (hints are the learner's priors)", o.GPUHints)
	}
	in.truth.hints, err = readTimedFile(in, o.GPUHints, variability.ReadGPUHints, func(h *variability.GPUHint) (int, int) { return h.GPU, h.Line })
	return err
}

// readTimedFile reads path ("": none) with read and checks every row's
// GPU against the cluster.
func readTimedFile[T any](in *Inputs, path string, read func(string, io.Reader) ([]T, error), gpu func(*T) (int, int)) ([]T, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := read(path, f)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if g, line := gpu(&rows[i]); g >= in.Cluster.Size() {
			return nil, fmt.Errorf("%s:%d: field \"gpu\": GPU %d, but --cluster %s has GPUs 0..%d", path, line, g, in.Opts.Cluster, in.Cluster.Size()-1)
		}
	}
	return rows, nil
}

// readGPUTable reads a per-GPU table that must fit --cluster.
func (in *Inputs) readGPUTable(flag, p string) (*variability.Table, error) {
	gs, err := variability.ReadGPUScoresFile(p)
	if err != nil {
		return nil, err
	}
	if gs.Table.NumGPUs() != in.Cluster.Size() {
		return nil, fmt.Errorf("%s %s has %d GPUs but --cluster %s has %d", flag, p, gs.Table.NumGPUs(), in.Opts.Cluster, in.Cluster.Size())
	}
	for g, node := range gs.Node {
		if want := in.Cluster.NodeOf(g); node != want {
			return nil, fmt.Errorf("%s:%d: field \"Node_ID\": GPU %d is on node %d, but --cluster %s puts it on node %d", p, gs.Line[g], g, node, in.Opts.Cluster, want)
		}
	}
	return gs.Table, nil
}

// truthDescription says where true speeds come from, "" when they are the
// believed table (the default, every calibration's setting).
func (in *Inputs) truthDescription() []Input {
	var out []Input
	if in.truth.actual != nil || in.truth.events != nil {
		s := "the believed values (gpu_values)"
		if in.truth.actual != nil {
			s = in.truth.actualSrc
		}
		if n := len(in.truth.events); n > 0 {
			s += fmt.Sprintf(", changed by %d GPU event(s) from %s", n, in.Opts.GPUEvents)
			if in.Opts.GPUEventsKnown {
				s += ", each told to the scheduler as it happens (its scores are the true table binned again: an oracle)"
			}
		}
		out = append(out, Input{"true_gpu_values", s})
	}
	if n := len(in.truth.hints); n > 0 {
		out = append(out, Input{"gpu_hints", fmt.Sprintf("%d telemetry hint(s) from %s, priors the learner takes until jobs show otherwise", n, in.Opts.GPUHints)})
	}
	if a := in.Opts.QuarantineAbove; a > 0 {
		where := "without tenancy: its class's slowest score in every class"
		switch {
		case in.Opts.hived():
			where = "under " + in.Opts.Tenancy + ": a bad cell of one device, out of every VC's guarantee (opportunistic jobs may use it)"
		case in.Opts.Tenancy == "private":
			where = "off in the private reference (what a quarantine is measured against)"
		}
		out = append(out, Input{"quarantine", fmt.Sprintf("a GPU whose slowdown over the profile reaches %g is quarantined until below %g; %s", a, variability.DefaultQuarantineBelow(a), where)})
	}
	if in.Opts.LearnScores {
		if in.Opts.LearnFrom == "gpu" {
			out = append(out, Input{"score_learning", fmt.Sprintf("on: beliefs learnt from each GPU's own pace (every worker times its own step; a GPU is known once a job has run on it), 1%% band, step 0.5, re-bin on a 2%% move, at most every %d round(s)", variability.RebinEvery(in.Cluster.Size()))})
			return out
		}
		out = append(out, Input{"score_learning", fmt.Sprintf("on: beliefs learnt from each job's pace (slowest GPU x locality), upper-bound attribution (a whole step of blame to a GPU pinned slow, then to the GPU most slow jobs name, and to each other suspect the chance that it is the slow one at the share of slow GPUs estimated from jobs of at most 8 GPUs; slow jobs remembered 100 rounds), a pin carried to the other classes once two classes agree, 1%% band, step 0.5, guesses no slow job needs withdrawn at once, others 5%%/round when unused, re-bin on a 2%% move, at most every %d round(s)", variability.RebinEvery(in.Cluster.Size()))})
	}
	return out
}

// runTruth gives one run its true table and hook. Each run gets its own
// copy when events change it, so runs of one Inputs stay independent.
func (in *Inputs) runTruth() (*variability.Table, sim.ScoreHook, error) {
	truth := in.Raw
	if in.truth.actual != nil {
		truth = in.truth.actual
	}
	if len(in.truth.events) == 0 && !in.Opts.LearnScores {
		return truth, nil, nil
	}
	h := &scoreHook{events: in.truth.events}
	if len(in.truth.events) > 0 {
		c := &variability.Table{}
		for k := range c.Values {
			c.Values[k] = slices.Clone(truth.Values[k])
		}
		truth = c
	}
	h.truth = truth
	if in.Opts.GPUEventsKnown {
		strat, err := variability.ParseKStrategy(in.Opts.KStrategy)
		if err != nil {
			return nil, nil, err
		}
		cl := in.ClassL
		h.known = func(t *variability.Table) (*policy.Scores, error) {
			c := &variability.Table{}
			for k := range c.Values {
				c.Values[k] = slices.Clone(t.Values[k])
			}
			vs, err := variability.NewScores(c, variability.BinOptions{Strategy: strat, Seed: in.Opts.Seed}, func(c variability.Class) float64 { return cl[c] })
			if err != nil {
				return nil, err
			}
			return policy.ScoresFrom(vs), nil
		}
	}
	if in.Opts.LearnScores {
		strat, err := variability.ParseKStrategy(in.Opts.KStrategy)
		if err != nil {
			return nil, nil, err
		}
		vs := &variability.Scores{Raw: in.Raw, Bins: in.Bins, L: in.ClassL}
		for c := range vs.SF {
			vs.SF[c] = in.Bins[c].SF
			vs.LV[c] = variability.LxV(in.Bins[c].SF, in.ClassL[c])
		}
		lo := variability.LearnOptions{Bin: variability.BinOptions{Strategy: strat, Seed: in.Opts.Seed}, Every: variability.RebinEvery(in.Cluster.Size())}
		l, err := variability.NewLearner(in.Raw, vs, lo)
		if err != nil {
			return nil, nil, err
		}
		h.learner, h.perGPU, h.hints = l, in.Opts.LearnFrom == "gpu", in.truth.hints
	}
	return truth, h, nil
}

// scoreHook feeds the learner each round's paces, then applies the GPU
// events due.
type scoreHook struct {
	truth   *variability.Table
	events  []variability.GPUEvent
	next    int
	learner *variability.Learner
	// perGPU: each GPU's own pace is observed (--learn-from gpu), not
	// only the job's.
	perGPU bool
	one    [1]int
	// hints are telemetry's, handed to the learner when due (nextHint).
	hints    []variability.GPUHint
	nextHint int
	// known, when set, scores the true table after every event: the
	// scheduler is told each change (--gpu-events-known).
	known func(*variability.Table) (*policy.Scores, error)
	// quar, when set, is --quarantine-above's rule (see quarantine.go).
	quar *quarantine
}

func (h *scoreHook) Round(T float64, running []*workload.Job) (*policy.Scores, bool) {
	var sc *policy.Scores
	if h.learner != nil {
		// Telemetry first: what the exporter says at T is known before
		// the round's paces.
		for h.nextHint < len(h.hints) && h.hints[h.nextHint].T <= T {
			x := h.hints[h.nextHint]
			h.learner.Hint(x.GPU, x.Slowdown)
			h.nextHint++
		}
		for _, j := range running {
			if j.Debt > 0 {
				continue // restoring after a move: no iteration to time
			}
			if h.perGPU {
				// Each worker's own step time: one GPU, one observation,
				// which pins it.
				for _, g := range j.GPUsHeld {
					h.one[0] = g
					h.learner.Observe(j.Class, h.one[:], h.truth.Values[j.Class][g])
				}
				continue
			}
			// The job's measured pace with its (known) locality penalty
			// divided out.
			pace := j.PM * j.Loc
			h.learner.ObserveJob(j.ID, j.Class, j.GPUsHeld, pace/j.Loc)
		}
		// Rebin fails only on a non-positive or infinite belief, which
		// cannot arise (every step is a convex combination of positive
		// paces and beliefs): on such an error the old scores stay.
		vs, err := h.learner.Rebin()
		if err == nil && vs != nil {
			sc = policy.ScoresFrom(vs)
		}
	}
	changed := false
	for h.next < len(h.events) && h.events[h.next].T <= T {
		e := h.events[h.next]
		for c := range h.truth.Values {
			if e.All || variability.Class(c) == e.Class {
				h.truth.Values[c][e.GPU] = e.Score
			}
		}
		if h.quar != nil && h.known != nil {
			h.quar.moved = append(h.quar.moved, e.GPU)
		}
		h.next++
		changed = true
	}
	if changed && h.known != nil {
		// Binning fails only on a non-positive value, which the events
		// reader refuses: on such an error the old scores stay.
		if ks, err := h.known(h.truth); err == nil {
			sc = ks
		}
	}
	if h.quar != nil {
		sc = h.quar.round(T, h, sc)
	}
	return sc, changed
}
