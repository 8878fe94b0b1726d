package tenancy

import (
	"fmt"
	"slices"
	"sort"
)

// Lazily preempted groups and reconfiguration share one step, adopt: a
// group that runs on some devices finds its VC's cells over them again,
// as HiveD re-reads an allocated pod's placement after a restart. Each
// device's leaf is found under the VC cell of the type it was placed in
// (Group.pre): a physical ancestor already bound to that VC's view is
// used as bound; an unbound one takes an unbound VC cell of the type,
// when buddy allocation can hand that exact cell out without breaking
// safety (the full invariant). Below it, each level takes an unbound
// virtual child. All or nothing: on any failure every binding made is
// undone.

// adopt maps a running group's devices onto its VC's cells and makes it
// guaranteed again at its own priority; false, with nothing changed, when
// its VC cannot take it (the cells are used, reshaped or gone).
func (s *Scheduler) adopt(g *Group) bool {
	vc := g.VC
	if vc == nil || len(g.pre) == 0 {
		return false
	}
	type link1 struct {
		v   *VCell
		p   *PCell
		pre bool // a preassigned cell taken out of the buddy system
	}
	var made []link1
	undo := func() {
		for i := len(made) - 1; i >= 0; i-- {
			m := made[i]
			unlink(m.p)
			m.v.phys = nil
			if m.pre {
				m.v.vcc.unused[m.v.level]++
				m.v.vcc.chain.vcUnused[m.v.level]++
				m.v.vcc.chain.releaseFree(m.p)
			}
		}
	}
	var leaves []*VCell
	i := 0
	for _, pod := range g.pods {
		for _, p := range pod {
			typ := g.pre[i]
			i++
			v := s.adoptLeaf(g, vc, p, typ, func(v *VCell, p *PCell, pre bool) { made = append(made, link1{v, p, pre}) })
			if v == nil || v.group != nil || slices.Contains(leaves, v) {
				undo()
				return false
			}
			leaves = append(leaves, v)
		}
	}
	s.viewGen++
	for _, pod := range g.pods {
		for _, p := range pod {
			for x := p; x != nil; x = x.parent {
				x.opp--
			}
		}
	}
	for _, v := range leaves {
		holdVirtual(g, v)
	}
	g.vleaves = leaves
	g.Priority = g.origPriority
	g.Demoted = false
	return true
}

// adoptLeaf finds (binding what it must, reported through made) the VC
// leaf of g's device p under a VC cell of type typ, or nil.
func (s *Scheduler) adoptLeaf(g *Group, vc *VC, p *PCell, typ string, made func(*VCell, *PCell, bool)) *VCell {
	ch := p.chain
	level := 0
	for l := 1; l <= ch.Top(); l++ {
		if ch.types[l].name == typ {
			level = l
		}
	}
	if level == 0 {
		return nil // the type is not in the device's chain any more
	}
	var vcc *vcChain
	if g.pinned != "" {
		vcc = vc.byPin[g.pinned]
	} else {
		for _, c := range vc.chains {
			if c.chain == ch {
				vcc = c
			}
		}
	}
	if vcc == nil {
		return nil
	}
	a := p
	for a != nil && a.level < level {
		a = a.parent
	}
	if a == nil || a.level != level {
		return nil
	}
	var va *VCell
	switch {
	case a.vcell != nil:
		if a.vcell.vcc != vcc {
			return nil // bound to another VC, or another view of this one
		}
		va = a.vcell
	default:
		if vcc.pinned != nil {
			return nil // a pinned cell is bound for good
		}
		for _, pre := range vcc.pre {
			if pre.level == level && pre.phys == nil {
				va = pre
				break
			}
		}
		if va == nil || !ch.available(a) {
			return nil
		}
		j := a.level
		for x := a; !x.inFree; x = x.parent {
			j = x.parent.level
		}
		if !ch.safeSplit(level, j) {
			return nil
		}
		ch.takeSpecific(a)
		link(va, a)
		vcc.unused[level]--
		ch.vcUnused[level]--
		made(va, a, true)
	}
	// Down to the device: each level keeps what is bound, or takes an
	// unbound, unused virtual child.
	var path []*PCell
	for x := p; x != a; x = x.parent {
		path = append(path, x)
	}
	v := va
	for k := len(path) - 1; k >= 0; k-- {
		c := path[k]
		if c.vcell != nil {
			if c.vcell.parent != v {
				return nil
			}
			v = c.vcell
			continue
		}
		var pick *VCell
		for _, vch := range v.children {
			if vch.phys == nil && vch.used == 0 {
				pick = vch
				break
			}
		}
		if pick == nil {
			return nil
		}
		link(pick, c)
		made(pick, c, false)
		v = pick
	}
	return v
}

// revertDemoted makes lazily preempted groups guaranteed again, oldest
// first, when their VC's cells over their devices are free once more.
func (s *Scheduler) revertDemoted() []string {
	var ds []*Group
	keep := s.demoted[:0]
	for _, g := range s.demoted {
		if !g.Demoted || s.groups[g.Name] != g {
			g.inDemoted = false
			continue
		}
		keep = append(keep, g)
		if g.state == running {
			ds = append(ds, g)
		}
	}
	clear(s.demoted[len(keep):])
	s.demoted = keep
	if len(ds) == 0 {
		return nil
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].seq < ds[j].seq })
	var out []string
	for _, g := range ds {
		if s.adopt(g) {
			out = append(out, g.Name)
			s.doomCheck(g.chain)
		}
	}
	return out
}

// noteDemoted lists g among the demoted groups (see Scheduler.demoted).
func (s *Scheduler) noteDemoted(g *Group) {
	if !g.inDemoted {
		g.inDemoted = true
		s.demoted = append(s.demoted, g)
	}
}

// Reconfig is what a reconfiguration did to the groups that ran.
type Reconfig struct {
	// Kept: guaranteed groups that found their VC's cells in the new
	// config; Demoted: guaranteed groups that did not, lazily preempted
	// (they run on as opportunistic until their devices are needed);
	// Reverted: groups lazily preempted before that are guaranteed again.
	Kept, Demoted, Reverted []string
	// Opportunistic groups carried over as they were.
	Opportunistic []string
	// Cancelled: preemptions in progress, dropped (their victims run on;
	// ask for the preemptors again). Gone: groups none of whose devices
	// the new config has; they are no longer tracked.
	Cancelled, Gone []string
	// Dropped: devices of carried groups that the new config does not
	// have ("node/index"), left out of the groups.
	Dropped []string
}

// Reconfigure builds the state of a new config with the running groups
// carried over, as HiveD does when it restarts with a changed config:
// every group keeps the devices it runs on; a guaranteed group that still
// fits its VC keeps its cells (adopt), one that no longer fits is lazily
// preempted, never killed. Groups are carried in the order they were
// created, guaranteed ones first, then lazily preempted ones (which
// become guaranteed again where their cells are free) and opportunistic
// ones. Bad nodes (set after the groups are carried), stateful
// preemption and speeds carry over. An
// infeasible config is an error, with file, line and field, and the
// receiver is left as it was: the caller keeps using it.
func (s *Scheduler) Reconfigure(cfg *Config) (*Scheduler, Reconfig, error) {
	var rep Reconfig
	n, err := New(cfg)
	if err != nil {
		return nil, rep, err
	}
	for _, vc := range s.vcs {
		for _, vcc := range vc.chains {
			for _, v := range vcc.pre {
				if v.static {
					return nil, rep, fmt.Errorf("tenancy: reconfiguration under static binding is not supported")
				}
			}
		}
	}
	n.stateful = s.stateful
	n.balance = s.balance
	if s.speedFn != nil {
		n.SetSpeeds(s.classes, s.speedFn)
	}
	type devKey struct {
		node, leaf string
		gpu        int
	}
	byDev := map[devKey]*PCell{}
	for _, p := range n.leaves {
		byDev[devKey{p.node, p.chain.LeafType, p.gpu}] = p
	}
	old := make([]*Group, 0, len(s.groups))
	for _, g := range s.groups {
		old = append(old, g)
	}
	rank := func(g *Group) int {
		switch {
		case g.Priority != Opportunistic:
			return 0
		case g.Demoted:
			return 1
		}
		return 2
	}
	sort.Slice(old, func(i, j int) bool {
		if a, b := rank(old[i]), rank(old[j]); a != b {
			return a < b
		}
		return old[i].seq < old[j].seq
	})
	for _, g := range old {
		if g.state == preempting {
			rep.Cancelled = append(rep.Cancelled, g.Name)
			continue
		}
		ng := &Group{Name: g.Name, Priority: g.Priority, Lazy: g.Lazy, Demoted: g.Demoted, origPriority: g.origPriority,
			seq: g.seq, pinned: g.pinned, VC: n.byVC[g.VC.Name]}
		k := 0
		for _, pod := range g.pods {
			var np []*PCell
			for _, p := range pod {
				q := byDev[devKey{p.node, p.chain.LeafType, p.gpu}]
				if q == nil || q.group != nil {
					rep.Dropped = append(rep.Dropped, fmt.Sprintf("%s/%d", p.node, p.gpu))
				} else {
					np = append(np, q)
					if k < len(g.pre) {
						ng.pre = append(ng.pre, g.pre[k])
					}
				}
				k++
			}
			if len(np) > 0 {
				ng.pods = append(ng.pods, np)
			}
		}
		if len(ng.pods) == 0 {
			rep.Gone = append(rep.Gone, g.Name)
			continue
		}
		if len(ng.pre) != countDevices(ng.pods) {
			ng.pre = nil // an opportunistic group's devices have no VC cells
		}
		ng.chain = ng.pods[0][0].chain
		// Carried as opportunistic first; adopt makes it guaranteed.
		guaranteed := ng.Priority != Opportunistic
		ng.Priority = Opportunistic
		for _, pod := range ng.pods {
			for _, p := range pod {
				n.use(ng, nil, p)
			}
		}
		n.groups[ng.Name] = ng
		n.seq = max(n.seq, ng.seq)
		switch {
		case (guaranteed || g.Demoted) && n.adopt(ng):
			if g.Demoted {
				rep.Reverted = append(rep.Reverted, ng.Name)
			} else {
				rep.Kept = append(rep.Kept, ng.Name)
			}
		case guaranteed:
			ng.Demoted = true
			rep.Demoted = append(rep.Demoted, ng.Name)
		case !g.Demoted:
			rep.Opportunistic = append(rep.Opportunistic, ng.Name)
		}
		if ng.Demoted {
			n.noteDemoted(ng)
		}
	}
	// Bad nodes last: a VC's cells doomed to bad hardware take what the
	// groups left.
	for _, node := range s.BadNodes() {
		if _, ok := n.byNode[node]; ok {
			if err := n.SetNodeHealth(node, false); err != nil {
				return nil, rep, err
			}
		}
	}
	// Quarantined devices stay so where the new cells have them.
	for _, q := range s.Quarantined() {
		if _, ok := n.byNode[q.Node]; ok {
			_ = n.Quarantine(q.Node, q.GPU, true) // a device the new cells lack is dropped
		}
	}
	// So do devices held outside the cells.
	for _, d := range s.External() {
		if _, ok := n.byNode[d.Node]; ok {
			_ = n.SetExternal(d.Node, d.GPU, true) // a device the new cells lack is dropped
		}
	}
	for _, ch := range n.chains {
		n.doomCheck(ch)
	}
	for _, l := range [][]string{rep.Kept, rep.Demoted, rep.Reverted, rep.Opportunistic, rep.Cancelled, rep.Gone} {
		sort.Strings(l)
	}
	return n, rep, nil
}

func countDevices(pods [][]*PCell) int {
	n := 0
	for _, pod := range pods {
		n += len(pod)
	}
	return n
}
