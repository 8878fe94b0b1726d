package place

import (
	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// PodGuard makes any placer respect pods (the trace's pod_gpus): a pod
// never spans nodes. A job whose GPUs cannot be cut into whole pods inside
// nodes does not run that round (its GPUs stay free); a placer that knows
// pods (spread) never trips it. Jobs without pods pass untouched.
type PodGuard struct{ policy.Placer }

// Place implements policy.Placer.
func (p PodGuard) Place(env *policy.Env, order []*workload.Job) [][]int {
	out := p.Placer.Place(env, order)
	for i, j := range order {
		if j.PodGPUs > 0 && out[i] != nil && !PodsFit(env.Cluster, out[i], j.PodGPUs) {
			out[i] = nil
		}
	}
	return out
}

// PodsFit reports whether gpus split into pods of pod GPUs, each inside
// one node: every node holds a multiple of pod of them.
func PodsFit(c *cluster.Cluster, gpus []int, pod int) bool {
	count := map[int]int{}
	for _, g := range gpus {
		count[c.GPUs[g].Node]++
	}
	for _, n := range count {
		if n%pod != 0 {
			return false
		}
	}
	return true
}
