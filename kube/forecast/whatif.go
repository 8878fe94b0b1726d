package forecast

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/whatif"
	"github.com/palsched/pal/workload"
)

// WhatIfKeys are the settings a what-if may change.
const WhatIfKeys = "placement, scheduler, backfill, drain, add-node"

// WhatIf is st with one setting changed, KEY=VALUE: placement=P,
// scheduler=S or backfill=B (the forward run's policies from the next
// round on; the round's own answer stands), drain=NODE (the node takes
// no gang: it leaves the forecast with the gangs running only on it,
// which keep it until they end anyway), add-node=NAME:GPUS (a node of
// median GPUs joins now).
func WhatIf(st *kube.ForecastState, kv string) (*kube.ForecastState, error) {
	key, val, ok := strings.Cut(kv, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || val == "" {
		return nil, fmt.Errorf("--what-if %s: want KEY=VALUE with KEY one of %s", quote.Value(kv), WhatIfKeys)
	}
	cfg := st.Config
	switch key {
	case "placement":
		cfg.Placement = val
	case "scheduler":
		cfg.Scheduler = val
	case "backfill":
		cfg.Backfill = val
	case "drain":
		return drain(st, val)
	case "add-node":
		name, n, ok := strings.Cut(val, ":")
		gpus, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || gpus <= 0 || gpus > 1024 {
			return nil, fmt.Errorf("--what-if add-node=%s: want NAME:GPUS with 1 to 1024 GPUs", val)
		}
		return addNode(st, name, gpus)
	default:
		return nil, fmt.Errorf("--what-if %s: unknown setting (known: %s)", key, WhatIfKeys)
	}
	out, err := st.WithPolicies(cfg)
	if err != nil {
		return nil, fmt.Errorf("--what-if %s: %v", kv, err)
	}
	return out, nil
}

// drain takes node out of st's cluster, and the gangs running only on it
// out of its jobs; a gang running on it and on other nodes is refused.
func drain(st *kube.ForecastState, node string) (*kube.ForecastState, error) {
	cl := st.Cluster
	n := slices.IndexFunc(cl.Nodes, func(nd cluster.Node) bool { return nd.Name == node })
	if n < 0 {
		return nil, fmt.Errorf("--what-if drain=%s: no node %s among the %d the forecast places on", node, node, len(cl.Nodes))
	}
	var jobs []*workload.Job
	for _, j := range st.Jobs {
		on := 0
		for _, g := range j.GPUsHeld {
			if cl.GPUs[g].Node == n {
				on++
			}
		}
		switch {
		case on == 0:
			jobs = append(jobs, j)
		case on < len(j.GPUsHeld):
			return nil, fmt.Errorf("--what-if drain=%s: a running gang (%d GPUs) spans it and other nodes; not forecast", node, j.GPUs)
		}
	}
	sizes, names := shape(cl)
	sizes, names = slices.Delete(sizes, n, n+1), slices.Delete(names, n, n+1)
	return rebuild(st, jobs, sizes, names, func(g int) int {
		if gn := cl.GPUs[g].Node; gn == n {
			return -1
		} else if gn > n {
			return g - len(cl.Nodes[n].GPUs)
		}
		return g
	})
}

// addNode adds a node of gpus median GPUs after the others.
func addNode(st *kube.ForecastState, name string, gpus int) (*kube.ForecastState, error) {
	cl := st.Cluster
	if slices.ContainsFunc(cl.Nodes, func(nd cluster.Node) bool { return nd.Name == name }) {
		return nil, fmt.Errorf("--what-if add-node=%s:%d: node %s is already in the cluster", name, gpus, name)
	}
	sizes, names := shape(cl)
	return rebuild(st, st.Jobs, append(sizes, gpus), append(names, name), func(g int) int { return g })
}

func shape(cl *cluster.Cluster) ([]int, []string) {
	sizes := make([]int, len(cl.Nodes))
	names := make([]string, len(cl.Nodes))
	for i, nd := range cl.Nodes {
		sizes[i], names[i] = len(nd.GPUs), nd.Name
	}
	return sizes, names
}

// rebuild is st on a cluster of sizes (named names), each old GPU g at
// to(g) (-1: gone), added GPUs at the median; the scores are binned again.
func rebuild(st *kube.ForecastState, jobs []*workload.Job, sizes []int, names []string, to func(int) int) (*kube.ForecastState, error) {
	cl, err := cluster.NewSized(sizes)
	if err != nil {
		return nil, fmt.Errorf("--what-if: %v", err)
	}
	for i := range cl.Nodes {
		cl.Nodes[i].Name = names[i]
	}
	out := *st
	out.Cluster = cl
	out.Jobs = make([]*workload.Job, len(jobs))
	for i, j := range jobs {
		c := *j
		if j.GPUsHeld != nil {
			c.GPUsHeld = make([]int, len(j.GPUsHeld))
			for k, g := range j.GPUsHeld {
				c.GPUsHeld[k] = to(g)
			}
		}
		out.Jobs[i] = &c
	}
	if st.Raw != nil {
		out.Raw = &variability.Table{}
		for c := range out.Raw.Values {
			v := make([]float64, cl.Size())
			for g := range v {
				v[g] = 1 // an added GPU runs at the median
			}
			for g, x := range st.Raw.Values[c] {
				if t := to(g); t >= 0 {
					v[t] = x
				}
			}
			out.Raw.Values[c] = v
		}
		ks, err := variability.ParseKStrategy(st.Config.KStrategy)
		if err != nil {
			return nil, err
		}
		vs, err := variability.NewScores(out.Raw, variability.BinOptions{Strategy: ks, Seed: st.Config.Seed},
			func(variability.Class) float64 { return st.Locality })
		if err != nil {
			return nil, fmt.Errorf("--what-if: binning the scores again: %v", err)
		}
		out.Scores = policy.ScoresFrom(vs)
	}
	// Fresh policies: the live placer's state (sticky homes, backfill
	// protections) is on the old GPU numbering.
	return out.WithPolicies(out.Config)
}

// Summarize sums up the waiting gangs of rows, a forecast of st
// (whatif.Summarize; times in the jobs' seconds).
func Summarize(st *kube.ForecastState, rows []kube.ForecastRow) whatif.Summary {
	submit := make(map[int]float64, len(st.Jobs))
	for _, j := range st.Jobs {
		submit[j.ID] = j.Submit
	}
	jobs := make([]whatif.Job, len(rows))
	for i, r := range rows {
		jobs[i] = whatif.Job{Arrival: submit[st.Pending[i].JobID], Start: r.Start, Finish: r.Finish}
	}
	return whatif.Summarize(jobs)
}
