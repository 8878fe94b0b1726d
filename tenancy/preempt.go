package tenancy

import (
	"slices"
	"sort"
)

// Stateful preemption, as HiveD does it (SetStateful). A guaranteed group
// whose placement needs devices that other groups still run on does not
// run at once: it becomes preempting. It holds its cells from that moment
// (they are reserved: nothing else is placed there, since they count as
// used at its priority), and the groups on them are its victims, told to
// leave (whole gangs, as HiveD preempts). A victim runs on until the driver
// releases it (its termination: on Kubernetes the pods' deletion, in the
// simulator its preemption cost in time); its devices outside the
// preemptor's placement stay its own until then. Once every victim has
// left, asking for the group again (Schedule, or Commit with the same
// leaves) places it on the devices it reserved. A higher-priority group
// whose placement overlaps a preempting one overrides it: the preemption
// is cancelled, its devices go back to the victims still on them (which
// may then run on: they are reprieved), and the new group preempts in its
// turn. A preemptor that no longer needs its cells (Release, or a request
// whose allowed nodes no longer hold them) cancels the same way.

// groupState is where a group stands in a preemption.
type groupState uint8

const (
	// running: the group holds its devices (p.group) and runs on them.
	running groupState = iota
	// preempting: the group holds its devices (p.group) but does not run;
	// the victims still on some of them are marked p.leaving.
	preempting
	// leaving: the group was told to leave and runs on until released;
	// preemptors hold some of its devices (p.group is the preemptor,
	// p.leaving this group), the rest are its own.
	leaving
)

// SetStateful turns stateful preemption on or off (off: a preemption
// kills its victims in the same decision, Decision.Preempted).
func (s *Scheduler) SetStateful(on bool) { s.stateful = on }

// Stateful reports whether preemption is stateful.
func (s *Scheduler) Stateful() bool { return s.stateful }

// takeOver gives device p, and the VC leaf l bound to it, to the
// preemptor g: the group on it (its owner) is now a victim leaving it.
func (s *Scheduler) takeOver(g *Group, l *VCell, p *PCell) {
	o := p.group
	if o == nil {
		return
	}
	if l.group == o {
		l.group = nil
		for x := l; x != nil; x = x.parent {
			x.used--
		}
	}
	p.group = nil
	opp := o.Priority == Opportunistic
	s.viewGen++
	for x := p; x != nil; x = x.parent {
		x.used--
		if opp {
			x.opp--
		}
	}
	p.leaving = o
	o.state = leaving
	if !slices.Contains(o.takers, g) {
		o.takers = append(o.takers, g)
	}
	if !slices.Contains(g.victims, o) {
		g.victims = append(g.victims, o)
	}
}

// giveBack returns a device a cancelled preemptor held to the victim still
// on it, with the VC leaf it had.
func (s *Scheduler) giveBack(g *Group, l *VCell, p *PCell) (reprieved bool) {
	o := p.leaving
	p.leaving = nil
	p.group = o
	opp := o.Priority == Opportunistic
	s.viewGen++
	for x := p; x != nil; x = x.parent {
		x.used++
		if opp {
			x.opp++
		}
	}
	if !opp {
		if v := o.leafOf(p); v == l && l.group == nil && l.phys == p {
			l.group = o
			for x := l; x != nil; x = x.parent {
				x.used++
			}
		}
	}
	o.takers = slices.DeleteFunc(o.takers, func(x *Group) bool { return x == g })
	if len(o.takers) == 0 {
		o.state = running
		return true
	}
	return false
}

// leafOf is the group's VC leaf that was bound to device p (nil for an
// opportunistic group, or a device it does not run on).
func (g *Group) leafOf(p *PCell) *VCell {
	i := 0
	for _, pod := range g.pods {
		for _, q := range pod {
			if q == p {
				if i < len(g.vleaves) {
					return g.vleaves[i]
				}
				return nil
			}
			i++
		}
	}
	return nil
}

// cancel revokes a preempting group's reservation: its devices go back to
// the victims still on them, or become free, and the group is forgotten.
// The decision under way notes it, and the victims no preemptor holds
// anything of any more (reprieved).
func (s *Scheduler) cancel(g *Group) {
	var freed []*VCell
	s.cancelled = append(s.cancelled, g.Name)
	i := 0
	for _, pod := range g.pods {
		for _, p := range pod {
			l := g.vleaves[i]
			i++
			l.group = nil
			for x := l; x != nil; x = x.parent {
				x.used--
			}
			p.group = nil
			s.viewGen++
			for x := p; x != nil; x = x.parent {
				x.used--
			}
			if p.leaving != nil {
				o := p.leaving
				if s.giveBack(g, l, p) {
					s.reprieved = append(s.reprieved, o.Name)
				}
			}
			if l.group == nil {
				freed = append(freed, l)
			}
		}
	}
	g.vleaves = nil
	delete(s.groups, g.Name)
	if s.holding {
		s.deferred = append(s.deferred, freed...)
	} else {
		for _, v := range freed {
			s.unbindUp(v)
		}
	}
	s.doomCheck(g.chain)
}

// retry answers a request for a group that is preempting: still waiting
// (its victims have not all left), or placed on the devices it reserved.
// A reservation on bad hardware, or outside the nodes the request allows,
// is cancelled instead (the caller then places the group anew), as HiveD
// cancels a preemption whose placement is no longer healthy and
// suggested.
func (s *Scheduler) retry(g *Group) (Decision, bool) {
	for _, pod := range g.pods {
		for _, p := range pod {
			if p.bad > 0 || !s.allowedNode(p.node) {
				s.cancel(g)
				return Decision{}, false
			}
		}
	}
	d := Decision{Chain: g.chain.Name, Pods: podsOf(g)}
	if len(g.victims) > 0 {
		d.Preempting = true
		d.Reason = "waiting for its victims to leave"
		d.Victims = names(g.victims)
		return s.noted(d), true
	}
	g.state = running
	d.Placed = true
	return s.noted(d), true
}

func names(gs []*Group) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Name
	}
	sort.Strings(out)
	return out
}

// Preempting lists, sorted, the groups that hold cells while their
// victims leave, each with the victims still to leave.
func (s *Scheduler) Preempting() map[string][]string {
	out := map[string][]string{}
	for n, g := range s.groups {
		if g.state == preempting {
			out[n] = names(g.victims)
		}
	}
	return out
}

// Leaving lists, sorted, the groups told to leave that still run.
func (s *Scheduler) Leaving() []string {
	var out []string
	for n, g := range s.groups {
		if g.state == leaving {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
