package tenant

import (
	"maps"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Fork is a stage that decides from h's state on as h would, and shares
// nothing a decision changes with it: its cells are a deep copy
// (tenancy.Scheduler.Clone), and it holds the jobs h holds, with the
// victims still leaving and the preemptors waiting for them. Its VC
// layers are made afresh at its first round, by h's intra-VC factory,
// and find each running job's virtual GPUs in the copied cells, as after
// a reconfiguration: a VC placer that remembers nothing between rounds
// (as the forecasts that fork a stage require) places from there as h's
// own would. A forecast runs a fork, never the stage of the run.
func (h *HiveD) Fork() policy.Tenancy {
	f := &HiveD{iv: h.iv, fastest: h.fastest, balance: h.balance, classes: h.classes, speeds: h.speeds,
		allowed: h.allowed, untimed: h.untimed}
	f.From(h)
	return f
}

// From makes h, a stage not yet run, start from live's state (see Fork)
// with its own settings: its intra-VC factory, and its scores and speed
// balance (hived, hived-pm and hived-speed from the same cells), which
// is how a what-if forecast changes the tenancy mode under running jobs.
// live is not changed.
func (h *HiveD) From(live *HiveD) {
	h.l, h.s, h.node = live.l, live.s.Clone(), live.node
	if h.speeds != nil {
		h.s.SetSpeeds(h.classes, h.speeds)
	}
	h.s.SetBalance(h.balance)
	h.held, h.leaving, h.pre, h.jobs = cloneMap(live.held), cloneMap(live.leaving), cloneMap(live.pre), cloneMap(live.jobs)
	h.gone, h.index, h.byID = map[int]bool{}, map[int]int{}, map[int]*workload.Job{}
	h.now = live.now
	h.layers, h.byVC, h.out, h.touched, h.lost = nil, nil, nil, nil, nil
}

// cloneMap is maps.Clone, never nil.
func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return maps.Clone(m)
}
