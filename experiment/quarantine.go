package experiment

import (
	"slices"
	"sort"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/variability"
)

// quarantine is --quarantine-above in a run: after each round's learning
// (or each told event), the GPUs whose belief moved are measured against
// the profile, and those the rule puts in or out are handed to the
// tenancy stage (a bad cell of one device under hived) or, without one,
// given the slowest score of every class, so that classes that care
// about speed take them last and classes that do not are unaffected.
type quarantine struct {
	rule    *variability.Quarantine
	profile *variability.Table // what a slowdown is measured against: the believed table
	stage   interface{ SetQuarantine(g int, on bool) error }
	cur     *policy.Scores // without tenancy: the latest scores, unmarked
	moved   []int
	changes []quarantineChange
}

// quarantineChange is one GPU going in (On) or out of quarantine at T.
type quarantineChange struct {
	T  float64
	G  int
	On bool
}

// addQuarantine sets up --quarantine-above on a run's config (after its
// hook and tenancy). A private reference runs without it: it is what a
// quarantine is measured against.
func (in *Inputs) addQuarantine(cfg *sim.Config) error {
	h, ok := cfg.Hook.(*scoreHook)
	if in.Opts.QuarantineAbove == 0 || !ok || in.Opts.Tenancy == "private" {
		return nil
	}
	rule, err := variability.NewQuarantine(in.Cluster.Size(), in.Opts.QuarantineAbove, variability.DefaultQuarantineBelow(in.Opts.QuarantineAbove))
	if err != nil {
		return err
	}
	q := &quarantine{rule: rule, profile: in.Raw, cur: cfg.Scores}
	if st, ok := cfg.Tenancy.(interface{ SetQuarantine(g int, on bool) error }); ok {
		q.stage = st
	}
	h.quar = q
	return nil
}

// round applies the rule at T to the GPUs whose belief moved, and returns
// the scores placement uses from now on (sc, or the marked ones).
func (q *quarantine) round(T float64, h *scoreHook, sc *policy.Scores) *policy.Scores {
	belief := func(c variability.Class, g int) float64 { return h.truth.Values[c][g] }
	if h.learner != nil {
		q.moved = h.learner.TakeMoved(q.moved)
		belief = h.learner.Belief
	}
	changed := false
	for _, g := range q.moved {
		ch, on := q.rule.Update(g, variability.Slowdown(belief, q.profile, g))
		if !ch {
			continue
		}
		changed = true
		q.changes = append(q.changes, quarantineChange{T, g, on})
		if q.stage != nil {
			// g is a GPU of the cluster the stage was built on: no error.
			_ = q.stage.SetQuarantine(g, on)
		}
	}
	q.moved = q.moved[:0]
	if q.stage != nil {
		return sc
	}
	if sc != nil {
		q.cur = sc
	}
	if !changed && (sc == nil || q.rule.Count() == 0) {
		return sc
	}
	if q.rule.Count() == 0 {
		return q.cur
	}
	return q.mark(q.cur)
}

// mark is sc with every quarantined GPU given its class's slowest score.
func (q *quarantine) mark(sc *policy.Scores) *policy.Scores {
	return sc.WithSlowest(q.rule.On)
}

// QuarantineFigures say what --quarantine-above did in a run: how many
// times a GPU went in or out, which GPUs ever were in (cluster ids,
// ascending), and how many were in at the end.
type QuarantineFigures struct {
	Changes int   `json:"changes"`
	GPUs    []int `json:"gpus"`
	AtEnd   int   `json:"at_end"`
}

func quarantineFigures(hook sim.ScoreHook) *QuarantineFigures {
	h, ok := hook.(*scoreHook)
	if !ok || h.quar == nil {
		return nil
	}
	f := &QuarantineFigures{Changes: len(h.quar.changes), GPUs: []int{}, AtEnd: h.quar.rule.Count()}
	for _, c := range h.quar.changes {
		if !slices.Contains(f.GPUs, c.G) {
			f.GPUs = append(f.GPUs, c.G)
		}
	}
	sort.Ints(f.GPUs)
	return f
}
