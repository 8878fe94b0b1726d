package tenancy

import (
	"maps"
	"slices"
)

// Clone is a deep copy of the scheduler's state: every chain with its
// buddy free lists, every physical and virtual cell with its bindings,
// health and quarantine, every VC, and every group with its devices and
// its place in a preemption. Decisions on the copy leave the original as
// it was, and the other way round, so a forecast can run the cells
// forward from a live state. What the two still share never changes once
// built: the config, the cell types, and the speed function (SetSpeeds),
// which must read data that does not change.
func (s *Scheduler) Clone() *Scheduler {
	c := &cloner{
		ch:  make(map[*Chain]*Chain, len(s.chains)),
		vcc: make(map[*vcChain]*vcChain),
		vc:  make(map[*VC]*VC, len(s.vcs)),
		g:   make(map[*Group]*Group, len(s.groups)),
	}
	// First every object, copied field by field; then every pointer
	// between them mapped to its copy.
	for _, ch := range s.chains {
		c.ch[ch] = new(Chain)
		*c.ch[ch] = *ch
		for _, t := range ch.tops {
			c.ps = appendPCells(c.ps, t)
		}
	}
	for _, vc := range s.vcs {
		n := new(VC)
		*n = *vc
		c.vc[vc] = n
		for _, list := range [][]*vcChain{vc.chains, vc.pins} {
			for _, vcc := range list {
				m := new(vcChain)
				*m = *vcc
				c.vcc[vcc] = m
				for _, v := range vcc.pre {
					c.vs = appendVCells(c.vs, v)
				}
			}
		}
	}
	// The cells, the bulk of the state, are copied into one array each,
	// and each original points at its copy (twin) until the copy is
	// done: no map to look them up in.
	pslab := make([]PCell, len(c.ps))
	for i, p := range c.ps {
		pslab[i] = *p
		p.twin = &pslab[i]
	}
	vslab := make([]VCell, len(c.vs))
	for i, v := range c.vs {
		vslab[i] = *v
		v.twin = &vslab[i]
	}
	defer func() {
		for _, p := range c.ps {
			p.twin = nil
		}
		for _, v := range c.vs {
			v.twin = nil
		}
	}()
	// Groups: every one the scheduler knows, and any a cell or another
	// group still names (a victim that left the map but not its cells).
	var work []*Group
	addGroup := func(g *Group) {
		if g == nil {
			return
		}
		if _, ok := c.g[g]; ok {
			return
		}
		n := new(Group)
		*n = *g
		c.g[g] = n
		work = append(work, g)
	}
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		addGroup(s.groups[name])
	}
	for _, g := range s.demoted {
		addGroup(g)
	}
	for _, p := range c.ps {
		addGroup(p.group)
		addGroup(p.leaving)
	}
	for _, v := range c.vs {
		addGroup(v.group)
	}
	for len(work) > 0 {
		g := work[len(work)-1]
		work = work[:len(work)-1]
		for _, x := range g.victims {
			addGroup(x)
		}
		for _, x := range g.takers {
			addGroup(x)
		}
	}

	for old, n := range c.ch {
		n.types = slices.Clone(old.types)
		n.tops = c.pcells(old.tops)
		n.nodes = c.pcells(old.nodes)
		n.free = make([][]*PCell, len(old.free))
		for l, list := range old.free {
			n.free[l] = c.pcells(list)
		}
		n.vcUnused = slices.Clone(old.vcUnused)
		n.vccs = c.vccs(old.vccs)
		n.balVC = c.vcc[old.balVC]
		if old.bal != nil {
			b := *old.bal
			n.bal = &b
		}
		n.avg = slices.Clone(old.avg)
		n.pacedMemo = nil
	}
	for _, old := range c.ps {
		n := old.twin
		n.chain = c.ch[old.chain]
		n.parent = old.parent.copied()
		n.children = c.pcells(old.children)
		n.kids = nil // the copies are not side by side
		n.vcell = old.vcell.copied()
		n.speed = slices.Clone(old.speed)
		n.group = c.g[old.group]
		n.leaving = c.g[old.leaving]
	}
	for _, old := range c.vs {
		n := old.twin
		n.vcc = c.vcc[old.vcc]
		n.parent = old.parent.copied()
		n.children = c.vcells(old.children)
		n.phys = old.phys.copied()
		n.group = c.g[old.group]
	}
	for old, n := range c.vcc {
		n.vc = c.vc[old.vc]
		n.chain = c.ch[old.chain]
		n.pinned = old.pinned.copied()
		n.pre = c.vcells(old.pre)
		n.view = c.vcells(old.view)
		n.unused = slices.Clone(old.unused)
		n.reserved = slices.Clone(old.reserved)
		n.lines = slices.Clone(old.lines)
		n.fields = slices.Clone(old.fields)
	}
	for old, n := range c.vc {
		n.chains = c.vccs(old.chains)
		n.pins = c.vccs(old.pins)
		n.byPin = make(map[string]*vcChain, len(old.byPin))
		for k, x := range old.byPin {
			n.byPin[k] = c.vcc[x]
		}
	}
	for old, n := range c.g {
		n.VC = c.vc[old.VC]
		n.chain = c.ch[old.chain]
		if old.pods != nil {
			n.pods = make([][]*PCell, len(old.pods))
			for i, pod := range old.pods {
				n.pods[i] = c.pcells(pod)
			}
		}
		n.vleaves = c.vcells(old.vleaves)
		n.victims = c.groups(old.victims)
		n.takers = c.groups(old.takers)
		n.pre = slices.Clone(old.pre)
	}

	out := new(Scheduler)
	*out = *s
	out.chains = make([]*Chain, len(s.chains))
	for i, ch := range s.chains {
		out.chains[i] = c.ch[ch]
	}
	out.byChain = make(map[string]*Chain, len(s.byChain))
	for k, ch := range s.byChain {
		out.byChain[k] = c.ch[ch]
	}
	out.vcs = make([]*VC, len(s.vcs))
	for i, vc := range s.vcs {
		out.vcs[i] = c.vc[vc]
	}
	out.byVC = make(map[string]*VC, len(s.byVC))
	for k, vc := range s.byVC {
		out.byVC[k] = c.vc[vc]
	}
	out.groups = make(map[string]*Group, len(s.groups))
	for k, g := range s.groups {
		out.groups[k] = c.g[g]
	}
	out.byNode = make(map[string][]*PCell, len(s.byNode))
	for k, ps := range s.byNode {
		out.byNode[k] = c.pcells(ps)
	}
	out.nodeOrder = slices.Clone(s.nodeOrder)
	out.pinned = make(map[string]*PCell, len(s.pinned))
	for k, p := range s.pinned {
		out.pinned[k] = p.copied()
	}
	out.leafTypes = slices.Clone(s.leafTypes)
	out.leaves = c.pcells(s.leaves)
	out.sizes = sizes{maxNode: s.sizes.maxNode, vcDevices: maps.Clone(s.sizes.vcDevices), maxPod: maps.Clone(s.sizes.maxPod)}
	out.newBinds = c.vcells(s.newBinds)
	out.scratch = nil // a buffer each decision fills afresh
	out.podSizes, out.podIdx = nil, nil
	out.deferred = c.vcells(s.deferred)
	out.allowed = maps.Clone(s.allowed)
	out.cancelled = slices.Clone(s.cancelled)
	out.reprieved = slices.Clone(s.reprieved)
	out.demoted = c.groups(s.demoted)
	out.oppViews = nil // views of s's cells
	return out
}

// cloner maps each object of a scheduler to its copy: the cells through
// their twin, the rest by map.
type cloner struct {
	ps  []*PCell
	vs  []*VCell
	ch  map[*Chain]*Chain
	vcc map[*vcChain]*vcChain
	vc  map[*VC]*VC
	g   map[*Group]*Group
}

func appendPCells(out []*PCell, p *PCell) []*PCell {
	out = append(out, p)
	for _, x := range p.children {
		out = appendPCells(out, x)
	}
	return out
}

func appendVCells(out []*VCell, v *VCell) []*VCell {
	out = append(out, v)
	for _, x := range v.children {
		out = appendVCells(out, x)
	}
	return out
}

// copied is a cell's copy while Clone runs (nil for nil).
func (p *PCell) copied() *PCell {
	if p == nil {
		return nil
	}
	return p.twin
}

func (v *VCell) copied() *VCell {
	if v == nil {
		return nil
	}
	return v.twin
}

// The lists below keep nil as nil, so that a copy reads as the original.

func (c *cloner) pcells(list []*PCell) []*PCell {
	if list == nil {
		return nil
	}
	out := make([]*PCell, len(list))
	for i, p := range list {
		out[i] = p.copied()
	}
	return out
}

func (c *cloner) vcells(list []*VCell) []*VCell {
	if list == nil {
		return nil
	}
	out := make([]*VCell, len(list))
	for i, v := range list {
		out[i] = v.copied()
	}
	return out
}

func (c *cloner) vccs(list []*vcChain) []*vcChain {
	if list == nil {
		return nil
	}
	out := make([]*vcChain, len(list))
	for i, x := range list {
		out[i] = c.vcc[x]
	}
	return out
}

func (c *cloner) groups(list []*Group) []*Group {
	if list == nil {
		return nil
	}
	out := make([]*Group, len(list))
	for i, g := range list {
		out[i] = c.g[g]
	}
	return out
}
