package tenancy

import (
	"fmt"
	"slices"

	"github.com/palsched/pal/internal/quote"
)

// Adopt takes over a group that already runs on the given devices but that
// this scheduler did not place: HiveD, when it restarts, re-reads each
// allocated pod's placement and takes its cells back, so that the VCs'
// accounting is whole again. The devices become r.Group's. A guaranteed
// group is mapped onto its VC's cells over its devices (under the pinned
// cell it names, or a preassigned cell of its VC in the devices' chain,
// the smallest type first) and keeps its priority; one whose VC cannot
// take it (its cells are used, or they do not cover the devices) runs on
// lazily preempted, opportunistic until a guaranteed group needs its
// devices or its cells are free again, as after a reconfiguration. An
// opportunistic group is taken as such. It reports whether the group is
// guaranteed. An error (an unknown group, VC, pinned cell or device, a
// device already in use, devices of two chains) changes nothing.
func (s *Scheduler) Adopt(r Request, pods []Pod) (bool, error) {
	if r.Group == "" {
		return false, fmt.Errorf("tenancy: adopt without a group name")
	}
	if _, dup := s.groups[r.Group]; dup {
		return false, fmt.Errorf("tenancy: group %s already holds devices", quote.Value(r.Group))
	}
	vc := s.byVC[r.VC]
	if vc == nil {
		return false, fmt.Errorf("tenancy: group %s: unknown VC %s", r.Group, quote.Value(r.VC))
	}
	if r.Priority < Opportunistic || r.Priority > MaxPriority {
		return false, fmt.Errorf("tenancy: group %s: priority %d outside %d..%d", r.Group, r.Priority, Opportunistic, MaxPriority)
	}
	if r.PinnedCell != "" && vc.byPin[r.PinnedCell] == nil {
		return false, fmt.Errorf("tenancy: group %s: pinned cell %s is not VC %s's", r.Group, quote.Value(r.PinnedCell), r.VC)
	}
	g := &Group{Name: r.Group, VC: vc, Priority: Opportunistic, origPriority: r.Priority, Lazy: r.LazyPreemptable}
	n := 0
	for _, pod := range pods {
		var ps []*PCell
		for _, dev := range pod.GPUs {
			p := s.leafAt(pod.Node, dev)
			switch {
			case p == nil:
				return false, fmt.Errorf("tenancy: group %s: no device %s/%d in the cells", r.Group, pod.Node, dev)
			case p.group != nil:
				return false, fmt.Errorf("tenancy: group %s: device %s/%d is group %s's", r.Group, pod.Node, dev, p.group.Name)
			case slices.Contains(ps, p) || slices.ContainsFunc(g.pods, func(q []*PCell) bool { return slices.Contains(q, p) }):
				return false, fmt.Errorf("tenancy: group %s: device %s/%d named twice", r.Group, pod.Node, dev)
			case g.chain != nil && p.chain != g.chain:
				return false, fmt.Errorf("tenancy: group %s: devices in chains %s and %s", r.Group, g.chain.Name, p.chain.Name)
			}
			g.chain = p.chain
			ps = append(ps, p)
			n++
		}
		if len(ps) > 0 {
			g.pods = append(g.pods, ps)
		}
	}
	if n == 0 {
		return false, fmt.Errorf("tenancy: group %s: no devices", r.Group)
	}
	for _, pod := range g.pods {
		for _, p := range pod {
			// It runs there: whatever was told to hold the device
			// outside the cells no longer does.
			s.setExternal(p, false)
			s.use(g, nil, p)
		}
	}
	s.seq++
	g.seq = s.seq
	s.groups[g.Name] = g
	if r.Priority == Opportunistic {
		return false, nil
	}
	g.pinned = r.PinnedCell
	types := s.adoptTypes(g)
	for _, typ := range types {
		g.pre = slices.Repeat([]string{typ}, n)
		if s.adopt(g) {
			s.doomCheck(g.chain)
			return true, nil
		}
	}
	// Its VC cannot take it: it runs on lazily preempted, and becomes
	// guaranteed again when its cells over its devices, of the smallest
	// type, are free.
	g.pre = nil
	if len(types) > 0 {
		g.pre = slices.Repeat([]string{types[0]}, n)
	}
	g.Demoted = true
	s.noteDemoted(g)
	return false, nil
}

// leafAt is the device dev of node, or nil.
func (s *Scheduler) leafAt(node string, dev int) *PCell {
	for _, top := range s.byNode[node] {
		for _, l := range pleavesOf(top, nil) {
			if l.gpu == dev {
				return l
			}
		}
	}
	return nil
}

// adoptTypes lists the cell types a group's devices may be adopted under:
// its pinned cell's, or those of its VC's preassigned cells in the
// devices' chain, the smallest first.
func (s *Scheduler) adoptTypes(g *Group) []string {
	ch := g.chain
	if g.pinned != "" {
		vcc := g.VC.byPin[g.pinned]
		return []string{ch.types[vcc.pinned.level].name}
	}
	var levels []int
	for _, vcc := range g.VC.chains {
		if vcc.chain != ch {
			continue
		}
		for _, v := range vcc.pre {
			if !slices.Contains(levels, v.level) {
				levels = append(levels, v.level)
			}
		}
	}
	slices.Sort(levels)
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = ch.types[l].name
	}
	return out
}
