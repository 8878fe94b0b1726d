package forecast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/workload"
)

// Spread is, for one waiting gang, its estimated start over draws of
// the remaining work: the 10th, 50th and 90th percentiles (nearest
// rank) in the jobs' seconds from the forecast's round, -1 where that
// many draws see no start.
type Spread struct {
	P10, P50, P90 float64
}

// Noisy runs the forecast k times, each with every stated remaining
// work (running and waiting gangs) scaled by its own draw of a lognormal
// factor of mean 1 and coefficient of variation cv, seeded by seed and
// the draw's number, and says how the waiting gangs' starts spread
// (in st.Pending's order). Each draw starts from fresh copies of st's
// policies.
func Noisy(st *kube.ForecastState, k int, cv float64, seed uint64) ([]Spread, error) {
	if k <= 0 || k > 10000 {
		return nil, fmt.Errorf("--forecast-draws %d: want 1 to 10000 draws", k)
	}
	if !(cv >= 0) || math.IsInf(cv, 1) {
		return nil, fmt.Errorf("--duration-noise %v: want a coefficient of variation >= 0", cv)
	}
	sigma := math.Sqrt(math.Log1p(cv * cv))
	mu := -sigma * sigma / 2
	starts := make([][]float64, len(st.Pending))
	for d := range k {
		r := rand.New(rand.NewPCG(seed, uint64(d)))
		alt, err := st.WithPolicies(st.Config)
		if err != nil {
			return nil, err
		}
		alt.Jobs = make([]*workload.Job, len(st.Jobs))
		for i, j := range st.Jobs {
			c := *j
			if left := c.Iterations - c.Executed; !math.IsInf(c.Iterations, 1) && left > 0 {
				c.Iterations = c.Executed + left*math.Exp(mu+sigma*r.NormFloat64())
			}
			alt.Jobs[i] = &c
		}
		rows, err := Run(alt)
		if err != nil {
			return nil, fmt.Errorf("draw %d: %v", d, err)
		}
		for i, row := range rows {
			s := row.Start
			if s < 0 {
				s = math.Inf(1) // never, within the forecast: after every start
			}
			starts[i] = append(starts[i], s)
		}
	}
	out := make([]Spread, len(starts))
	for i, s := range starts {
		slices.Sort(s)
		at := func(p float64) float64 {
			v := s[max(0, int(math.Ceil(p*float64(len(s))))-1)]
			if math.IsInf(v, 1) {
				return -1
			}
			return v
		}
		out[i] = Spread{at(0.1), at(0.5), at(0.9)}
	}
	return out, nil
}
