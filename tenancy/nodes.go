package tenancy

// A decision may be restricted to some nodes (Request.Nodes): on
// Kubernetes, the nodes a pod may run on (its node selector, affinity,
// taints and resources allow them; HiveD's "suggested nodes"). The VC's
// placement then prefers view nodes bound to allowed nodes and fails
// rather than use another, and binding searches, backtracking over the
// free cells as HiveD does, for physical cells whose nodes the placement
// needs are all allowed. A group that already runs keeps its nodes
// whatever a later request says.

// allowedNode reports whether the decision under way may use node.
func (s *Scheduler) allowedNode(node string) bool {
	return s.allowed == nil || s.allowed[node]
}

// restrict sets the nodes of the decision under way (nil: all); the
// returned function lifts the restriction.
func (s *Scheduler) restrict(nodes []string) func() {
	if nodes == nil {
		s.allowed = nil
		return func() {}
	}
	s.allowed = make(map[string]bool, len(nodes))
	for _, n := range nodes {
		s.allowed[n] = true
	}
	return func() { s.allowed = nil }
}

// vnodeAllowed reports whether a view node (a virtual cell at or below
// node level) may take new pods: it is unbound (binding will look for an
// allowed node), or bound inside an allowed node.
func (s *Scheduler) vnodeAllowed(v *VCell) bool {
	return v.phys == nil || s.allowedNode(v.phys.node)
}

// canHost reports whether the unbound virtual cell v may be bound to the
// physical cell p so that every node-level cell under v holding a leaf
// of the decision under way (marked in this epoch) lands on a healthy,
// allowed node: a backtracking match of v's needed children onto p's
// unbound children, level by level (HiveD's mapVirtualCellsToPhysical).
func (s *Scheduler) canHost(v *VCell, p *PCell) bool {
	if p.vcell != nil {
		return p.vcell == v
	}
	if !s.chosen(v) {
		return true
	}
	if p.level <= p.chain.NodeLevel {
		return p.bad == 0 && s.allowedNode(p.node)
	}
	var need []*VCell
	for _, c := range v.children {
		if s.chosen(c) {
			need = append(need, c)
		}
	}
	return s.match(need, p.children, make([]bool, len(p.children)))
}

// match assigns each of vs a distinct unused one of ps that can host it.
func (s *Scheduler) match(vs []*VCell, ps []*PCell, used []bool) bool {
	if len(vs) == 0 {
		return true
	}
	for i, p := range ps {
		if used[i] || !s.canHost(vs[0], p) {
			continue
		}
		used[i] = true
		if s.match(vs[1:], ps, used) {
			used[i] = false
			return true
		}
		used[i] = false
	}
	return false
}

// restrictedAlloc is buddy allocation for the preassigned cell v under a
// node restriction: the first free cell, from level v.level up and in the
// free lists' preference order (better), with a descendant at v's level
// that can host v (canHost), searching each candidate's subtree depth
// first in the same order. A split from a level above v's is allowed only
// when it keeps the full safety invariant (as buddyAlloc's relaxed split).
func (s *Scheduler) restrictedAlloc(v *VCell) *PCell {
	c := v.vcc.chain
	k := v.level
	if c.balVC != nil {
		c.bal = balanceFor(c.balVC)
		defer func() { c.bal = nil }()
	}
	for j := k; j <= c.Top(); j++ {
		for _, cand := range preferred(c.free[j], func(p *PCell) bool { return c.gives(p, healthyAlloc, k) }) {
			t := s.descend(cand, v)
			if t == nil {
				continue
			}
			if j > k && !c.safeSplit(k, j) {
				return nil
			}
			c.takeSpecific(t)
			return t
		}
	}
	return nil
}

// descend finds, under p, an unbound cell at v's level that can host v,
// children in preference order.
func (s *Scheduler) descend(p *PCell, v *VCell) *PCell {
	if p.level == v.level {
		if s.canHost(v, p) {
			return p
		}
		return nil
	}
	for _, c := range preferred(p.children, func(q *PCell) bool { return q.vcell == nil && p.chain.gives(q, healthyAlloc, v.level) }) {
		if t := s.descend(c, v); t != nil {
			return t
		}
	}
	return nil
}

// preferred lists the cells ok accepts, best first (better; ties keep
// list order).
func preferred(list []*PCell, ok func(*PCell) bool) []*PCell {
	var out []*PCell
	for _, p := range list {
		if !ok(p) {
			continue
		}
		i := len(out)
		for i > 0 && better(p, out[i-1]) {
			i--
		}
		out = append(out, nil)
		copy(out[i+1:], out[i:])
		out[i] = p
	}
	return out
}
