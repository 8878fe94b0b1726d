// Package tenant holds the tenancy stages of the scheduling core (between
// scheduling order and placement): Quota, the GPU-count quota baseline,
// and HiveD, virtual clusters of cells bound by buddy allocation (package
// tenancy). A Layout ties a cells file to the cluster the drivers see.
package tenant

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// Layout is a cells config and the cluster it describes: node i of the
// cluster is the i-th node the config names, its GPUs the node's devices
// in ascending index order.
type Layout struct {
	Cells   *tenancy.Config
	Cluster *cluster.Cluster
	probe   *tenancy.Scheduler // validated state, read-only
	gpuID   map[string]map[int]int
	vcs     []string
}

// DefaultVC names the one VC of a cluster without a cells file.
const DefaultVC = "default"

// UniformCells is the cells config of a uniform cluster with one VC
// holding every node: what tenancy means without a cells file.
func UniformCells(c *cluster.Cluster) (*tenancy.Config, error) {
	if c.NumNodes() == 0 {
		return nil, fmt.Errorf("tenant: empty cluster")
	}
	per := len(c.Nodes[0].GPUs)
	for _, n := range c.Nodes {
		if len(n.GPUs) != per {
			return nil, fmt.Errorf("tenant: without a cells file the cluster must be uniform, %s is not", c)
		}
	}
	cfg := &tenancy.Config{File: fmt.Sprintf("cluster %s, one VC %q holding every node", c, DefaultVC)}
	cfg.CellTypes = []tenancy.CellTypeSpec{{Name: "NODE", ChildCellType: "GPU", ChildCellNumber: per, IsNodeLevel: true}}
	for _, n := range c.Nodes {
		cfg.PhysicalCells = append(cfg.PhysicalCells, tenancy.PhysicalCellSpec{CellType: "NODE", CellAddress: n.Name})
	}
	cfg.VCs = []tenancy.VCSpec{{Name: DefaultVC, VirtualCells: []tenancy.VirtualCellSpec{{CellType: "NODE", CellNumber: c.NumNodes()}}}}
	return cfg, nil
}

// NewLayout validates a cells config and builds its cluster.
func NewLayout(cfg *tenancy.Config) (*Layout, error) {
	s, err := tenancy.New(cfg)
	if err != nil {
		return nil, err
	}
	nodes := s.Nodes()
	sizes := make([]int, len(nodes))
	for i, n := range nodes {
		sizes[i] = len(n.Devices)
	}
	c, err := cluster.NewSized(sizes)
	if err != nil {
		return nil, err
	}
	l := &Layout{Cells: cfg, Cluster: c, probe: s, gpuID: map[string]map[int]int{}, vcs: s.VCs()}
	for i, n := range nodes {
		c.Nodes[i].Name = n.Name
		m := map[int]int{}
		for k, d := range n.Devices {
			m[d] = c.Nodes[i].GPUs[k]
		}
		l.gpuID[n.Name] = m
	}
	return l, nil
}

// VCs lists the VC names in config order.
func (l *Layout) VCs() []string { return l.vcs }

// Quota is a VC's GPU count.
func (l *Layout) Quota(vc string) int { return l.probe.VCDevices(vc) }

// VCOf maps a job to its VC: the trace's vc column, or the only VC.
func (l *Layout) VCOf(s *workload.Spec) string { return l.vcOf(s) }

func (l *Layout) vcOf(s *workload.Spec) string {
	if s.VC == "" && len(l.vcs) == 1 {
		return l.vcs[0]
	}
	return s.VC
}

// Validate checks every job against the cells before the first round: a
// job naming an unknown VC, or needing more than its VC can ever hold, is
// an error naming its file, line and field.
func (l *Layout) Validate(tr *workload.Trace, hived bool) error {
	// A fit check walks a VC's whole view: ask it once per VC and shape,
	// since a trace repeats a few shapes many times.
	fits := map[string]*tenancy.DemandError{}
	for i := range tr.Jobs {
		j := &tr.Jobs[i]
		vc := l.vcOf(j)
		if vc == "" {
			return fmt.Errorf("%s:%d: field \"vc\": job %d names no VC and the cells define %d (%s)", j.Source, j.Line, j.ID, len(l.vcs), strings.Join(l.vcs, ", "))
		}
		if !slices.Contains(l.vcs, vc) {
			return fmt.Errorf("%s:%d: field \"vc\": job %d: unknown VC %q (the cells define %s)", j.Source, j.Line, j.ID, vc, strings.Join(l.vcs, ", "))
		}
		if pod := podSize(j, l.probe.MaxNode()); pod > l.probe.MaxNode() {
			return fmt.Errorf("%s:%d: field \"pod_gpus\": job %d has pods of %d GPUs but the largest node has %d", j.Source, j.Line, j.ID, pod, l.probe.MaxNode())
		}
		if j.VCPriority == tenancy.Opportunistic {
			if hived && (j.PinnedCell != "" || j.LeafCellType != "") {
				if err := l.demand(fits, j, vc); err != nil {
					return err
				}
			}
			continue
		}
		if q := l.Quota(vc); j.GPUs > q {
			return fmt.Errorf("%s:%d: field \"num_gpus\": job %d needs %d GPUs but VC %s holds %d", j.Source, j.Line, j.ID, j.GPUs, vc, q)
		}
		if hived {
			if pod, most := podSize(j, l.probe.MaxNode()), l.probe.MaxPod(vc); pod > most {
				return fmt.Errorf("%s:%d: field \"pod_gpus\": job %d has pods of %d GPUs but the largest cell of VC %s below a node holds %d", j.Source, j.Line, j.ID, pod, vc, most)
			}
			if err := l.demand(fits, j, vc); err != nil {
				return err
			}
		}
	}
	return nil
}

// demand checks a job's pods, pinned cell and leaf type against its VC's
// cells (tenancy.CheckDemand), once per distinct demand.
func (l *Layout) demand(memo map[string]*tenancy.DemandError, j *workload.Spec, vc string) error {
	d := tenancy.Demand{VC: vc, Pods: pods(j, l.probe.MaxNode()), PinnedCell: j.PinnedCell, LeafType: j.LeafCellType}
	if j.VCPriority == tenancy.Opportunistic {
		d.Priority = tenancy.Opportunistic // every guaranteed priority asks the same
	}
	key := fmt.Sprintf("%q %v %d %q %q", d.VC, d.Pods, d.Priority, d.PinnedCell, d.LeafType)
	e, seen := memo[key]
	if !seen {
		e = l.probe.CheckDemand(d)
		memo[key] = e
	}
	if e == nil {
		return nil
	}
	if strings.HasPrefix(e.Msg, "pods ") {
		return fmt.Errorf("%s:%d: field %q: job %d's %s", j.Source, j.Line, e.Field, j.ID, e.Msg)
	}
	return fmt.Errorf("%s:%d: field %q: job %d: %s", j.Source, j.Line, e.Field, j.ID, e.Msg)
}

// pods splits a job into pods: pod_gpus each, or, without pods, chunks of
// at most one node.
func pods(j *workload.Spec, node int) []int {
	if j.PodGPUs > 0 {
		out := make([]int, j.GPUs/j.PodGPUs)
		for i := range out {
			out[i] = j.PodGPUs
		}
		return out
	}
	var out []int
	for left := j.GPUs; left > 0; left -= node {
		out = append(out, min(left, node))
	}
	return out
}

func podSize(j *workload.Spec, node int) int { return pods(j, node)[0] }

// Quota is the quota baseline: each VC may hold at most its GPU count at
// once; inside that, the placer places on the shared cluster as usual.
// Opportunistic jobs (priority -1) are not counted against the quota.
type Quota struct {
	l      *Layout
	used   map[string]int
	sub    []*workload.Job
	at     []int
	chosen []bool
}

// NewQuota builds the quota stage.
func NewQuota(l *Layout) *Quota { return &Quota{l: l, used: map[string]int{}} }

// Name implements policy.Tenancy.
func (q *Quota) Name() string { return "quota" }

// Place implements policy.Tenancy: walk the order and keep each job whose
// VC still has quota for it (with a sticky placer, running jobs count
// first: they keep their GPUs), then let the placer place the kept jobs.
func (q *Quota) Place(env *policy.Env, order []*workload.Job, placer policy.Placer) [][]int {
	clear(q.used)
	q.chosen = append(q.chosen[:0], make([]bool, len(order))...)
	admit := func(i int, j *workload.Job) {
		vc := q.l.vcOf(&j.Spec)
		if j.VCPriority == tenancy.Opportunistic {
			q.chosen[i] = true
			return
		}
		if q.used[vc]+j.GPUs <= q.l.Quota(vc) {
			q.used[vc] += j.GPUs
			q.chosen[i] = true
		}
	}
	if placer.Sticky() {
		for i, j := range order {
			if j.Running() {
				admit(i, j)
			}
		}
	}
	for i, j := range order {
		if !q.chosen[i] && !(placer.Sticky() && j.Running()) {
			admit(i, j)
		}
	}
	q.sub, q.at = q.sub[:0], q.at[:0]
	for i, j := range order {
		if q.chosen[i] {
			q.sub = append(q.sub, j)
			q.at = append(q.at, i)
		}
	}
	alloc := placer.Place(env, q.sub)
	out := make([][]int, len(order))
	for k, i := range q.at {
		out[i] = alloc[k]
	}
	return out
}

// Finish implements policy.Tenancy.
func (q *Quota) Finish(*workload.Job) {}

// Check implements policy.Tenancy: no VC over its quota.
func (q *Quota) Check() error {
	for vc, n := range q.used {
		if n > q.l.Quota(vc) {
			return fmt.Errorf("VC %s holds %d GPUs over its quota of %d", vc, n, q.l.Quota(vc))
		}
	}
	return nil
}

// HiveD is the HiveD stage: jobs in the scheduler's order (which, for each
// VC, is its intra-VC order) ask the cells for a placement; a running job
// keeps its cells unless a higher-priority job of its VC, or any
// guaranteed job over opportunistic ones, preempts it. The cells choose
// the GPUs (HiveD's packing and buddy binding); the placer is not used.
//
// Each VC's queue is strict, as the placers' round frame is: the first
// guaranteed job of a VC that cannot be placed ends that VC's round (no
// backfilling), so a VC sees the same queue as on a private cluster of
// its cells. Other VCs go on; opportunistic jobs never block.
type HiveD struct {
	l       *Layout
	s       *tenancy.Scheduler
	held    map[int]bool
	node    int
	gone    map[int]bool
	index   map[int]int
	blocked map[string]bool
	fastest bool
	lv      [][]tenancy.LVStep // per class, PAL's L×V order (hived-pm)
}

// NewHiveD builds a HiveD stage with fresh cells (all free, all healthy).
func NewHiveD(l *Layout) (*HiveD, error) {
	s, err := tenancy.New(l.Cells)
	if err != nil {
		return nil, err
	}
	return &HiveD{l: l, s: s, held: map[int]bool{}, node: s.MaxNode(), gone: map[int]bool{}, index: map[int]int{}, blocked: map[string]bool{}}, nil
}

// NewHiveDStatic is NewHiveD with static binding: every VC cell is bound
// at the start and stays bound (the binding study's baseline).
func NewHiveDStatic(l *Layout) (*HiveD, error) {
	h, err := NewHiveD(l)
	if err != nil {
		return nil, err
	}
	return h, h.s.BindStatic()
}

// UseScores makes the stage variability-aware: among physical cells that
// are equally good for safety, health and opportunistic load, a job binds
// the one whose GPUs have the best (lowest) PM-scores for its class; and a
// job that fits one node is first placed on the free GPUs of its VC's
// bound cells by its class's L×V order, as PAL's placer places on the
// whole cluster (a job without pod_gpus may then spread over nodes).
// Safety is never traded: that placement binds nothing new.
func (h *HiveD) UseScores(sc *policy.Scores) error {
	for k := range sc.SF {
		if len(sc.SF[k]) != h.l.Cluster.Size() {
			return fmt.Errorf("tenant: scores cover %d GPUs, the cells %d", len(sc.SF[k]), h.l.Cluster.Size())
		}
	}
	h.s.SetSpeeds(len(sc.SF), func(class int, node string, gpu int) float64 { return sc.SF[class][h.l.gpuID[node][gpu]] })
	h.fastest = true
	h.lv = make([][]tenancy.LVStep, len(sc.LV))
	for k, steps := range sc.LV {
		for _, e := range steps {
			h.lv[k] = append(h.lv[k], tenancy.LVStep{V: e.V, Across: e.Across})
		}
	}
	return nil
}

// Name implements policy.Tenancy.
func (h *HiveD) Name() string {
	if h.fastest {
		return "hived-pm"
	}
	return "hived"
}

// Cells exposes the tenancy state (node events, tests).
func (h *HiveD) Cells() *tenancy.Scheduler { return h.s }

// Place implements policy.Tenancy.
func (h *HiveD) Place(_ *policy.Env, order []*workload.Job, _ policy.Placer) [][]int {
	out := make([][]int, len(order))
	clear(h.gone)
	clear(h.index)
	clear(h.blocked)
	for i, j := range order {
		h.index[j.ID] = i
	}
	for i, j := range order {
		if h.gone[j.ID] {
			continue
		}
		if h.held[j.ID] {
			out[i] = j.GPUsHeld
			continue
		}
		vc := h.l.vcOf(&j.Spec)
		guaranteed := j.VCPriority != tenancy.Opportunistic
		if guaranteed && h.blocked[vc] {
			continue
		}
		req := tenancy.Request{Group: strconv.Itoa(j.ID), VC: vc, Priority: j.VCPriority,
			Pods: pods(&j.Spec, h.node), Fastest: h.fastest, Class: int(j.Class), Spread: j.PodGPUs == 0,
			PinnedCell: j.PinnedCell, LeafType: j.LeafCellType}
		if h.fastest {
			req.LV = h.lv[j.Class]
		}
		d, err := h.s.Schedule(req)
		if err != nil {
			panic("tenant: " + err.Error()) // Validate rejects such jobs before the first round
		}
		if !d.Placed {
			h.blocked[vc] = h.blocked[vc] || guaranteed
			continue
		}
		h.held[j.ID] = true
		var g []int
		for _, p := range d.Pods {
			for _, dev := range p.GPUs {
				g = append(g, h.l.gpuID[p.Node][dev])
			}
		}
		slices.Sort(g)
		out[i] = g
		for _, v := range d.Preempted {
			id, _ := strconv.Atoi(v)
			delete(h.held, id)
			h.gone[id] = true
			if k, ok := h.index[id]; ok {
				out[k] = nil
			}
		}
	}
	return out
}

// SetNodeHealth implements sim.NodeHealth: cluster node i goes down or up.
func (h *HiveD) SetNodeHealth(node int, up bool) error {
	if node < 0 || node >= h.l.Cluster.NumNodes() {
		return fmt.Errorf("tenant: no node %d", node)
	}
	return h.s.SetNodeHealth(h.l.Cluster.Nodes[node].Name, up)
}

// Finish implements policy.Tenancy.
func (h *HiveD) Finish(j *workload.Job) {
	if h.held[j.ID] {
		delete(h.held, j.ID)
		if err := h.s.Release(strconv.Itoa(j.ID)); err != nil {
			panic("tenant: " + err.Error())
		}
	}
}

// Check implements policy.Tenancy: the full safety invariant and the
// consistency of the cells.
func (h *HiveD) Check() error { return h.s.Check() }

// PhillyCells is the cells config of the Philly replay: one 8-GPU node
// type (PCIe pairs and sockets inside, as a DGX-1-like machine), as many
// nodes as the VCs hold in all, and each VC owning its node count as node
// cells. Node names are node-0, node-1, ...
func PhillyCells(vcs []workload.PhillyVC) *tenancy.Config {
	cfg := &tenancy.Config{File: "philly VCs (philly/philly_vc.csv, 8-GPU nodes)"}
	cfg.CellTypes = []tenancy.CellTypeSpec{
		{Name: "PCIE", ChildCellType: "GPU", ChildCellNumber: 2},
		{Name: "SOCKET", ChildCellType: "PCIE", ChildCellNumber: 2},
		{Name: "NODE", ChildCellType: "SOCKET", ChildCellNumber: 2, IsNodeLevel: true},
	}
	n := 0
	for _, v := range vcs {
		for i := 0; i < v.Nodes; i++ {
			cfg.PhysicalCells = append(cfg.PhysicalCells, tenancy.PhysicalCellSpec{CellType: "NODE", CellAddress: fmt.Sprintf("node-%d", n)})
			n++
		}
		cfg.VCs = append(cfg.VCs, tenancy.VCSpec{Name: v.Name, VirtualCells: []tenancy.VirtualCellSpec{{CellType: "NODE", CellNumber: v.Nodes}}})
	}
	return cfg
}
