package forecast

import (
	"github.com/palsched/pal/draws"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/workload"
)

// Spread is, for one waiting gang, its estimated start over draws of
// the remaining work: the 10th, 50th and 90th percentiles (nearest
// rank) in the jobs' seconds from the forecast's round, -1 where that
// many draws see no start.
type Spread = draws.Spread

// Noisy runs the forecast k times, each with every stated remaining
// work (running and waiting gangs) scaled by its own draw of a lognormal
// factor of mean 1 and coefficient of variation cv, seeded by seed and
// the draw's number (draws.Perturb, as pal sim --forecast-draws), and
// says how the waiting gangs' starts spread (in st.Pending's order).
// Each draw starts from fresh copies of st's policies.
func Noisy(st *kube.ForecastState, k int, cv float64, seed uint64) ([]Spread, error) {
	return draws.Over(st.Jobs, k, cv, seed, func(_ int, jobs []*workload.Job) ([]float64, error) {
		alt, err := st.WithPolicies(st.Config)
		if err != nil {
			return nil, err
		}
		alt.Jobs = jobs
		rows, err := Run(alt)
		if err != nil {
			return nil, err
		}
		starts := make([]float64, len(rows))
		for i, row := range rows {
			starts[i] = row.Start
		}
		return starts, nil
	})
}
