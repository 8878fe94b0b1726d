package experiment

import (
	"fmt"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// localityModel maps --locality-model onto the variability package's
// models: the artifact's constant, blox-pal main's per-class L for both
// traversal and slowdown, or main's per-(model, GPUs) runtime table.
func localityModel(name string, L float64) (variability.LocalityModel, error) {
	switch name {
	case "", "constant":
		return variability.ConstantLocality(L), nil
	case "per-class":
		m := variability.BPMainLocality(L)
		m.PerJob = nil // the slowdown follows the class too
		return m, nil
	case "per-model":
		return variability.BPMainLocality(L), nil
	}
	return variability.LocalityModel{}, fmt.Errorf("--locality-model %s: want constant, per-class or per-model", quote.Value(name))
}

// locality sets the runtime penalty and each class's L×V penalty.
func (in *Inputs) locality() error {
	m, err := localityModel(in.Opts.LocalityModel, in.Opts.LocalityPenalty)
	if err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	in.LocalityModel = m
	for c := range in.ClassL {
		in.ClassL[c] = m.ForClass(variability.Class(c))
	}
	if m.PerJob != nil {
		in.Locality = func(j *workload.Spec) float64 { return m.ForJob(j.Model, j.GPUs) }
	} else {
		cl := in.ClassL
		in.Locality = func(j *workload.Spec) float64 { return cl[j.Class] }
	}
	return nil
}

// LocalityDescription says which locality model is in force, for run output.
func (in *Inputs) LocalityDescription() string { return in.LocalityModel.Describe() }

// bin groups each class's raw values into PM-score bins and builds the
// L×V order placement reads.
func (in *Inputs) bin() error {
	strat, err := variability.ParseKStrategy(in.Opts.KStrategy)
	if err != nil {
		return fmt.Errorf("--k-strategy: %v", err)
	}
	vs, err := variability.NewScores(in.Raw, variability.BinOptions{Strategy: strat, Seed: in.Opts.Seed},
		func(c variability.Class) float64 { return in.ClassL[c] })
	if err != nil {
		return fmt.Errorf("binning GPU scores: %v", err)
	}
	in.Bins = vs.Bins
	in.Scores = policy.ScoresFrom(vs)
	return nil
}
