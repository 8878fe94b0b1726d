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
		p:   make(map[*PCell]*PCell),
		v:   make(map[*VCell]*VCell),
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
			c.newPCells(t)
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
					c.newVCells(v)
				}
			}
		}
	}
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
	for p := range c.p {
		addGroup(p.group)
		addGroup(p.leaving)
	}
	for v := range c.v {
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
	}
	for old, n := range c.p {
		n.chain = c.ch[old.chain]
		n.parent = c.p[old.parent]
		n.children = c.pcells(old.children)
		n.vcell = c.v[old.vcell]
		n.speed = slices.Clone(old.speed)
		n.group = c.g[old.group]
		n.leaving = c.g[old.leaving]
	}
	for old, n := range c.v {
		n.vcc = c.vcc[old.vcc]
		n.parent = c.v[old.parent]
		n.children = c.vcells(old.children)
		n.phys = c.p[old.phys]
		n.group = c.g[old.group]
	}
	for old, n := range c.vcc {
		n.vc = c.vc[old.vc]
		n.chain = c.ch[old.chain]
		n.pinned = c.p[old.pinned]
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
		out.pinned[k] = c.p[p]
	}
	out.leafTypes = slices.Clone(s.leafTypes)
	out.leaves = c.pcells(s.leaves)
	out.sizes = sizes{maxNode: s.sizes.maxNode, vcDevices: maps.Clone(s.sizes.vcDevices), maxPod: maps.Clone(s.sizes.maxPod)}
	out.newBinds = c.vcells(s.newBinds)
	out.scratch = nil // a buffer each decision fills afresh
	out.deferred = c.vcells(s.deferred)
	out.allowed = maps.Clone(s.allowed)
	out.cancelled = slices.Clone(s.cancelled)
	out.reprieved = slices.Clone(s.reprieved)
	out.demoted = c.groups(s.demoted)
	return out
}

// cloner maps each object of a scheduler to its copy.
type cloner struct {
	ch  map[*Chain]*Chain
	p   map[*PCell]*PCell
	v   map[*VCell]*VCell
	vcc map[*vcChain]*vcChain
	vc  map[*VC]*VC
	g   map[*Group]*Group
}

func (c *cloner) newPCells(p *PCell) {
	n := new(PCell)
	*n = *p
	c.p[p] = n
	for _, x := range p.children {
		c.newPCells(x)
	}
}

func (c *cloner) newVCells(v *VCell) {
	n := new(VCell)
	*n = *v
	c.v[v] = n
	for _, x := range v.children {
		c.newVCells(x)
	}
}

// The lists below keep nil as nil, so that a copy reads as the original.

func (c *cloner) pcells(list []*PCell) []*PCell {
	if list == nil {
		return nil
	}
	out := make([]*PCell, len(list))
	for i, p := range list {
		out[i] = c.p[p]
	}
	return out
}

func (c *cloner) vcells(list []*VCell) []*VCell {
	if list == nil {
		return nil
	}
	out := make([]*VCell, len(list))
	for i, v := range list {
		out[i] = c.v[v]
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
