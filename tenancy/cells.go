package tenancy

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// MaxDevices caps the devices of a cluster (and of one cell type), so a
// mistyped childCellNumber is an error instead of an exhausted machine.
const MaxDevices = 1 << 19

// cellType is one entry of cellTypes, resolved: its level (1 for a leaf,
// one more than its child otherwise) and leaf count.
type cellType struct {
	name      string
	child     *cellType // nil for a leaf type (a device, "skuType")
	childNum  int
	node      bool // isNodeLevel
	level     int
	leaves    int // leaf cells inside one cell of this type
	leafType  string
	nodeLevel int // level of the node-level type at or below this one; 0 if none
	line      int
}

// Chain is the cell-type tree under one top-level physical cell type, and
// the buddy-allocation state of the physical cells of that type. HiveD
// keeps one set of free lists per chain, and the safety invariant holds per
// chain.
type Chain struct {
	Name      string
	LeafType  string
	NodeLevel int
	types     []*cellType // by level, [0] unused
	tops      []*PCell
	nodes     []*PCell // node-level cells, in config order
	leaves    int

	free     [][]*PCell // buddy free lists by level
	vcUnused []int      // unbound preassigned VC cells by level, all VCs
	vccs     []*vcChain // non-pinned VC views in this chain, in VC order
	bad      int        // bad leaves in the chain
	class    int        // the speed class the current decision prefers, -1 for none
	cpu      bool       // its leaf is not a GPU (skuTypes gpu: 0): never handed to GPU demands
	doomed   int        // VC cells bound to bad cells by the doomed-bad rule
	balVC    *vcChain   // the VC view a balanced decision binds for (SetBalance), nil otherwise
	bal      *balance   // its balance while buddyAlloc picks
	avg      []float64  // mean device value per class (SetSpeeds)
	pod      int        // the largest pod of the decision that balances (balance.pod)
	// pacedMemo keeps paced values (balance.go), fixed once speeds are
	// set; keyed by cell, so a copy (Clone) starts its own.
	pacedMemo map[pacedKey]float64
}

// serves reports whether the chain may hold a demand for leafType: any
// GPU chain for "", else the chain of that leaf type.
func (c *Chain) serves(leafType string) bool {
	if leafType == "" {
		return !c.cpu
	}
	return c.LeafType == leafType
}

// GPU reports whether the chain's leaf cells are GPUs: true unless
// skuTypes gives its leaf type gpu: 0.
func (c *Chain) GPU() bool { return !c.cpu }

// Top is the chain's top level.
func (c *Chain) Top() int { return len(c.types) - 1 }

// LevelType names the cell type at level l.
func (c *Chain) LevelType(l int) string { return c.types[l].name }

// childNum is the number of level-(l-1) cells inside one level-l cell.
func (c *Chain) childNum(l int) int { return c.types[l].childNum }

// within is m(x→l): the number of level-l cells inside one level-x cell.
func (c *Chain) within(x, l int) int {
	return c.types[x].leaves / c.types[l].leaves
}

// PCell is a physical cell.
type PCell struct {
	// The fields binding reads for every candidate (bind, better, use)
	// come first, within 64 bytes, so that looking at a cell touches one
	// or two cache lines rather than up to four.
	vcell          *VCell // bound virtual cell
	bad, opp, used int    // leaves bad (node down, quarantined or held outside the cells), in use by opportunistic groups, in use
	level          int
	leaves         int
	chain          *Chain
	parent         *PCell

	children []*PCell
	// bound has bit i set while children[i] is bound to a virtual cell
	// (for the first 64 children; wider cells are scanned): binding a
	// cell inside a healthy parent without opportunistic load takes its
	// first unbound child, which the mask names without reading the
	// children (a cache miss each on a big cluster).
	bound  uint64
	kids   []PCell // the children themselves, when built (not copied by Clone)
	pos    int     // index among its parent's children
	group  *Group  // the group using a leaf
	Addr   string  // full address: parent address + "/" + own, node names at node level
	node   string  // node name at or below node level, "" above
	gpu    int     // device index inside the node for a leaf, -1 otherwise
	dev    int     // a leaf's position among the scheduler's devices (Device)
	pinned string

	split   bool // buddy system: some descendant was handed out
	inFree  bool
	freeIdx int

	down    bool      // a node-level cell whose node is marked bad (SetNodeHealth)
	quar    bool      // a leaf taken out of the guarantees (Quarantine)
	ext     bool      // a leaf held by a pod the cells did not place (SetExternal)
	speed   []float64 // per class: the sum of the leaves' values (lower is faster); nil without SetSpeeds
	leaving *Group    // a victim still on the leaf, which a preempting group holds
	mark    int       // chosen by the decision of this epoch
	twin    *PCell    // its copy while Clone runs, nil otherwise
}

// Level is the cell's level in its chain (1 = one device).
func (p *PCell) Level() int { return p.level }

// Node is the node name of a cell at or below node level.
func (p *PCell) Node() string { return p.node }

// GPU is the device index of a leaf inside its node.
func (p *PCell) GPU() int { return p.gpu }

// VCell is a virtual cell: part of a VC's promise, bound to a physical cell
// of the same level while any device inside it is in use (dynamic binding),
// or for good (pinned cells).
type VCell struct {
	vcc      *vcChain
	level    int
	parent   *VCell
	children []*VCell
	phys     *PCell
	used     int
	group    *Group // the guaranteed group using a leaf
	doomed   bool   // a preassigned cell bound to bad hardware so its VC sees the failure
	static   bool   // a preassigned cell bound for good (BindStatic)
	idx      int    // position among its preassigned siblings or its parent's children
	leaves   int
	mark     int    // chosen by the decision of this epoch
	twin     *VCell // its copy while Clone runs, nil otherwise
}

// vcChain is one VC's view of one chain (or of one pinned cell): its
// preassigned cells and the view nodes its intra-VC scheduler packs onto.
type vcChain struct {
	vc       *VC
	chain    *Chain
	pinned   *PCell // non-nil for a pinned cell's view
	pinnedID string
	pre      []*VCell // preassigned (top-of-VC) cells
	view     []*VCell // node-level cells, or preassigned cells below node level
	unused   []int    // unbound preassigned cells by level
	reserved []int    // preassigned cells by level
	lines    []int    // config line of the first entry reserving each level
	fields   []string
}

// VC is a virtual cluster: a tenant's promise, in cells per chain and level.
type VC struct {
	Name   string
	queued int        // SetQueues: the VC's jobs waiting at the round's start
	chains []*vcChain // non-pinned, in chain order
	pins   []*vcChain
	byPin  map[string]*vcChain
	line   int
}

// buildTypes resolves the cellTypes section.
func buildTypes(cfg *Config) (map[string]*cellType, error) {
	types := map[string]*cellType{}
	for _, s := range cfg.CellTypes {
		types[s.Name] = &cellType{name: s.Name, childNum: s.ChildCellNumber, node: s.IsNodeLevel, line: s.Line}
	}
	// Leaf types are names used as children but never defined.
	for _, s := range cfg.CellTypes {
		if _, ok := types[s.ChildCellType]; !ok {
			types[s.ChildCellType] = &cellType{name: s.ChildCellType, level: 1, leaves: 1, leafType: s.ChildCellType, line: s.Line}
		}
	}
	for _, s := range cfg.CellTypes {
		types[s.Name].child = types[s.ChildCellType]
	}
	var resolveT func(t *cellType, depth int) error
	resolveT = func(t *cellType, depth int) error {
		if t.level > 0 {
			return nil
		}
		if depth > len(types) {
			return &Error{File: cfg.File, Line: t.line, Field: "physicalCluster.cellTypes." + t.name, Msg: "cell types form a cycle"}
		}
		if err := resolveT(t.child, depth+1); err != nil {
			return err
		}
		t.level = t.child.level + 1
		t.leaves = t.child.leaves * t.childNum
		if t.leaves > MaxDevices {
			return &Error{File: cfg.File, Line: t.line, Field: "physicalCluster.cellTypes." + t.name,
				Msg: fmt.Sprintf("one %s cell would hold %d devices; at most %d", t.name, t.leaves, MaxDevices)}
		}
		t.leafType = t.child.leafType
		t.nodeLevel = t.child.nodeLevel
		if t.node {
			if t.nodeLevel != 0 {
				return &Error{File: cfg.File, Line: t.line, Field: "physicalCluster.cellTypes." + t.name + ".isNodeLevel",
					Msg: fmt.Sprintf("%s is node level but contains node-level type %s", t.name, t.child.name)}
			}
			t.nodeLevel = t.level
		}
		return nil
	}
	for _, s := range cfg.CellTypes {
		if err := resolveT(types[s.Name], 0); err != nil {
			return nil, err
		}
	}
	return types, nil
}

// build turns a parsed config into chains, physical cells and VCs, and
// validates the initial VC assignment.
func build(cfg *Config) (*Scheduler, error) {
	types, err := buildTypes(cfg)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg:     cfg,
		byChain: map[string]*Chain{},
		byVC:    map[string]*VC{},
		groups:  map[string]*Group{},
		byNode:  map[string][]*PCell{},
		pinned:  map[string]*PCell{},
	}
	if len(cfg.PhysicalCells) == 0 {
		return nil, &Error{File: cfg.File, Field: "physicalCluster.physicalCells", Msg: "no physical cells"}
	}
	// Device indices count per node and leaf type (a node may hold GPUs
	// of one chain and CPUs of another, both numbered from 0).
	type gpuKey struct {
		node string
		leaf string
		gpu  int
	}
	seenGPU := map[gpuKey]string{}
	pinLine := map[string]int{}
	for i, spec := range cfg.PhysicalCells {
		t, ok := types[spec.CellType]
		if !ok {
			return nil, &Error{File: cfg.File, Line: spec.Line, Field: spec.Field + ".cellType", Msg: fmt.Sprintf("unknown cell type %s", quote.Value(spec.CellType))}
		}
		if t.nodeLevel == 0 {
			return nil, &Error{File: cfg.File, Line: spec.Line, Field: spec.Field + ".cellType",
				Msg: fmt.Sprintf("cell type %s contains no node-level type (set isNodeLevel on the type that is one machine)", quote.Value(spec.CellType))}
		}
		ch := s.byChain[t.name]
		if ch == nil {
			ch = &Chain{Name: t.name, LeafType: t.leafType, NodeLevel: t.nodeLevel, class: -1}
			if sku, ok := cfg.SKUs[t.leafType]; ok && sku.HasGPU && sku.GPU == 0 {
				ch.cpu = true
			}
			ch.types = make([]*cellType, t.level+1)
			for x := t; x != nil; x = x.child {
				ch.types[x.level] = x
			}
			ch.free = make([][]*PCell, t.level+1)
			ch.vcUnused = make([]int, t.level+1)
			s.byChain[t.name] = ch
			s.chains = append(s.chains, ch)
		}
		if len(s.leaves)+t.leaves > MaxDevices {
			return nil, &Error{File: cfg.File, Line: spec.Line, Field: spec.Field,
				Msg: fmt.Sprintf("the cluster would hold more than %d devices", MaxDevices)}
		}
		b := &cellBuilder{s: s, ch: ch, file: cfg.File, counters: map[int]int{}}
		addr := spec.CellAddress
		if addr == "" {
			addr = strconv.Itoa(i)
		}
		top, err := b.cell(spec, t, nil, addr, new(PCell))
		if err != nil {
			return nil, err
		}
		ch.tops = append(ch.tops, top)
		ch.leaves += top.leaves
		// Every leaf is one device, found by node and index.
		var walk func(p *PCell) error
		walk = func(p *PCell) error {
			if p.pinned != "" {
				if l, dup := pinLine[p.pinned]; dup {
					return &Error{File: cfg.File, Line: b.lines[p], Field: b.fields[p], Msg: fmt.Sprintf("pinned cell %s defined twice (first at line %d)", quote.Value(p.pinned), l)}
				}
				pinLine[p.pinned] = b.lines[p]
				s.pinned[p.pinned] = p
				// A pinned cell leaves the buddy system whole, so one inside
				// another would be handed out twice.
				for a := p.parent; a != nil; a = a.parent {
					if a.pinned != "" {
						return &Error{File: cfg.File, Line: b.lines[p], Field: b.fields[p],
							Msg: fmt.Sprintf("pinned cell %s (line %d) lies inside pinned cell %s (line %d); pinned cells may not overlap", quote.Value(p.pinned), b.lines[p], quote.Value(a.pinned), b.lines[a])}
					}
				}
			}
			if p.level == ch.NodeLevel {
				ch.nodes = append(ch.nodes, p)
				if _, seen := s.byNode[p.node]; !seen {
					s.nodeOrder = append(s.nodeOrder, p.node)
				}
				s.byNode[p.node] = append(s.byNode[p.node], p)
			}
			if p.level == 1 {
				k := gpuKey{p.node, ch.LeafType, p.gpu}
				if prev, dup := seenGPU[k]; dup {
					return &Error{File: cfg.File, Line: b.lines[p], Field: "cellAddress",
						Msg: fmt.Sprintf("device %d of node %s defined twice (also %s)", p.gpu, quote.Value(p.node), prev)}
				}
				seenGPU[k] = p.Addr
				p.dev = len(s.leaves)
				s.leaves = append(s.leaves, p)
			}
			for _, c := range p.children {
				if err := walk(c); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(top); err != nil {
			return nil, err
		}
		top.inFree = true
		top.freeIdx = len(ch.free[top.level])
		ch.free[top.level] = append(ch.free[top.level], top)
	}
	// Chains are searched by leaf type (ascending), then by chain name
	// (descending): a fixed order, the one HiveD's own tests pin down.
	sort.SliceStable(s.chains, func(i, j int) bool {
		a, b := s.chains[i], s.chains[j]
		if a.LeafType != b.LeafType {
			return a.LeafType < b.LeafType
		}
		return a.Name > b.Name
	})
	for _, ch := range s.chains {
		if len(s.leafTypes) == 0 || s.leafTypes[len(s.leafTypes)-1] != ch.LeafType {
			s.leafTypes = append(s.leafTypes, ch.LeafType)
		}
	}
	if err := s.buildVCs(types); err != nil {
		return nil, err
	}
	s.sizes = s.measure()
	return s, nil
}

// sizes are the figures of a config that setup and every decision ask
// for: computed once, since the cells do not change shape.
type sizes struct {
	maxNode   int            // devices of the largest node
	vcDevices map[string]int // devices of each VC's cells, pinned included
	maxPod    map[string]int // devices of the biggest node of each VC's view
}

func (s *Scheduler) measure() sizes {
	z := sizes{vcDevices: make(map[string]int, len(s.vcs)), maxPod: make(map[string]int, len(s.vcs))}
	for _, cells := range s.byNode {
		n := 0
		for _, p := range cells {
			if !p.chain.cpu {
				n += p.leaves
			}
		}
		z.maxNode = max(z.maxNode, n)
	}
	for _, vc := range s.vcs {
		n, m := 0, 0
		for _, list := range [][]*vcChain{vc.chains, vc.pins} {
			for _, vcc := range list {
				if vcc.chain.cpu {
					continue // devices for GPU demands only
				}
				for _, v := range vcc.pre {
					n += v.leaves
				}
				for _, v := range vcc.view {
					m = max(m, v.leaves)
				}
			}
		}
		z.vcDevices[vc.Name], z.maxPod[vc.Name] = n, m
	}
	return z
}

type cellBuilder struct {
	s        *Scheduler
	ch       *Chain
	file     string
	counters map[int]int // default-address counters by level, per top cell or node
	lines    map[*PCell]int
	fields   map[*PCell]string
}

// cell builds the cell of spec into p.
func (b *cellBuilder) cell(spec PhysicalCellSpec, t *cellType, parent *PCell, own string, p *PCell) (*PCell, error) {
	if b.lines == nil {
		b.lines, b.fields = map[*PCell]int{}, map[*PCell]string{}
	}
	*p = PCell{chain: b.ch, level: t.level, parent: parent, gpu: -1, pinned: spec.PinnedCellID, leaves: t.leaves, freeIdx: -1}
	b.lines[p] = spec.Line
	if spec.PinnedCellID != "" {
		b.fields[p] = spec.Field + ".pinnedCellId"
		if spec.PinnedLine > 0 {
			b.lines[p] = spec.PinnedLine
		}
	}
	switch {
	case t.level == b.ch.NodeLevel:
		if spec.CellAddress == "" {
			return nil, &Error{File: b.file, Line: spec.Line, Field: spec.Field + ".cellAddress",
				Msg: fmt.Sprintf("node-level cell of type %s needs cellAddress (its node name)", t.name)}
		}
		p.node = spec.CellAddress
		p.Addr = spec.CellAddress
		// Below node level, default addresses count afresh inside each node.
		for l := 1; l < t.level; l++ {
			delete(b.counters, l)
		}
	case t.level < b.ch.NodeLevel:
		p.node = parent.node
		p.Addr = parent.Addr + "/" + own
	default:
		if parent == nil {
			p.Addr = own
		} else {
			p.Addr = parent.Addr + "/" + own
		}
	}
	if t.level == 1 {
		g, err := strconv.Atoi(own)
		if err != nil || g < 0 {
			return nil, &Error{File: b.file, Line: spec.Line, Field: spec.Field + ".cellAddress",
				Msg: fmt.Sprintf("a device's address is its index inside the node, got %s", quote.Value(own))}
		}
		p.gpu = g
		return p, nil
	}
	if len(spec.Children) > t.childNum {
		return nil, &Error{File: b.file, Line: spec.Line, Field: spec.Field + ".cellChildren",
			Msg: fmt.Sprintf("type %s has %d children, %d given", t.name, t.childNum, len(spec.Children))}
	}
	// The children lie side by side (kids), so that binding reaches the
	// one it takes without reading the list of pointers.
	p.kids = make([]PCell, t.childNum)
	p.children = make([]*PCell, 0, t.childNum)
	for i := 0; i < t.childNum; i++ {
		var cs PhysicalCellSpec
		if i < len(spec.Children) {
			cs = spec.Children[i]
		} else {
			cs = PhysicalCellSpec{Line: spec.Line, Field: fmt.Sprintf("%s.cellChildren[%d]", spec.Field, i)}
		}
		if cs.CellType != "" && cs.CellType != t.child.name {
			return nil, &Error{File: b.file, Line: cs.Line, Field: cs.Field + ".cellType",
				Msg: fmt.Sprintf("child of %s must be of type %s, got %s", t.name, t.child.name, quote.Value(cs.CellType))}
		}
		lvl := t.child.level
		own := cs.CellAddress
		if own == "" {
			own = strconv.Itoa(b.counters[lvl])
		}
		b.counters[lvl]++
		c, err := b.cell(cs, t.child, p, own, &p.kids[i])
		if err != nil {
			return nil, err
		}
		c.pos = len(p.children)
		p.children = append(p.children, c)
	}
	return p, nil
}

// buildVCs creates each VC's virtual cells and validates the initial
// assignment with the full recursive splittable check.
func (s *Scheduler) buildVCs(types map[string]*cellType) error {
	cfg := s.cfg
	pinUser := map[string]string{}
	type pendingCells struct {
		vcc    *vcChain
		levels []int // levels with reservations, largest first
	}
	var pending []pendingCells
	for _, spec := range cfg.VCs {
		vc := &VC{Name: spec.Name, byPin: map[string]*vcChain{}, line: spec.Line}
		byChain := map[*Chain]*vcChain{}
		type entry struct {
			level int
			n     int
			line  int
			field string
			seq   int
		}
		entries := map[*Chain][]entry{}
		for i, vs := range spec.VirtualCells {
			path := strings.Split(vs.CellType, ".")
			ch := s.byChain[path[0]]
			if ch == nil {
				return &Error{File: cfg.File, Line: vs.Line, Field: vs.Field + ".cellType",
					Msg: fmt.Sprintf("VC %s: %s is not the type of any physical cell (a VC cell type starts with a top-level physical cell type)", spec.Name, quote.Value(path[0]))}
			}
			t := types[path[0]]
			for _, name := range path[1:] {
				if t.child == nil || t.child.name != name {
					return &Error{File: cfg.File, Line: vs.Line, Field: vs.Field + ".cellType",
						Msg: fmt.Sprintf("VC %s: %s is not a child type of %s in %s", spec.Name, quote.Value(name), t.name, quote.Value(vs.CellType))}
				}
				t = t.child
			}
			if vs.CellNumber == 0 {
				continue
			}
			if _, ok := byChain[ch]; !ok {
				vcc := &vcChain{vc: vc, chain: ch, unused: make([]int, ch.Top()+1), reserved: make([]int, ch.Top()+1),
					lines: make([]int, ch.Top()+1), fields: make([]string, ch.Top()+1)}
				byChain[ch] = vcc
			}
			entries[ch] = append(entries[ch], entry{t.level, vs.CellNumber, vs.Line, vs.Field, i})
		}
		for _, ch := range s.chains {
			vcc := byChain[ch]
			if vcc == nil {
				continue
			}
			es := entries[ch]
			// Bigger cells first, then file order: the view lists a VC's
			// largest cells first, which is where packing starts.
			sort.SliceStable(es, func(i, j int) bool { return es[i].level > es[j].level })
			// Count now, build the cells once the counts are known to fit:
			// a mistyped cellNumber must not build millions of cells
			// before the check below refuses them.
			levels := make([]int, 0, len(es))
			for _, e := range es {
				if len(levels) == 0 || levels[len(levels)-1] != e.level {
					levels = append(levels, e.level)
				}
				if vcc.lines[e.level] == 0 {
					vcc.lines[e.level] = e.line
					vcc.fields[e.level] = e.field
				}
				vcc.unused[e.level] += e.n
				vcc.reserved[e.level] += e.n
				ch.vcUnused[e.level] += e.n
			}
			pending = append(pending, pendingCells{vcc, levels})
			vc.chains = append(vc.chains, vcc)
			ch.vccs = append(ch.vccs, vcc)
		}
		for _, ps := range spec.PinnedCells {
			p := s.pinned[ps.PinnedCellID]
			if p == nil {
				return &Error{File: cfg.File, Line: ps.Line, Field: ps.Field + ".pinnedCellId",
					Msg: fmt.Sprintf("VC %s: unknown pinned cell %s", spec.Name, quote.Value(ps.PinnedCellID))}
			}
			if other, dup := pinUser[ps.PinnedCellID]; dup {
				return &Error{File: cfg.File, Line: ps.Line, Field: ps.Field + ".pinnedCellId",
					Msg: fmt.Sprintf("VC %s: pinned cell %s already belongs to VC %s", spec.Name, quote.Value(ps.PinnedCellID), other)}
			}
			pinUser[ps.PinnedCellID] = spec.Name
			ch := p.chain
			vcc := &vcChain{vc: vc, chain: ch, pinned: p, pinnedID: ps.PinnedCellID,
				unused: make([]int, ch.Top()+1), reserved: make([]int, ch.Top()+1)}
			root := newVCell(vcc, ch, p.level, nil)
			vcc.pre = []*VCell{root}
			vcc.view = viewNodes(vcc.pre, ch.NodeLevel)
			vcc.reserved[p.level]++
			// Static binding: the pinned cell leaves the buddy system for good.
			ch.takeSpecific(p)
			link(root, p)
			vc.pins = append(vc.pins, vcc)
			vc.byPin[ps.PinnedCellID] = vcc
		}
		if _, dup := s.byVC[spec.Name]; dup {
			return &Error{File: cfg.File, Line: spec.Line, Field: "virtualClusters." + spec.Name, Msg: "VC defined twice"}
		}
		s.byVC[spec.Name] = vc
		s.vcs = append(s.vcs, vc)
	}
	for _, ch := range s.chains {
		sp := ch.splittable()
		for l := ch.Top(); l >= 1; l-- {
			if sp[l] >= 0 {
				continue
			}
			var who []string
			line, field := 0, ""
			for _, vcc := range ch.vccs {
				if vcc.reserved[l] > 0 {
					who = append(who, fmt.Sprintf("%s (%d, line %d)", vcc.vc.Name, vcc.reserved[l], vcc.lines[l]))
					if line == 0 {
						line, field = vcc.lines[l], vcc.fields[l]
					}
				}
			}
			if len(who) == 0 {
				// The deficit comes from above: name the level's reservations anyway.
				who = append(who, "no VC reserves this level; the levels above use up its cells")
			}
			return &Error{File: cfg.File, Line: line, Field: field,
				Msg: fmt.Sprintf("illegal initial VC assignment: chain %s, level %d (%s): splittable %d < 0; VCs reserving this level: %s",
					ch.Name, l, ch.types[l].name, sp[l], strings.Join(who, ", "))}
		}
	}
	// The counts fit the chains, so the cells are at most as many as the
	// physical ones.
	for _, pc := range pending {
		vcc := pc.vcc
		for _, l := range pc.levels {
			for k := 0; k < vcc.reserved[l]; k++ {
				v := newVCell(vcc, vcc.chain, l, nil)
				v.idx = len(vcc.pre)
				vcc.pre = append(vcc.pre, v)
			}
		}
		vcc.view = viewNodes(vcc.pre, vcc.chain.NodeLevel)
	}
	return nil
}

func newVCell(vcc *vcChain, ch *Chain, level int, parent *VCell) *VCell {
	return fillVCell(new(VCell), vcc, ch, level, parent)
}

// fillVCell builds a virtual cell into v, its children side by side (a
// decision's leaves are then near each other in memory).
func fillVCell(v *VCell, vcc *vcChain, ch *Chain, level int, parent *VCell) *VCell {
	*v = VCell{vcc: vcc, level: level, parent: parent, leaves: ch.types[level].leaves}
	if level > 1 {
		n := ch.types[level].childNum
		kids := make([]VCell, n)
		v.children = make([]*VCell, n)
		for i := range v.children {
			c := fillVCell(&kids[i], vcc, ch, level-1, v)
			c.idx = i
			v.children[i] = c
		}
	}
	return v
}

// viewNodes lists the cells an intra-VC scheduler packs onto: the
// node-level cells inside the preassigned cells, or a preassigned cell
// itself when it is smaller than a node (two 1-GPU cells may be bound to
// different nodes, so they are two nodes of the view).
func viewNodes(pre []*VCell, nodeLevel int) []*VCell {
	var out []*VCell
	var walk func(v *VCell)
	walk = func(v *VCell) {
		if v.level <= nodeLevel {
			out = append(out, v)
			return
		}
		for _, c := range v.children {
			walk(c)
		}
	}
	for _, v := range pre {
		walk(v)
	}
	return out
}

// link binds a virtual cell to a physical one.
func link(v *VCell, p *PCell) {
	v.phys = p
	p.vcell = v
	if par := p.parent; par != nil && p.pos < 64 {
		par.bound |= 1 << p.pos
	}
}

// unlink drops p's binding (the caller clears the virtual side).
func unlink(p *PCell) {
	p.vcell = nil
	if par := p.parent; par != nil && p.pos < 64 {
		par.bound &^= 1 << p.pos
	}
}

// linkChild is link(v, c) for c, p's i-th child (below 64), without
// reading c: its parent and position are known.
func linkChild(v *VCell, p, c *PCell, i int) {
	v.phys = c
	c.vcell = v
	p.bound |= 1 << i
}

// firstUnbound is p's first child bound to no virtual cell, or nil, and
// its position among p's children; ok is false when p has more children
// than its mask covers.
func (p *PCell) firstUnbound() (c *PCell, i int, ok bool) {
	n := len(p.children)
	if n > 64 {
		return nil, 0, false
	}
	free := ^p.bound
	if n < 64 {
		free &= 1<<n - 1
	}
	if free == 0 {
		return nil, 0, true
	}
	i = bits.TrailingZeros64(free)
	if p.kids != nil {
		return &p.kids[i], i, true
	}
	return p.children[i], i, true
}

// Device is the number of the device a virtual leaf is bound to, in the
// order of Devices, or -1 when it is unbound: how a caller that keeps a
// table of devices finds a decision's without looking up node names.
func (v *VCell) Device() int {
	if v.level != 1 || v.phys == nil {
		return -1
	}
	return v.phys.dev
}

// Device names one device of the cells: its node and index there.
type Device struct {
	Node string
	GPU  int
}

// Devices lists every device of the cells, numbered as Device numbers
// them (config order, every chain's).
func (s *Scheduler) Devices() []Device {
	out := make([]Device, len(s.leaves))
	for i, p := range s.leaves {
		out[i] = Device{p.node, p.gpu}
	}
	return out
}

// root is a virtual cell's preassigned (top-of-VC) ancestor.
func (v *VCell) root() *VCell {
	for v.parent != nil {
		v = v.parent
	}
	return v
}
