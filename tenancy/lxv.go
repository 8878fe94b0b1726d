package tenancy

import (
	"math"

	"github.com/palsched/pal/variability"
)

// LVStep is one entry of PAL's L×V order as the tenancy stage walks it:
// use free devices whose value (SetSpeeds) is <= V, inside one node
// (Across false) or spread over nodes (Across true). It mirrors
// policy.LVStep; tenancy keeps its own copy so that it depends on nothing
// above it.
type LVStep struct {
	V      float64
	Across bool
}

// placeLxV is the variability-aware placement inside a VC (hived-pm): a
// group that fits one node walks its class's L×V order over the devices
// of the VC's already bound cells that are free, healthy and not lent to
// opportunistic groups, as PAL's placer walks the whole cluster. A within
// entry takes the node whose n-th best qualifying device is best (ties to
// the node with more qualifying devices, then config order) and its first
// n qualifying devices in position order; an across entry, allowed only
// when the request may spread (Spread), takes the n best qualifying
// devices anywhere (ties by position) and makes one pod per node.
//
// It binds nothing and preempts nothing: the devices are the VC's own and
// free, so the binding, and with it every splittable margin, is what it
// was; safety cannot be traded. When no entry fits, the caller falls back
// to HiveD's packing and buddy binding, so L×V never keeps a group waiting
// that HiveD would place.
func (s *Scheduler) placeLxV(r Request, vc *VC) (Decision, bool) {
	n := 0
	for _, p := range r.Pods {
		n += p
	}
	if n > s.MaxNode() || (len(r.Pods) > 1 && !r.Spread) || r.PinnedCell != "" {
		return Decision{}, false
	}
	for _, vcc := range vc.chains {
		if vcc.pinned != nil || !vcc.chain.serves(r.LeafType) {
			continue
		}
		free := s.freeBound(vcc)
		total := 0
		for _, ls := range free {
			total += len(ls)
		}
		if total < n {
			continue
		}
		for _, e := range r.LV {
			var vp [][]*PCell
			if e.Across {
				if r.Spread {
					vp = lxvAcross(free, n, e.V, r.Class)
				}
			} else {
				vp = lxvWithin(free, n, e.V, r.Class)
			}
			if vp == nil {
				continue
			}
			// Every chosen device is free and inside a bound cell, so
			// binding and committing cannot fail.
			vl := make([][]*VCell, len(vp))
			for i, pod := range vp {
				for _, p := range pod {
					vl[i] = append(vl[i], s.bindLeaf(p))
				}
			}
			if d, ok := s.commitGuaranteed(r, vc, vcc, vl); ok {
				return d, true
			}
			panic("tenancy: L×V commit failed on free bound devices")
		}
	}
	return Decision{}, false
}

// freeBound lists the physical devices inside a VC chain's bound cells
// that are free, healthy and not lent, grouped by node in config order,
// each node's devices in device order. A device inside a bound cell may
// not be bound itself yet (HiveD binds below a bound cell lazily); it is
// still the VC's, and bindLeaf binds it on demand.
func (s *Scheduler) freeBound(vcc *vcChain) [][]*PCell {
	byNode := map[string][]*PCell{}
	var walk func(p *PCell)
	walk = func(p *PCell) {
		if p.level == 1 {
			if p.group == nil && p.bad == 0 && p.speed != nil {
				byNode[p.node] = append(byNode[p.node], p)
			}
			return
		}
		if p.used == p.leaves {
			return
		}
		for _, c := range p.children {
			walk(c)
		}
	}
	for _, v := range vcc.pre {
		if v.phys != nil {
			walk(v.phys)
		}
	}
	var out [][]*PCell
	for _, name := range s.nodeOrder {
		if ls := byNode[name]; len(ls) > 0 {
			sortByGPU(ls)
			out = append(out, ls)
		}
	}
	return out
}

// bindLeaf returns the virtual leaf bound to a device inside one of the
// VC's bound cells, binding the unbound cells on the way down. Below a
// bound cell a virtual cell and its physical cell have the same number of
// children and as many bound, so an unbound virtual child always exists
// for an unbound physical one; the binding stays inside the VC's own
// cell, which no other VC's safety margin counts.
func (s *Scheduler) bindLeaf(p *PCell) *VCell {
	if p.vcell != nil {
		return p.vcell
	}
	up := s.bindLeaf(p.parent)
	for _, c := range up.children {
		if c.phys == nil && c.level == p.level {
			link(c, p)
			return c
		}
	}
	panic("tenancy: bound cell without an unbound child for " + p.Addr)
}

func sortByGPU(ls []*PCell) {
	for i := 1; i < len(ls); i++ {
		for k := i; k > 0 && ls[k].gpu < ls[k-1].gpu; k-- {
			ls[k], ls[k-1] = ls[k-1], ls[k]
		}
	}
}

func lxvWithin(nodes [][]*PCell, n int, v float64, class int) [][]*PCell {
	best, bestCount, bestScore := -1, 0, math.Inf(1)
	var vals []float64
	for i, ls := range nodes {
		vals = vals[:0]
		for _, l := range ls {
			if x := l.speed[class]; x <= v {
				vals = append(vals, x)
			}
		}
		if len(vals) < n {
			continue
		}
		sc := variability.NthSmallest(vals, n)
		if sc < bestScore || (sc == bestScore && len(vals) > bestCount) {
			best, bestCount, bestScore = i, len(vals), sc
		}
	}
	if best < 0 {
		return nil
	}
	var pod []*PCell
	for _, l := range nodes[best] {
		if len(pod) < n && l.speed[class] <= bestScore {
			pod = append(pod, l)
		}
	}
	return [][]*PCell{pod}
}

func lxvAcross(nodes [][]*PCell, n int, v float64, class int) [][]*PCell {
	var cand []*PCell
	for _, ls := range nodes {
		for _, l := range ls {
			if l.speed[class] <= v {
				cand = append(cand, l)
			}
		}
	}
	if len(cand) < n {
		return nil
	}
	// Stable selection of the n best: ties keep node, then device, order.
	for i := 0; i < n; i++ {
		m := i
		for k := i + 1; k < len(cand); k++ {
			if cand[k].speed[class] < cand[m].speed[class] {
				m = k
			}
		}
		c := cand[m]
		copy(cand[i+1:m+1], cand[i:m])
		cand[i] = c
	}
	chosen := cand[:n]
	var vp [][]*PCell
	for _, ls := range nodes {
		var pod []*PCell
		for _, l := range ls {
			for _, c := range chosen {
				if c == l {
					pod = append(pod, l)
				}
			}
		}
		if len(pod) > 0 {
			vp = append(vp, pod)
		}
	}
	return vp
}
