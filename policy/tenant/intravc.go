package tenant

import (
	"fmt"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// IntraVC is the placement slot of the two-layer design: how one VC's
// placer is made and what it reads. Each VC gets its own placer (placers
// may keep state from round to round) and runs it on its own jobs only.
type IntraVC struct {
	// NewPlacer makes one VC's placer. nil: every VC uses the placer the
	// driver passes to Place, one after the other (right for placers that
	// remember nothing between calls: spread, packed, random).
	NewPlacer func() (policy.Placer, error)
	// Env is the environment of a VC's placer on c, a cluster of the VC's
	// shape (its private cluster under HiveD): scores for c and the random
	// stream. nil: no scores, the placement stream of seed 0, and the
	// driver's locality.
	Env func(vc string, c *cluster.Cluster) (policy.Env, error)
}

func (iv *IntraVC) placer(given policy.Placer) (policy.Placer, error) {
	if iv == nil || iv.NewPlacer == nil {
		return given, nil
	}
	return iv.NewPlacer()
}

func (iv *IntraVC) env(vc string, c *cluster.Cluster, driver *policy.Env) (policy.Env, error) {
	if iv == nil || iv.Env == nil {
		return policy.Env{Cluster: c, Rand: policy.PlacementRand(0), Locality: driver.Locality}, nil
	}
	e, err := iv.Env(vc, c)
	if err != nil {
		return policy.Env{}, fmt.Errorf("tenant: VC %s: %w", vc, err)
	}
	e.Cluster = c
	return e, nil
}

// shadows keeps one stand-in job per real job: a copy of its state whose
// GPUsHeld is in the numbering of the cluster the VC's placer sees. The
// placer reads jobs and never writes them; the stand-ins keep a job's
// identity (its pointer) from round to round for placers that remember.
type shadows struct {
	by   map[int]*workload.Job
	view []*workload.Job
}

func (sh *shadows) of(j *workload.Job, held []int) *workload.Job {
	if sh.by == nil {
		sh.by = map[int]*workload.Job{}
	}
	x := sh.by[j.ID]
	if x == nil {
		x = new(workload.Job)
		sh.by[j.ID] = x
	}
	*x = *j
	x.GPUsHeld = held
	return x
}

func (sh *shadows) forget(id int) { delete(sh.by, id) }

// member is what a pool keeps of one job: the virtual GPUs it holds
// there (nil: none; set and dropped by hold and unhold) and its stand-in
// for the placer (as shadows keeps them, inline so that filling it
// writes the record the decision reads anyway). The pool's map finds
// it by job id, and the VC layer's in map points at the member of each
// job that holds GPUs, so that a decision reaches a running job's
// record with one lookup (in Place) and carries it to the pool.
//
// pod is the job's PodGPUs when it took held, and fit whether held fits
// such pods (place.PodsFit on the pool's cluster): the pod guard need not
// count again the pods of a job that keeps them.
type member struct {
	held []int
	pool *poolLayer
	id   int // the job's
	pod  int
	fit  bool
	sh   workload.Job
}

// stand fills stand-in sh from j, holding virtual GPUs held.
func stand(sh, j *workload.Job, held []int) *workload.Job {
	*sh = *j
	sh.GPUsHeld = held
	return sh
}

// vcLayer is one VC under HiveD: its view split into pools (one per
// leaf type of its non-pinned chains, one per pinned cell; see
// tenancy.Pool), each with the shape of its part of the VC's private
// cluster and a placer of its own, and the pool each running job is in.
type vcLayer struct {
	name   string
	idx    int // its position among the stage's layers
	pools  []*poolLayer
	byPin  map[string]*poolLayer
	byType map[string]*poolLayer // non-pinned pools by leaf type
	// in is, by job id, the member of each job holding GPUs in one of
	// the pools (its pool is in.pool): exactly the members with held
	// set (checkIn).
	in   map[int]*member
	jobs []*workload.Job
	// ms[k] is in[jobs[k].ID] as the round starts (nil for a job holding
	// nothing), then jobs[k]'s member in its pool once placePool has
	// made it.
	ms []*member
	// last and lastMs are jobs and ms of the layer's last round, and cur
	// where the next job of this round is looked for in them (member).
	last   []*workload.Job
	lastMs []*member
	cur    int
	at     []int                // jobs[k] is order[at[k]] this round
	free   map[*poolLayer][]int // freeByNode's buffers
	// only is the VC's one GPU pool without a pin, when it has one and
	// no other: anyPool always picks it, so placeVC need not count.
	only *poolLayer
}

// poolLayer is one pool of a VC: its nodes as a cluster, its placer, and
// where each of its running jobs is in that cluster.
type poolLayer struct {
	tenancy.Pool
	leaf   []*tenancy.VCell // by virtual GPU id
	id     map[*tenancy.VCell]int
	c      *cluster.Cluster
	env    policy.Env
	placer policy.Placer
	// tr is the placer when it keeps its free set between rounds
	// (place.Tracker), told by hold and unhold; nil otherwise.
	tr place.Tracker
	// mem is what the pool keeps of each job it has seen, by job id;
	// nheld counts the members that hold GPUs.
	mem   map[int]*member
	nheld int
	ms    []*member       // the VC layer's ms of jobs[k]
	now   [][]int         // held of jobs[k], while placePool runs
	shs   []*workload.Job // the stand-in of jobs[k], while placePool runs
	// free[i] counts node i's GPUs that no job in held holds, kept by
	// hold and unhold: a waiting job that names no pool is matched
	// against it every round (see freeByNode).
	free []int
	view []*workload.Job // the stand-ins the placer is given
	jobs []*workload.Job
	at   []int // jobs[k] is the VC's jobs[at[k]]
	pods [][]*tenancy.VCell
	// shown and sub: the GPUs hidden from the placer while a quarantined
	// device is shown to the VC or a leaving gang holds them, and the pool
	// without them (hide).
	shown []bool
	sub   subCluster
}

func newVCLayer(s *tenancy.Scheduler, vc string, iv *IntraVC, given policy.Placer, driver *policy.Env) (*vcLayer, error) {
	pools, err := s.Pools(vc)
	if err != nil {
		return nil, err
	}
	n := 0 // GPU pools without a pin
	L := &vcLayer{name: vc, byPin: map[string]*poolLayer{}, byType: map[string]*poolLayer{}, in: map[int]*member{}}
	for _, pool := range pools {
		P := &poolLayer{Pool: pool, mem: map[int]*member{}, id: map[*tenancy.VCell]int{}}
		sizes := make([]int, len(pool.Nodes))
		P.free = make([]int, len(pool.Nodes))
		for i, n := range pool.Nodes {
			sizes[i] = len(n.Leaves)
			P.free[i] = len(n.Leaves)
			for _, v := range n.Leaves {
				P.id[v] = len(P.leaf)
				P.leaf = append(P.leaf, v)
			}
		}
		if P.c, err = cluster.NewSized(sizes); err != nil {
			return nil, fmt.Errorf("tenant: VC %s: %w", vc, err)
		}
		if P.placer, err = iv.placer(given); err != nil {
			return nil, err
		}
		if P.env, err = iv.env(vc, P.c, driver); err != nil {
			return nil, err
		}
		if t, ok := P.placer.(place.Tracker); ok && t.Track(P.c) {
			P.tr = t
		}
		L.pools = append(L.pools, P)
		if pool.Pinned == "" && pool.GPU {
			if n++; n == 1 {
				L.only = P
			} else {
				L.only = nil
			}
		}
		if pool.Pinned != "" {
			L.byPin[pool.Pinned] = P
		} else {
			L.byType[pool.LeafType] = P
		}
	}
	return L, nil
}

// waiting reports whether any job of the layer's round is not running.
func waiting(jobs []*workload.Job) bool {
	for _, j := range jobs {
		if !j.Running() {
			return true
		}
	}
	return false
}

// poolOf is the pool a job must run in, or nil for a guaranteed job that
// names neither a pinned cell nor a leaf type and is not running: it may
// run in any GPU pool of its VC (Validate has checked that the pool a job
// names exists). m is the job's member in L.in (nil if none).
func (L *vcLayer) poolOf(j *workload.Job, m *member) *poolLayer {
	switch {
	case j.PinnedCell != "":
		return L.byPin[j.PinnedCell]
	case j.LeafCellType != "":
		return L.byType[j.LeafCellType]
	}
	if m == nil {
		return nil
	}
	return m.pool
}

// placeVC assigns each of the VC's jobs to a pool and runs every pool's
// placer on its jobs, in the VC's order. A job that names a pinned cell
// or a leaf type goes to that pool, a running one stays in its pool, and
// a waiting one that names neither goes to the first GPU pool without a
// pin, in leaf-type order, that has room for it: free GPUs (not held by
// the pool's running jobs nor claimed by the waiting jobs before it in
// the VC's order) enough for its pods, first fit per node; if none has,
// to the first such pool, where it waits its turn. That is HiveD's "any
// leaf type", which tries a VC's leaf types in order and runs a group on
// one of them. A VC of one leaf type without pinned cells is one pool,
// placed in one call, as on its private cluster.
func (h *HiveD) placeVC(L *vcLayer, out [][]int) {
	if len(L.jobs) == 0 {
		return
	}
	for _, P := range L.pools {
		P.jobs, P.at, P.ms = P.jobs[:0], P.at[:0], P.ms[:0]
	}
	var free map[*poolLayer][]int
	for k, j := range L.jobs {
		P := L.poolOf(j, L.ms[k])
		if P == nil && L.only != nil {
			P = L.only // anyPool's answer whatever the counts
		}
		if P == nil {
			if free == nil {
				free = L.freeByNode()
			}
			P = L.anyPool(j, free, h.node)
		}
		if P == nil {
			continue // a VC without GPU cells outside its pins: Validate refuses such jobs
		}
		P.jobs = append(P.jobs, j)
		P.at = append(P.at, k)
		P.ms = append(P.ms, L.ms[k])
	}
	for _, P := range L.pools {
		h.placePool(L, P, out)
	}
	L.last = append(L.last[:0], L.jobs...)
	L.lastMs = append(L.lastMs[:0], L.ms...)
}

// member is job j's member in L.in, nil if it holds nothing: read from
// the layer's last round when j is where it was then (a VC's order
// changes little from round to round), else looked up. The member of j
// in the last round is still in L.in if it still holds GPUs (checkIn:
// L.in points at every member that does, one per job), so the answer is
// always L.in[j.ID].
func (L *vcLayer) member(j *workload.Job) *member {
	// The job at the cursor, or the one after (a job before it ended).
	for p := L.cur; p < len(L.last) && p <= L.cur+1; p++ {
		if L.last[p] != j {
			continue
		}
		L.cur = p + 1
		if m := L.lastMs[p]; m != nil && m.held != nil && m.id == j.ID {
			return m
		}
		break
	}
	return L.in[j.ID]
}

// freeByNode counts, per GPU pool without a pin, the free GPUs of each
// node: not held by a running job of the pool. The counts are copies
// (anyPool claims from them), in buffers kept from the last round.
func (L *vcLayer) freeByNode() map[*poolLayer][]int {
	if L.free == nil {
		L.free = map[*poolLayer][]int{}
	}
	for _, P := range L.pools {
		if P.Pinned != "" || !P.GPU {
			continue
		}
		L.free[P] = append(L.free[P][:0], P.free...)
	}
	return L.free
}

// member is job id's member of the pool, made if it has none.
func (P *poolLayer) member(id int) *member {
	m := P.mem[id]
	if m == nil {
		m = &member{pool: P, id: id}
		P.mem[id] = m
	}
	return m
}

// hold records that job id, of pods of pod GPUs, holds virtual GPUs v
// of the pool, and points L.in at its member.
func (P *poolLayer) hold(L *vcLayer, id, pod int, v []int) {
	P.unhold(L, id)
	m := P.member(id)
	m.held = v
	m.pod, m.fit = pod, fits(P.c, v, pod)
	L.in[id] = m
	P.nheld++
	for _, x := range v {
		P.free[P.c.NodeOf(x)]--
	}
	if P.tr != nil {
		P.tr.Hold(v)
	}
}

// fits is whether GPUs g of c split into pods of pod GPUs inside nodes.
func fits(c *cluster.Cluster, g []int, pod int) bool {
	return pod <= 0 || place.PodsFit(c, g, pod)
}

// checkIn reports whether L.in points at exactly the members that hold
// GPUs, each in its own pool's map, and whether each pool counts them
// (nheld).
func (L *vcLayer) checkIn() error {
	n := 0
	for _, P := range L.pools {
		held := 0
		for id, m := range P.mem {
			if m == nil || m.pool != P || m.id != id {
				return fmt.Errorf("pool %s: job %d's member is not the pool's", P.LeafType, id)
			}
			if m.held == nil {
				continue
			}
			held++
			if m.fit != fits(P.c, m.held, m.pod) {
				return fmt.Errorf("pool %s: job %d's GPUs %v marked fit %v for pods of %d", P.LeafType, id, m.held, m.fit, m.pod)
			}
			if L.in[id] != m {
				return fmt.Errorf("pool %s: job %d holds GPUs, but the layer does not point at its member", P.LeafType, id)
			}
		}
		if held != P.nheld {
			return fmt.Errorf("pool %s: %d members hold GPUs, %d counted", P.LeafType, held, P.nheld)
		}
		n += held
	}
	if len(L.in) != n {
		return fmt.Errorf("%d jobs in the layer's index, %d hold GPUs in its pools", len(L.in), n)
	}
	return nil
}

// checkFree reports whether free agrees with held.
func (P *poolLayer) checkFree() error {
	f := make([]int, len(P.free))
	for i, n := range P.Nodes {
		f[i] = len(n.Leaves)
	}
	for _, m := range P.mem {
		for _, x := range m.held {
			f[P.c.GPUs[x].Node]--
		}
	}
	for i := range f {
		if f[i] != P.free[i] {
			return fmt.Errorf("pool %s node %d: %d GPUs counted free, %d not held", P.LeafType, i, P.free[i], f[i])
		}
	}
	return nil
}

// unhold forgets what job id holds in the pool, if anything, and drops
// it from L.in.
func (P *poolLayer) unhold(L *vcLayer, id int) {
	m := P.mem[id]
	if m == nil || m.held == nil {
		return
	}
	v := m.held
	for _, x := range v {
		P.free[P.c.NodeOf(x)]++
	}
	if P.tr != nil {
		P.tr.Free(v)
	}
	m.held = nil
	delete(L.in, id)
	P.nheld--
}

// forget drops job id from the pool: it has finished.
func (P *poolLayer) forget(L *vcLayer, id int) {
	P.unhold(L, id)
	delete(P.mem, id)
}

// anyPool picks the pool of a waiting job that names neither a pinned
// cell nor a leaf type (see placeVC) and claims its GPUs there.
func (L *vcLayer) anyPool(j *workload.Job, free map[*poolLayer][]int, node int) *poolLayer {
	want := pods(&j.Spec, node)
	var first *poolLayer
	for _, P := range L.pools {
		f, ok := free[P]
		if !ok {
			continue
		}
		if first == nil {
			first = P
		}
		if claim(f, want, j.PodGPUs > 0) {
			return P
		}
	}
	return first
}

// claim takes pods from per-node free counts, first fit, and reports
// whether they fit; when they do not, the counts are left as they were.
// Without fixed pods (whole false) only the total matters: a placer may
// spread such a job over nodes.
func claim(free []int, pods []int, whole bool) bool {
	if !whole {
		n, total := 0, 0
		for _, p := range pods {
			n += p
		}
		for _, f := range free {
			total += f
		}
		if total < n {
			return false
		}
		for i := range free {
			d := min(free[i], n)
			free[i] -= d
			n -= d
		}
		return true
	}
	taken := make([]int, 0, len(pods))
	for _, p := range pods {
		i := slices.IndexFunc(free, func(f int) bool { return f >= p })
		if i < 0 {
			for k, t := range taken {
				free[t] += pods[k]
			}
			return false
		}
		free[i] -= p
		taken = append(taken, i)
	}
	return true
}

// placePool runs one pool's placer on its jobs and applies the answer:
// the jobs it stops or moves release their cells first, then the ones it
// starts or moves commit theirs (binding by buddy allocation
// underneath). A sticky placer with no waiting job would keep everyone
// where they are, so it is not asked.
func (h *HiveD) placePool(L *vcLayer, P *poolLayer, out [][]int) {
	if len(P.jobs) == 0 {
		return
	}
	if P.placer.Sticky() && !waiting(P.jobs) {
		for k, j := range P.jobs {
			out[L.at[P.at[k]]] = j.GPUsHeld
		}
		return
	}
	P.now, P.shs = P.now[:0], P.shs[:0]
	running := 0
	fit := true // every running job's GPUs fit its pods
	for k, j := range P.jobs {
		m := P.ms[k]
		if m == nil || m.pool != P {
			m = P.member(j.ID)
		}
		if m.held != nil {
			running++
			fit = fit && m.fit && m.pod == j.PodGPUs
		}
		P.now = append(P.now, m.held)
		P.shs = append(P.shs, &m.sh)
		L.ms[P.at[k]] = m // for the next round (member)
	}
	var alloc [][]int
	// A member holding GPUs that no job of the round stands for (a
	// driver's gang whose pods are leaving: it holds its cells until they
	// are gone) keeps them: its leaves are hidden from the placer.
	absent, bad := running < P.nheld, h.s.NumQuarantined() > 0 || h.s.NumExternal() > 0
	if (absent || bad) && P.hide(bad, absent) {
		alloc = P.placeWithout()
	} else {
		P.view = P.view[:0]
		for k, j := range P.jobs {
			P.view = append(P.view, stand(P.shs[k], j, P.now[k]))
		}
		if P.tr != nil && running == P.nheld {
			// The jobs hold all that the pool counts held (job ids are
			// unique), so the placer's kept free set is the one it would
			// count.
			if f, ok := P.tr.(fitting); ok && fit {
				alloc = f.PlaceHeldFitting(&P.env, P.view)
			} else {
				alloc = P.tr.PlaceHeld(&P.env, P.view)
			}
		} else {
			alloc = P.placer.Place(&P.env, P.view)
		}
	}
	for k, j := range P.jobs {
		if old := P.now[k]; old != nil && !round.Same(old, alloc[k]) {
			if err := h.s.Release(groupName(j.ID)); err != nil {
				panic("tenant: " + err.Error())
			}
			P.unhold(L, j.ID)
			P.now[k] = nil
			delete(h.held, j.ID)
			delete(h.jobs, j.ID)
			delete(h.pre, j.ID) // a preemptor that no longer needs its cells cancels
		}
	}
	failed, waits := false, false
	for k, j := range P.jobs {
		i := L.at[P.at[k]]
		v := alloc[k]
		if v == nil {
			waits = waits || P.now[k] == nil
			continue
		}
		if P.now[k] != nil {
			if h.pre[j.ID] {
				out[i], _ = h.again(L, P, j) // holding its cells: its victims may have left
				continue
			}
			out[i] = j.GPUsHeld
			continue
		}
		if g, ok := h.commit(L, P, j, v); ok {
			out[i] = g
		} else if !h.held[j.ID] && h.driverRefused(j) {
			failed = true
		}
	}
	if failed && waits {
		h.placeLeft(L, P, alloc, out)
	}
}

// driverRefused reports whether a refused commit of job j may be the
// driver's constraints, which its VC's placer does not see: the nodes
// the job may use (a Kubernetes gang's selector, affinity and
// tolerations), or GPUs pods outside the cells hold. Only then is the
// pool placed again (placeLeft). The simulator's commits fail only on bad
// hardware (quarantine, failed nodes); its reproduced figures keep the
// first answer there, and placing again in that case too waits for those
// figures to be measured again.
func (h *HiveD) driverRefused(j *workload.Job) bool {
	return h.nodesOf(j) != nil || h.s.NumExternal() > 0
}

// placeLeft places again, on the pool's virtual GPUs that nothing holds
// after the round's commits, the pool's jobs that got none while a job
// the placer gave GPUs could not be committed for the driver's
// constraints (driverRefused: no cell of its VC binds where its node
// selector, affinity or tolerations allow, or only to a node where pods
// outside the cells hold GPUs). Without it such a job
// took its room in the VC's view every round and gave it back unused:
// on Kubernetes, a VC's gang pinned to a node another scheduler's pods
// hold kept the VC's next gang waiting, with its cells' GPUs free and
// no reason given. Those jobs are left out; the jobs placed before keep
// what they were committed; the rest are placed in their order, as the
// selector gate's leftover placing does without tenancy. alloc is the
// first answer, by the pool's job.
func (h *HiveD) placeLeft(L *vcLayer, P *poolLayer, alloc [][]int, out [][]int) {
	jobs, at, now, shs := P.jobs, P.at, P.now, P.shs
	defer func() { P.jobs, P.at, P.now, P.shs = jobs, at, now, shs }()
	var left []int // positions in jobs of the waiting jobs not tried
	for k := range jobs {
		if alloc[k] == nil && now[k] == nil {
			left = append(left, k)
		}
	}
	for len(left) > 0 {
		if len(P.shown) != len(P.leaf) {
			P.shown = make([]bool, len(P.leaf))
		}
		bad := h.s.NumQuarantined() > 0 || h.s.NumExternal() > 0
		for x, v := range P.leaf {
			P.shown[x] = bad && v.OnBad() && !v.Busy()
		}
		for _, m := range P.mem {
			for _, x := range m.held {
				P.shown[x] = true
			}
		}
		P.jobs, P.at, P.now, P.shs = P.jobs[:0:0], P.at[:0:0], P.now[:0:0], P.shs[:0:0]
		for _, k := range left {
			P.jobs, P.at = append(P.jobs, jobs[k]), append(P.at, at[k])
			P.now, P.shs = append(P.now, nil), append(P.shs, shs[k])
		}
		got := P.placeWithout()
		var next []int
		failed := false
		for n, k := range left {
			j := jobs[k]
			if got[n] == nil {
				next = append(next, k)
				continue
			}
			if g, ok := h.commit(L, P, j, got[n]); ok {
				out[L.at[at[k]]] = g
			} else if !h.held[j.ID] {
				failed = true
			}
		}
		if !failed || len(next) == 0 {
			return
		}
		left = next
	}
}

// fitting is a tracked placer whose pod guard can skip the running jobs
// known to fit their pods (place.PodGuard.PlaceHeldFitting).
type fitting interface {
	PlaceHeldFitting(env *policy.Env, order []*workload.Job) [][]int
}

// hide marks, in P.shown, the pool's virtual GPUs that its placer must
// not be offered: with bad, leaves on bad hardware (a quarantined device,
// or one held outside the cells, shown to the VC as taken) that none of
// the pool's jobs holds; with absent, the leaves of members that hold
// GPUs but are not among the round's jobs. It reports whether there is
// any.
func (P *poolLayer) hide(bad, absent bool) bool {
	if len(P.shown) != len(P.leaf) {
		P.shown = make([]bool, len(P.leaf))
	}
	any := false
	for x, v := range P.leaf {
		P.shown[x] = bad && v.OnBad() && !v.Busy()
		any = any || P.shown[x]
	}
	if any {
		for _, m := range P.mem {
			for _, x := range m.held {
				P.shown[x] = false
			}
		}
	}
	if absent {
		in := make(map[int]bool, len(P.jobs))
		for _, j := range P.jobs {
			in[j.ID] = true
		}
		for _, m := range P.mem {
			if m.held != nil && !in[m.id] {
				for _, x := range m.held {
					P.shown[x] = true
					any = true
				}
			}
		}
	}
	return any
}

// placeWithout runs the pool's placer on the pool less its hidden GPUs
// (hide): a sub-cluster of the rest, as quota gives each VC, with the
// pool's scores restricted to it, and maps the answer back.
func (P *poolLayer) placeWithout() [][]int {
	jobs := P.jobs
	if h, ok := policy.Hiding(P.placer); ok {
		// A placer that numbers GPUs for good (Themis' leases) sees the
		// whole pool, the hidden GPUs taken.
		P.view = P.view[:0]
		for k, j := range jobs {
			P.view = append(P.view, stand(P.shs[k], j, P.now[k]))
		}
		return h.PlaceHiding(&P.env, P.view, func(x int) bool { return P.shown[x] })
	}
	if !P.sub.build(P.c, func(x int) bool { return !P.shown[x] }) {
		return make([][]int, len(jobs))
	}
	env := policy.Env{Cluster: P.sub.c, Scores: P.sub.scores(P.env.Scores), Rand: P.env.Rand, Locality: P.env.Locality}
	P.view = P.view[:0]
	for k, j := range jobs {
		P.view = append(P.view, stand(P.shs[k], j, P.sub.sub(P.now[k])))
	}
	alloc := P.placer.Place(&env, P.view)
	out := make([][]int, len(alloc))
	for k, a := range alloc {
		out[k] = P.sub.phys(a)
	}
	return out
}

// commit binds a job's virtual GPUs (ascending, so a view node's are
// consecutive) and returns its physical GPUs, or false when they cannot be
// had this round (a view node on bad hardware, or no healthy cell to bind).
func (h *HiveD) commit(L *vcLayer, P *poolLayer, j *workload.Job, v []int) ([]int, bool) {
	if !P.leaves(v, true) {
		return nil, false
	}
	d := h.commitLeaves(L, P, j)
	if !d.Placed && !d.Preempting {
		return nil, false
	}
	P.hold(L, j.ID, j.PodGPUs, slices.Clone(v))
	h.held[j.ID], h.jobs[j.ID] = true, j
	if d.Preempting {
		h.pre[j.ID] = true // it holds its cells; it runs once its victims are gone
		return nil, false
	}
	if g := h.physicalOf(P.pods); g != nil {
		if verifyDevices && !slices.Equal(g, h.physical(d)) {
			panic(fmt.Sprintf("tenant: job %d: GPUs %v by device number, %v by node name", j.ID, g, h.physical(d)))
		}
		return g, true
	}
	return h.physical(d), true
}

// verifyDevices makes commit check physicalOf against physical (the
// package's tests set it).
var verifyDevices = false

// physicalOf is the GPUs, in the cluster's numbering and ascending, of
// the devices the virtual leaves of pods are bound to: after a placing
// Commit of pods, physical's answer, read through a table by device
// number (tenancy.VCell.Device) instead of node names. nil when a leaf
// has no GPU id (then physical answers).
func (h *HiveD) physicalOf(pods [][]*tenancy.VCell) []int {
	if h.devOf != h.s {
		h.devOf = h.s
		devs := h.s.Devices()
		h.devGPU = make([]int, 0, len(devs))
		for _, d := range devs {
			g, ok := h.l.gpuID[d.Node][d.GPU]
			if !ok {
				g = -1
			}
			h.devGPU = append(h.devGPU, g)
		}
	}
	n := 0
	for _, pod := range pods {
		n += len(pod)
	}
	g := make([]int, 0, n)
	for _, pod := range pods {
		for _, v := range pod {
			d := v.Device()
			if d < 0 || h.devGPU[d] < 0 {
				return nil
			}
			g = append(g, h.devGPU[d])
		}
	}
	slices.Sort(g)
	return g
}

// leaves splits virtual GPUs (ascending, so a view node's are
// consecutive) into pods of leaves, one per view node, in P.pods; false
// when healthy asks for healthy view nodes and one is on bad hardware.
func (P *poolLayer) leaves(v []int, healthy bool) bool {
	P.pods = P.pods[:0]
	last := -1
	for _, x := range v {
		n := P.c.NodeOf(x)
		if healthy && !P.Nodes[n].Healthy() {
			return false
		}
		if n != last {
			// Reuse the pod buffers of earlier decisions: Commit copies
			// what it keeps.
			if k := len(P.pods); k < cap(P.pods) {
				P.pods = P.pods[:k+1]
				P.pods[k] = P.pods[k][:0]
			} else {
				P.pods = append(P.pods, nil)
			}
			last = n
		}
		P.pods[len(P.pods)-1] = append(P.pods[len(P.pods)-1], P.leaf[x])
	}
	return true
}

// commitLeaves commits a job on the leaves in P.pods. The victims of a
// preemption leave (stateful.go); those whose termination costs nothing
// are gone at once, and the job asks again.
func (h *HiveD) commitLeaves(L *vcLayer, P *poolLayer, j *workload.Job) tenancy.Decision {
	req := tenancy.Request{Group: groupName(j.ID), VC: L.name, Priority: j.VCPriority, Fastest: h.fastest, Class: int(j.Class), Nodes: h.nodesOf(j)}
	// Commit fills Pods from the leaves and keeps nothing of it: lend it
	// a buffer with room, so that it does not allocate one a decision.
	if cap(h.podBuf) < len(P.pods) {
		h.podBuf = make([]int, 0, 2*len(P.pods))
	}
	req.Pods = h.podBuf[:0]
	for {
		d, err := h.s.Commit(req, P.pods)
		if err != nil {
			panic("tenant: " + err.Error()) // the placer gave a GPU twice, or Validate let a bad job through
		}
		h.preempted(d)
		if !d.Preempting || !h.evict(d.Victims) {
			return d
		}
	}
}

// again asks for a job that holds its cells while its victims leave.
func (h *HiveD) again(L *vcLayer, P *poolLayer, j *workload.Job) ([]int, bool) {
	P.leaves(P.member(j.ID).held, false) // bad hardware under it: tenancy cancels the reservation
	d := h.commitLeaves(L, P, j)
	switch {
	case d.Placed:
		delete(h.pre, j.ID)
		return h.physical(d), true
	case d.Preempting:
		return nil, false
	}
	// Cancelled (its cells went bad): it waits as any job.
	P.unhold(L, j.ID)
	delete(h.held, j.ID)
	delete(h.jobs, j.ID)
	delete(h.pre, j.ID)
	return nil, false
}

// physical is a decision's GPUs in the cluster's numbering, ascending.
func (h *HiveD) physical(d tenancy.Decision) []int {
	n := 0
	for _, p := range d.Pods {
		n += len(p.GPUs)
	}
	g := make([]int, 0, n)
	for _, p := range d.Pods {
		nd := h.l.nodeGPUs[p.Node]
		for _, dev := range p.GPUs {
			g = append(g, nd.id(dev))
		}
	}
	slices.Sort(g)
	return g
}

// preempted takes the groups a decision preempted off the round's answer.
func (h *HiveD) preempted(d tenancy.Decision) {
	for _, v := range d.Preempted {
		id := atoi(v)
		delete(h.held, id)
		delete(h.jobs, id)
		h.gone[id] = true
		if k, ok := h.at(id); ok {
			h.out[k] = nil
		}
	}
}

// subCluster is the part of the shared cluster one tenant may use this
// round under quota: the nodes with such GPUs, each with only those GPUs,
// in node order (so a placer's tie-break by lowest node or GPU id reads
// the same), and the maps between its numbering and the cluster's.
type subCluster struct {
	c     *cluster.Cluster
	toPhy []int // sub GPU id → cluster GPU id
	toSub []int // cluster GPU id → sub GPU id, -1 outside
	sizes []int
	prev  []int
	from  *policy.Scores // scores restricted into sc
	sc    *policy.Scores
}

// build makes the sub-cluster of the GPUs ok allows; false if there are
// none. When they are the ones of the last build, the cluster is kept
// (placers index a cluster they see again).
func (sc *subCluster) build(c *cluster.Cluster, ok func(g int) bool) bool {
	if len(sc.toSub) != c.Size() {
		sc.toSub = make([]int, c.Size())
		sc.c = nil
	}
	sc.prev = append(sc.prev[:0], sc.toPhy...)
	sc.toPhy, sc.sizes = sc.toPhy[:0], sc.sizes[:0]
	for _, n := range c.Nodes {
		k := 0
		for _, g := range n.GPUs {
			sc.toSub[g] = -1
			if ok(g) {
				sc.toSub[g] = len(sc.toPhy)
				sc.toPhy = append(sc.toPhy, g)
				k++
			}
		}
		if k > 0 {
			sc.sizes = append(sc.sizes, k)
		}
	}
	if len(sc.sizes) == 0 {
		return false
	}
	if sc.c != nil && slices.Equal(sc.prev, sc.toPhy) {
		return true
	}
	var err error
	if sc.c, err = cluster.NewSized(sc.sizes); err != nil {
		panic("tenant: " + err.Error())
	}
	sc.sc = nil
	return true
}

// sub maps an ascending GPU list into the sub-cluster (ascending too: the
// numbering keeps node and GPU order).
func (sc *subCluster) sub(g []int) []int {
	if g == nil {
		return nil
	}
	out := make([]int, len(g))
	for i, x := range g {
		out[i] = sc.toSub[x]
	}
	return out
}

func (sc *subCluster) phys(g []int) []int {
	if g == nil {
		return nil
	}
	out := make([]int, len(g))
	for i, x := range g {
		out[i] = sc.toPhy[x]
	}
	return out
}

// scores restricts per-GPU scores to the sub-cluster (nil stays nil).
func (sc *subCluster) scores(s *policy.Scores) *policy.Scores {
	if s == nil {
		return nil
	}
	if sc.sc != nil && sc.from == s {
		return sc.sc
	}
	out := &policy.Scores{LV: s.LV}
	for k := range s.SF {
		out.SF[k] = make([]float64, len(sc.toPhy))
		for i, g := range sc.toPhy {
			out.SF[k][i] = s.SF[k][g]
		}
	}
	sc.from, sc.sc = s, out
	return out
}

// UniformScores is a score table for c in which every GPU is alike (one
// bin), for placers that read scores where none are known.
func UniformScores(c *cluster.Cluster) *policy.Scores {
	sc := &policy.Scores{}
	for k := range sc.SF {
		sc.SF[k] = make([]float64, c.Size())
		for g := range sc.SF[k] {
			sc.SF[k][g] = 1
		}
		sc.LV[k] = []policy.LVStep{{V: 1}, {V: 1, Across: true}}
	}
	return sc
}
