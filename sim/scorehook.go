package sim

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// ScoreHook lets what the scheduler believes about GPU speed, and what
// the GPUs really do, move during a run: online learning of PM-scores
// from the jobs' own pace, and drift (a throttled or replaced GPU).
//
// Round is called at every round boundary T, after the round (T-R, T]
// has been credited and before arrivals are scheduled, with the jobs that
// ran in that round and still hold their GPUs (each job's pace over the
// round is j.PM x j.Loc, its slowest GPU's true value times its locality
// penalty). The hook may change Config.Raw's values in place, the true
// speeds, and then says so with truthChanged: every running job's pace is
// recomputed from them. It returns the scores placement uses from now on,
// or nil to keep the current ones; a returned Scores must not be changed
// afterwards (placers index it on first use).
//
// A run with a hook takes the reference loop (Config.Plain), which steps
// every round, so that no round's observation or event is skipped.
type ScoreHook interface {
	Round(T float64, running []*workload.Job) (scores *policy.Scores, truthChanged bool)
}

// scoreRound runs Config.Hook at T.
func (s *state) scoreRound(T float64) {
	if s.cfg.Hook == nil {
		return
	}
	s.hookBuf = s.hookBuf[:0]
	for _, j := range s.active {
		if j.Running() {
			s.hookBuf = append(s.hookBuf, j)
		}
	}
	sc, truth := s.cfg.Hook.Round(T, s.hookBuf)
	if sc != nil {
		s.env.Scores = sc
	}
	if truth {
		for _, j := range s.hookBuf {
			j.PM = s.pm(j, j.GPUsHeld)
		}
	}
}
