package place

import (
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Spread lands each pod (each GPU, for a job without pods) on the node
// with the most free GPUs, ties to the lowest node id: how YARN's capacity
// scheduler lands containers, and the quota baseline of
// scenario H3 (TESTDATA.md, hand-derived HiveD scenarios). It is sticky, like YARN: a running job keeps its GPUs.
type Spread struct{ f freeSet }

// Name implements policy.Placer.
func (p *Spread) Name() string { return "spread" }

// Sticky implements policy.Placer.
func (p *Spread) Sticky() bool { return true }

// Place implements policy.Placer.
func (p *Spread) Place(env *policy.Env, order []*workload.Job) [][]int {
	return stickyFrame(env, order, &p.f, spreadPods)
}

// spreadPods places a job pod by pod; a pod never spans nodes.
func spreadPods(_ *policy.Env, f *freeSet, j *workload.Job) []int {
	pod, pods := j.PodGPUs, 0
	if pod <= 0 {
		pod = 1
	}
	pods = j.GPUs / pod
	if f.total < j.GPUs {
		return nil
	}
	out := make([]int, 0, j.GPUs)
	for p := 0; p < pods; p++ {
		best := -1
		for node, k := range f.nodeFree {
			if k >= pod && (best < 0 || k > f.nodeFree[best]) {
				best = node
			}
		}
		if best < 0 {
			f.give(out)
			return nil
		}
		start := len(out)
		out = f.firstFree(out, best, pod)
		f.take(out[start:])
	}
	f.give(out)
	return sorted(out)
}
