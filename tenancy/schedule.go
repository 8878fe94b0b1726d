package tenancy

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// Priorities, as in HiveD: guaranteed groups run at 0..MaxPriority inside
// their VC's cells; opportunistic groups run at Opportunistic on whatever
// is idle and hold no VC cell.
const (
	Opportunistic = -1
	MaxPriority   = 1000
)

// Scheduler is the tenancy state of one cluster: the buddy system of every
// chain, every VC's cells and bindings, and the groups that hold devices.
// It is not safe for concurrent use.
type Scheduler struct {
	cfg       *Config
	chains    []*Chain
	byChain   map[string]*Chain
	vcs       []*VC
	byVC      map[string]*VC
	groups    map[string]*Group
	byNode    map[string][]*PCell // node name → its node-level cells, one per chain
	nodeOrder []string            // node names in config order
	pinned    map[string]*PCell
	leafTypes []string
	leaves    []*PCell
	sizes     sizes // fixed by the config, computed once by build

	classes     int        // speed classes set by SetSpeeds (0: none)
	epoch       int        // marks leaves chosen by the current decision
	newBinds    []*VCell   // bindings made by the current decision, for undo
	scratch     []viewNode // reused view buffer
	podSizes    []int      // commitGuaranteed's pod sizes and binding order, reused
	podIdx      []int
	quarantined int             // devices quarantined (Quarantine)
	external    int             // devices held outside the cells (SetExternal)
	holding     bool            // Hold: unbinding waits for EndRound
	deferred    []*VCell        // leaves freed while holding
	allowed     map[string]bool // nodes the decision under way may use (nil: all)
	stateful    bool            // SetStateful: preemptors wait for their victims
	seq         int             // groups created
	speedFn     func(class int, node string, gpu int) float64
	balance     bool // SetBalance: bindings keep each VC's speed at its share
	// The preemptions the decision under way cancelled, and the victims
	// no preemptor waits for any more.
	cancelled, reprieved []string
	// demoted holds every tracked group that is lazily preempted, and
	// perhaps some that no longer are (revertDemoted drops them): every
	// release and every round end looks for demoted groups to revert, and
	// walking all groups for them made that the largest cost of a
	// tenancy decision on a big cluster.
	demoted []*Group
	// viewGen rises with every change of what an opportunistic view reads
	// of a physical cell (used, opp, down): each function that changes
	// one raises it. oppViews are the chains' views for opportunistic
	// decisions open to every node, sorted, each kept while viewGen stays
	// as it was made at (oppView).
	viewGen  uint64
	oppViews []oppView
}

// New builds the tenancy state from a parsed config and validates it,
// including the initial VC assignment. All nodes start healthy.
func New(cfg *Config) (*Scheduler, error) { return build(cfg) }

// Load reads, parses and validates a cells file.
func Load(path string) (*Scheduler, error) {
	cfg, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// Config is the configuration the scheduler was built from.
func (s *Scheduler) Config() *Config { return s.cfg }

// Group is a gang (HiveD's affinity group): pods that start together or
// not at all.
type Group struct {
	Name         string
	VC           *VC
	Priority     int // current priority; Opportunistic after a lazy preemption
	Lazy         bool
	Demoted      bool // lazily preempted: runs on as opportunistic
	origPriority int
	chain        *Chain
	pods         [][]*PCell
	vleaves      []*VCell
	state        groupState
	victims      []*Group // preempting: the groups still on its devices
	takers       []*Group // leaving: the preemptors holding some of its devices
	seq          int      // creation order
	inDemoted    bool     // listed in the scheduler's demoted
	// pre is, per device (pods in order), the cell type of the VC cell its
	// leaf was placed under (the preassigned cell, or the pinned cell) and
	// pinned the pinned cell's id: how a lazily preempted group finds its
	// VC's cells again (adopt), and how a reconfiguration maps it.
	pre    []string
	pinned string
}

// Request asks for devices for one new group.
type Request struct {
	Group    string
	VC       string
	Priority int   // Opportunistic or 0..MaxPriority
	Pods     []int // devices per pod; a pod never spans nodes
	// LeafType restricts the devices to one type (HiveD's leafCellType); "" takes any.
	LeafType string
	// PinnedCell places the group inside one of its VC's pinned cells.
	PinnedCell string
	// LazyPreemptable lets a higher-priority group of the VC demote this
	// one to opportunistic instead of killing it.
	LazyPreemptable bool
	// NoPreemption forbids preempting others (the group waits instead).
	NoPreemption bool
	// Fastest, with speeds set (SetSpeeds), binds, among cells equally good
	// for safety, health and opportunistic load, the one whose devices are
	// fastest for Class. It never changes which cells are allowed.
	Fastest bool
	Class   int
	// LV, with Fastest, is the class's L×V order: a group that fits one
	// node is first placed on its VC's free bound devices by that order
	// (placeLxV), and by HiveD's packing only when no entry fits.
	LV []LVStep
	// Spread lets an L×V across entry split the group into one pod per
	// node (a job without fixed pods); without it pods are as given.
	Spread bool
	// Nodes, if not nil, are the only nodes the decision may use (on
	// Kubernetes, the nodes the pod may run on: HiveD's suggested nodes).
	Nodes []string
}

// Pod is where one pod runs.
type Pod struct {
	Node string
	GPUs []int // device indices inside the node
}

// Decision is the answer to a Request. When Placed, the group holds its
// devices; Preempted lists the groups killed for it (they hold nothing
// any more) and Demoted those lazily preempted (they run on as
// opportunistic). With stateful preemption (SetStateful) a group that
// needs devices others still run on is Preempting instead: it holds its
// devices (Pods) without running, and Victims must leave first (the
// driver stops them and releases them once they are gone); asking again
// then places it.
type Decision struct {
	Placed     bool
	Preempting bool
	Reason     string
	Chain      string
	Pods       []Pod
	Preempted  []string
	Demoted    []string
	Victims    []string
	// Cancelled lists the preempting groups this decision overrode (they
	// hold nothing now; ask again to place them), Reprieved their victims
	// that no preemptor waits for any more (they may run on).
	Cancelled []string
	Reprieved []string
}

// Schedule decides a new group's placement and, when one is found, commits
// it. It returns an error (and changes nothing) for a malformed request.
func (s *Scheduler) Schedule(r Request) (Decision, error) {
	s.cancelled, s.reprieved = s.cancelled[:0], s.reprieved[:0]
	defer s.restrict(r.Nodes)()
	if g := s.groups[r.Group]; g != nil && g.state == preempting {
		if d, ok := s.retry(g); ok {
			return d, nil
		}
	}
	vc, err := s.validate(r)
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	if r.Priority == Opportunistic {
		d = s.scheduleOpportunistic(r, vc)
	} else {
		d = s.scheduleGuaranteed(r, vc)
	}
	return s.noted(d), nil
}

// noted adds the preemptions the decision cancelled to it.
func (s *Scheduler) noted(d Decision) Decision {
	if len(s.cancelled) > 0 {
		d.Cancelled = slices.Clone(s.cancelled)
		for _, n := range s.reprieved {
			// A victim this decision takes again is not reprieved.
			if g := s.groups[n]; g != nil && g.state != leaving && !slices.Contains(d.Reprieved, n) {
				d.Reprieved = append(d.Reprieved, n)
			}
		}
		sort.Strings(d.Reprieved)
	}
	return d
}

func (s *Scheduler) validate(r Request) (*VC, error) {
	if r.Group == "" {
		return nil, fmt.Errorf("tenancy: request without a group name")
	}
	if _, dup := s.groups[r.Group]; dup {
		return nil, fmt.Errorf("tenancy: group %s already holds devices", quote.Value(r.Group))
	}
	vc := s.byVC[r.VC]
	if vc == nil {
		return nil, fmt.Errorf("tenancy: group %s: unknown VC %s", r.Group, quote.Value(r.VC))
	}
	if r.Fastest && (r.Class < 0 || r.Class >= max(s.classes, 1)) {
		return nil, fmt.Errorf("tenancy: group %s: speed class %d outside 0..%d", r.Group, r.Class, max(s.classes, 1)-1)
	}
	if r.Priority < Opportunistic || r.Priority > MaxPriority {
		return nil, fmt.Errorf("tenancy: group %s: priority %d outside %d..%d", r.Group, r.Priority, Opportunistic, MaxPriority)
	}
	if len(r.Pods) == 0 {
		return nil, fmt.Errorf("tenancy: group %s: no pods", r.Group)
	}
	for i, n := range r.Pods {
		if n <= 0 {
			return nil, fmt.Errorf("tenancy: group %s: pod %d asks for %d devices", r.Group, i, n)
		}
	}
	if r.LeafType != "" {
		found := false
		for _, t := range s.leafTypes {
			found = found || t == r.LeafType
		}
		if !found {
			return nil, fmt.Errorf("tenancy: group %s: unknown leaf type %s", r.Group, quote.Value(r.LeafType))
		}
		if r.Priority != Opportunistic && r.PinnedCell == "" {
			has := false
			for _, vcc := range vc.chains {
				has = has || vcc.chain.LeafType == r.LeafType
			}
			if !has {
				return nil, fmt.Errorf("tenancy: group %s: VC %s has no cells of leaf type %s", r.Group, r.VC, quote.Value(r.LeafType))
			}
		}
	}
	if r.PinnedCell != "" {
		if r.Priority == Opportunistic {
			return nil, fmt.Errorf("tenancy: group %s: opportunistic groups cannot use pinned cell %s", r.Group, quote.Value(r.PinnedCell))
		}
		if s.pinned[r.PinnedCell] == nil {
			return nil, fmt.Errorf("tenancy: group %s: unknown pinned cell %s", r.Group, quote.Value(r.PinnedCell))
		}
		if vc.byPin[r.PinnedCell] == nil {
			return nil, fmt.Errorf("tenancy: group %s: pinned cell %s does not belong to VC %s", r.Group, quote.Value(r.PinnedCell), r.VC)
		}
	}
	return vc, nil
}

// viewNode is one node of a scheduling view with the counts the packing
// order needs.
type viewNode struct {
	v       *VCell // virtual view (guaranteed path)
	p       *PCell // physical view (opportunistic path)
	free    int    // devices free, or preemptible in the preemption pass
	used    int    // devices in use (packing: more first)
	higher  int    // devices in use at a priority above the request's (fewer first)
	healthy bool
	allowed bool // inside the nodes the decision may use (Request.Nodes)
}

// sortView orders a view as HiveD's topology-aware scheduler does:
// healthy first, then allowed (Request.Nodes), then most devices in use
// (pack), then fewest devices used at a higher priority. The sort is
// stable, so ties keep view order. (A stable sort's order is fixed by
// its comparison alone; slices.SortStableFunc gives the order
// sort.SliceStable gave, without its reflective swaps, which were most of
// an opportunistic decision on a big chain.)
func sortView(nodes []viewNode) {
	slices.SortStableFunc(nodes, compareView)
}

// compareView is sortView's order.
func compareView(a, b viewNode) int {
	if a.healthy != b.healthy {
		if a.healthy {
			return -1
		}
		return 1
	}
	if a.allowed != b.allowed {
		if a.allowed {
			return -1
		}
		return 1
	}
	if a.used != b.used {
		return cmp.Compare(b.used, a.used)
	}
	return cmp.Compare(a.higher, b.higher)
}

// podOrder lists pod indices smallest pod first (stable): the order in
// which pods are fitted, given devices and bound.
func podOrder(pods []int) []int { return podOrderInto(nil, pods) }

// podOrderInto is podOrder in order's memory.
func podOrderInto(order, pods []int) []int {
	order = order[:0]
	for i := range pods {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pods[a], pods[b]) })
	return order
}

// fitPods walks the sorted view and puts consecutive pods (smallest first)
// onto the current node while it has room, as HiveD's findNodesForPods.
// It returns, per pod, the index of its node in nodes.
func fitPods(nodes []viewNode, pods []int) ([]int, string) {
	order := podOrder(pods)
	at := make([]int, len(pods))
	ni := 0
	left := 0
	if len(nodes) > 0 {
		left = nodes[0].free
	}
	for _, pi := range order {
		for ni < len(nodes) && left < pods[pi] {
			ni++
			if ni < len(nodes) {
				left = nodes[ni].free
			}
		}
		if ni == len(nodes) {
			return nil, "insufficient capacity"
		}
		if !nodes[ni].healthy {
			return nil, "only bad nodes have room"
		}
		if !nodes[ni].allowed {
			return nil, "only nodes outside the allowed ones have room"
		}
		at[pi] = ni
		left -= pods[pi]
	}
	return at, ""
}

// leaf states for pickLeaves.
const (
	leafBusy = iota
	leafFree
	leafPreemptible
)

// pickLeaves chooses n leaves among a node's leaves (listed depth-first,
// so that every cell covers a contiguous block) whose lowest common
// ancestor is as low as possible: the smallest block size that holds n
// available leaves, preferring a block that needs no preemption, then the
// first such block. Inside the block, free leaves go first.
func pickLeaves(state []uint8, blocks []int, n int, out []int) []int {
	for _, size := range blocks {
		if size < n {
			continue
		}
		bestAvail, bestFree := -1, -1
		for b := 0; b+size <= len(state); b += size {
			free, avail := 0, 0
			for _, st := range state[b : b+size] {
				switch st {
				case leafFree:
					free++
					avail++
				case leafPreemptible:
					avail++
				}
			}
			if free >= n && bestFree < 0 {
				bestFree = b
				break
			}
			if avail >= n && bestAvail < 0 {
				bestAvail = b
			}
		}
		b := bestFree
		if b < 0 {
			b = bestAvail
		}
		if b < 0 {
			continue
		}
		for _, want := range []uint8{leafFree, leafPreemptible} {
			for i := b; i < b+size && len(out) < n; i++ {
				if state[i] == want {
					out = append(out, i)
				}
			}
		}
		return out
	}
	return nil
}

// shownBad counts the virtual leaves under v bound to bad devices that no
// group uses: the devices of a partly bad node its VC may not be given.
func shownBad(v *VCell) int {
	if v.phys == nil || v.phys.bad == 0 {
		return 0
	}
	if v.level == 1 {
		if v.group == nil {
			return 1
		}
		return 0
	}
	n := 0
	for _, c := range v.children {
		n += shownBad(c)
	}
	return n
}

func vleavesOf(v *VCell, out []*VCell) []*VCell {
	if v.level == 1 {
		return append(out, v)
	}
	for _, c := range v.children {
		out = vleavesOf(c, out)
	}
	return out
}

func pleavesOf(p *PCell, out []*PCell) []*PCell {
	if p.level == 1 {
		return append(out, p)
	}
	for _, c := range p.children {
		out = pleavesOf(c, out)
	}
	return out
}

// blockSizes lists the leaf counts of the levels 1..top of a chain.
func blockSizes(ch *Chain, top int) []int {
	b := make([]int, top)
	for l := 1; l <= top; l++ {
		b[l-1] = ch.types[l].leaves
	}
	return b
}

// placeInVC runs the intra-VC topology-aware scheduler on one view. In
// the first pass only unused cells count as free; in the preemption pass
// cells of the VC's groups with a lower priority count too.
func (s *Scheduler) placeInVC(vcc *vcChain, pods []int, prio int, preempt bool) ([][]*VCell, string) {
	nodes := s.scratch[:0]
	for _, v := range vcc.view {
		n := viewNode{v: v, used: v.used, healthy: v.phys == nil || v.phys.bad < v.phys.leaves, allowed: s.vnodeAllowed(v)}
		n.free = v.leaves - v.used
		n.free -= shownBad(v) // a partly bad node's leaves shown bad are not free
		if preempt {
			n.higher = 0
			if v.used > 0 {
				for _, l := range vleavesOf(v, nil) {
					if l.group == nil {
						continue
					}
					if l.phys != nil && l.phys.bad > 0 {
						continue // freeing it gives no healthy device
					}
					if l.group.Priority < prio {
						n.free++
					} else if l.group.Priority > prio {
						n.higher++
					}
				}
			}
		} else {
			n.higher = v.used // the first pass asks as if at opportunistic priority
		}
		nodes = append(nodes, n)
	}
	s.scratch = nodes
	sortView(nodes)
	at, reason := fitPods(nodes, pods)
	if at == nil {
		return nil, reason
	}
	s.epoch++
	out := make([][]*VCell, len(pods))
	order := podOrder(pods)
	var leaves []*VCell
	var state []uint8
	var idx []int
	for _, pi := range order {
		v := nodes[at[pi]].v
		leaves = vleavesOf(v, leaves[:0])
		state = state[:0]
		for _, l := range leaves {
			switch {
			case l.mark == s.epoch, l.phys != nil && l.phys.bad > 0:
				state = append(state, leafBusy)
			case l.group == nil:
				state = append(state, leafFree)
			case preempt && l.group.Priority < prio:
				state = append(state, leafPreemptible)
			default:
				state = append(state, leafBusy)
			}
		}
		idx = pickLeaves(state, blockSizes(vcc.chain, v.level), pods[pi], idx[:0])
		if idx == nil {
			return nil, "no cell inside the chosen node fits the pod"
		}
		for _, i := range idx {
			leaves[i].mark = s.epoch
			out[pi] = append(out[pi], leaves[i])
		}
	}
	return out, ""
}

func (s *Scheduler) scheduleGuaranteed(r Request, vc *VC) Decision {
	if r.Fastest && len(r.LV) > 0 && s.classes > 0 && s.allowed == nil {
		if d, ok := s.placeLxV(r, vc); ok {
			return d
		}
	}
	var views []*vcChain
	if r.PinnedCell != "" {
		views = []*vcChain{vc.byPin[r.PinnedCell]}
	} else {
		for _, vcc := range vc.chains {
			if vcc.chain.serves(r.LeafType) {
				views = append(views, vcc)
			}
		}
	}
	reason := "VC has no cells"
	passes := []bool{false}
	if !r.NoPreemption {
		passes = append(passes, true)
	}
	// Every chain without preemption first, then with it: a group never
	// preempts in one chain while another chain could take it as is.
	for _, preempt := range passes {
		for _, vcc := range views {
			vp, why := s.placeInVC(vcc, r.Pods, r.Priority, preempt)
			if vp == nil {
				reason = fmt.Sprintf("chain %s: %s", vcc.chain.Name, why)
				continue
			}
			if d, ok := s.commitGuaranteed(r, vc, vcc, vp); ok {
				return d
			}
			reason = fmt.Sprintf("chain %s: no physical cells for the VC's placement", vcc.chain.Name)
		}
	}
	return Decision{Reason: reason}
}

// commitGuaranteed binds a virtual placement to physical cells and takes
// them, preempting what it must. On failure nothing changes.
func (s *Scheduler) commitGuaranteed(r Request, vc *VC, vcc *vcChain, vp [][]*VCell) (Decision, bool) {
	ch := vcc.chain
	if r.Fastest && s.classes > 0 && r.Class >= 0 && r.Class < s.classes {
		ch.class = r.Class
		defer func() { ch.class = -1 }()
		if s.balance {
			ch.balVC = vcc
			for _, pod := range vp {
				ch.pod = max(ch.pod, len(pod))
			}
			defer func() { ch.balVC, ch.bal, ch.pod = nil, nil, 0 }()
		}
	}
	// A preemption in progress that this placement overlaps (only a higher
	// priority can choose a preemptor's leaves) is overridden first: its
	// devices go back to its victims, which this group may preempt in turn.
	for _, pod := range vp {
		for _, l := range pod {
			if g := l.group; g != nil && g.state == preempting {
				s.cancel(g)
			}
		}
	}
	// Intra-VC victims, in order of first appearance.
	var victims []*Group
	for _, pod := range vp {
		for _, l := range pod {
			if g := l.group; g != nil && !slices.Contains(victims, g) {
				victims = append(victims, g)
			}
		}
	}
	// Lazy victims give up their VC cells first and run on as
	// opportunistic, so that binding may steer around them.
	type pair struct {
		v *VCell
		p *PCell
	}
	var lazy []*Group
	var lazyPairs [][]pair
	s.newBinds = s.newBinds[:0]
	for _, g := range victims {
		if !g.Lazy || g.state == leaving {
			continue // a group already leaving is not demoted: it goes
		}
		var ps []pair
		for _, l := range g.vleaves {
			ps = append(ps, pair{l, l.phys})
		}
		lazy = append(lazy, g)
		lazyPairs = append(lazyPairs, ps)
		s.demote(g)
	}
	// Bind in the order the pods were fitted (smallest first), as HiveD.
	s.podSizes = s.podSizes[:0]
	for _, pod := range vp {
		s.podSizes = append(s.podSizes, len(pod))
	}
	s.podIdx = podOrderInto(s.podIdx, s.podSizes)
	order := s.podIdx
	ok := true
	for _, pi := range order {
		for _, l := range vp[pi] {
			if !s.bind(l) {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
	}
	if !ok {
		for i := len(s.newBinds) - 1; i >= 0; i-- {
			if v := s.newBinds[i]; v.phys != nil && v.used == 0 {
				s.unbindTree(v)
			}
		}
		for i, g := range lazy {
			s.promote(g, func(yield func(*VCell, *PCell)) {
				for _, p := range lazyPairs[i] {
					yield(p.v, p.p)
				}
			})
		}
		// Undoing may have unbound cells that showed bad hardware.
		for _, pod := range vp {
			for _, l := range pod {
				r := l
				for r.parent != nil {
					r = r.parent
				}
				if r.phys != nil && r.phys.bad > 0 {
					s.fixBad(r.phys)
				}
			}
		}
		return Decision{}, false
	}
	// Everyone still on the chosen devices goes: intra-VC victims that were
	// not lazy, and opportunistic groups (demoted ones included).
	var kill []*Group
	for _, g := range victims {
		if !g.Lazy || g.state == leaving {
			kill = append(kill, g)
		}
	}
	for _, pod := range vp {
		for _, l := range pod {
			if g := l.phys.group; g != nil && !slices.Contains(kill, g) {
				kill = append(kill, g)
			}
		}
	}
	killed := func(g *Group) bool { return slices.Contains(kill, g) }
	d := Decision{Placed: true, Chain: ch.Name}
	if s.stateful {
		// The victims leave in their own time; the group holds its devices
		// meanwhile (takeOver) and runs once they are gone.
		kill = nil
	}
	var cleanup []*VCell
	for _, g := range kill {
		cleanup = append(cleanup, s.dropUsage(g)...)
		delete(s.groups, g.Name)
		d.Preempted = append(d.Preempted, g.Name)
	}
	for _, g := range lazy {
		if !killed(g) {
			d.Demoted = append(d.Demoted, g.Name)
		}
	}
	s.seq++
	g := &Group{Name: r.Group, VC: vc, Priority: r.Priority, origPriority: r.Priority, Lazy: r.LazyPreemptable, chain: ch, seq: s.seq, pinned: vcc.pinnedID}
	n := 0
	for _, pod := range vp {
		n += len(pod)
	}
	g.vleaves, g.pre, g.pods = make([]*VCell, 0, n), make([]string, 0, n), make([][]*PCell, 0, len(vp))
	// Every pod's devices are cut from one block (capped, so that no
	// pod's append runs into the next), one allocation a group.
	all := make([]*PCell, 0, n)
	for _, pod := range vp {
		from := len(all)
		for _, l := range pod {
			s.takeOver(g, l, l.phys)
			s.use(g, l, l.phys)
			all = append(all, l.phys)
			g.vleaves = append(g.vleaves, l)
			root := l.root()
			g.pre = append(g.pre, root.vcc.chain.types[root.level].name)
		}
		g.pods = append(g.pods, all[from:len(all):len(all)])
	}
	s.groups[g.Name] = g
	for _, v := range cleanup {
		s.unbindUp(v)
	}
	if len(g.victims) > 0 {
		g.state = preempting
		d.Placed, d.Preempting = false, true
		d.Reason = "waiting for its victims to leave"
		d.Victims = names(g.victims)
	}
	s.doomCheck(ch)
	d.Pods = podsOf(g)
	return d, true
}

func podsOf(g *Group) []Pod {
	out := make([]Pod, len(g.pods))
	n := 0
	for _, pod := range g.pods {
		n += len(pod)
	}
	gpus := make([]int, 0, n) // one block for all pods, each capped
	for i, pod := range g.pods {
		out[i].Node = pod[0].node
		from := len(gpus)
		for _, l := range pod {
			gpus = append(gpus, l.gpu)
		}
		out[i].GPUs = gpus[from:len(gpus):len(gpus)]
	}
	return out
}

// bind makes sure a virtual cell is bound, binding its unbound ancestors
// first: a preassigned cell through buddy allocation, any other cell to an
// unbound child of its parent's physical cell (which keeps the VC's
// topology inside the bound cell).
func (s *Scheduler) bind(v *VCell) bool {
	if v.phys != nil {
		// Bound before this call: by an earlier pod of the decision, by
		// Hold, or by fixBad while a cancelled preemption's or a doomed
		// cell's binding was undone and redone, or for another group of
		// the VC on the same node. A leaf shown bad that way serves no
		// pod, and a cell bound inside a node the decision may not use
		// serves none of it.
		if s.allowed != nil && v.phys.level <= v.phys.chain.NodeLevel && !s.allowedNode(v.phys.node) {
			return false
		}
		return usable(v.phys)
	}
	if v.parent == nil {
		var p *PCell
		if s.allowed != nil {
			p = s.restrictedAlloc(v)
		} else {
			p = v.vcc.chain.buddyAlloc(v.level, healthyAlloc)
		}
		if p == nil {
			return false
		}
		s.bindPre(v, p)
		return true
	}
	if !s.bind(v.parent) {
		return false
	}
	if v.phys != nil {
		// Binding the parent showed its bad hardware to the VC (fixBad)
		// and picked v for it: v may not be bound a second time. A cell
		// with healthy leaves left (a quarantined device in a node) may
		// still serve the decision's leaves inside it.
		return usable(v.phys)
	}
	var best *PCell
	par := v.parent.phys
	fast := false
	if s.allowed == nil && par.bad == 0 && par.opp == 0 && par.chain.bal == nil && par.chain.class < 0 {
		// No child is bad or holds opportunistic devices, and nothing else
		// ranks them (better): the first unbound child wins. It has no bad
		// leaf (its parent has none), so it is bound without reading it:
		// only written, which does not wait for its cache line.
		var i int
		best, i, fast = par.firstUnbound()
		if fast {
			if best == nil {
				return false
			}
			linkChild(v, par, best, i)
			s.newBinds = append(s.newBinds, v)
			return true
		}
	}
	if !fast {
		for _, c := range par.children {
			if c.vcell != nil || s.allowed != nil && !s.canHost(v, c) {
				continue
			}
			if best == nil || better(c, best) {
				best = c
			}
		}
	}
	if best == nil || best.bad > 0 && best.level <= best.chain.NodeLevel && (best.level == 1 || best.bad == best.leaves) {
		return false
	}
	link(v, best)
	s.newBinds = append(s.newBinds, v)
	if best.bad > 0 {
		s.fixBad(best)
	}
	return true
}

// usable reports whether a physical cell bound to a decision's virtual
// cell can serve it: a bad leaf cannot, a node-level cell can while one of
// its devices is healthy, and a cell above node level always can (its
// nodes are checked as they are bound).
func usable(p *PCell) bool {
	return p.bad < p.leaves || p.level > p.chain.NodeLevel
}

// bindPre binds a preassigned cell to a physical cell already taken out of
// the buddy system.
func (s *Scheduler) bindPre(v *VCell, p *PCell) {
	link(v, p)
	v.vcc.unused[v.level]--
	v.vcc.chain.vcUnused[v.level]--
	s.newBinds = append(s.newBinds, v)
	if p.bad > 0 {
		s.fixBad(p)
	}
}

// fixBad binds every bad, unbound child of a bound multi-node cell to an
// unbound virtual sibling, so that the VC's scheduler sees the failure
// instead of being promised a healthy cell that is not there.
//
// Below node level it goes on only inside a node that is partly bad (a
// quarantined device): a failed node is shown whole, as its node-level
// cell, while a node with one quarantined device stays the VC's with
// that device shown taken.
func (s *Scheduler) fixBad(p *PCell) {
	if p.vcell == nil || p.level == 1 || p.level <= p.chain.NodeLevel && p.bad == p.leaves {
		return
	}
	for _, c := range p.children {
		if c.bad == 0 {
			continue
		}
		if c.vcell == nil {
			// Prefer a virtual cell the decision under way has not chosen
			// (no leaf marked in this epoch): showing the failure on the
			// cell a pod was fitted to would make that pod's binding fail.
			var pick *VCell
			for _, vc := range p.vcell.children {
				if vc.phys != nil {
					continue
				}
				if pick == nil {
					pick = vc
				}
				if !s.chosen(vc) {
					pick = vc
					break
				}
			}
			if pick != nil {
				link(pick, c)
				s.newBinds = append(s.newBinds, pick)
			}
		}
		s.fixBad(c)
	}
}

// chosen reports whether a leaf of v is marked by the current decision.
func (s *Scheduler) chosen(v *VCell) bool {
	if v.level == 1 {
		return v.mark == s.epoch
	}
	for _, c := range v.children {
		if s.chosen(c) {
			return true
		}
	}
	return false
}

// unbindTree drops the bindings of v's subtree; a preassigned cell's
// physical cell goes back to the buddy system. Pinned cells stay bound.
func (s *Scheduler) unbindTree(v *VCell) {
	for _, c := range v.children {
		if c.phys != nil {
			s.unbindTree(c)
		}
	}
	if v.parent == nil && (v.vcc.pinned != nil || v.static) {
		return
	}
	p := v.phys
	unlink(p)
	v.phys = nil
	if v.doomed {
		v.doomed = false
		v.vcc.chain.doomed--
	}
	if v.parent == nil {
		ch := v.vcc.chain
		v.vcc.unused[v.level]++
		ch.vcUnused[v.level]++
		ch.releaseFree(p)
	}
}

// unbindUp releases the bindings a freed leaf no longer needs: the highest
// unused ancestor's subtree.
func (s *Scheduler) unbindUp(v *VCell) {
	if v.used > 0 || v.phys == nil {
		return
	}
	x := v
	for x.parent != nil && x.parent.used == 0 {
		x = x.parent
	}
	s.unbindTree(x)
	if x.parent != nil && x.parent.phys != nil && x.parent.phys.bad > 0 {
		s.fixBad(x.parent.phys)
	}
}

// holdVirtual gives virtual leaf v to g and counts it used up its chain;
// a doomed cell that a group now holds is no longer owed to bad hardware.
func holdVirtual(g *Group, v *VCell) {
	v.group = g
	for x := v; x != nil; x = x.parent {
		x.used++
		if x.doomed {
			x.doomed = false
			x.vcc.chain.doomed--
		}
	}
}

func (s *Scheduler) use(g *Group, v *VCell, p *PCell) {
	if v != nil {
		holdVirtual(g, v)
	}
	p.group = g
	opp := g.Priority == Opportunistic
	s.viewGen++
	for x := p; x != nil; x = x.parent {
		x.used++
		if opp {
			x.opp++
		}
	}
}

// dropUsage frees a group's devices and VC leaves but leaves the bindings
// for the caller to tidy (see unbindUp); it returns the freed VC leaves.
func (s *Scheduler) dropUsage(g *Group) []*VCell {
	opp := g.Priority == Opportunistic
	for _, pod := range g.pods {
		for _, p := range pod {
			if p.group != g {
				// Lent to a preemptor, which no longer waits for g here.
				if p.leaving == g {
					p.leaving = nil
					t := p.group
					if !slices.ContainsFunc(t.pods, func(pod []*PCell) bool {
						return slices.ContainsFunc(pod, func(q *PCell) bool { return q.leaving == g })
					}) {
						t.victims = slices.DeleteFunc(t.victims, func(x *Group) bool { return x == g })
					}
				}
				continue
			}
			p.group = nil
			s.viewGen++
			for x := p; x != nil; x = x.parent {
				x.used--
				if opp {
					x.opp--
				}
			}
		}
	}
	var out []*VCell
	for _, v := range g.vleaves {
		if v.group != g {
			continue // lent to a preemptor with its device
		}
		v.group = nil
		for x := v; x != nil; x = x.parent {
			x.used--
		}
		out = append(out, v)
	}
	g.vleaves = nil
	return out
}

// demote is HiveD's lazy preemption: the group gives up its VC cells and
// runs on as opportunistic until something needs its devices.
func (s *Scheduler) demote(g *Group) {
	for _, v := range g.vleaves {
		if v.group != g {
			continue
		}
		v.group = nil
		for x := v; x != nil; x = x.parent {
			x.used--
		}
	}
	s.viewGen++
	for _, pod := range g.pods {
		for _, p := range pod {
			for x := p; x != nil; x = x.parent {
				x.opp++
			}
		}
	}
	old := g.vleaves
	g.vleaves = nil
	g.Priority = Opportunistic
	g.Demoted = true
	s.noteDemoted(g)
	for _, v := range old {
		s.unbindUp(v)
	}
}

// promote reverts a demotion (the preemptor could not be placed): the
// group's VC leaves are bound back to exactly the devices it runs on.
func (s *Scheduler) promote(g *Group, pairs func(yield func(*VCell, *PCell))) {
	var got []*VCell
	ok := true
	pairs(func(v *VCell, p *PCell) {
		if !ok {
			return
		}
		if !s.bindExact(v, p) {
			ok = false
			return
		}
		v.group = g
		for x := v; x != nil; x = x.parent {
			x.used++
		}
		got = append(got, v)
	})
	if !ok {
		// The cells were taken meanwhile: the group stays opportunistic.
		for _, v := range got {
			v.group = nil
			for x := v; x != nil; x = x.parent {
				x.used--
			}
		}
		for _, v := range got {
			s.unbindUp(v)
		}
		return
	}
	g.vleaves = got
	s.viewGen++
	for _, pod := range g.pods {
		for _, p := range pod {
			for x := p; x != nil; x = x.parent {
				x.opp--
			}
		}
	}
	g.Demoted = false
	g.Priority = g.origPriority
}

// bindExact binds v, and its unbound ancestors, to p and p's ancestors.
// It is static binding: no preference and no safety check (the caller
// knows the binding existed before, or is a test planting a bad state).
func (s *Scheduler) bindExact(v *VCell, p *PCell) bool {
	if v.phys == p {
		return true
	}
	if v.phys != nil || p.vcell != nil || v.level != p.level {
		return false
	}
	if v.parent == nil {
		ch := p.chain
		if !ch.available(p) {
			return false
		}
		ch.takeSpecific(p)
		link(v, p)
		v.vcc.unused[v.level]--
		ch.vcUnused[v.level]--
		return true
	}
	if p.parent == nil || !s.bindExact(v.parent, p.parent) {
		return false
	}
	link(v, p)
	return true
}

// scheduleOpportunistic places a group on the physical cells of a chain,
// packing it with other opportunistic groups and away from guaranteed
// ones (HiveD's crossPriorityPack = false). It preempts nothing.
func (s *Scheduler) scheduleOpportunistic(r Request, vc *VC) Decision {
	reason := "no chain of the requested leaf type"
	for _, ch := range s.chains {
		if !ch.serves(r.LeafType) {
			continue
		}
		nodes := s.oppView(ch)
		at, why := fitPods(nodes, r.Pods)
		if at == nil {
			reason = fmt.Sprintf("chain %s: %s", ch.Name, why)
			continue
		}
		s.epoch++
		g := &Group{Name: r.Group, VC: vc, Priority: Opportunistic, chain: ch}
		g.pods = make([][]*PCell, len(r.Pods))
		order := podOrder(r.Pods)
		var leaves []*PCell
		var state []uint8
		var idx []int
		failed := false
		for _, pi := range order {
			p := nodes[at[pi]].p
			leaves = pleavesOf(p, leaves[:0])
			state = state[:0]
			for _, l := range leaves {
				if l.group == nil && l.mark != s.epoch && !l.ext {
					state = append(state, leafFree)
				} else {
					state = append(state, leafBusy)
				}
			}
			idx = pickLeaves(state, blockSizes(ch, p.level), r.Pods[pi], idx[:0])
			if idx == nil {
				failed = true
				break
			}
			for _, i := range idx {
				leaves[i].mark = s.epoch
				g.pods[pi] = append(g.pods[pi], leaves[i])
			}
		}
		if failed {
			reason = fmt.Sprintf("chain %s: no cell inside the chosen node fits the pod", ch.Name)
			continue
		}
		for _, pod := range g.pods {
			for _, l := range pod {
				s.use(g, nil, l)
			}
		}
		s.seq++
		g.seq = s.seq
		s.groups[g.Name] = g
		return Decision{Placed: true, Chain: ch.Name, Pods: podsOf(g)}
	}
	return Decision{Reason: reason}
}

// oppView is a chain's view for opportunistic decisions open to every
// node (no Request.Nodes), sorted, as of view generation gen: while the
// scheduler's viewGen stays, nothing it reads changed, and decisions
// that place nothing (the most, on a full cluster) share it. It is read
// only: each decision that places raises viewGen before the next reads.
type oppView struct {
	ch    *Chain
	gen   uint64
	nodes []viewNode
}

// checkOppViews makes oppView check each view it serves against one made
// afresh, and panic if they differ (the tests set it).
var checkOppViews bool

// oppView is chain ch's view for the opportunistic decision under way,
// sorted: made afresh for a decision restricted to some nodes, else
// kept (oppViews) while viewGen stays.
func (s *Scheduler) oppView(ch *Chain) []viewNode {
	if s.allowed != nil {
		s.scratch = s.makeOppView(ch, s.scratch[:0])
		return s.scratch
	}
	i := slices.IndexFunc(s.oppViews, func(v oppView) bool { return v.ch == ch })
	if i < 0 {
		s.oppViews = append(s.oppViews, oppView{ch: ch, nodes: s.makeOppView(ch, nil), gen: s.viewGen})
		return s.oppViews[len(s.oppViews)-1].nodes
	}
	v := &s.oppViews[i]
	if v.gen != s.viewGen {
		v.nodes, v.gen = s.makeOppView(ch, v.nodes[:0]), s.viewGen
	} else if checkOppViews {
		if fresh := s.makeOppView(ch, nil); !slices.Equal(fresh, v.nodes) {
			panic(fmt.Sprintf("tenancy: chain %s's opportunistic view is stale at view generation %d", ch.Name, s.viewGen))
		}
	}
	return v.nodes
}

// makeOppView appends chain ch's view for the opportunistic decision
// under way to nodes, and sorts it.
func (s *Scheduler) makeOppView(ch *Chain, nodes []viewNode) []viewNode {
	for _, p := range ch.nodes {
		// A quarantined device still runs: only a failed node is
		// closed to opportunistic groups, and the devices pods outside
		// the cells hold (SetExternal).
		free := p.leaves - p.used
		if p.bad > 0 && !p.down {
			free -= externalFree(p)
		}
		nodes = append(nodes, viewNode{p: p, free: free, used: p.opp, higher: p.used - p.opp, healthy: !p.down, allowed: s.allowedNode(p.node)})
	}
	sortView(nodes)
	return nodes
}

// Release frees a group's devices (the job finished or was stopped).
func (s *Scheduler) Release(name string) error {
	g := s.groups[name]
	if g == nil {
		return fmt.Errorf("tenancy: release of unknown group %s", quote.Value(name))
	}
	if g.state == preempting {
		s.cancelled, s.reprieved = s.cancelled[:0], s.reprieved[:0]
		s.cancel(g) // its victims keep what it held of theirs
		if !s.holding {
			s.revertDemoted()
		}
		return nil
	}
	freed := s.dropUsage(g)
	delete(s.groups, name)
	if s.holding {
		s.deferred = append(s.deferred, freed...)
		return nil
	}
	for _, v := range freed {
		s.unbindUp(v)
	}
	s.doomCheck(g.chain)
	s.revertDemoted()
	return nil
}

// Groups lists the names of the groups holding devices, sorted.
func (s *Scheduler) Groups() []string {
	out := make([]string, 0, len(s.groups))
	for n := range s.groups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Placement reports where a group runs.
func (s *Scheduler) Placement(name string) ([]Pod, bool) {
	g := s.groups[name]
	if g == nil {
		return nil, false
	}
	return podsOf(g), true
}

// GroupInfo reports a group's current priority and whether it was demoted.
func (s *Scheduler) GroupInfo(name string) (prio int, demoted bool, ok bool) {
	g := s.groups[name]
	if g == nil {
		return 0, false, false
	}
	return g.Priority, g.Demoted, true
}

// String renders a decision compactly for logs and tests.
func (d Decision) String() string {
	if !d.Placed {
		return "wait: " + d.Reason
	}
	var b strings.Builder
	for i, p := range d.Pods {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s%v", p.Node, p.GPUs)
	}
	if len(d.Preempted) > 0 {
		fmt.Fprintf(&b, " preempted=%v", d.Preempted)
	}
	if len(d.Demoted) > 0 {
		fmt.Fprintf(&b, " demoted=%v", d.Demoted)
	}
	return b.String()
}
