package tenancy

import (
	"fmt"
	"sort"

	"github.com/palsched/pal/internal/quote"
)

func sortInts(x []int) { sort.Ints(x) }

// PrivateConfig is the cluster a VC would own alone: one top-level
// physical cell per VC cell (of the VC cell's type, so the VC's scheduler
// sees the same cells), plus copies of its pinned cells, and the VC as the
// only tenant. It is the reference of the sharing-anomaly metric: a VC's
// jobs should wait no longer on the shared cluster than here. Node names
// are prefixed with the VC name so they cannot be confused with the
// shared cluster's.
func (s *Scheduler) PrivateConfig(vcName string) (*Config, error) {
	vc := s.byVC[vcName]
	if vc == nil {
		return nil, fmt.Errorf("tenancy: unknown VC %s", quote.Value(vcName))
	}
	cfg := &Config{File: fmt.Sprintf("%s (private cluster of %s)", s.cfg.File, vcName), SKUs: s.cfg.SKUs}
	cfg.CellTypes = append(cfg.CellTypes, s.cfg.CellTypes...)
	spec := VCSpec{Name: vcName}
	node := 0
	var mk func(ch *Chain, level int) PhysicalCellSpec
	mk = func(ch *Chain, level int) PhysicalCellSpec {
		var p PhysicalCellSpec
		if level == ch.NodeLevel {
			p.CellAddress = fmt.Sprintf("%s-%d", vcName, node)
			node++
		}
		if level > 1 && level > ch.NodeLevel {
			for i := 0; i < ch.childNum(level); i++ {
				p.Children = append(p.Children, mk(ch, level-1))
			}
		}
		return p
	}
	for _, vcc := range vc.chains {
		ch := vcc.chain
		for _, v := range vcc.pre {
			t := ch.types[v.level]
			if v.level < ch.NodeLevel {
				// A cell smaller than a node becomes a node of its own:
				// wrap it in a forged node type of one such cell.
				name := fmt.Sprintf("%s-private-node", t.name)
				if !hasType(cfg, name) {
					cfg.CellTypes = append(cfg.CellTypes, CellTypeSpec{Name: name, ChildCellType: t.name, ChildCellNumber: 1, IsNodeLevel: true})
				}
				p := PhysicalCellSpec{CellType: name, CellAddress: fmt.Sprintf("%s-%d", vcName, node)}
				node++
				cfg.PhysicalCells = append(cfg.PhysicalCells, p)
				spec.VirtualCells = append(spec.VirtualCells, VirtualCellSpec{CellType: name + "." + t.name, CellNumber: 1})
				continue
			}
			p := mk(ch, v.level)
			p.CellType = t.name
			cfg.PhysicalCells = append(cfg.PhysicalCells, p)
			spec.VirtualCells = append(spec.VirtualCells, VirtualCellSpec{CellType: t.name, CellNumber: 1})
		}
	}
	for _, vcc := range vc.pins {
		p := vcc.pinned
		ch := p.chain
		if p.level < ch.NodeLevel {
			return nil, fmt.Errorf("tenancy: VC %s: pinned cell %s is smaller than a node; no private copy", vcName, vcc.pinnedID)
		}
		c := mk(ch, p.level)
		c.CellType = ch.types[p.level].name
		c.PinnedCellID = vcc.pinnedID
		cfg.PhysicalCells = append(cfg.PhysicalCells, c)
		spec.PinnedCells = append(spec.PinnedCells, PinnedCellSpec{PinnedCellID: vcc.pinnedID})
	}
	cfg.VCs = []VCSpec{spec}
	return cfg, nil
}

func hasType(cfg *Config, name string) bool {
	for _, t := range cfg.CellTypes {
		if t.Name == name {
			return true
		}
	}
	return false
}

// AloneConfig is the shared cluster with only one VC in it. A VC's
// guaranteed jobs can use no more than its own cells, so this runs them
// exactly as a private cluster of those cells would, with the same view
// of the VC's cells (hence the same intra-VC decisions).
func (s *Scheduler) AloneConfig(vcName string) (*Config, error) {
	for _, v := range s.cfg.VCs {
		if v.Name == vcName {
			cfg := *s.cfg
			cfg.File = fmt.Sprintf("%s (VC %s alone)", s.cfg.File, vcName)
			cfg.VCs = []VCSpec{v}
			return &cfg, nil
		}
	}
	return nil, fmt.Errorf("tenancy: unknown VC %s", quote.Value(vcName))
}

// VCs lists the VC names in config order.
func (s *Scheduler) VCs() []string {
	out := make([]string, len(s.vcs))
	for i, v := range s.vcs {
		out[i] = v.Name
	}
	return out
}

// VCDevices is the number of devices a VC's cells hold, pinned included.
func (s *Scheduler) VCDevices(vcName string) int { return s.sizes.vcDevices[vcName] }

// Node is one machine of the cells file and its device indices.
type Node struct {
	Name    string
	Devices []int // ascending
}

// Nodes lists the machines in the order the config first names them.
func (s *Scheduler) Nodes() []Node {
	out := make([]Node, 0, len(s.nodeOrder))
	for _, name := range s.nodeOrder {
		n := Node{Name: name}
		for _, p := range s.byNode[name] {
			if p.chain.cpu {
				continue // the simulator's cluster is its GPUs
			}
			for _, l := range pleavesOf(p, nil) {
				n.Devices = append(n.Devices, l.gpu)
			}
		}
		sortInts(n.Devices)
		out = append(out, n)
	}
	return out
}

// MaxPod is the largest pod a VC's guaranteed jobs can ever run: the
// biggest node of its view (a node cell, or a cell smaller than a node).
func (s *Scheduler) MaxPod(vcName string) int { return s.sizes.maxPod[vcName] }

// MaxNode is the largest node of the cluster, in devices.
func (s *Scheduler) MaxNode() int { return s.sizes.maxNode }

// BindStatic turns dynamic binding off: every VC's preassigned cells are
// bound now, by buddy allocation in config order, and stay bound, as
// pinned cells do. It is the static-binding baseline of the HiveD paper's
// binding study; call it on a fresh scheduler.
func (s *Scheduler) BindStatic() error {
	for _, vc := range s.vcs {
		for _, vcc := range vc.chains {
			for _, v := range vcc.pre {
				if v.phys != nil {
					continue
				}
				p := vcc.chain.buddyAlloc(v.level, healthyAlloc)
				if p == nil {
					return fmt.Errorf("tenancy: no physical cell left for a level-%d cell of VC %s", v.level, vc.Name)
				}
				s.newBinds = s.newBinds[:0]
				s.bindPre(v, p)
				v.static = true
			}
		}
	}
	return nil
}

// SetSpeeds gives every device a value per class (lower is faster: a
// PM-score or a raw time factor), so that requests with Fastest bind the
// fastest of otherwise equal cells. value is called once per device and
// class.
func (s *Scheduler) SetSpeeds(classes int, value func(class int, node string, gpu int) float64) {
	s.classes = classes
	s.speedFn = value
	var fill func(p *PCell)
	fill = func(p *PCell) {
		p.speed = make([]float64, classes)
		if p.level == 1 {
			for k := range p.speed {
				p.speed[k] = value(k, p.node, p.gpu)
			}
			return
		}
		for _, c := range p.children {
			fill(c)
			for k := range p.speed {
				p.speed[k] += c.speed[k]
			}
		}
	}
	for _, ch := range s.chains {
		for _, t := range ch.tops {
			fill(t)
		}
		ch.setAvg(classes)
	}
}

// FitsEmpty reports whether a guaranteed group of these pods could be
// placed in the VC's (non-pinned) cells when the VC runs nothing else: a
// request that fails this never runs.
func (s *Scheduler) FitsEmpty(vcName string, pods []int) bool {
	vc := s.byVC[vcName]
	if vc == nil {
		return false
	}
	for _, vcc := range vc.chains {
		if vcc.vc != vc {
			continue
		}
		nodes := make([]viewNode, 0, len(vcc.view))
		for _, v := range vcc.view {
			nodes = append(nodes, viewNode{v: v, free: v.leaves, healthy: true, allowed: true})
		}
		sortView(nodes)
		if at, _ := fitPods(nodes, pods); at != nil {
			return true
		}
	}
	return false
}
