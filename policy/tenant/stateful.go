package tenant

import (
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// Stateful preemption in the simulator. A guaranteed job whose cells have
// opportunistic jobs on them (the only preemptions the cells layer makes:
// a VC's own jobs are preempted by its placer, as on its private cluster)
// holds its cells while they leave, as HiveD does. A victim stops when it
// is preempted, but its termination (its checkpoint and exit) takes its
// preemption cost in time, and its GPUs stay taken until then; the
// preemptor runs from the first round after. With no preemption cost a
// victim is gone at once, and the preemptor runs in the same round.

// SetNow implements sim.Clocked: the round's time.
func (h *HiveD) SetNow(T float64) { h.now = T }

// evict starts the victims' termination: each stops now and leaves when
// its preemption cost has passed. It reports whether any left at once
// (the preemptor should ask again).
func (h *HiveD) evict(victims []string) bool {
	left := false
	for _, v := range victims {
		id := atoi(v)
		if _, ok := h.leaving[id]; !ok {
			cost := 0.0
			if j := h.job(id); j != nil {
				cost = j.MoveCost.Preemption
			}
			if h.untimed {
				cost = math.Inf(1) // until Finish
			}
			h.leaving[id] = h.now + cost
			h.gone[id] = true
			if k, ok := h.at(id); ok {
				h.out[k] = nil
			}
		}
		if h.leaving[id] <= h.now {
			h.leave(id)
			left = true
		}
	}
	return left
}

// terminated releases the victims whose termination is over.
func (h *HiveD) terminated() {
	var due []int
	for id, t := range h.leaving {
		if t <= h.now {
			due = append(due, id)
		}
	}
	slices.Sort(due)
	for _, id := range due {
		h.leave(id)
	}
}

func (h *HiveD) leave(id int) {
	delete(h.leaving, id)
	if h.held[id] {
		delete(h.held, id)
		delete(h.jobs, id)
		if err := h.s.Release(groupName(id)); err != nil {
			panic("tenant: " + err.Error())
		}
	}
}

// found puts a guaranteed job the cells hold into its pool, when the VC
// layer has lost track of it (after a reconfiguration, or when a lazily
// preempted job is guaranteed again); false when the cells hold it lazily
// preempted (it runs on as opportunistic, outside the VC layer).
func (h *HiveD) found(L *vcLayer, j *workload.Job) bool {
	name := groupName(j.ID)
	leaves := h.s.Leaves(name)
	if len(leaves) == 0 {
		return false
	}
	for _, P := range L.pools {
		if _, ok := P.id[leaves[0]]; !ok {
			continue
		}
		v := make([]int, 0, len(leaves))
		for _, l := range leaves {
			x, ok := P.id[l]
			if !ok {
				panic("tenant: a job's leaves span pools")
			}
			v = append(v, x)
		}
		slices.Sort(v)
		P.hold(L, j.ID, j.PodGPUs, v)
		if h.s.IsPreempting(name) {
			h.pre[j.ID] = true
		}
		return true
	}
	panic("tenant: a job's leaves are in no pool of its VC")
}

// Reconfigure applies a changed cells config under the running jobs
// (tenancy.Scheduler.Reconfigure): a job that still fits its VC keeps its
// cells, one that no longer fits is lazily preempted and runs on as
// opportunistic until its GPUs are needed or its cells come back. The
// config must describe the same nodes and devices (the simulated
// cluster) and the same VCs (the jobs name them); its cells, their
// levels, the VCs' cells and the pinned cells may change. An error leaves
// the stage as it was.
func (h *HiveD) Reconfigure(cfg *tenancy.Config) (tenancy.Reconfig, error) {
	l, err := h.l.Same(cfg)
	if err != nil {
		return tenancy.Reconfig{}, err
	}
	return h.reconfigure(cfg, l)
}

// ReconfigureAny is Reconfigure for a driver that maps GPUs to the cells
// by node name and device index every round (Kubernetes): the new config
// may add, remove or reshape nodes and VCs. A running job keeps the
// devices the new cells still have; one whose VC is gone runs on as
// opportunistic, and waiting jobs of an unknown VC wait. The driver takes
// the returned layout's numbering from the next round on.
func (h *HiveD) ReconfigureAny(cfg *tenancy.Config) (*Layout, tenancy.Reconfig, error) {
	l, err := NewLayout(cfg)
	if err != nil {
		return nil, tenancy.Reconfig{}, err
	}
	rep, err := h.reconfigure(cfg, l)
	if err != nil {
		return nil, rep, err
	}
	return l, rep, nil
}

func (h *HiveD) reconfigure(cfg *tenancy.Config, l *Layout) (tenancy.Reconfig, error) {
	n, rep, err := h.s.Reconfigure(cfg)
	if err != nil {
		return rep, err
	}
	h.s, h.l, h.node = n, l, n.MaxNode()
	for _, g := range append(rep.Cancelled, rep.Gone...) {
		delete(h.held, atoi(g))
		delete(h.jobs, atoi(g))
	}
	// The VC layers are made again from the new views at the next round,
	// and find the jobs the cells hold (found).
	clear(h.pre)
	h.layers, h.byVC, h.touched = nil, nil, nil
	return rep, nil
}

// Same validates a changed cells config against the cluster the layout
// describes: the same nodes, in the same order, with the same devices,
// and the same VCs. The layout it returns shares the cluster.
func (l *Layout) Same(cfg *tenancy.Config) (*Layout, error) {
	nl, err := NewLayout(cfg)
	if err != nil {
		return nil, err
	}
	if nl.Cluster.NumNodes() != l.Cluster.NumNodes() {
		return nil, fmt.Errorf("%s: %d nodes; the cluster has %d (a changed config may not add or remove nodes here)", cfg.File, nl.Cluster.NumNodes(), l.Cluster.NumNodes())
	}
	for i, n := range l.Cluster.Nodes {
		m := nl.Cluster.Nodes[i]
		if m.Name != n.Name || len(m.GPUs) != len(n.GPUs) {
			return nil, fmt.Errorf("%s: node %d is %s with %d GPUs; the cluster's is %s with %d", cfg.File, i, m.Name, len(m.GPUs), n.Name, len(n.GPUs))
		}
		for d := range l.gpuID[n.Name] {
			if _, ok := nl.gpuID[n.Name][d]; !ok {
				return nil, fmt.Errorf("%s: node %s has no device %d; the cluster's has", cfg.File, n.Name, d)
			}
		}
	}
	a, b := slices.Sorted(slices.Values(l.vcs)), slices.Sorted(slices.Values(nl.vcs))
	if !slices.Equal(a, b) {
		return nil, fmt.Errorf("%s: VCs %v; the jobs' VCs are %v (a changed config keeps the VCs and changes their cells)", cfg.File, b, a)
	}
	nl.Cluster, nl.gpuID, nl.nodeGPUs = l.Cluster, l.gpuID, l.nodeGPUs
	return nl, nil
}

// Leaving reports whether a preempted job still holds its cells while it
// terminates (a driver keeps its GPUs taken until it finishes it).
func (h *HiveD) Leaving(j *workload.Job) bool {
	_, ok := h.leaving[j.ID]
	return ok
}

// CancelPreemption withdraws the preemption that job j holds its cells
// for while its victims leave (false, changing nothing, when j is not
// preempting): its cells go back to the victims still on them, as a
// Release of a preempting group does, and the victims that no other
// preemptor waits for are no longer leaving (they run on). The next
// Place treats j as any waiting job and places it afresh: its VC's cells
// bind again, free cells before those with opportunistic jobs on them.
// A driver calls it for a preemptor whose victims it may not evict (a
// Kubernetes scheduler's bare pods): kept, the reservation would wait for
// them forever while other cells free.
func (h *HiveD) CancelPreemption(j *workload.Job) bool {
	if h.victimsOf(j) == nil {
		return false
	}
	h.Finish(j) // reprieves its victims
	return true
}

// Preemptors lists, by id, the jobs that hold cells while their victims
// leave. A driver finishes one that is gone (a deleted gang that waited
// on its victims): kept, its reservation and its victims' leaving would
// outlive it.
func (h *HiveD) Preemptors() []*workload.Job {
	var out []*workload.Job
	for name := range h.s.Preempting() {
		if j := h.jobs[atoi(name)]; j != nil {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *workload.Job) int { return a.ID - b.ID })
	return out
}

// victimsOf lists the victims job j waits for while it holds its cells
// preempting; nil when it is not preempting.
func (h *HiveD) victimsOf(j *workload.Job) []string {
	name := groupName(j.ID)
	if !h.held[j.ID] || !h.s.IsPreempting(name) {
		return nil
	}
	v := h.s.Preempting()[name]
	if v == nil {
		v = []string{} // preempting, its victims all gone
	}
	return v
}

// reprieve ends the leaving of the victims a withdrawn or finished
// preemptor waited for (victimsOf, read before its release) that no
// other preemptor waits for: the cells gave them back what it held of
// theirs, and they run on.
func (h *HiveD) reprieve(victims []string) {
	if len(victims) == 0 {
		return
	}
	still := h.s.Leaving()
	for _, v := range victims {
		if !slices.Contains(still, v) {
			delete(h.leaving, atoi(v))
		}
	}
}

// Adopt takes a job that already runs on GPUs (cluster ids) the stage did
// not give it, a driver's scheduler having restarted, into the cells as
// its group (tenancy.Scheduler.Adopt, HiveD re-reading an allocated pod's
// placement): a guaranteed job its VC's cells can hold is guaranteed
// again and found in its VC's pool at the next Place; one they cannot
// runs on lazily preempted; an opportunistic one as opportunistic. From
// then on the job is the stage's like any it placed (Finish releases it).
// It reports whether the job is guaranteed; an error changes nothing.
func (h *HiveD) Adopt(j *workload.Job, gpus []int) (bool, error) {
	if h.held[j.ID] {
		return false, fmt.Errorf("tenant: job %d already holds cells", j.ID)
	}
	c := h.l.Cluster
	var ps []tenancy.Pod
	for _, g := range gpus {
		if g < 0 || g >= c.Size() {
			return false, fmt.Errorf("tenant: no GPU %d", g)
		}
		name := c.Nodes[c.GPUs[g].Node].Name
		dev, ok := -1, false
		for d, id := range h.l.gpuID[name] {
			if id == g {
				dev, ok = d, true
			}
		}
		if !ok {
			return false, fmt.Errorf("tenant: GPU %d is in no cell", g)
		}
		k := slices.IndexFunc(ps, func(p tenancy.Pod) bool { return p.Node == name })
		if k < 0 {
			ps = append(ps, tenancy.Pod{Node: name})
			k = len(ps) - 1
		}
		ps[k].GPUs = append(ps[k].GPUs, dev)
	}
	req := tenancy.Request{Group: groupName(j.ID), VC: h.l.vcOf(&j.Spec), Priority: j.VCPriority, PinnedCell: j.PinnedCell}
	ok, err := h.s.Adopt(req, ps)
	if err != nil {
		return false, err
	}
	h.held[j.ID], h.jobs[j.ID] = true, j
	if h.lost == nil {
		h.lost = map[int]bool{}
	}
	h.lost[j.ID] = true // its pool finds it at the next Place (findHeld)
	return ok, nil
}
