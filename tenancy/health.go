package tenancy

import (
	"fmt"
	"sort"
)

// SetNodeHealth marks a node bad (healthy = false) or good again. Groups
// running on a node that goes bad keep their devices; new placements
// avoid it. A VC whose unbound cells can no longer all be served by
// healthy hardware gets some bound to the bad cells (HiveD's doomed-bad
// cells), so that its scheduler sees its share of the failure instead of
// a promise that cannot be kept.
func (s *Scheduler) SetNodeHealth(node string, healthy bool) error {
	cells, ok := s.byNode[node]
	if !ok {
		return fmt.Errorf("tenancy: unknown node %q", node)
	}
	for _, p := range cells {
		ch := p.chain
		wasBad := p.bad > 0
		if wasBad == !healthy {
			continue
		}
		delta := p.leaves
		if healthy {
			delta = -p.bad
		}
		var mark func(c *PCell)
		mark = func(c *PCell) {
			if c.level == 1 {
				if healthy {
					c.bad = 0
				} else {
					c.bad = 1
				}
				return
			}
			c.bad = 0
			for _, k := range c.children {
				mark(k)
				c.bad += k.bad
			}
		}
		mark(p)
		for x := p.parent; x != nil; x = x.parent {
			x.bad += delta
		}
		ch.bad += delta
		if !healthy {
			// A bound ancestor must show the bad node to its VC.
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
		}
		s.doomCheck(ch)
	}
	return nil
}

// BadNodes lists the nodes currently marked bad, sorted.
func (s *Scheduler) BadNodes() []string {
	var out []string
	for n, cells := range s.byNode {
		if len(cells) > 0 && cells[0].bad > 0 {
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
