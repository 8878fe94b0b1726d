package tenancy

import (
	"fmt"
	"slices"

	"github.com/palsched/pal/internal/quote"
)

// The intra-VC layer's side of the boundary. HiveD's VC layer decides
// where inside a VC a gang runs, on the VC's virtual cells; binding those
// cells to physical ones stays here. A VC's virtual cells, node by node,
// are exactly its private cluster (PrivateConfig builds that cluster from
// the same cells in the same order), so a scheduler and a placer that run
// on the view below see what they would see on the private cluster; the
// virtual leaves they choose are then bound by Commit.

// ViewNode is one node of a VC's view: a node-level virtual cell, or a
// preassigned cell below node level (which may be bound inside any node),
// with its virtual leaves depth-first.
type ViewNode struct {
	Leaves []*VCell
	// LeafType is the leaf cell type of the node's chain; GPU is false
	// for a leaf type that is not a GPU (skuTypes gpu: 0).
	LeafType string
	GPU      bool
	// Pinned names the pinned cell the node lies in ("" outside one):
	// only groups that name it may use it (HiveD hands a pinned cell to
	// no one else).
	Pinned string
	cell   *VCell
}

// Pool is the part of a VC's view a group may be placed in, as HiveD's
// intra-VC layer keeps one scheduler per chain and per pinned cell: one
// pinned cell, or every non-pinned chain of one leaf type. A group that
// names a pinned cell goes to that pinned cell's pool, one that names a
// leaf type to that type's pool, and one that names neither to the first
// GPU pool (in leaf-type order) that can place it (HiveD's "any leaf
// type": a group runs on one leaf type).
type Pool struct {
	LeafType string
	GPU      bool
	Pinned   string
	Nodes    []ViewNode
}

// Pools splits a VC's view into pools: the non-pinned chains' pools in
// leaf-type order (the order HiveD searches leaf types in), then the
// pinned cells in the VC's order. Their nodes, concatenated, are View's.
func (s *Scheduler) Pools(vcName string) ([]Pool, error) {
	view, err := s.View(vcName)
	if err != nil {
		return nil, err
	}
	var out []Pool
	for _, n := range view {
		// Chains are in leaf-type order, so a type's chains are adjacent.
		if k := len(out) - 1; k >= 0 && out[k].Pinned == n.Pinned && out[k].LeafType == n.LeafType {
			out[k].Nodes = append(out[k].Nodes, n)
			continue
		}
		out = append(out, Pool{LeafType: n.LeafType, GPU: n.GPU, Pinned: n.Pinned, Nodes: []ViewNode{n}})
	}
	return out, nil
}

// Healthy reports whether new groups may use the node's leaves: it is
// unbound (binding picks healthy hardware), or bound to hardware with a
// healthy device left (a node with a quarantined device is; its
// quarantined leaves say so, OnBad).
func (n ViewNode) Healthy() bool { return n.cell.phys == nil || n.cell.phys.bad < n.cell.phys.leaves }

// Node is the node the view node's cell is bound into, or "" while it is
// unbound: with Healthy, whether its leaves are out of use because that
// node failed or because its devices are quarantined.
func (n ViewNode) Node() string {
	if n.cell.phys == nil {
		return ""
	}
	return n.cell.phys.node
}

// OnBad reports whether a virtual leaf is bound to a bad device (a
// quarantined one, shown to the VC as taken): no new group may use it.
func (v *VCell) OnBad() bool { return v.phys != nil && v.phys.bad > 0 }

// External reports whether a virtual leaf is bound to a device held
// outside the cells (SetExternal; OnBad too): what holds it is no fault.
func (v *VCell) External() bool { return v.phys != nil && v.phys.ext }

// View lists a VC's view nodes: its chains in chain order, then its pinned
// cells, each in the order of its preassigned cells. Node i of the VC's
// private cluster (PrivateConfig, nodes in the order the config names
// them) has the devices of view node i, and device k of it is leaf k.
func (s *Scheduler) View(vcName string) ([]ViewNode, error) {
	vc := s.byVC[vcName]
	if vc == nil {
		return nil, fmt.Errorf("tenancy: unknown VC %s", quote.Value(vcName))
	}
	var out []ViewNode
	for _, list := range [][]*vcChain{vc.chains, vc.pins} {
		for _, vcc := range list {
			for _, v := range vcc.view {
				out = append(out, ViewNode{Leaves: vleavesOf(v, nil), LeafType: vcc.chain.LeafType, GPU: !vcc.chain.cpu, Pinned: vcc.pinnedID, cell: v})
			}
		}
	}
	return out, nil
}

// Busy reports whether a virtual leaf is used by a guaranteed group.
func (v *VCell) Busy() bool { return v.group != nil }

// Hold defers unbinding: from now until EndRound, a bound cell whose last
// group leaves stays bound. A VC that re-plans several of its groups in
// one round (releasing some and committing others) then keeps the mapping
// from its virtual leaves to physical devices, so a group that moves in
// the VC also moves physically, and one that stays does not. Safety holds
// throughout: a bound cell counts as used by its VC either way.
func (s *Scheduler) Hold() { s.holding = true }

// EndRound ends Hold: every cell left bound without a group is unbound,
// as Release would have done.
func (s *Scheduler) EndRound() {
	s.holding = false
	for _, v := range s.deferred {
		s.unbindUp(v)
	}
	clear(s.deferred)
	s.deferred = s.deferred[:0]
	for _, ch := range s.chains {
		s.doomCheck(ch)
	}
	s.revertDemoted()
}

// Commit places a guaranteed group on virtual leaves its VC's scheduler
// chose (per pod; a pod's leaves lie in one view node, which keeps it in
// one physical node), binding whatever is unbound by buddy allocation and
// preempting the opportunistic groups on the devices it gets. The leaves
// must be free of guaranteed groups: the VC's own victims are released
// (Release) before. Decision.Placed is false, and nothing changes, when
// binding fails (bad hardware); with healthy hardware HiveD's safety
// guarantees it never does.
func (s *Scheduler) Commit(r Request, pods [][]*VCell) (Decision, error) {
	if r.Priority == Opportunistic {
		return Decision{}, fmt.Errorf("tenancy: group %s: opportunistic groups hold no VC cells", r.Group)
	}
	r.Pods = r.Pods[:0]
	for _, p := range pods {
		r.Pods = append(r.Pods, len(p))
	}
	s.cancelled, s.reprieved = s.cancelled[:0], s.reprieved[:0]
	defer s.restrict(r.Nodes)()
	if g := s.groups[r.Group]; g != nil && g.state == preempting {
		if !sameLeaves(g.vleaves, pods) {
			s.cancel(g) // the VC now wants other leaves for it
		} else if d, ok := s.retry(g); ok {
			return d, nil
		}
	}
	vc, err := s.validate(r)
	if err != nil {
		return Decision{}, err
	}
	s.epoch++
	var vcc *vcChain
	for i, pod := range pods {
		for _, l := range pod {
			switch {
			case l.level != 1 || l.vcc.vc != vc:
				return Decision{}, fmt.Errorf("tenancy: group %s: pod %d names a cell that is not a leaf of VC %s", r.Group, i, vc.Name)
			case l.group != nil:
				return Decision{}, fmt.Errorf("tenancy: group %s: leaf used by group %s", r.Group, l.group.Name)
			case l.OnBad():
				// Shown bad (quarantined) after the VC's placer looked, or
				// released this round while holding: not an error, a wait.
				return s.noted(Decision{Reason: "a leaf is on bad hardware"}), nil
			case l.mark == s.epoch:
				return Decision{}, fmt.Errorf("tenancy: group %s: a leaf named twice", r.Group)
			}
			l.mark = s.epoch
			if vcc == nil {
				vcc = l.vcc
			}
		}
	}
	d, ok := s.commitGuaranteed(r, vc, vcc, pods)
	if !ok {
		d = Decision{Reason: "no physical cells for the VC's placement"}
	}
	return s.noted(d), nil
}

// sameLeaves reports whether pods names exactly the leaves of held, in
// any order.
func sameLeaves(held []*VCell, pods [][]*VCell) bool {
	n := 0
	for _, pod := range pods {
		for _, l := range pod {
			if !slices.Contains(held, l) {
				return false
			}
			n++
		}
	}
	return n == len(held)
}

// Leaves lists a guaranteed group's VC leaves, per device in pod order
// (nil for an opportunistic or lazily preempted group, or an unknown
// one): where the group is in its VC's view.
func (s *Scheduler) Leaves(name string) []*VCell {
	g := s.groups[name]
	if g == nil || g.Priority == Opportunistic {
		return nil
	}
	return slices.Clone(g.vleaves)
}

// IsPreempting reports whether a group holds its cells while its victims
// leave.
func (s *Scheduler) IsPreempting(name string) bool {
	g := s.groups[name]
	return g != nil && g.state == preempting
}

// NodeKind is what one node-level cell of a node is: its chain's leaf
// type and the pinned cell it lies in ("" outside one).
type NodeKind struct {
	LeafType, Pinned string
}

// NodeKinds lists the kinds of a node's node-level cells (none for a node
// outside the cells): a VC's pool of that leaf type (or that pinned cell)
// may bind them.
func (s *Scheduler) NodeKinds(node string) []NodeKind {
	var out []NodeKind
	for _, p := range s.byNode[node] {
		k := NodeKind{LeafType: p.chain.LeafType}
		for a := p; a != nil; a = a.parent {
			if a.pinned != "" {
				k.Pinned = a.pinned
			}
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// NodeDevice is one GPU of a node's cells: the kind of its node-level
// cell, its device index in the node, and the VC it is bound to.
type NodeDevice struct {
	Kind NodeKind
	GPU  int
	// VC is the VC of the lowest bound cell holding the device (the
	// device is that VC's while the binding lasts), or "" when no cell
	// holding it is bound: any VC whose virtual cells of the node's kind
	// fit it may bind it.
	VC string
}

// NodeDevices lists the GPUs of a node's node-level cells (none for a
// node outside the cells) with the VC each is bound to now: which VCs'
// guaranteed groups may use them.
func (s *Scheduler) NodeDevices(node string) []NodeDevice {
	var out []NodeDevice
	var leaves []*PCell
	for _, p := range s.byNode[node] {
		if p.chain.cpu {
			continue
		}
		k := NodeKind{LeafType: p.chain.LeafType}
		for a := p; a != nil; a = a.parent {
			if a.pinned != "" {
				k.Pinned = a.pinned
			}
		}
		leaves = pleavesOf(p, leaves[:0])
		for _, l := range leaves {
			d := NodeDevice{Kind: k, GPU: l.gpu}
			for a := l; a != nil; a = a.parent {
				if a.vcell != nil {
					d.VC = a.vcell.vcc.vc.Name
					break
				}
			}
			out = append(out, d)
		}
	}
	return out
}
