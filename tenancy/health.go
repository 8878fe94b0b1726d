package tenancy

import (
	"fmt"
	"sort"

	"github.com/palsched/pal/internal/quote"
)

// Bad hardware comes in two kinds. A node that fails (SetNodeHealth) is
// bad whole: every device in it. A device that runs too slow to be worth
// a guarantee is quarantined (Quarantine): it is bad to every VC, as a
// failed one is (HiveD's bad cells: doomed-cell accounting binds VC
// cells to it only when healthy hardware cannot serve them), but it
// still runs: opportunistic groups may use it, and groups already on it
// stay. A device that a pod the cells did not place holds (another
// scheduler's pod, or a gang a driver runs outside the cells: SetExternal)
// is no fault, but it is as unusable to every VC as a failed one, and to
// opportunistic groups too: it is bad while held. A leaf is bad when its
// node is down, it is quarantined or it is held outside the cells; every
// cell counts its bad leaves (bad), which is all that binding, the doom
// rule and the VCs' views read.

// SetNodeHealth marks a node bad (healthy = false) or good again. Groups
// running on a node that goes bad keep their devices; new placements
// avoid it. A VC whose unbound cells can no longer all be served by
// healthy hardware gets some bound to the bad cells (HiveD's doomed-bad
// cells), so that its scheduler sees its share of the failure instead of
// a promise that cannot be kept.
func (s *Scheduler) SetNodeHealth(node string, healthy bool) error {
	cells, ok := s.byNode[node]
	if !ok {
		return fmt.Errorf("tenancy: unknown node %s", quote.Value(node))
	}
	for _, p := range cells {
		if p.down == !healthy {
			continue
		}
		p.down = !healthy
		s.viewGen++
		s.setBad(p, !healthy)
	}
	return nil
}

// Quarantine takes device gpu of node out of every VC's guarantee (on)
// or gives it back (off). It is a bad cell of one device: a VC cell
// bound over it shows it to the VC as taken, and doomed-cell accounting
// binds it to a VC only when healthy cells cannot serve that VC's
// unbound cells. Unlike a failed node, it still runs: a group on it
// stays, and opportunistic groups may be placed on it. The device is
// found in every chain that has one of that index on the node (a node
// may hold devices of several leaf types).
func (s *Scheduler) Quarantine(node string, gpu int, on bool) error {
	return s.eachLeaf(node, gpu, func(l *PCell) {
		if l.quar == on {
			return
		}
		l.quar = on
		if on {
			s.quarantined++
		} else {
			s.quarantined--
		}
		s.setBad(l, on)
	})
}

// eachLeaf calls f with each leaf cell of device gpu of node: one per
// chain that has a device of that index on the node (a node may hold
// devices of several leaf types). An unknown node or device is an error.
func (s *Scheduler) eachLeaf(node string, gpu int, f func(*PCell)) error {
	cells, ok := s.byNode[node]
	if !ok {
		return fmt.Errorf("tenancy: unknown node %s", quote.Value(node))
	}
	found := false
	for _, p := range cells {
		for _, l := range pleavesOf(p, nil) {
			if l.gpu == gpu {
				found = true
				f(l)
			}
		}
	}
	if !found {
		return fmt.Errorf("tenancy: node %s has no device %d", quote.Value(node), gpu)
	}
	return nil
}

// NumQuarantined counts the quarantined devices (a constant-time test
// for "any?" that a driver asks every round).
func (s *Scheduler) NumQuarantined() int { return s.quarantined }

// QuarantinedDevice is a device taken out of the guarantees.
type QuarantinedDevice = Device

// Quarantined lists the quarantined devices, by node then index.
func (s *Scheduler) Quarantined() []QuarantinedDevice {
	return s.devicesWhere(func(l *PCell) bool { return l.quar })
}

// devicesWhere lists the devices whose leaf f says yes to, by node then
// index.
func (s *Scheduler) devicesWhere(f func(*PCell) bool) []Device {
	var out []Device
	for _, l := range s.leaves {
		if f(l) {
			out = append(out, Device{l.node, l.gpu})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].GPU < out[j].GPU
	})
	return out
}

// SetExternal marks device gpu of node held by a pod the cells did not
// place (on: another scheduler's pod bound there, or a gang a driver
// keeps outside the cells) or free of it again (off). Such a device is
// bad to the cells as a quarantined one is: a VC cell bound over it shows
// it to the VC as taken, binding prefers cells without it, and the
// doomed-bad rule binds a VC's cells to it only when cells without bad
// hardware cannot serve that VC's unbound cells, so that the VC sees its
// share of what the other pods hold rather than a promise the cluster
// cannot keep. Unlike a quarantined device, no opportunistic group is
// placed on it either. A group of the cells already on it keeps it (the
// caller should not mark such a device). The device is found in every
// chain that has one of that index on the node.
func (s *Scheduler) SetExternal(node string, gpu int, on bool) error {
	return s.eachLeaf(node, gpu, func(l *PCell) { s.setExternal(l, on) })
}

// setExternal marks leaf l held outside the cells (on) or not.
func (s *Scheduler) setExternal(l *PCell, on bool) {
	if l.ext == on {
		return
	}
	l.ext = on
	if on {
		s.external++
	} else {
		s.external--
	}
	s.viewGen++ // opportunistic views read it
	s.setBad(l, on)
}

// NumExternal counts the devices held outside the cells (a constant-time
// test for "any?").
func (s *Scheduler) NumExternal() int { return s.external }

// External lists the devices held outside the cells, by node then index.
func (s *Scheduler) External() []Device {
	if s.external == 0 {
		return nil
	}
	return s.devicesWhere(func(l *PCell) bool { return l.ext })
}

// externalFree counts the leaves under p held outside the cells that no
// group of the cells uses: what an opportunistic view may not count free.
func externalFree(p *PCell) int {
	if p.level == 1 {
		if p.ext && p.group == nil {
			return 1
		}
		return 0
	}
	n := 0
	for _, c := range p.children {
		if c.bad > 0 {
			n += externalFree(c)
		}
	}
	return n
}

// nodeDown reports whether the node p lies in (p at or below node
// level) is marked bad, looking from p's parent up.
func nodeDown(p *PCell) bool {
	for x := p.parent; x != nil && x.level <= x.chain.NodeLevel; x = x.parent {
		if x.down {
			return true
		}
	}
	return false
}

// setBad recounts the bad leaves under p (a node-level cell or a leaf)
// after its node's or its own state changed, carries the change up, and
// puts the bindings right: worse (some leaf turned bad) shows the bad
// hardware to a VC whose bound cell holds it; better drops bindings that
// only existed to show it. The doom rule then runs on the chain.
func (s *Scheduler) setBad(p *PCell, worse bool) {
	ch := p.chain
	old := p.bad
	var mark func(c *PCell, down bool)
	mark = func(c *PCell, down bool) {
		down = down || c.down
		c.bad = 0
		if c.level == 1 {
			if down || c.quar || c.ext {
				c.bad = 1
			}
			return
		}
		for _, k := range c.children {
			mark(k, down)
			c.bad += k.bad
		}
	}
	mark(p, nodeDown(p))
	delta := p.bad - old
	if delta == 0 {
		return
	}
	for x := p.parent; x != nil; x = x.parent {
		x.bad += delta
	}
	ch.bad += delta
	if worse {
		// A bound ancestor must show the bad hardware to its VC.
		for x := p.parent; x != nil; x = x.parent {
			if x.vcell != nil && p.vcell == nil {
				s.newBinds = s.newBinds[:0]
				s.fixBad(x)
				break
			}
		}
	} else {
		// Bindings that only existed to show the failure go.
		for x := p; x != nil; x = x.parent {
			if v := x.vcell; v != nil && v.used == 0 && x.bad == 0 {
				s.unbindUp(v)
				break
			}
		}
		// What is still bad under a bound cell stays shown (a node back
		// up with a quarantined device in it).
		for x := p; x != nil; x = x.parent {
			if x.vcell != nil {
				if x.bad > 0 {
					s.newBinds = s.newBinds[:0]
					s.fixBad(x)
				}
				break
			}
		}
	}
	s.doomCheck(ch)
}

// BadNodes lists the nodes currently marked bad, sorted.
func (s *Scheduler) BadNodes() []string {
	var out []string
	for n, cells := range s.byNode {
		if len(cells) > 0 && cells[0].down {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// doomCheck keeps each VC's unbound cells servable: per level, when a VC
// has more unbound cells than the free lists can serve with healthy
// hardware, the excess is bound to bad free cells; when healthy capacity
// returns, such bindings are dropped. The check is per VC, as in HiveD.
func (s *Scheduler) doomCheck(ch *Chain) {
	if ch.bad == 0 && ch.doomed == 0 {
		return
	}
	for l := ch.Top(); l >= 1; l-- {
		for _, vcc := range ch.vccs {
			if vcc.reserved[l] == 0 {
				continue
			}
			ho := ch.healthyObtainable(l)
			for vcc.unused[l]+1 <= ho {
				d := doomedAt(vcc, l)
				if d == nil {
					break
				}
				s.unbindTree(d)
				ho = ch.healthyObtainable(l)
			}
			for vcc.unused[l] > ho {
				var v *VCell
				for _, pre := range vcc.pre {
					if pre.level == l && pre.phys == nil {
						v = pre
						break
					}
				}
				if v == nil {
					break
				}
				p := ch.buddyAlloc(l, doomAlloc)
				if p == nil {
					break
				}
				s.newBinds = s.newBinds[:0]
				s.bindPre(v, p)
				v.doomed = true
				ch.doomed++
				ho = ch.healthyObtainable(l)
			}
		}
	}
}

func doomedAt(vcc *vcChain, l int) *VCell {
	for _, pre := range vcc.pre {
		if pre.level == l && pre.doomed && pre.used == 0 {
			return pre
		}
	}
	return nil
}

// DoomedCells counts, per VC name, the VC cells bound to bad hardware
// (by the doomed-bad rule or inside a bound cell) that no group uses.
func (s *Scheduler) DoomedCells() map[string]int {
	out := map[string]int{}
	for _, vc := range s.vcs {
		n := 0
		for _, vcc := range vc.chains {
			for _, v := range vcc.view {
				if v.phys != nil && v.phys.bad > 0 && v.used == 0 {
					n++
				}
			}
		}
		if n > 0 {
			out[vc.Name] = n
		}
	}
	return out
}
