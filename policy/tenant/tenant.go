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
	"github.com/palsched/pal/round"
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
	// nodeGPUs is gpuID as sorted lists: turning a decision's devices
	// into GPU ids is on every decision's path, and a search of a node's
	// few devices is cheaper than a hash a device.
	nodeGPUs map[string]nodeGPUs
	vcs      []string
}

// nodeGPUs is one node's device indices, ascending, and their GPU ids.
type nodeGPUs struct{ devs, ids []int }

// id is the GPU id of device dev, which the node has.
func (n nodeGPUs) id(dev int) int {
	k, ok := slices.BinarySearch(n.devs, dev)
	if !ok {
		panic(fmt.Sprintf("tenant: no device %d in the node", dev))
	}
	return n.ids[k]
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
	l := &Layout{Cells: cfg, Cluster: c, probe: s, gpuID: map[string]map[int]int{}, nodeGPUs: map[string]nodeGPUs{}, vcs: s.VCs()}
	for i, n := range nodes {
		c.Nodes[i].Name = n.Name
		m := map[int]int{}
		var nd nodeGPUs
		for k, d := range n.Devices {
			m[d] = c.Nodes[i].GPUs[k]
			nd.devs = append(nd.devs, d)
			nd.ids = append(nd.ids, c.Nodes[i].GPUs[k])
		}
		l.gpuID[n.Name] = m
		l.nodeGPUs[n.Name] = nd
	}
	return l, nil
}

// VCs lists the VC names in config order.
func (l *Layout) VCs() []string { return l.vcs }

// Pooled reports whether a VC's cells split into more than one pool
// (tenancy.Pool: pinned cells, or GPUs of several leaf types), so that
// where its jobs may run depends on the pinned cell and leaf type they
// name. Its private reference then runs through the HiveD stage, which
// honours both; a VC of one pool runs on its private cluster as any
// cluster does (with guaranteed jobs the two are the same).
func (l *Layout) Pooled(vc string) bool {
	pools, err := l.probe.Pools(vc)
	return err == nil && len(pools) > 1
}

// GPU is the cluster's GPU id of device dev of the named node.
func (l *Layout) GPU(node string, dev int) (int, bool) {
	g, ok := l.gpuID[node][dev]
	return g, ok
}

// Node is the index in Cluster of the named node, found without a scan
// (false for a name the cells lack or a node with no GPU).
func (l *Layout) Node(name string) (int, bool) {
	if ids := l.nodeGPUs[name].ids; len(ids) > 0 {
		return l.Cluster.NodeOf(ids[0]), true
	}
	return 0, false
}

// Probe is a scheduler of the layout's cells that nothing runs on, for
// questions about the cells (a VC's private cluster, its draws).
func (l *Layout) Probe() *tenancy.Scheduler { return l.probe }

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
	return l.ValidateMemo(tr, hived, DemandMemo{})
}

// DemandMemo keeps the layout's answers to the fit checks Validate asks
// (tenancy.CheckDemand), by demand: its VC, pods, priority (opportunistic
// or not), pinned cell and leaf type, which are all a check reads of a
// job. The layout's probe runs nothing, so its answer to a demand never
// changes: a caller that validates job after job (pal-kube admits every
// waiting gang each round, one trace of one job at a time) may keep one
// memo for one layout and ask each demand once. A memo is for one layout
// only.
type DemandMemo map[string]*tenancy.DemandError

// ValidateMemo is Validate with the fit checks' answers kept in fits (see
// DemandMemo), which must hold only answers of this layout. The errors
// are Validate's, each naming its own job.
func (l *Layout) ValidateMemo(tr *workload.Trace, hived bool, fits DemandMemo) error {
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
func (l *Layout) demand(memo DemandMemo, j *workload.Spec, vc string) error {
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

// Quota is the quota baseline as YARN's capacity scheduler runs it: one
// queue per VC, each with its own scheduler order (PerVC) and its own
// placer, a VC holding at most its GPU count. A VC's queue is strict: its
// first job that does not fit (its quota by count, or the free GPUs by
// placement) ends that VC's round and blocks no other VC. Running jobs of
// other VCs are never preempted; a VC's own placer may suspend its own
// lower-ranked running jobs (Tiresias, SRTF), as on a private cluster.
// Opportunistic jobs (priority -1) are not counted against the quota: they
// run on what the guaranteed jobs leave, which may take their GPUs back.
//
// Each round the VCs place one after the other, the least used relative
// to its quota first (YARN's order of queues; ties in config order), each
// on the GPUs no other VC's guaranteed job holds.
type Quota struct {
	// Hide, if set, names GPUs of the cluster no VC may be given this round
	// (a driver's GPUs held outside the order).
	Hide   func(g int) bool
	l      *Layout
	iv     *IntraVC
	used   map[string]int
	layers map[string]*quotaLayer
	opp    *quotaLayer
	vcs    []string
	owner  []int // per GPU: the VC index of the guaranteed job holding it, -1 free
	index  map[int]int
	out    [][]int
}

type quotaLayer struct {
	vc     int
	placer policy.Placer
	env    policy.Env
	sh     shadows
	jobs   []*workload.Job
	adm    []*workload.Job
	sc     subCluster
}

// NewQuota builds the quota stage.
func NewQuota(l *Layout) *Quota {
	return &Quota{l: l, used: map[string]int{}, layers: map[string]*quotaLayer{}, index: map[int]int{}}
}

// SetIntraVC sets how each VC's placer is made (nil: the driver's placer).
func (q *Quota) SetIntraVC(iv *IntraVC) { q.iv = iv }

// Name implements policy.Tenancy.
func (q *Quota) Name() string { return "quota" }

func (q *Quota) layer(k int, vc string, given policy.Placer) *quotaLayer {
	if L := q.layers[vc]; L != nil {
		return L
	}
	p, err := q.iv.placer(given)
	if err != nil {
		panic("tenant: " + err.Error()) // the same factory made the driver's placer
	}
	L := &quotaLayer{vc: k, placer: p}
	q.layers[vc] = L
	return L
}

// Place implements policy.Tenancy.
func (q *Quota) Place(env *policy.Env, order []*workload.Job, placer policy.Placer) [][]int {
	q.out = make([][]int, len(order))
	c := env.Cluster
	if q.vcs == nil {
		q.vcs = q.l.VCs()
		q.opp = &quotaLayer{vc: -2}
		if p, err := q.iv.placer(placer); err == nil {
			q.opp.placer = p
		} else {
			panic("tenant: " + err.Error())
		}
	}
	if len(q.owner) != c.Size() {
		q.owner = make([]int, c.Size())
	}
	for g := range q.owner {
		q.owner[g] = -1
	}
	clear(q.index)
	clear(q.used)
	for k, vc := range q.vcs {
		q.layer(k, vc, placer).jobs = q.layers[vc].jobs[:0]
	}
	q.opp.jobs = q.opp.jobs[:0]
	held := map[string]int{}
	for i, j := range order {
		q.index[j.ID] = i
		if j.VCPriority == tenancy.Opportunistic {
			q.opp.jobs = append(q.opp.jobs, j)
			continue
		}
		vc := q.l.vcOf(&j.Spec)
		L := q.layers[vc]
		L.jobs = append(L.jobs, j)
		for _, g := range j.GPUsHeld {
			q.owner[g] = L.vc
		}
		held[vc] += len(j.GPUsHeld)
	}
	vcs := slices.Clone(q.vcs)
	slices.SortStableFunc(vcs, func(a, b string) int {
		// used/quota ascending, compared as cross products (exact).
		return held[a]*q.l.Quota(b) - held[b]*q.l.Quota(a)
	})
	for _, vc := range vcs {
		q.placeVC(env, q.layers[vc], vc)
	}
	q.placeOpportunistic(env)
	return q.out
}

// placeVC admits a VC's jobs in its order while they fit its quota, then
// lets its placer place them on the GPUs no other VC holds.
func (q *Quota) placeVC(env *policy.Env, L *quotaLayer, vc string) {
	quota, used := q.l.Quota(vc), 0
	L.adm = L.adm[:0]
	blocked := false
	for _, j := range L.jobs {
		if !blocked && used+j.GPUs <= quota {
			used += j.GPUs
			L.adm = append(L.adm, j)
			continue
		}
		blocked = true
		for _, g := range j.GPUsHeld { // over quota behind the VC's head: stopped
			q.owner[g] = -1
		}
	}
	if len(L.adm) == 0 {
		return
	}
	if !waiting(L.adm) {
		// Nothing waits: a sticky placer keeps everyone, and a non-sticky
		// one's moves would make room for no one (see stay).
		for _, j := range L.adm {
			q.out[q.index[j.ID]] = j.GPUsHeld
			q.used[vc] += j.GPUs
		}
		return
	}
	if !L.sc.build(env.Cluster, func(g int) bool { return (q.owner[g] < 0 || q.owner[g] == L.vc) && !q.hidden(g) }) {
		return
	}
	L.env = policy.Env{Cluster: L.sc.c, Scores: L.sc.scores(env.Scores), Rand: env.Rand, Locality: env.Locality}
	L.sh.view = L.sh.view[:0]
	for _, j := range L.adm {
		L.sh.view = append(L.sh.view, L.sh.of(j, L.sc.sub(j.GPUsHeld)))
	}
	alloc := L.placer.Place(&L.env, L.sh.view)
	if !L.placer.Sticky() {
		alloc = q.stay(L, alloc)
	}
	for k, j := range L.adm {
		for _, g := range j.GPUsHeld {
			q.owner[g] = -1
		}
		if alloc[k] == nil {
			continue
		}
		if round.Same(L.sh.view[k].GPUsHeld, alloc[k]) {
			q.out[q.index[j.ID]] = j.GPUsHeld
		} else {
			q.out[q.index[j.ID]] = L.sc.phys(alloc[k])
		}
	}
	for _, j := range L.adm {
		for _, g := range q.out[q.index[j.ID]] {
			q.owner[g] = L.vc
		}
		q.used[vc] += len(q.out[q.index[j.ID]])
	}
}

// stay keeps a running job that a non-sticky VC placer moved on its old
// GPUs when no other job of the VC was given any of them: the move frees
// nothing the VC needs. On the shared cluster a VC's re-plan from scratch
// sees other tenants' jobs come and go every round, which its private
// cluster never shows it, and would move its jobs round after round
// (with a migration cost, some would never progress). Moves that make
// room for another of the VC's jobs are kept.
func (q *Quota) stay(L *quotaLayer, alloc [][]int) [][]int {
	alloc = slices.Clone(alloc) // the placer's answer is read-only
	owner := map[int]int{}      // GPU → the job (index) moving onto it
	for k := range L.adm {
		if alloc[k] != nil && !round.Same(L.sh.view[k].GPUsHeld, alloc[k]) {
			for _, g := range alloc[k] {
				owner[g] = k
			}
		}
	}
	for k := range L.adm {
		old := L.sh.view[k].GPUsHeld
		if old == nil || alloc[k] == nil || round.Same(old, alloc[k]) {
			continue
		}
		if !slices.ContainsFunc(old, func(g int) bool { o, ok := owner[g]; return ok && o != k }) {
			alloc[k] = old
		}
	}
	return alloc
}

// placeOpportunistic places the opportunistic jobs on what the guaranteed
// ones left: a running one whose GPUs a guaranteed job took is stopped.
func (q *Quota) placeOpportunistic(env *policy.Env) {
	L := q.opp
	if len(L.jobs) == 0 {
		return
	}
	L.adm = L.adm[:0]
	for _, j := range L.jobs {
		if j.Running() && slices.ContainsFunc(j.GPUsHeld, func(g int) bool { return q.owner[g] >= 0 }) {
			continue // preempted: waits this round
		}
		L.adm = append(L.adm, j)
	}
	if !L.sc.build(env.Cluster, func(g int) bool { return q.owner[g] < 0 && !q.hidden(g) }) {
		return
	}
	L.env = policy.Env{Cluster: L.sc.c, Scores: L.sc.scores(env.Scores), Rand: env.Rand, Locality: env.Locality}
	L.sh.view = L.sh.view[:0]
	for _, j := range L.adm {
		L.sh.view = append(L.sh.view, L.sh.of(j, L.sc.sub(j.GPUsHeld)))
	}
	alloc := L.placer.Place(&L.env, L.sh.view)
	for k, j := range L.adm {
		if alloc[k] == nil {
			continue
		}
		if round.Same(L.sh.view[k].GPUsHeld, alloc[k]) {
			q.out[q.index[j.ID]] = j.GPUsHeld
		} else {
			q.out[q.index[j.ID]] = L.sc.phys(alloc[k])
		}
	}
}

func (q *Quota) hidden(g int) bool { return q.Hide != nil && q.Hide(g) }

// Finish implements policy.Tenancy.
func (q *Quota) Finish(j *workload.Job) {
	for _, L := range q.layers {
		L.sh.forget(j.ID)
	}
	if q.opp != nil {
		q.opp.sh.forget(j.ID)
	}
}

// Check implements policy.Tenancy: no VC over its quota.
func (q *Quota) Check() error {
	for vc, n := range q.used {
		if n > q.l.Quota(vc) {
			return fmt.Errorf("VC %s holds %d GPUs over its quota of %d", vc, n, q.l.Quota(vc))
		}
	}
	return nil
}

// HiveD is the HiveD stage, in HiveD's two layers. The VC layer: each VC
// runs its own scheduler (PerVC) and its own placer on its own jobs, on
// its view of its cells, which has the shape of its private cluster
// (tenancy.Scheduler.View): the placer decides where inside the VC, with
// the preemptions of the VC's own running jobs its frame makes (a sticky
// placer suspends the VC's lowest-ranked running jobs for a waiting one;
// a non-sticky one re-plans the VC every round). The cells layer binds the
// virtual GPUs the VC chose to physical ones by buddy allocation, which
// HiveD proves always succeeds for a VC within its cells, and preempts
// the opportunistic jobs on what it binds. With guaranteed jobs only and
// healthy hardware, a VC therefore decides exactly as on its private
// cluster.
//
// How a LAS or SRTF tenant takes GPUs back from its own running jobs is
// the decision HiveD leaves open (its VC layer preempts only by
// priority). Here the VC re-plans its own jobs inside its own cells every
// round with its own placer, as on its private cluster, rather than mapping
// rank to HiveD priority: rank changes all the time (a Tiresias job falls
// a queue after each threshold), so priority mapping would turn every rank
// change into a preemption and a rebinding, and the VC would preempt
// differently from its private cluster, which is what the anomaly metric
// compares against. HiveD's own priorities (the trace's priority column)
// still order a VC's queue first, so a higher-priority job takes GPUs from
// a lower-priority one through the same frame, never from an equal one
// ranked before it.
//
// Opportunistic jobs skip the VC layer: after every VC's guaranteed jobs,
// they go, in the merged order, onto physical cells away from guaranteed
// ones and never block. A VC view node on bad hardware takes no new job:
// a job the VC's placer puts there waits (the placer does not see health).
type HiveD struct {
	l    *Layout
	s    *tenancy.Scheduler
	iv   *IntraVC
	held map[int]bool
	// jobs are the jobs of held, for layers made afresh (after a
	// reconfiguration, in a fork): they find the held jobs that the
	// round's order lacks (findHeld).
	jobs map[int]*workload.Job
	// lost holds the ids of jobs that may be held by the cells while
	// their VC layer does not know them: every held job when the layers
	// are made afresh, an adopted one, and those that found could not put
	// into a pool (lazily preempted: tried again each round). findHeld looks at
	// these alone: a scan of every held job each Place cost a HiveD
	// decision at 27,648 GPUs ten times its placing (pal bench tenancy,
	// 1,525 groups running: 7-13 us a decision before the scan, 74-117
	// with it). Check verifies that no lost job is missing from it.
	lost   map[int]bool
	node   int
	gone   map[int]bool
	index  map[int]int
	layers []*vcLayer
	// touched lists the layers given jobs by the last Place (the others
	// have none), in layer order once Place sorts them.
	touched []*vcLayer
	// devGPU is the GPU id of each device of devOf (the cells it was
	// made for), by tenancy device number; -1 for a device without one.
	devOf   *tenancy.Scheduler
	devGPU  []int
	podBuf  []int // Commit's request's pod sizes (commitLeaves)
	byVC    map[string]*vcLayer
	out     [][]int
	fastest bool
	balance bool // BalanceSpeeds
	// classes and speeds are the device values UseScores gave the cells.
	classes int
	speeds  func(class int, node string, gpu int) float64
	// Stateful preemption (see stateful.go): the round's time and jobs,
	// the victims still terminating (job id → when they are gone), and
	// the guaranteed jobs holding cells while victims leave.
	now  float64
	byID map[int]*workload.Job
	// order is the round's jobs; index and byID find them by id, built
	// (indexed) only when a decision preempts, which few do.
	order   []*workload.Job
	indexed bool
	leaving map[int]float64
	pre     map[int]bool
	// allowed, if set, names the cells' nodes a job may run on (the
	// driver's node filters: HiveD's suggested nodes); nil: all.
	allowed func(j *workload.Job) []string
	// untimed: a victim leaves when the driver says it has (Finish), not
	// after its preemption cost (a real cluster's pods are deleted).
	untimed bool
}

// SetAllowedNodes restricts each job's decisions to the cells' nodes f
// names for it (nil: every node): a driver's node filters, HiveD's
// suggested nodes. A binding that needs another node fails, and the job
// waits; a job that runs keeps its nodes.
func (h *HiveD) SetAllowedNodes(f func(j *workload.Job) []string) { h.allowed = f }

// SetVictimsLeaveOnFinish makes a preempted job leave its cells only when
// the driver finishes it (its pods are gone), whatever its preemption
// cost: the preemptor runs once they have.
func (h *HiveD) SetVictimsLeaveOnFinish() { h.untimed = true }

func (h *HiveD) nodesOf(j *workload.Job) []string {
	if h.allowed == nil {
		return nil
	}
	return h.allowed(j)
}

// NewHiveD builds a HiveD stage with fresh cells (all free, all healthy).
func NewHiveD(l *Layout) (*HiveD, error) {
	s, err := tenancy.New(l.Cells)
	if err != nil {
		return nil, err
	}
	s.SetStateful(true)
	return &HiveD{l: l, s: s, held: map[int]bool{}, jobs: map[int]*workload.Job{}, node: s.MaxNode(), gone: map[int]bool{}, index: map[int]int{},
		byID: map[int]*workload.Job{}, leaving: map[int]float64{}, pre: map[int]bool{}}, nil
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

// SetIntraVC sets how each VC's placer is made and what it reads (nil:
// the driver's placer, no scores). Call it before the first round.
func (h *HiveD) SetIntraVC(iv *IntraVC) { h.iv = iv }

// UseScores makes the stage variability-aware: among physical cells that
// are equally good for safety, health and opportunistic load, a job binds
// the one whose GPUs have the best (lowest) PM-scores for its class.
// Safety is never traded, and where inside its VC a job runs stays the
// VC's placer's choice.
func (h *HiveD) UseScores(sc *policy.Scores) error {
	for k := range sc.SF {
		if len(sc.SF[k]) != h.l.Cluster.Size() {
			return fmt.Errorf("tenant: scores cover %d GPUs, the cells %d", len(sc.SF[k]), h.l.Cluster.Size())
		}
	}
	h.classes = len(sc.SF)
	h.speeds = func(class int, node string, gpu int) float64 { return sc.SF[class][h.l.gpuID[node][gpu]] }
	h.s.SetSpeeds(h.classes, h.speeds)
	h.fastest = true
	return nil
}

// BalanceSpeeds makes the stage hived-speed: with scores (UseScores),
// binding keeps each VC's mean device score at or below the cluster's
// (tenancy.Scheduler.SetBalance) before placing by class as hived-pm.
func (h *HiveD) BalanceSpeeds() {
	h.balance = true
	h.s.SetBalance(true)
}

// Name implements policy.Tenancy.
func (h *HiveD) Name() string {
	if h.balance {
		return "hived-speed"
	}
	if h.fastest {
		return "hived-pm"
	}
	return "hived"
}

// Cells exposes the tenancy state (node events, tests).
func (h *HiveD) Cells() *tenancy.Scheduler { return h.s }

func (h *HiveD) setup(env *policy.Env, placer policy.Placer) {
	if h.byVC != nil {
		return
	}
	h.byVC = map[string]*vcLayer{}
	for _, vc := range h.l.VCs() {
		L, err := newVCLayer(h.s, vc, h.iv, placer, env)
		if err != nil {
			panic("tenant: " + err.Error()) // the layout was validated; the factory made the driver's placer
		}
		L.idx = len(h.layers)
		h.layers = append(h.layers, L)
		h.byVC[vc] = L
	}
	h.lost = make(map[int]bool, len(h.jobs))
	for id := range h.jobs {
		h.lost[id] = true
	}
}

// findHeld puts into their pools the guaranteed jobs the cells hold that
// the pools do not know (layers made afresh after a reconfiguration or in
// a fork, or a job a driver took into the cells, Adopt) and that the
// round may not list (a driver's gang whose pods are leaving, or one it
// keeps out of its VC placer's reach): a pool's placer must not hand
// their virtual GPUs to another job. Those the round lists are found as
// they come, too.
func (h *HiveD) findHeld() {
	if len(h.lost) == 0 {
		return
	}
	var lost []int
	for id := range h.lost {
		j := h.jobs[id]
		var L *vcLayer
		if j != nil && j.VCPriority != tenancy.Opportunistic {
			L = h.byVC[h.l.vcOf(&j.Spec)]
		}
		if L == nil || L.in[id] != nil {
			// Released, opportunistic, of a VC without a layer (until
			// the layers are made again) or known: not lost.
			delete(h.lost, id)
			continue
		}
		lost = append(lost, id)
	}
	slices.Sort(lost)
	for _, id := range lost {
		j := h.jobs[id]
		if h.found(h.byVC[h.l.vcOf(&j.Spec)], j) {
			delete(h.lost, id)
		}
	}
}

// lostMissing is the first held job (in id order) that its VC layer does
// not know and that lost leaves out, -1 if none: findHeld would have
// missed it (Check).
func (h *HiveD) lostMissing() int {
	var miss []int
	for id, j := range h.jobs {
		if j.VCPriority == tenancy.Opportunistic || h.lost[id] {
			continue
		}
		if L := h.byVC[h.l.vcOf(&j.Spec)]; L != nil && L.in[id] == nil {
			miss = append(miss, id)
		}
	}
	if len(miss) == 0 {
		return -1
	}
	return slices.Min(miss)
}

// Place implements policy.Tenancy.
func (h *HiveD) Place(env *policy.Env, order []*workload.Job, placer policy.Placer) [][]int {
	h.setup(env, placer)
	h.findHeld()
	h.out = make([][]int, len(order))
	clear(h.gone)
	h.order, h.indexed = order, false
	h.terminated()
	// Only the layers the last round gave jobs have any.
	for _, L := range h.touched {
		L.jobs, L.at, L.ms = L.jobs[:0], L.at[:0], L.ms[:0]
	}
	h.touched = h.touched[:0]
	var opp []int
	var lastVC string // the VC of the last job, for runs of one VC's jobs
	var lastL *vcLayer
	for i, j := range order {
		if j.VCPriority == tenancy.Opportunistic {
			opp = append(opp, i)
			continue
		}
		if len(h.leaving) > 0 {
			if _, ok := h.leaving[j.ID]; ok {
				continue // preempted, its GPUs still taken while it terminates
			}
		}
		if vc := h.l.vcOf(&j.Spec); vc != lastVC || lastL == nil {
			lastVC, lastL = vc, h.byVC[vc]
		}
		L := lastL
		if L == nil {
			// Its VC left the cells (ReconfigureAny): it runs on as
			// opportunistic if the cells hold it, or waits.
			if h.held[j.ID] {
				h.out[i] = j.GPUsHeld
			}
			continue
		}
		if len(L.jobs) == 0 {
			L.cur = 0 // the layer's first job this round
		}
		m := L.member(j)
		if m == nil && h.held[j.ID] {
			if !h.found(L, j) {
				h.out[i] = j.GPUsHeld // lazily preempted: runs on as opportunistic
				continue
			}
			m = L.in[j.ID]
		}
		if len(L.jobs) == 0 {
			h.touched = append(h.touched, L)
		}
		L.jobs = append(L.jobs, j)
		L.at = append(L.at, i)
		L.ms = append(L.ms, m)
	}
	if h.balance {
		h.queues()
	}
	h.s.Hold()
	// The layers with jobs, in layer order: a layer without any places
	// nothing.
	if len(h.touched) > 1 {
		slices.SortFunc(h.touched, func(a, b *vcLayer) int { return a.idx - b.idx })
	}
	for _, L := range h.touched {
		h.placeVC(L, h.out)
	}
	h.s.EndRound()
	for _, i := range opp {
		j := order[i]
		if h.gone[j.ID] {
			continue
		}
		if h.held[j.ID] {
			h.out[i] = j.GPUsHeld // nil for a victim still terminating
			continue
		}
		if h.byVC[h.l.vcOf(&j.Spec)] == nil {
			continue // its VC left the cells (ReconfigureAny)
		}
		req := tenancy.Request{Group: groupName(j.ID), VC: h.l.vcOf(&j.Spec), Priority: tenancy.Opportunistic,
			Pods: pods(&j.Spec, h.node), LeafType: j.LeafCellType, Nodes: h.nodesOf(j)}
		d, err := h.s.Schedule(req)
		if err != nil {
			panic("tenant: " + err.Error()) // Validate rejects such jobs before the first round
		}
		if d.Placed {
			h.held[j.ID], h.jobs[j.ID] = true, j
			h.out[i] = h.physical(d)
		}
	}
	return h.out
}

// queues tells the cells each VC's guaranteed jobs that have waited: not
// running, and submitted before the round's time (hived-speed binds the
// fastest cells for the VCs that wait most; tenancy.Scheduler.SetQueues).
// A job that arrives as the round starts has not waited yet, so a VC's
// first job in an idle cluster binds by speed share, not as a queue.
func (h *HiveD) queues() {
	q := make(map[string]int, len(h.layers))
	for _, L := range h.layers {
		for _, j := range L.jobs {
			if !h.held[j.ID] && j.Submit < h.now {
				q[L.name]++
			}
		}
	}
	h.s.SetQueues(q)
}

// SetNodeHealth implements sim.NodeHealth: cluster node i goes down or up.
func (h *HiveD) SetNodeHealth(node int, up bool) error {
	if node < 0 || node >= h.l.Cluster.NumNodes() {
		return fmt.Errorf("tenant: no node %d", node)
	}
	return h.s.SetNodeHealth(h.l.Cluster.Nodes[node].Name, up)
}

// SetQuarantine takes cluster GPU g out of every VC's guarantee (on) or
// gives it back (tenancy.Scheduler.Quarantine): a job on it stays, new
// guaranteed jobs avoid it, opportunistic ones may still use it.
func (h *HiveD) SetQuarantine(g int, on bool) error {
	node, dev, err := h.device(g)
	if err != nil {
		return err
	}
	return h.s.Quarantine(node, dev, on)
}

// device is cluster GPU g's node and device index in the cells.
func (h *HiveD) device(g int) (node string, dev int, err error) {
	c := h.l.Cluster
	if g < 0 || g >= c.Size() {
		return "", 0, fmt.Errorf("tenant: no GPU %d", g)
	}
	node = c.Nodes[c.GPUs[g].Node].Name
	for d, id := range h.l.gpuID[node] {
		if id == g {
			return node, d, nil
		}
	}
	return "", 0, fmt.Errorf("tenant: GPU %d is in no cell", g)
}

// SetExternal marks cluster GPU g held by a pod the cells did not place
// (another scheduler's, or a job a driver keeps outside the cells) or
// free of it again (tenancy.Scheduler.SetExternal): no new job, guaranteed
// or opportunistic, is placed on it while it is held, and a VC whose
// cells are bound over it sees it taken.
func (h *HiveD) SetExternal(g int, on bool) error {
	node, dev, err := h.device(g)
	if err != nil {
		return err
	}
	return h.s.SetExternal(node, dev, on)
}

// Finish implements policy.Tenancy. A job finished while it preempts
// (a driver's gang deleted while it waits) gives its cells back to its
// victims still on them, and those no other preemptor waits for are no
// longer leaving (reprieve).
func (h *HiveD) Finish(j *workload.Job) {
	victims := h.victimsOf(j)
	defer h.reprieve(victims)
	delete(h.pre, j.ID)
	delete(h.leaving, j.ID)
	if h.held[j.ID] {
		delete(h.held, j.ID)
		delete(h.jobs, j.ID)
		if err := h.s.Release(groupName(j.ID)); err != nil {
			panic("tenant: " + err.Error())
		}
	}
	if L := h.byVC[h.l.vcOf(&j.Spec)]; L != nil {
		for _, P := range L.pools {
			P.forget(L, j.ID) // drops it from L.in if it held GPUs
		}
	}
}

// groupName is a job's group in the cells.
// at is where job id is in the round's order.
func (h *HiveD) at(id int) (int, bool) {
	h.buildIndex()
	k, ok := h.index[id]
	return k, ok
}

// job is the round's job of id, or nil.
func (h *HiveD) job(id int) *workload.Job {
	h.buildIndex()
	return h.byID[id]
}

func (h *HiveD) buildIndex() {
	if h.indexed {
		return
	}
	h.indexed = true
	clear(h.index)
	clear(h.byID)
	for i, j := range h.order {
		h.index[j.ID] = i
		h.byID[j.ID] = j
	}
}

func groupName(id int) string { return strconv.Itoa(id) }

func atoi(s string) int {
	id, err := strconv.Atoi(s)
	if err != nil {
		panic("tenant: group name " + s)
	}
	return id
}

// Check implements policy.Tenancy: the full safety invariant and the
// consistency of the cells.
func (h *HiveD) Check() error {
	if err := h.s.Check(); err != nil {
		return err
	}
	for _, vc := range h.l.VCs() {
		L := h.byVC[vc]
		if L == nil {
			continue
		}
		for _, P := range L.pools {
			if err := P.checkFree(); err != nil {
				return fmt.Errorf("tenant: VC %s: %w", vc, err)
			}
		}
		if err := L.checkIn(); err != nil {
			return fmt.Errorf("tenant: VC %s: %w", vc, err)
		}
	}
	if id := h.lostMissing(); id >= 0 {
		return fmt.Errorf("tenant: job %d is held by the cells and unknown to its VC layer, yet not listed as lost", id)
	}
	return nil
}

// PhillyCells is the cells config of the Philly replay: one 8-GPU node
// type (PCIe pairs and sockets inside, as a DGX-1-like machine), as many
// nodes as the VCs hold in all, and each VC owning its node count as node
// cells. Node names are node-0, node-1, ...
func PhillyCells(vcs []workload.PhillyVC) *tenancy.Config {
	cfg := &tenancy.Config{File: "philly VCs (philly/philly_vc.csv, 8-GPU nodes)"}
	for _, v := range vcs {
		AddNodeVC(cfg, v.Name, v.Nodes)
	}
	return cfg
}

// AddNodeVC adds a VC of nodes DGX-like 8-GPU nodes (PCIe pairs and
// sockets inside) to cfg, as node cells, and the physical nodes it
// holds (named node-0, node-1, ... across the config); the first call
// also defines the cell types.
func AddNodeVC(cfg *tenancy.Config, name string, nodes int) {
	if len(cfg.CellTypes) == 0 {
		cfg.CellTypes = []tenancy.CellTypeSpec{
			{Name: "PCIE", ChildCellType: "GPU", ChildCellNumber: 2},
			{Name: "SOCKET", ChildCellType: "PCIE", ChildCellNumber: 2},
			{Name: "NODE", ChildCellType: "SOCKET", ChildCellNumber: 2, IsNodeLevel: true},
		}
	}
	for range nodes {
		cfg.PhysicalCells = append(cfg.PhysicalCells, tenancy.PhysicalCellSpec{CellType: "NODE", CellAddress: fmt.Sprintf("node-%d", len(cfg.PhysicalCells))})
	}
	cfg.VCs = append(cfg.VCs, tenancy.VCSpec{Name: name, VirtualCells: []tenancy.VirtualCellSpec{{CellType: "NODE", CellNumber: nodes}}})
}
