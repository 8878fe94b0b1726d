package place

import (
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// PodGuard makes any placer respect pods (the trace's pod_gpus): a pod
// never spans nodes. When the placer's answer for a job cuts a pod across
// nodes, the guard repairs it from the GPUs the round leaves free: whole
// pods on the nodes the placer chose most of, its own choices first; if no
// repair fits, the job does not run that round. A placer that knows pods
// (spread) never trips it; jobs without pods pass untouched.
type PodGuard struct{ policy.Placer }

// Place implements policy.Placer.
func (p PodGuard) Place(env *policy.Env, order []*workload.Job) [][]int {
	return guard(env, order, p.Placer.Place(env, order), false)
}

// PlaceHiding implements policy.HidingPlacer for a guarded placer that
// does (else it panics: callers ask policy.Hiding, which reads Hides). A
// repair never uses a hidden GPU.
func (p PodGuard) PlaceHiding(env *policy.Env, order []*workload.Job, hidden func(int) bool) [][]int {
	return guardHiding(env, order, p.Placer.(policy.HidingPlacer).PlaceHiding(env, order, hidden), false, hidden)
}

// Hides says whether the guarded placer is a policy.HidingPlacer.
func (p PodGuard) Hides() bool { _, ok := policy.Hiding(p.Placer); return ok }

// holds reports whether g is the very list j holds (not a copy).
func holds(j *workload.Job, g []int) bool {
	h := j.GPUsHeld
	return len(h) == len(g) && len(g) > 0 && &h[0] == &g[0]
}

// guard is PodGuard's repair of a placer's answer. With kept, a running
// job whose answer is the very list it holds is taken to fit (the caller
// knows its GPUs do) and not counted again.
func guard(env *policy.Env, order []*workload.Job, out [][]int, kept bool) [][]int {
	return guardHiding(env, order, out, kept, nil)
}

// guardHiding is guard whose repairs leave the hidden GPUs alone.
func guardHiding(env *policy.Env, order []*workload.Job, out [][]int, kept bool, hidden func(int) bool) [][]int {
	var taken []bool
	for i, j := range order {
		if j.PodGPUs <= 0 || out[i] == nil || kept && holds(j, out[i]) || PodsFit(env.Cluster, out[i], j.PodGPUs) {
			continue
		}
		if taken == nil {
			taken = make([]bool, env.Cluster.Size())
			for x := range taken {
				taken[x] = hidden != nil && hidden(x)
			}
			for _, g := range out {
				for _, x := range g {
					taken[x] = true
				}
			}
		}
		fixed := repairPods(env.Cluster, taken, out[i], j.PodGPUs)
		for _, x := range out[i] {
			taken[x] = false
		}
		for _, x := range fixed {
			taken[x] = true
		}
		out[i] = fixed
	}
	return out
}

// RepairPods re-cuts chosen, a job's GPUs, into whole pods of pod GPUs
// per node (see repairPods): GPUs marked in taken are not used unless
// chosen. nil if the pods do not fit.
func RepairPods(c *cluster.Cluster, taken []bool, chosen []int, pod int) []int {
	return repairPods(c, taken, chosen, pod)
}

// repairPods re-cuts a job's GPUs into whole pods per node: nodes by how
// many of the chosen GPUs they hold (then id), inside a node the chosen
// GPUs first, then free ones by id. nil if the pods do not fit.
func repairPods(c *cluster.Cluster, taken []bool, chosen []int, pod int) []int {
	mine := map[int]bool{}
	count := map[int]int{}
	for _, g := range chosen {
		mine[g] = true
		count[c.GPUs[g].Node]++
	}
	nodes := make([]int, c.NumNodes())
	for i := range nodes {
		nodes[i] = i
	}
	slices.SortStableFunc(nodes, func(a, b int) int { return count[b] - count[a] })
	need := len(chosen)
	var out []int
	for _, n := range nodes {
		if need == 0 {
			break
		}
		var avail []int
		for _, g := range c.Nodes[n].GPUs {
			if mine[g] {
				avail = append(avail, g)
			}
		}
		for _, g := range c.Nodes[n].GPUs {
			if !mine[g] && !taken[g] {
				avail = append(avail, g)
			}
		}
		k := min(need, len(avail)/pod*pod)
		out = append(out, avail[:k]...)
		need -= k
	}
	if need > 0 {
		return nil
	}
	slices.Sort(out)
	return out
}

// PodsFit reports whether gpus split into pods of pod GPUs, each inside
// one node: every node holds a multiple of pod of them.
func PodsFit(c *cluster.Cluster, gpus []int, pod int) bool {
	// A node's GPU ids are consecutive, so in a list by node (an
	// ascending one is) each node's GPUs are one run: count runs, and
	// count by node only for a list out of node order.
	run, node, fit := 0, -1, true
	for _, g := range gpus {
		n := c.NodeOf(g)
		if n == node {
			run++
			continue
		}
		if n < node {
			return podsFitAnyOrder(c, gpus, pod)
		}
		fit = fit && run%pod == 0
		run, node = 1, n
	}
	return fit && run%pod == 0
}

func podsFitAnyOrder(c *cluster.Cluster, gpus []int, pod int) bool {
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

// SameGPUs reports whether a and b hold the same GPUs, in any order: a
// running job kept where it runs (a driver's answer may list its GPUs in
// another order than it holds them).
func SameGPUs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
