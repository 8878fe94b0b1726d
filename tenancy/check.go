package tenancy

import (
	"fmt"
	"slices"

	"github.com/palsched/pal/internal/quote"
)

// Check verifies sharing safety and the consistency of the whole state:
//
//   - safety: splittable[l] ≥ 0 on every chain and level (the full
//     recursive form), which implies HiveD's
//     per-level totalLeft[l] ≥ allVCFree[l];
//   - buddy system: free cells are unbound, unsplit, not inside another
//     free cell, and free buddies are merged; every device is in exactly
//     one of: a free cell, a bound cell, or a pinned cell;
//   - bindings: virtual and physical cells point at each other, levels
//     match, children of a bound cell bind only inside it, and the
//     unbound-cell counts match;
//   - usage: no device is held by two groups, every count of used,
//     opportunistic and bad devices matches a recount, a guaranteed
//     group's VC leaves are bound to exactly its devices, and a gang holds
//     all of its pods.
//
// It costs time linear in the cluster, so tests call it after every step
// and `pal sim --check-invariants` every round.
func (s *Scheduler) Check() error {
	for _, ch := range s.chains {
		sp := ch.splittable()
		for l := 1; l <= ch.Top(); l++ {
			if sp[l] < 0 {
				return fmt.Errorf("safety broken: chain %s level %d (%s): splittable %d", ch.Name, l, ch.types[l].name, sp[l])
			}
			if ob := ch.obtainable(l); ob < ch.vcUnusedFrom(l) {
				return fmt.Errorf("safety broken: chain %s level %d: obtainable %d < VC demand %d", ch.Name, l, ob, ch.vcUnusedFrom(l))
			}
		}
		if err := s.checkBuddy(ch); err != nil {
			return err
		}
		unused := make([]int, ch.Top()+1)
		for _, vcc := range ch.vccs {
			u := make([]int, ch.Top()+1)
			for _, v := range vcc.pre {
				if v.phys == nil {
					u[v.level]++
				}
				if err := checkVTree(v, nil); err != nil {
					return fmt.Errorf("VC %s chain %s: %w", vcc.vc.Name, ch.Name, err)
				}
			}
			for l := range u {
				if u[l] != vcc.unused[l] {
					return fmt.Errorf("VC %s chain %s level %d: %d unbound cells counted, %d found", vcc.vc.Name, ch.Name, l, vcc.unused[l], u[l])
				}
				unused[l] += u[l]
			}
		}
		for l := range unused {
			if unused[l] != ch.vcUnused[l] {
				return fmt.Errorf("chain %s level %d: %d unbound VC cells counted, %d found", ch.Name, l, ch.vcUnused[l], unused[l])
			}
		}
	}
	// Each device is bad exactly while its node is down, it is
	// quarantined or it is held outside the cells.
	ext := 0
	for _, l := range s.leaves {
		want := 0
		if l.down || nodeDown(l) || l.quar || l.ext {
			want = 1
		}
		if l.bad != want {
			return fmt.Errorf("device %s counts bad %d, its node's health, quarantine and outside holders say %d", l.Addr, l.bad, want)
		}
		if l.ext {
			ext++
		}
	}
	if ext != s.external {
		return fmt.Errorf("%d devices held outside the cells counted, %d found", s.external, ext)
	}
	for _, vc := range s.vcs {
		for _, vcc := range vc.pins {
			if err := checkVTree(vcc.pre[0], nil); err != nil {
				return fmt.Errorf("VC %s pinned %s: %w", vc.Name, vcc.pinnedID, err)
			}
			if vcc.pre[0].phys != vcc.pinned {
				return fmt.Errorf("VC %s: pinned cell %s not bound to its physical cell", vc.Name, vcc.pinnedID)
			}
		}
	}
	// Usage: recount from the groups.
	held := map[*PCell]*Group{}
	for name, g := range s.groups {
		if g.Name != name {
			return fmt.Errorf("group %s filed as %s", quote.Value(g.Name), quote.Value(name))
		}
		if err := s.checkGroup(g, held); err != nil {
			return err
		}
	}
	for _, p := range s.leaves {
		if p.group != nil && held[p] != p.group {
			return fmt.Errorf("device %s names group %s, which does not hold it", p.Addr, p.group.Name)
		}
		if o := p.leaving; o != nil {
			if p.group == nil || p.group.state != preempting || !slices.Contains(p.group.victims, o) {
				return fmt.Errorf("device %s: victim %s leaves it for a group that does not wait for it", p.Addr, o.Name)
			}
			if s.groups[o.Name] != o || o.state != leaving || !slices.Contains(o.takers, p.group) {
				return fmt.Errorf("device %s: victim %s is not leaving for %s", p.Addr, o.Name, p.group.Name)
			}
		}
	}
	for _, ch := range s.chains {
		for _, t := range ch.tops {
			if _, _, _, err := recount(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// vcUnusedFrom is the demand at level l from unbound VC cells at l and above.
func (c *Chain) vcUnusedFrom(l int) int {
	n := 0
	for x := l; x <= c.Top(); x++ {
		n += c.vcUnused[x] * c.within(x, l)
	}
	return n
}

func (s *Scheduler) checkBuddy(ch *Chain) error {
	for l := 1; l <= ch.Top(); l++ {
		for i, p := range ch.free[l] {
			switch {
			case p.level != l:
				return fmt.Errorf("chain %s: level-%d cell %s on the level-%d free list", ch.Name, p.level, p.Addr, l)
			case !p.inFree || p.freeIdx != i:
				return fmt.Errorf("chain %s: free cell %s has a stale list position", ch.Name, p.Addr)
			case p.vcell != nil:
				return fmt.Errorf("chain %s: free cell %s is bound", ch.Name, p.Addr)
			case p.split:
				return fmt.Errorf("chain %s: free cell %s is split", ch.Name, p.Addr)
			case p.parent != nil && !p.parent.split:
				return fmt.Errorf("chain %s: free cell %s sits in an unsplit parent", ch.Name, p.Addr)
			}
			if p.parent != nil {
				all := true
				for _, b := range p.parent.children {
					all = all && b.inFree
				}
				if all {
					return fmt.Errorf("chain %s: free buddies under %s were not merged", ch.Name, p.parent.Addr)
				}
			}
		}
	}
	// Every top cell is covered exactly: split cells divide into children,
	// the rest are free, bound, or pinned.
	var walk func(p *PCell) error
	walk = func(p *PCell) error {
		if p.split {
			if p.inFree || p.vcell != nil {
				return fmt.Errorf("chain %s: split cell %s is free or bound", ch.Name, p.Addr)
			}
			for _, c := range p.children {
				if err := walk(c); err != nil {
					return err
				}
			}
			return nil
		}
		if !p.inFree && p.vcell == nil {
			return fmt.Errorf("chain %s: cell %s is neither free, split nor bound", ch.Name, p.Addr)
		}
		if p.inFree && p.vcell != nil {
			return fmt.Errorf("chain %s: cell %s is free and bound", ch.Name, p.Addr)
		}
		return nil
	}
	// Bindings point both ways: a physical cell's virtual cell is bound to
	// it and to no other (checkVTree sees only the virtual side).
	var back func(p *PCell) error
	back = func(p *PCell) error {
		if v := p.vcell; v != nil && v.phys != p {
			other := "nothing"
			if v.phys != nil {
				other = v.phys.Addr
			}
			return fmt.Errorf("chain %s: cell %s is bound to a level-%d virtual cell bound to %s", ch.Name, p.Addr, v.level, other)
		}
		var mask uint64
		for i, c := range p.children {
			if c.pos != i {
				return fmt.Errorf("chain %s: cell %s is child %d of %s but says %d", ch.Name, c.Addr, i, p.Addr, c.pos)
			}
			if c.vcell != nil && i < 64 {
				mask |= 1 << i
			}
			if err := back(c); err != nil {
				return err
			}
		}
		if mask != p.bound {
			return fmt.Errorf("chain %s: cell %s marks children %#b bound, %#b are", ch.Name, p.Addr, p.bound, mask)
		}
		return nil
	}
	for _, t := range ch.tops {
		if err := walk(t); err != nil {
			return err
		}
		if err := back(t); err != nil {
			return err
		}
	}
	return nil
}

// checkVTree checks the bindings under a virtual cell and its used counts.
func checkVTree(v *VCell, parent *VCell) error {
	if v.parent != parent {
		return fmt.Errorf("virtual cell with a wrong parent")
	}
	if p := v.phys; p != nil {
		if p.vcell != v || p.level != v.level {
			return fmt.Errorf("binding of a level-%d virtual cell is not mutual", v.level)
		}
		if v.parent != nil {
			if v.parent.phys == nil || p.parent != v.parent.phys {
				return fmt.Errorf("level-%d virtual cell bound outside its parent's physical cell %s", v.level, p.Addr)
			}
		}
	} else {
		for _, c := range v.children {
			if c.phys != nil {
				return fmt.Errorf("level-%d virtual cell unbound but its child is bound", v.level)
			}
		}
		if v.used > 0 {
			return fmt.Errorf("level-%d virtual cell in use but unbound", v.level)
		}
	}
	if v.level == 1 {
		want := 0
		if v.group != nil {
			want = 1
		}
		if v.used != want {
			return fmt.Errorf("virtual leaf used count %d, want %d", v.used, want)
		}
		return nil
	}
	n := 0
	for _, c := range v.children {
		if err := checkVTree(c, v); err != nil {
			return err
		}
		n += c.used
	}
	if n != v.used {
		return fmt.Errorf("level-%d virtual cell used count %d, recount %d", v.level, v.used, n)
	}
	return nil
}

func recount(p *PCell) (used, opp, bad int, err error) {
	if p.level == 1 {
		if p.group != nil {
			used = 1
			if p.group.Priority == Opportunistic {
				opp = 1
			}
		}
		bad = p.bad
	} else {
		for _, c := range p.children {
			u, o, b, e := recount(c)
			if e != nil {
				return 0, 0, 0, e
			}
			used, opp, bad = used+u, opp+o, bad+b
		}
	}
	if used != p.used || opp != p.opp || bad != p.bad {
		return 0, 0, 0, fmt.Errorf("cell %s counts used/opp/bad %d/%d/%d, recount %d/%d/%d", p.Addr, p.used, p.opp, p.bad, used, opp, bad)
	}
	return used, opp, bad, nil
}

// checkGroup checks one group's devices and VC leaves, and its part in a
// preemption. held collects who holds each device.
func (s *Scheduler) checkGroup(g *Group, held map[*PCell]*Group) error {
	name := g.Name
	n, lent := 0, 0
	i := 0
	for _, pod := range g.pods {
		if len(pod) == 0 {
			return fmt.Errorf("group %s: a pod holds no devices", name)
		}
		for _, p := range pod {
			if p.node != pod[0].node {
				return fmt.Errorf("group %s: a pod spans nodes %s and %s", name, pod[0].node, p.node)
			}
			var v *VCell
			if i < len(g.vleaves) {
				v = g.vleaves[i]
			}
			i++
			if p.group != g {
				// A leaving group's device a preemptor holds: its leaf, if
				// it had one, is the preemptor's now.
				if g.state != leaving || p.leaving != g {
					return fmt.Errorf("device %s: group %s not recorded on it", p.Addr, name)
				}
				if v != nil && v.group == g {
					return fmt.Errorf("group %s: lent device %s still has its VC leaf", name, p.Addr)
				}
				lent++
				continue
			}
			if other := held[p]; other != nil {
				return fmt.Errorf("device %s held by %s and %s", p.Addr, other.Name, name)
			}
			held[p] = g
			n++
			if g.Priority != Opportunistic && (v == nil || v.group != g || v.phys != p || v.vcc.vc != g.VC) {
				return fmt.Errorf("group %s: VC leaf not bound to its device %s", name, p.Addr)
			}
		}
	}
	switch g.state {
	case running:
		if lent > 0 || len(g.victims) > 0 || len(g.takers) > 0 {
			return fmt.Errorf("running group %s has a part in a preemption", name)
		}
	case leaving:
		if lent == 0 || len(g.takers) == 0 {
			return fmt.Errorf("group %s is leaving for no one", name)
		}
	case preempting:
		if g.Priority == Opportunistic || len(g.takers) > 0 {
			return fmt.Errorf("group %s cannot preempt", name)
		}
		for _, v := range g.victims {
			found := false
			for _, pod := range g.pods {
				found = found || slices.ContainsFunc(pod, func(p *PCell) bool { return p.leaving == v })
			}
			if !found {
				return fmt.Errorf("group %s waits for victim %s on none of its devices", name, v.Name)
			}
		}
	}
	if g.Priority == Opportunistic {
		if len(g.vleaves) != 0 {
			return fmt.Errorf("opportunistic group %s holds VC cells", name)
		}
		return nil
	}
	if len(g.vleaves) != n+lent {
		return fmt.Errorf("group %s: %d devices but %d VC leaves", name, n+lent, len(g.vleaves))
	}
	return nil
}
