package baseline

import (
	"cmp"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/workload"
)

// The per-GPU baselines allocate as the Themis authors' simulator does
// for its Tiresias and Gandiva baselines. Every GPU has its own lease:
// when a GPU is won it is the winner's for one lease; when the lease
// ends (or its job finishes) the GPU is free again. At every round each
// free GPU, in cluster order (rack, machine, slot, GPU), is auctioned on
// its own among the jobs that hold fewer than their most GPUs (max_gpus
// for an elastic job; a job keeps bidding GPU by GPU until it has them
// all). The bid decides who wins; where the GPU is does not, except
// through the bid:
//
//   - tiresias-blind (the authors' Tiresias): the least attained GPU
//     service (GPU-seconds run so far) wins. Placement-blind: the GPU goes
//     wherever it is. New jobs tie at zero service, and the tie goes to
//     the job with fewer GPUs so far, so a burst of new jobs is dealt
//     the free GPUs round-robin and each ends up across slots or
//     machines.
//   - gandiva-score (the authors' Gandiva): the largest effective
//     speed-up after the grant, |G ∪ {g}| · S(G ∪ {g}), wins. A running
//     job that would stay inside its slot outbids a new job (2 > 1), so
//     jobs grow to their most GPUs first, in arrival order, and new jobs
//     wait: no fairness between users (that is Gandiva_fair, our
//     gandiva-fair).
//
// Ties, as the authors break them: fewer GPUs won so far in this round's
// allocation, then the older last assignment (the time a job last went
// from waiting to running; its arrival until it first runs), then the
// lower job id.
//
// Where we differ: the authors' jobs are all elastic from 1 GPU. A job
// whose minimum is k > 1 GPUs (a rigid gang of our traces) takes, when it
// wins a GPU while it holds none, that GPU and the next k − 1 free ones in
// cluster order (it does not bid when fewer are free), and gives all its
// GPUs back when fewer than k of its leases remain. The authors end a
// lease at the first iteration boundary past it; we end it at the first
// round at or after it (60 s rounds), and a job's GPUs change only at
// rounds. GPU service is the simulator's (GPUs held × time), which is the
// authors' |G| · iteration time / speed-up per iteration.
func perGPU(name string) bool { return name == "tiresias-blind" || name == "gandiva-score" }

// auction is one round of the per-GPU baselines.
func (p *Policy) auction(c *cluster.Cluster, order []*workload.Job) [][]int {
	now := p.now
	if p.leaseEnd == nil {
		p.leaseEnd = make([]float64, c.Size())
		p.lastAssign = map[int]float64{}
	}
	out := make([][]int, len(order))
	used := make([]bool, c.Size())
	for i, j := range order {
		if _, ok := p.lastAssign[j.ID]; !ok {
			p.lastAssign[j.ID] = j.Submit
		}
		var keep []int
		for _, g := range j.GPUsHeld {
			if p.leaseEnd[g] > now {
				keep = append(keep, g)
			}
		}
		if len(keep) < j.GPUs {
			keep = nil // a gang below its minimum gives everything back
		}
		for _, g := range keep {
			used[g] = true
		}
		out[i] = keep
	}
	sens := make([]fairness.Sensitivity, len(order))
	for i, j := range order {
		sens[i] = p.sensitivity(j.Model)
	}
	// bid is job i's bid for GPU g; ok is false when it does not bid.
	bid := func(i, g int) (float64, bool) {
		j := order[i]
		if len(out[i]) >= j.Most() {
			return 0, false
		}
		if p.cfg.Name == "tiresias-blind" {
			return -j.GPUService, true
		}
		return float64(len(out[i])+1) * p.topo.Placement(append(slices.Clone(out[i]), g), sens[i]), true
	}
	for g := range c.Size() {
		if used[g] {
			continue
		}
		best, bestBid := -1, 0.0
		for i, j := range order {
			b, ok := bid(i, g)
			if !ok || (len(out[i]) == 0 && j.GPUs > 1 && !p.freeFrom(used, g, j.GPUs)) {
				continue
			}
			if best < 0 || b > bestBid || b == bestBid && p.beforeOnTie(order, out, i, best) {
				best, bestBid = i, b
			}
		}
		if best < 0 {
			continue
		}
		n := 1
		if len(out[best]) == 0 {
			n = order[best].GPUs
		}
		for x := g; n > 0; x++ {
			if !used[x] {
				used[x] = true
				p.leaseEnd[x] = now + p.lease
				out[best] = append(out[best], x)
				n--
			}
		}
	}
	for i, j := range order {
		slices.Sort(out[i])
		if (len(out[i]) > 0) != j.Running() {
			p.lastAssign[j.ID] = now
		}
	}
	return out
}

// freeFrom reports whether n GPUs from g on are free.
func (p *Policy) freeFrom(used []bool, g, n int) bool {
	for x := g; x < len(used) && n > 0; x++ {
		if !used[x] {
			n--
		}
	}
	return n == 0
}

// beforeOnTie breaks an equal bid between jobs a and b: fewer GPUs so far,
// then the older last assignment, then the lower id.
func (p *Policy) beforeOnTie(order []*workload.Job, out [][]int, a, b int) bool {
	if c := cmp.Compare(len(out[a]), len(out[b])); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(p.lastAssign[order[a].ID], p.lastAssign[order[b].ID]); c != 0 {
		return c < 0
	}
	return order[a].ID < order[b].ID
}

// sensitivity is a model's slot / machine / rack factors.
func (p *Policy) sensitivity(model string) fairness.Sensitivity {
	m := p.cfg.Models
	spread, rack := m.Sensitivity(model)
	return fairness.Sensitivity{Machine: spread, Rack: rack, Slot: m.SlotFactor(model)}
}
