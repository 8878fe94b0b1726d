package kube

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// The tenancy annotations: the pod's virtual cluster and HiveD priority.
const (
	// AnnVC names the pod's virtual cluster in the cells file; it may be
	// left out when the cells define one VC.
	AnnVC = "pal.io/vc"
	// AnnPriority is the HiveD priority: 0..1000 guaranteed (default 0),
	// -1 opportunistic.
	AnnPriority = "pal.io/priority"
	// AnnPinnedCell runs the gang inside this pinned cell of its VC
	// (HiveD's pinnedCellId); under hived only.
	AnnPinnedCell = "pal.io/pinned-cell"
	// AnnLeafCellType restricts the gang to devices of this leaf cell
	// type (HiveD's leafCellType, a device model); under hived only.
	AnnLeafCellType = "pal.io/leaf-cell-type"
)

// tenancyModes are the tenancy settings of `pal-kube scheduler` (private, the
// simulator's reference of each VC alone, has no meaning on one cluster).
var tenancyModes = []string{"none", "quota", "hived", "hived-pm", "hived-speed"}

// validateTenancy checks the tenancy and cells fields and loads the cells
// (the loader of `pal sim --cells`).
func (c *Config) validateTenancy() (*tenant.Layout, error) {
	if c.Tenancy == "" {
		c.Tenancy = "none"
	}
	if !slices.Contains(tenancyModes, c.Tenancy) {
		return nil, fmt.Errorf("field tenancy: %s, want one of %s", quote.Value(c.Tenancy), strings.Join(tenancyModes, ", "))
	}
	if c.Tenancy == "none" {
		if c.Cells != "" {
			return nil, fmt.Errorf("field cells: set, but tenancy is none")
		}
		if c.CellsConfigMap != "" {
			return nil, fmt.Errorf("field cellsConfigMap: set, but tenancy is none")
		}
		return nil, nil
	}
	if c.Cells == "" {
		return nil, fmt.Errorf("field cells: tenancy %s needs a cells file (HiveD format)", c.Tenancy)
	}
	if c.CellsConfigMap != "" && c.Tenancy != "hived" && c.Tenancy != "hived-pm" && c.Tenancy != "hived-speed" {
		return nil, fmt.Errorf("field cellsConfigMap: tenancy %s does not change its cells under running gangs; use hived, hived-pm or hived-speed", c.Tenancy)
	}
	cfg, err := tenancy.LoadFile(c.Cells)
	if err != nil {
		return nil, fmt.Errorf("field cells: %v", err)
	}
	l, err := tenant.NewLayout(cfg)
	if err != nil {
		return nil, fmt.Errorf("field cells: %v", err)
	}
	return l, nil
}

// tenancyStage runs the simulator's tenancy stage (policy/tenant) inside
// the scheduler's round. The stage works on the cells' cluster (node i is
// the i-th node the cells name); the round's cluster is the API's nodes
// sorted by name. A GPU is the same in both by (node name, device index),
// and GPU ids are translated both ways around the stage.
//
// Under hived the cells are state kept across rounds, as in the
// simulator: a gang holds its cells until it leaves the cluster. Cells
// nodes absent from the API (or not usable, or with another GPU count) are
// bad hardware for HiveD.
type tenancyStage struct {
	mode   string
	l      *tenant.Layout
	stage  policy.Tenancy
	hived  *tenant.HiveD
	quota  *tenant.Quota
	held   map[int]*workload.Job
	down   map[int]bool // cells node index -> told bad
	scores *policy.Scores
	toSnap []int // cells GPU id -> round GPU id (-1: absent), this round
	// allowed: per job, the cells' nodes its pods' node selector and
	// required node affinity allow (absent: every node), this round.
	allowed map[int][]string
	// allowMemo: the cells' nodes each node selector and required node
	// affinity allow, by their content (allowKey), for the cells'
	// cluster allowOn and the Store's nodes at label generation allowGen
	// (state.Store.NodeLabelsGeneration): kept across rounds while
	// neither changes, and shared, read only, by the gangs of a key in
	// allowed. Most gangs that select nodes select them alike (a rack, a
	// GPU model), and matching one against every node was a fifth of a
	// hived round at 5,000 nodes. allowMemo holds the keys asked this
	// round, allowPrev those of the last round not asked yet (allowRound):
	// a key no gang asks for a round goes.
	allowMemo, allowPrev map[string][]string
	allowOn              *cluster.Cluster
	allowGen             uint64
	// The cells in force (their text) and the watched ConfigMap's last
	// version seen (see watchCells).
	cellsText, cellsRV string
	cellsMissing       bool
	// quar is what the cells were told of the quarantine, by cells GPU
	// id, for the layout qlayout and the learning state qlearn at its
	// change count qgen (syncTenancyQuarantine).
	quar    map[int]bool
	qlayout *tenant.Layout
	qlearn  *learnStage
	qgen    uint64
	// ext is what the cells were told pods they did not place hold
	// (syncExternal), by cells GPU id, for the layout extL.
	ext  []bool
	extL *tenant.Layout
	// fixed: the running gangs of this round the round may not evict (a
	// bare pod, or a Job it would fail, with preemptBarePods off: false; a
	// disruption budget that would refuse it: true), set by the round:
	// the cells keep them where they run, out of their VC placer's reach
	// (place).
	fixed map[int]bool
	// outside: the running gangs left outside the cells until they end or
	// are placed again: the cells could not take them in, or their VC's
	// placer preempted them and they still run (see place).
	outside map[int]bool
	// ran: the held gangs seen with a pod bound (or its bind assumed)
	// since the cells took them (sync).
	ran map[int]bool
	// reshaped: a cells change was applied this round (regather).
	reshaped bool
	// begun: the stage has run a round, and taken in the gangs it found
	// running. Before, the cells ConfigMap's cells are those in force
	// from the start (watchCells), not a change under running gangs.
	begun bool
	// blocked: the preemptions unblock withdrew this round, by
	// preemptor job id: the fixed gangs among its victims (why).
	blocked map[int][]int
	// whyR: what the wait reasons read of the cells (why).
	whyR whyRound
	// allowWords: Scheduler.allowWords this round, for the reasons that
	// name what keeps a gang off nodes (why).
	allowWords string
	// quotaUsed: under quota, each VC's guaranteed GPUs after the round's
	// placement (why).
	quotaUsed map[string]int
	// fits: this round's answers of the cells' layout fitsL to admit's fit
	// checks, by demand (tenant.DemandMemo): each asks the whole view of
	// the gang's VC, and the round admits every waiting gang, most of
	// them of a few shapes.
	fits  tenant.DemandMemo
	fitsL *tenant.Layout
}

// newTenancyStage builds the stage; mk makes one VC's placer (each VC
// runs its own, on its own view).
func newTenancyStage(mode string, l *tenant.Layout, mk func() (policy.Placer, error)) (*tenancyStage, error) {
	t := &tenancyStage{mode: mode, l: l, held: map[int]*workload.Job{}, down: map[int]bool{}, allowed: map[int][]string{}, outside: map[int]bool{}, ran: map[int]bool{}, fixed: map[int]bool{}, blocked: map[int][]int{}, quotaUsed: map[string]int{}}
	// Each VC's placer keeps a gang's pods whole inside nodes, as the
	// simulator's tenancy runs do (the cells bind the GPUs it answers, so
	// the round may not re-cut them into pods elsewhere), and leaves a
	// running gang where it runs (keepRunning).
	guarded := func() (policy.Placer, error) {
		p, err := mk()
		if err != nil {
			return nil, err
		}
		return keepRunning{place.PodGuard{Placer: p}}, nil
	}
	iv := &tenant.IntraVC{NewPlacer: guarded, Env: func(_ string, c *cluster.Cluster) (policy.Env, error) {
		return policy.Env{Cluster: c, Scores: tenant.UniformScores(c), Rand: policy.PlacementRand(0)}, nil
	}}
	st, err := registry.NewTenancy(registry.Spec{Tenancy: mode}, l, iv)
	if err != nil {
		return nil, err
	}
	t.stage = st
	switch v := st.(type) {
	case *tenant.Quota:
		t.quota = v
	case *tenant.HiveD:
		t.hived = v
		// A preempted gang leaves its cells when its pods are gone, not
		// when the eviction is sent: its preemptor binds only then.
		v.SetVictimsLeaveOnFinish()
		// Each gang's decisions stay on the nodes its pods may run on
		// (HiveD's suggested nodes).
		v.SetAllowedNodes(func(j *workload.Job) []string { return t.allowed[j.ID] })
	}
	return t, nil
}

var jobRef = regexp.MustCompile(`job [0-9]+(: |'s | )`)

// admit reads a gang's VC and priority and checks them against the cells.
// An error leaves the gang pending with the message as its event.
func (t *tenancyStage) admit(g *gang) error {
	p := g.Pending
	if len(p) == 0 {
		p = g.Bound
	}
	if len(p) == 0 {
		return nil
	}
	a := p[0].Annotations
	vc, prio := a[AnnVC], 0
	if vc == "" {
		if vcs := t.l.VCs(); len(vcs) == 1 {
			vc = vcs[0]
		} else {
			return fmt.Errorf("annotation %s: missing, and the cells define %d VCs (%s)", AnnVC, len(vcs), strings.Join(vcs, ", "))
		}
	}
	if !slices.Contains(t.l.VCs(), vc) {
		return fmt.Errorf("annotation %s=%s: unknown VC (the cells define %s)", AnnVC, quote.Value(vc), strings.Join(t.l.VCs(), ", "))
	}
	if v, ok := a[AnnPriority]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < tenancy.Opportunistic || n > tenancy.MaxPriority {
			return fmt.Errorf("annotation %s=%s: want %d (opportunistic) or 0..%d", AnnPriority, quote.Value(v), tenancy.Opportunistic, tenancy.MaxPriority)
		}
		prio = n
	}
	for _, q := range append(slices.Clone(g.Pending), g.Bound...) {
		if q.Annotations[AnnVC] != a[AnnVC] || q.Annotations[AnnPriority] != a[AnnPriority] {
			return fmt.Errorf("pods %s and %s of the gang differ in %s or %s", p[0].Name, q.Name, AnnVC, AnnPriority)
		}
		if !maps.Equal(q.Spec.NodeSelector, p[0].Spec.NodeSelector) || !reflect.DeepEqual(nodeAffinity(q), nodeAffinity(p[0])) {
			return fmt.Errorf("pods %s and %s of the gang differ in their node selector or node affinity", p[0].Name, q.Name)
		}
		for _, k := range []string{AnnPinnedCell, AnnLeafCellType} {
			if q.Annotations[k] != a[k] {
				return fmt.Errorf("pods %s and %s of the gang differ in %s", p[0].Name, q.Name, k)
			}
		}
	}
	j := g.Job
	j.VC, j.VCPriority, j.PodGPUs = vc, prio, g.Spec.GPUs
	j.PinnedCell, j.LeafCellType = strings.TrimSpace(a[AnnPinnedCell]), strings.TrimSpace(a[AnnLeafCellType])
	src := "gang " + g.Key
	spec := j.Spec
	spec.Source, spec.Line = src, 0
	if t.fits == nil || t.fitsL != t.l {
		t.fits, t.fitsL = tenant.DemandMemo{}, t.l
	}
	if err := t.l.ValidateMemo(&workload.Trace{Jobs: []workload.Spec{spec}}, t.hived != nil, t.fits); err != nil {
		msg := strings.TrimPrefix(err.Error(), src+":0: ")
		// Name the annotations, not the trace columns they stand for.
		msg = strings.Replace(msg, `field "pinned_cell"`, "annotation "+AnnPinnedCell, 1)
		msg = strings.Replace(msg, `field "leaf_cell_type"`, "annotation "+AnnLeafCellType, 1)
		msg = strings.Replace(msg, "name one in pinned_cell", "name one in "+AnnPinnedCell, 1)
		// A gang's GPUs and pod sizes are its pods' requests, no field.
		msg = strings.Replace(msg, `field "num_gpus": `, "", 1)
		msg = strings.Replace(msg, `field "pod_gpus": `, "", 1)
		// The job id is internal to the round: a pod's event speaks of its gang.
		msg = jobRef.ReplaceAllStringFunc(msg, func(m string) string {
			switch {
			case strings.HasSuffix(m, "'s "):
				return "the gang's "
			case strings.HasSuffix(m, ": "):
				return ""
			}
			return "the gang "
		})
		return unfitError{msg}
	}
	return nil
}

// unfitError is admit's answer for a gang whose VC and priority are
// known but that the cells cannot hold as it is (its VC too small for
// it, a pinned cell or leaf cell type they lack): a waiting one waits
// with it, while a running one is still the cells' to take in where it
// runs (adoptRunning), as a cells change that shrank its VC keeps it.
type unfitError struct{ msg string }

func (e unfitError) Error() string { return e.msg }

// runsUnfit reports whether admit's err leaves gang g, found running,
// for adoptRunning to take in where it runs all the same.
func runsUnfit(g *gang, err error) bool {
	_, ok := err.(unfitError)
	return ok && g.Job.GPUsHeld != nil
}

func nodeAffinity(p *corev1.Pod) *corev1.NodeAffinity {
	if p.Spec.Affinity == nil {
		return nil
	}
	return p.Spec.Affinity.NodeAffinity
}

// allow records the cells' nodes a gang's pods may run on: those whose
// labels match its node selector and required node affinity, and whose
// taints its tolerations tolerate (podAllows). A gang without a selector
// or affinity may use every node while no node is tainted. The nodes node reads are those of
// label generation gen (state.Store.NodeLabelsGeneration): a match reads
// only their names and labels, so gangs of one selector and affinity
// share one scan of the nodes while the generation and the cells stay
// (allowMemo).
func (t *tenancyStage) allow(g *gang, node func(name string) *corev1.Node, gen uint64, tainted bool, keyOf func(*corev1.Pod) (string, bool)) {
	p := g.Pending
	if len(p) == 0 {
		p = g.Bound
	}
	if len(p) == 0 || !constrained(p[0], tainted) {
		delete(t.allowed, g.Job.ID)
		return
	}
	if t.allowOn != t.l.Cluster || t.allowGen != gen || t.allowMemo == nil {
		t.allowMemo, t.allowPrev, t.allowOn, t.allowGen = map[string][]string{}, nil, t.l.Cluster, gen
	}
	key, ok := keyOf(p[0])
	if out, hit := t.allowMemo[key]; ok && hit {
		t.allowed[g.Job.ID] = out
		return
	}
	if out, hit := t.allowPrev[key]; ok && hit {
		t.allowMemo[key] = out
		t.allowed[g.Job.ID] = out
		return
	}
	allows := podAllows(p[0])
	out := []string{}
	for _, n := range t.l.Cluster.Nodes {
		if nd := node(n.Name); nd != nil && allows(nd) {
			out = append(out, n.Name)
		}
	}
	out = slices.Clip(out) // shared: an append by a reader copies
	if ok {
		t.allowMemo[key] = out
	}
	t.allowed[g.Job.ID] = out
}

// allowRound starts a round's allow: the keys of the last round are
// kept for this one, those no gang asked for in it go.
func (t *tenancyStage) allowRound() {
	t.allowPrev, t.allowMemo = t.allowMemo, t.allowPrev
	clear(t.allowMemo)
	if t.allowMemo == nil && t.allowPrev != nil {
		t.allowMemo = map[string][]string{}
	}
}

// allowKey is the content of what decides the nodes a pod allows (see
// podAllows): its node selector (none when empty), its required node
// affinity and its tolerations, in JSON (a map's keys sorted). ok is false when it will
// not encode (never, for a pod that decoded).
func allowKey(p *corev1.Pod) (key string, ok bool) {
	var k struct {
		Selector    map[string]string    `json:"s,omitempty"`
		Required    *corev1.NodeSelector `json:"r,omitempty"`
		Tolerations []corev1.Toleration  `json:"t,omitempty"`
	}
	if len(p.Spec.NodeSelector) > 0 {
		k.Selector = p.Spec.NodeSelector
	}
	k.Tolerations = p.Spec.Tolerations
	if a := nodeAffinity(p); a != nil {
		k.Required = a.RequiredDuringSchedulingIgnoredDuringExecution
	}
	b, err := json.Marshal(k)
	return string(b), err == nil
}

// sync maps the cells' GPUs onto this round's cluster, tells HiveD which
// cells nodes are gone or back, gives hived-pm and hived-speed the round's scores in the
// cells' numbering, and releases the cells of gangs that left. live:
// the job ids of the gangs with a pod bound or pending; holding: those
// with a pod bound (or its bind assumed).
func (t *tenancyStage) sync(snap *snapshot, scores *policy.Scores, live, holding map[int]bool) error {
	lc := t.l.Cluster
	t.toSnap = slices.Grow(t.toSnap[:0], lc.Size())[:lc.Size()]
	for i := range t.toSnap {
		t.toSnap[i] = -1
	}
	for i, n := range lc.Nodes {
		k, ok := snap.NodeIndex[n.Name]
		up := ok && snap.Cluster != nil && len(snap.Cluster.Nodes[k].GPUs) == len(n.GPUs)
		if up {
			for d, g := range n.GPUs {
				t.toSnap[g] = snap.First[k] + d
			}
		}
		if t.hived != nil && t.down[i] == up {
			if err := t.hived.SetNodeHealth(i, up); err != nil {
				return err
			}
			t.down[i] = !up
		}
	}
	for id := range t.outside {
		if !live[id] {
			delete(t.outside, id)
		}
	}
	for id := range t.ran {
		if t.held[id] == nil {
			delete(t.ran, id)
		}
	}
	for id, j := range t.held {
		// A preempted gang, or one that ran, none of whose pods is bound
		// any more has left, even if a pod of the same name waits (a
		// StatefulSet's, made again by its controller before this
		// round): that pod is a new gang for the cells, under the same
		// job id, placed afresh this round. Kept, a preempted one would
		// leave forever, and its preemptor wait for it; one that ran and
		// was deleted would hold cells its new pods are not placed on
		// (its VC's placer finds them taken), and the round would give
		// them back only after placing the others: a round lost to both.
		// A gang placed but not yet bound holds its cells, and a
		// preemptor holds them while its victims leave.
		if !live[id] || t.hived != nil && !holding[id] && (t.hived.Leaving(j) || t.ran[id] && !t.hived.Cells().IsPreempting(strconv.Itoa(id))) {
			t.stage.Finish(j)
			delete(t.held, id)
			continue
		}
		if holding[id] {
			t.ran[id] = true
		}
	}
	if t.hived != nil {
		// A gang deleted while it preempts (it holds cells, not GPUs):
		// its reservation goes, and its victims stop leaving.
		for _, j := range t.hived.Preemptors() {
			if !live[j.ID] && t.held[j.ID] == nil {
				t.stage.Finish(j)
			}
		}
	}
	if (t.mode == "hived-pm" || t.mode == "hived-speed") && scores != nil && scores != t.scores {
		t.scores = scores
		var sc policy.Scores
		sc.LV = scores.LV
		for k := range sc.SF {
			sc.SF[k] = make([]float64, lc.Size())
			for g, r := range t.toSnap {
				sc.SF[k][g] = math.Inf(1) // absent GPUs: never the fastest
				if r >= 0 && r < len(scores.SF[k]) {
					sc.SF[k][g] = scores.SF[k][r]
				}
			}
		}
		if err := t.hived.UseScores(&sc); err != nil {
			return err
		}
	}
	return nil
}

// place runs the stage on the round's order. Under hived the stage sees
// held GPUs in the cells' numbering and answers in it; the answer comes
// back in the round's numbering. A placement on a GPU the round sees
// absent, or taken by anything but a gang the stage itself held (another
// scheduler's pod, a gang running outside the cells), is given back at
// once: the gang waits, and the cells stay as they were before it.
//
// A gang found running that the cells do not hold and could not take in
// (adoptRunning: its GPUs are not all in the cells) keeps its GPUs and
// stays outside the cells until it ends: moving a running gang to fit the
// cells would kill its work.
func (t *tenancyStage) place(env *policy.Env, snap *snapshot, order []*workload.Job, placer policy.Placer) [][]int {
	if t.hived == nil {
		// Quota places each VC on the round's cluster, without the GPUs
		// of pods outside the order (other schedulers', leaving gangs').
		inOrder := make(map[int]bool, len(order))
		for _, j := range order {
			inOrder[j.ID] = true
		}
		e := *env
		e.Cluster = snap.Cluster
		t.quota.Hide = func(g int) bool { o := snap.Cluster.Owner(g); return o != cluster.Free && !inOrder[o] }
		out := t.stage.Place(&e, order, placer)
		// Each VC's guaranteed GPUs after the round, for the wait reasons.
		clear(t.quotaUsed)
		for i, j := range order {
			if j.VCPriority != tenancy.Opportunistic {
				t.quotaUsed[j.VC] += len(out[i])
			}
		}
		return out
	}
	fromSnap := map[int]int{}
	for g, r := range t.toSnap {
		if r >= 0 {
			fromSnap[r] = g
		}
	}
	before := maps.Clone(t.held)
	out := make([][]int, len(order))
	var sub []*workload.Job
	var at []int
	for i, j := range order {
		if j.GPUsHeld != nil && (before[j.ID] == nil || t.isFixed(j.ID) || t.partlyIn(j, fromSnap)) {
			// Running outside the cells, or held where it runs and not to
			// be moved or preempted, or held guaranteed with only some of
			// its GPUs in the cells: its VC's placer does not see it, and
			// its pool hides its GPUs (a member the round does not list).
			out[i] = j.GPUsHeld
			continue
		}
		sub = append(sub, j)
		at = append(at, i)
	}
	saved := make([][]int, len(sub))
	for i, j := range sub {
		saved[i] = j.GPUsHeld
		if j.GPUsHeld != nil {
			// Its GPUs the cells do not have (a node a cells change
			// took out under it) are left out, not read as GPU 0.
			h := make([]int, 0, len(j.GPUsHeld))
			for _, r := range j.GPUsHeld {
				if g, ok := fromSnap[r]; ok {
					h = append(h, g)
				}
			}
			j.GPUsHeld = h
		}
	}
	got := t.stage.Place(env, sub, placer)
	t.unblock(sub, got)
	var fresh []int // indices in sub of the gangs placed afresh
	for i, j := range sub {
		j.GPUsHeld = saved[i]
		a := got[i]
		if a == nil {
			// Preempted for a guaranteed gang: it keeps its cells while its
			// pods leave (sync finishes it once they are gone). Otherwise
			// (cells held for a gang whose bind failed, or a running gang
			// its VC's placer preempted) give them back. A running one
			// stays outside the cells (adoptRunning leaves it) until it
			// ends or is placed again: the round may refuse to evict it
			// (bare pods), and taking it back each round would have its
			// VC's placer preempt it again, round after round.
			if t.held[j.ID] != nil && !t.hived.Leaving(j) {
				t.stage.Finish(j)
				delete(t.held, j.ID)
				if saved[i] != nil {
					t.outside[j.ID] = true
				}
			}
			continue
		}
		if before[j.ID] != nil && saved[i] != nil {
			out[at[i]] = slices.Clone(saved[i])
			continue
		}
		r := make([]int, len(a))
		ok := true
		for k, g := range a {
			r[k] = t.toSnap[g]
			if r[k] < 0 {
				ok = false
				continue
			}
			if o := snap.Cluster.Owner(r[k]); o != cluster.Free && before[o] == nil {
				ok = false
			}
		}
		if !ok {
			t.stage.Finish(j)
			delete(t.held, j.ID)
			continue
		}
		slices.Sort(r)
		out[at[i]] = r
		t.held[j.ID] = j
		delete(t.outside, j.ID)
		fresh = append(fresh, i)
	}
	// A new placement on GPUs that a running gang keeps this round (the
	// cells believed them free: they and the round disagree) is given
	// back too, as one on another scheduler's pod: the round would
	// refuse the whole answer, and nothing would be bound anywhere.
	if len(fresh) > 0 {
		kept := map[int]bool{}
		for i, j := range order {
			if j.GPUsHeld != nil && out[i] != nil && place.SameGPUs(out[i], j.GPUsHeld) {
				for _, g := range j.GPUsHeld {
					kept[g] = true
				}
			}
		}
		for _, i := range fresh {
			if k := at[i]; slices.ContainsFunc(out[k], func(g int) bool { return kept[g] }) {
				t.stage.Finish(sub[i])
				delete(t.held, sub[i].ID)
				out[k] = nil
			}
		}
	}
	return out
}

// partlyIn reports whether held gang j is its VC's guaranteed gang with
// only some of its GPUs in the cells (a cells change took a node out under
// it, and kept it on the rest; or a restart took it in so). Its VC's
// placer would see a gang on fewer GPUs than it needs (a VC's Themis logs
// it as a broken invariant, and could lease it that part alone): it is
// kept where it runs, out of the placer's view, until it ends or a later
// change puts its GPUs back in the cells or demotes it. A lazily
// preempted or opportunistic one is no VC placer's: the cells preempt it
// for a guaranteed gang as any other.
func (t *tenancyStage) partlyIn(j *workload.Job, fromSnap map[int]int) bool {
	if j.VCPriority == tenancy.Opportunistic || !slices.ContainsFunc(j.GPUsHeld, func(r int) bool { _, ok := fromSnap[r]; return !ok }) {
		return false
	}
	_, demoted, ok := t.hived.Cells().GroupInfo(strconv.Itoa(j.ID))
	return ok && !demoted
}

// unblock withdraws, right after the stage placed the round, the
// preemptions that wait on gangs the round may not evict (fixed: bare
// pods, or a Job it would fail, with preemptBarePods off), and records in
// blocked which fixed gangs each preemptor waits on (why names them).
// Kept, such a preemption could never complete, yet the round would
// evict its other victims (their answer is nil while they leave) for a
// gang that still cannot run, and evict them again each time they came
// back; and the reservation would hold the preemptor to the cells it
// chose when it came (HiveD binds a VC's cell to one with opportunistic
// pods on it only when none is free) while cells that free later went to
// gangs behind it. Withdrawn, the victims keep their cells and the GPUs
// they hold (got is set to them: a nil answer would evict them), and the
// preemptor is placed afresh next round as any waiting gang: on cells
// that have freed if there are any, or on the same victims' cells again
// (withdrawn again, it waits).
func (t *tenancyStage) unblock(sub []*workload.Job, got [][]int) {
	clear(t.blocked)
	if len(t.fixed) == 0 {
		return
	}
	pre := t.hived.Cells().Preempting()
	if len(pre) == 0 {
		return
	}
	var victims []int // the other victims of the preemptions withdrawn
	for _, j := range sub {
		var fixed, others []int
		for _, v := range pre[strconv.Itoa(j.ID)] {
			if id, err := strconv.Atoi(v); err == nil && t.isFixed(id) {
				fixed = append(fixed, id)
			} else if err == nil {
				others = append(others, id)
			}
		}
		if len(fixed) > 0 && t.hived.CancelPreemption(j) {
			t.blocked[j.ID] = fixed
			victims = append(victims, others...)
		}
	}
	if len(victims) == 0 {
		return
	}
	for i, j := range sub {
		// A victim no other preemptor waits for runs on where it runs
		// (j.GPUsHeld: the cells' numbering here).
		if got[i] == nil && j.GPUsHeld != nil && t.held[j.ID] != nil && slices.Contains(victims, j.ID) && !t.hived.Leaving(j) {
			got[i] = slices.Clone(j.GPUsHeld)
		}
	}
}

// tenancyOrder drops from the round's order the gangs whose VC or
// priority is wrong (each waits with an event saying why; the others are
// served) and brings the cells up to date with the round.
func (s *Scheduler) tenancyOrder(snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang) []*workload.Job {
	if s.cfg.CellsConfigMap != "" && s.ten.hived != nil {
		s.watchCells(snap)
	}
	// A gang holds its cells while any of its pods holds GPUs or waits for
	// them; one all of whose pods finished (a Job keeps them) holds none.
	live, holding := map[int]bool{}, map[int]bool{}
	for _, g := range snap.Gangs {
		if g.Job != nil && len(g.Bound)+len(g.Pending) > 0 {
			live[g.Job.ID] = true
		}
		if g.Job != nil && len(g.Bound) > 0 {
			holding[g.Job.ID] = true
		}
	}
	// adopt: the gangs adoptRunning may take in, in the round's order:
	// those admitted, and those found running that the cells can no
	// longer hold whole (runsUnfit).
	adopt := make([]*workload.Job, 0, len(order))
	kept := order[:0]
	clear(s.ten.allowed)
	s.ten.allowRound()
	s.ten.fits = nil // admit asks this round's cells afresh
	s.ten.allowWords = s.allowWords()
	for _, j := range order {
		g := byJob[j]
		if err := s.ten.admit(g); err != nil {
			if g.State == state.GangQueued {
				s.wait(g.Key, g.Pending, err.Error())
			}
			if runsUnfit(g, err) {
				// Out of the round's order, as the cells change that made
				// it so left it; the cells take it in all the same.
				adopt = append(adopt, j)
			}
			continue
		}
		s.ten.allow(g, s.state.Node, s.state.NodeLabelsGeneration(), s.state.TaintedNodes() > 0, s.allowKeyOf)
		adopt = append(adopt, j)
		kept = append(kept, j)
	}
	if err := s.ten.sync(snap, s.scores, live, holding); err != nil {
		s.log.Error("round: tenancy", "err", err)
	}
	if s.ten.reshaped {
		s.ten.reshaped = false
		s.ten.regather(snap)
	}
	s.ten.whyR.snap = nil // read the cells afresh for this round's wait reasons
	s.ten.whyR.heldOn = s.state.HeldOn
	s.syncTenancyQuarantine()
	s.adoptRunning(snap, adopt, byJob)
	if err := s.ten.syncExternal(snap); err != nil {
		s.log.Error("round: tenancy", "err", err)
	}
	s.ten.begun = true
	return kept
}

// syncExternal tells the cells which of their GPUs pods they did not
// place hold this round: another scheduler's pods (by the devices they
// name, and those held by count on the devices the Store gives them:
// the highest that nothing else holds), our gangs running outside the
// cells, and our leaving pods that no gang of the cells holds. These are
// the GPUs place gives a placement back for: told, the cells place
// guaranteed and opportunistic gangs on others, and a VC whose cells are
// bound over them sees them taken, as it sees a quarantined device. A
// node the round does not see (cordoned, not ready, gone) is bad in the
// cells already: its GPUs are not marked.
func (t *tenancyStage) syncExternal(snap *snapshot) error {
	if t.hived == nil {
		return nil
	}
	if t.extL != t.l {
		// Start from what the cells have (a cells change carries it).
		t.ext, t.extL = make([]bool, t.l.Cluster.Size()), t.l
		for _, d := range t.hived.Cells().External() {
			if g, ok := t.l.GPU(d.Node, d.GPU); ok {
				t.ext[g] = true
			}
		}
	}
	// The GPUs of the cells' gangs whose pods are leaving (held, as a
	// preemption's victims are until they are gone): the round owns them
	// as leaving, not as the gang's.
	var leaving map[int]bool
	for _, g := range snap.Gangs {
		if g.Job != nil && len(g.GPUs) > 0 && t.held[g.Job.ID] != nil && (g.State == state.GangLeaving || g.State == state.GangWaiting) {
			if leaving == nil {
				leaving = map[int]bool{}
			}
			for _, r := range g.GPUs {
				leaving[r] = true
			}
		}
	}
	last, lastOut := cluster.Free, false // owners run in blocks
	for g, r := range t.toSnap {
		on := false
		if r >= 0 && snap.Cluster != nil {
			switch o := snap.Cluster.Owner(r); {
			case o == cluster.Free:
			case o == state.OwnerLeaving:
				on = !leaving[r]
			case o == last:
				on = lastOut
			default:
				on = t.held[o] == nil
				last, lastOut = o, on
			}
		}
		if on == t.ext[g] {
			continue
		}
		if err := t.hived.SetExternal(g, on); err != nil {
			return err
		}
		t.ext[g] = on
	}
	return nil
}

// regather releases, after a cells change, the held gangs that run on
// GPUs of the new cells their cells group lacks, for adoptRunning to take
// them in again whole. A change carries a running gang with the devices
// both configs have (tenancy.Scheduler.Reconfigure): a node that left the
// cells under a gang's pod and comes back with a later change comes back
// free in the cells while the pod still runs there, and the cells would
// bind another gang to its GPUs (the round then refused every answer:
// nothing was bound anywhere until the pod ended).
func (t *tenancyStage) regather(snap *snapshot) {
	in := make(map[int]bool, len(t.toSnap))
	for _, r := range t.toSnap {
		if r >= 0 {
			in[r] = true
		}
	}
	for _, g := range snap.Gangs {
		j := g.Job
		if j == nil || t.held[j.ID] == nil || len(g.GPUs) == 0 || t.hived.Leaving(j) {
			continue
		}
		n := 0
		for _, r := range g.GPUs {
			if in[r] {
				n++
			}
		}
		ps, _ := t.hived.Cells().Placement(strconv.Itoa(j.ID))
		for _, p := range ps {
			n -= len(p.GPUs)
		}
		if n > 0 {
			t.stage.Finish(t.held[j.ID])
			delete(t.held, j.ID)
		}
	}
}

// adoptRunning gives the cells the gangs found running that they do not
// hold (the scheduler restarted, or the gang was bound before the cells
// could map its GPUs), as HiveD re-reads its allocated pods when it
// restarts: a guaranteed gang that its VC's cells can hold is its VC's
// again, so the VC's accounting stays whole across a restart; one they
// cannot hold runs on lazily preempted (opportunistic until a guaranteed
// gang needs its GPUs); an opportunistic one as opportunistic. Guaranteed
// gangs go first, the longest running first. A gang none of whose GPUs
// the cells can map (nodes outside the cells) stays outside them until it
// ends; one some of whose GPUs they can map is taken in on those, as a
// cells change carries it (its pods elsewhere run on outside the cells).
// A running gang that its VC can no longer hold as a whole (admit:
// unfitError; a cells change shrank the VC) is taken in too, on the GPUs
// it holds, as the change kept it: order holds such gangs besides the
// round's own.
func (s *Scheduler) adoptRunning(snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang) {
	t := s.ten
	if t.hived == nil {
		return
	}
	type run struct {
		j     *workload.Job
		g     *gang
		gpus  []int   // the round's GPU ids
		start float64 // when it started, for the order
	}
	var found []run
	for _, j := range order {
		if j.GPUsHeld != nil && t.held[j.ID] == nil && !t.outside[j.ID] {
			found = append(found, run{j, byJob[j], j.GPUsHeld, s.startedAt(byJob[j])})
		}
	}
	// A gang some of whose pods finished while others run holds their
	// GPUs but is not in the order: taken in as well, it keeps them in
	// the cells, out of its VC placer's reach, until its pods are gone.
	for _, g := range snap.Gangs {
		j := g.Job
		if j == nil || g.State != state.GangLeaving || len(g.Bound) == 0 || len(g.GPUs) == 0 || t.held[j.ID] != nil || t.outside[j.ID] {
			continue
		}
		if err := t.admit(g); err != nil {
			if _, ok := err.(unfitError); !ok {
				continue
			}
		}
		found = append(found, run{j, g, g.GPUs, s.startedAt(g)})
	}
	if len(found) == 0 {
		return
	}
	slices.SortStableFunc(found, func(a, b run) int {
		if ga, gb := a.j.VCPriority != tenancy.Opportunistic, b.j.VCPriority != tenancy.Opportunistic; ga != gb {
			if ga {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.start, b.start)
	})
	fromSnap := map[int]int{}
	for g, r := range t.toSnap {
		if r >= 0 {
			fromSnap[r] = g
		}
	}
	for _, f := range found {
		j := f.j
		gpus := make([]int, 0, len(f.gpus))
		for _, r := range f.gpus {
			if g, ok := fromSnap[r]; ok {
				gpus = append(gpus, g)
			}
		}
		name := gangName(f.g.Key)
		if len(gpus) == 0 {
			t.outside[j.ID] = true
			s.log.Warn("tenancy: a running gang's GPUs are not in the cells; it keeps them outside the cells until it ends", "gang", name)
			continue
		}
		if len(gpus) < len(f.gpus) {
			// As a cells change carries it (tenancy.Scheduler.Reconfigure):
			// the cells take the GPUs they have, and count them against
			// its VC; the others run on outside the cells.
			s.log.Warn("tenancy: some of a running gang's GPUs are not in the cells; they run on outside the cells until it ends", "gang", name, "in", len(gpus), "of", len(f.gpus))
		}
		guaranteed, err := t.hived.Adopt(j, gpus)
		if err != nil {
			t.outside[j.ID] = true
			s.log.Warn("tenancy: a running gang stays outside the cells until it ends", "gang", name, "err", err)
			continue
		}
		t.held[j.ID] = j
		how := "guaranteed"
		switch {
		case j.VCPriority == tenancy.Opportunistic:
			how = "opportunistic"
		case !guaranteed:
			how = "lazily preempted (its VC's cells cannot hold it)"
		}
		s.log.Info("tenancy: running gang taken into the cells", "gang", name, "vc", j.VC, "as", how)
	}
}

// startedAt is when running gang g started, for adoptRunning's order:
// the round that bound it (its bind-info), else when this scheduler first
// saw it run. A restarted scheduler sees every gang first run at its
// first round: ordered by that alone, the gangs would go in their names'
// order, where the scheduler that ran on had ordered them by when the
// cells took them in (a cells change keeps the first placed).
func (s *Scheduler) startedAt(g *gang) float64 {
	if r := boundRound(g.Bound); !r.IsZero() {
		return s.clockOf(r)
	}
	return g.Job.FirstStart
}

// viewPlacer hands the quota stage's kept jobs to the round's placer on
// its view of the GPUs it may hand out (Scheduler.place).
type viewPlacer struct {
	s    *Scheduler
	snap *snapshot
}

func (v viewPlacer) Name() string { return v.s.pol.place.Name() }
func (v viewPlacer) Sticky() bool { return v.s.pol.place.Sticky() }
func (v viewPlacer) Place(_ *policy.Env, order []*workload.Job) [][]int {
	return v.s.place(v.snap, order)
}

// keepRunning is a VC's placer on Kubernetes: a running gang it would move
// keeps the GPUs it holds, and a gang it would place on them waits. The
// round never moves a gang under tenancy (tenancyStage.place answers a
// held gang's own GPUs, and the round refuses to migrate a gang whose
// eviction would lose work), so the cells must bind what the gangs hold:
// a move the cells made and the round did not would leave the cells
// believing the old GPUs free. It may still preempt a gang.
type keepRunning struct{ policy.Placer }

// Place implements policy.Placer.
func (k keepRunning) Place(env *policy.Env, order []*workload.Job) [][]int {
	out := k.Placer.Place(env, order)
	var kept map[int]bool // GPUs of running gangs put back
	for i, j := range order {
		if j.GPUsHeld == nil || out[i] == nil || place.SameGPUs(out[i], j.GPUsHeld) {
			continue
		}
		out[i] = slices.Clone(j.GPUsHeld)
		if kept == nil {
			kept = map[int]bool{}
		}
		for _, x := range j.GPUsHeld {
			kept[x] = true
		}
	}
	if kept == nil {
		return out
	}
	for i, j := range order {
		if out[i] == nil || j.GPUsHeld != nil && place.SameGPUs(out[i], j.GPUsHeld) {
			continue
		}
		if slices.ContainsFunc(out[i], func(x int) bool { return kept[x] }) {
			out[i] = nil // placed on a kept gang's GPUs: waits
		}
	}
	return out
}

// isFixed reports whether the round may not evict running gang id (see
// fixed).
func (t *tenancyStage) isFixed(id int) bool {
	_, ok := t.fixed[id]
	return ok
}

// splitFixed splits gang ids the round may not evict by why: what their
// eviction would lose (bare) or a disruption budget (budget).
func (t *tenancyStage) splitFixed(ids []int) (bare, budget []int) {
	for _, id := range ids {
		if t.fixed[id] {
			budget = append(budget, id)
		} else {
			bare = append(bare, id)
		}
	}
	return bare, budget
}

// why names, under hived, what keeps a waiting gang out of the cells, for
// its wait message ("" when none of these holds: it waits for its turn
// or for GPUs to free): the cells it needs hold a gang the round may not
// evict (unblock withdrew its preemption); its node selector or affinity
// allows no node of the cells it may use; those cells cannot hold it (the
// VC's guaranteed GPUs in use or on bad hardware, a failed node, a GPU
// that pods outside the cells hold or a quarantined GPU, or too few free
// on any one node for its pods; for an opportunistic gang, the GPUs of
// its leaf type across the cluster); or its candidate nodes (of those
// cells' kinds, allowed to it, and for a guaranteed gang not bound to
// another VC) that are cordoned or not ready leave too few free GPUs on
// the others; or, for a guaranteed gang, the free GPUs it needs lie on
// nodes its VC's cells are not bound to where pods outside the cells
// hold GPUs (binding takes a node without such pods first). The text
// changes only when the reason does (Scheduler.wait sends an event per
// new text).
func (t *tenancyStage) why(j *workload.Job, snap *snapshot) string {
	if t.quota != nil && j.VC != "" && j.VCPriority != tenancy.Opportunistic {
		// Under quota: its VC's guaranteed GPUs are in use.
		if q, used := t.l.Quota(j.VC), t.quotaUsed[j.VC]; q-used < j.GPUs {
			return fmt.Sprintf("VC %s's quota is used: %d of its %d GPUs", j.VC, used, q)
		}
		return ""
	}
	if t.hived == nil || j.VC == "" {
		return ""
	}
	w := t.whyNow(snap)
	names := func(ids []int) string {
		out := make([]string, 0, len(ids))
		for _, g := range snap.Gangs {
			if g.Job != nil && slices.Contains(ids, g.Job.ID) {
				out = append(out, gangName(g.Key))
			}
		}
		slices.Sort(out)
		return strings.Join(out, ", ")
	}
	if f := t.blocked[j.ID]; len(f) > 0 {
		// Its preemption was withdrawn (unblock): it needs their cells.
		bare, budget := t.splitFixed(f)
		var of []string
		if len(bare) > 0 {
			of = append(of, names(bare)+", whose pods may not be evicted (preemptBarePods off)")
		}
		if len(budget) > 0 {
			of = append(of, names(budget)+", whose pods a disruption budget keeps")
		}
		return "it needs the cells of " + strings.Join(of, ", and of ")
	}
	if t.held[j.ID] != nil {
		return "" // it holds its cells: its victims are leaving
	}
	// A gang's pods are alike: pods of per GPUs each, none across the
	// VC's view nodes (each binds inside one node).
	per := j.PodGPUs
	if per <= 0 || j.GPUs%per != 0 {
		per = max(j.GPUs, 1)
	}
	pods := j.GPUs / per
	// The rest reads the gang only through its key: gangs of one key
	// wait for one reason this round, found once.
	opp := j.VCPriority == tenancy.Opportunistic
	allowed, picky := t.allowed[j.ID]
	k := whyKey{opp: opp, leaf: j.LeafCellType, gpus: j.GPUs, per: per, picky: picky}
	if !opp {
		k.vc, k.pinned = j.VC, j.PinnedCell // an opportunistic gang's reason reads neither
	}
	if picky {
		k.allowed = w.hashNames(allowed)
	}
	i := slices.IndexFunc(w.memo[k], func(m whyMemo) bool { return slices.Equal(m.allowed, allowed) })
	if i >= 0 {
		return w.memo[k][i].msg
	}
	msg := t.whyCells(k, snap, w, names, pods, allowed)
	w.memo[k] = append(w.memo[k], whyMemo{allowed: allowed, msg: msg})
	return msg
}

// whyCells is why's reason for the waiting gangs of key k past their
// own withdrawn preemption and held cells: what the cells and their
// candidate nodes leave them, in pods of k.per GPUs, allowed the nodes
// named (when k.picky). names names gangs by job id.
func (t *tenancyStage) whyCells(k whyKey, snap *snapshot, w *whyRound, names func([]int) string, pods int, allowed []string) string {
	// The cells it may be given: a guaranteed gang its VC's pools of the
	// leaf type or pinned cell it names; an opportunistic one any chain
	// of its leaf type across the cluster (HiveD places it on any free
	// physical GPU of a healthy node, bound to a VC or not).
	opp, per, picky := k.opp, k.per, k.picky
	scope := "VC " + k.vc + "'s cells"
	var kinds []tenancy.NodeKind
	var pools []whyPool
	if opp {
		scope = "the cells"
		if k.leaf != "" {
			scope += " of leaf type " + k.leaf
		}
		kinds = w.oppKinds(k.leaf)
	} else {
		all, ok := w.vcPools(t, k.vc)
		if !ok {
			return ""
		}
		for _, p := range all {
			if p.kind.Pinned != k.pinned || k.leaf != "" && p.kind.LeafType != k.leaf {
				continue
			}
			kinds = append(kinds, p.kind)
			pools = append(pools, p)
		}
	}
	// Its candidates (and an opportunistic gang's pools on them) read
	// only its kinds and allowed nodes: found once a round for every key
	// that differs from k in its size alone.
	ck := k
	ck.gpus, ck.per = 0, 0
	i := slices.IndexFunc(w.cands[ck], func(m candMemo) bool { return slices.Equal(m.allowed, allowed) })
	if i < 0 {
		m := candMemo{allowed: allowed, cand: w.candidates(kinds, picky, allowed)}
		if opp && len(m.cand) > 0 {
			m.pools = t.oppPools(w, snap, m.cand, kinds)
		}
		i = len(w.cands[ck])
		w.cands[ck] = append(w.cands[ck], m)
	}
	cand := w.cands[ck][i].cand // cells node indices of its kinds, allowed to it
	if picky && len(cand) == 0 {
		return t.words() + " no node of " + scope
	}
	if opp && picky {
		// Its pools are counted on the nodes it may use: said, or an
		// operator read "0 of their 16 GPUs free" beside GPUs free on
		// nodes a taint kept it off (a kwok trial).
		scope += " on the nodes " + t.words()
	}
	if opp {
		pools = w.cands[ck][i].pools
	}
	free, total, best, room := 0, 0, 0, 0 // room: the most of its pods one pool has room for
	off, quar, ext := 0, 0, 0             // GPUs no gang holds on failed nodes, quarantined, held outside the cells
	var downNodes, extNodes []string
	for _, p := range pools {
		free, total, best = free+p.free, total+p.total, max(best, p.free)
		off, quar, ext = off+p.down, quar+p.quar, ext+p.ext
		for _, n := range p.downNodes {
			if !slices.Contains(downNodes, n) {
				downNodes = append(downNodes, n)
			}
		}
		for _, n := range p.extNodes {
			if !slices.Contains(extNodes, n) {
				extNodes = append(extNodes, n)
			}
		}
		r := 0
		for _, f := range p.nodes {
			r += f / per
		}
		room = max(room, r)
	}
	if best < k.gpus || room < pods {
		msg := fmt.Sprintf("%s cannot hold it: %d of their %d GPUs free", scope, free, total)
		if off > 0 {
			slices.Sort(downNodes)
			msg += fmt.Sprintf(", %d on nodes cordoned or not ready (%s)", off, strings.Join(downNodes, ", "))
		}
		if ext > 0 {
			// Another scheduler's pods may be on many nodes: the first
			// few are named.
			slices.Sort(extNodes)
			msg += fmt.Sprintf(", %d held by pods outside the cells (%s)", ext, firstNames(extNodes, 5))
		}
		if quar > 0 {
			msg += fmt.Sprintf(", %d quarantined", quar)
		}
		switch {
		case best >= k.gpus && room == 0:
			msg += fmt.Sprintf(", but no node of them has %d free for a pod", per)
		case best >= k.gpus:
			msg += fmt.Sprintf(", but their nodes have room for %d of its %d pods of %d GPUs", room, pods, per)
		}
		var fixed []int
		for id := range t.fixed {
			if h := t.held[id]; !opp && h != nil && h.VC == k.vc && h.VCPriority != tenancy.Opportunistic {
				fixed = append(fixed, id)
			}
		}
		bare, budget := t.splitFixed(fixed)
		if len(bare) > 0 {
			msg += ", " + names(bare) + " on them may not be evicted (preemptBarePods off)"
		}
		if len(budget) > 0 {
			msg += ", " + names(budget) + " on them kept by a disruption budget"
		}
		return msg
	}
	// The candidates: for a guaranteed gang, the nodes with GPUs of its
	// kinds bound to its VC or to none (an unbound cell may bind any VC's
	// virtual cell that fits it), not those bound to another VC; an
	// opportunistic gang may use any GPU of its kinds, bound or not, and
	// a quarantined one (which no guaranteed gang may).
	var down, held []string
	up, n := 0, 0 // free GPUs on the candidate nodes that are up; candidate nodes
	// For a guaranteed gang, the free GPUs not bound to its VC on the
	// nodes that pods outside the cells hold GPUs on (held): its VC's
	// cells bind such a node only when no node without them is free
	// (the doomed-bad rule), so the gang may not count them.
	unfit := 0
	var others []string  // candidates whose GPUs of its kinds other VCs' cells are bound to
	var upNodes []string // candidates that are up
	tot, extN := 0, 0    // their GPUs open to the gang, and those pods outside the cells hold
	for _, i := range cand {
		nd := t.l.Cluster.Nodes[i]
		var gpus []int // cells GPU ids of the node's GPUs open to the gang
		ext := false   // pods outside the cells hold a GPU of its kinds there
		var unbound []bool
		other := false // a GPU of its kinds there is bound to another VC
		for _, d := range w.devices(i) {
			if !slices.Contains(kinds, d.Kind) {
				continue
			}
			g, ok := t.l.GPU(nd.Name, d.GPU)
			ext = ext || ok && g < len(t.ext) && t.ext[g]
			other = other || !opp && d.VC != "" && d.VC != k.vc
			if !opp && (d.VC != "" && d.VC != k.vc || w.quarantined(nd.Name, d.GPU)) {
				continue
			}
			if ok {
				gpus = append(gpus, g)
				unbound = append(unbound, d.VC == "")
			}
		}
		if len(gpus) == 0 {
			if other {
				others = append(others, nd.Name)
			}
			continue
		}
		n++
		if t.down[i] {
			down = append(down, nd.Name)
			continue
		}
		upNodes, tot = append(upNodes, nd.Name), tot+len(gpus)
		counted := false
		for x, g := range gpus {
			if g < len(t.ext) && t.ext[g] {
				extN++
			}
			if r := t.toSnap[g]; r >= 0 && snap.Cluster.IsFree(r) {
				up++
				if !opp && ext && unbound[x] {
					unfit++
					counted = true
				}
			}
		}
		if counted {
			held = append(held, nd.Name)
		}
	}
	if len(down) > 0 && up < k.gpus {
		return fmt.Sprintf("%d of its %d candidate nodes cordoned or not ready (%s)", len(down), n, strings.Join(down, ", "))
	}
	if picky && n == 0 && len(others) > 0 {
		// Every node it allows is bound to other VCs' cells: its VC's
		// cells, free as they may be, bind none of them.
		shown := firstNames(others, 3)
		nodes := "1 node it allows"
		if len(others) > 1 {
			nodes = fmt.Sprintf("the %d nodes it allows", len(others))
		}
		verb := "is"
		if len(others) > 1 {
			verb = "are"
		}
		return fmt.Sprintf("%s no node VC %s's cells may bind: %s (%s) %s bound to other VCs' cells", t.words(), k.vc, nodes, shown, verb)
	}
	if picky && !opp && len(down) == 0 && len(upNodes) > 0 && up < k.gpus {
		// The nodes it allows that its VC's cells may bind have too few
		// free GPUs (held by other pods, or by gangs that may not be
		// evicted for it), though its VC's cells have room elsewhere.
		shown := firstNames(upNodes, 3)
		nodes := "1 node"
		if len(upNodes) > 1 {
			nodes = fmt.Sprintf("%d nodes", len(upNodes))
		}
		msg := fmt.Sprintf("%s %s VC %s's cells may bind (%s): %d of their %d GPUs free", t.words(), nodes, k.vc, shown, up, tot)
		if extN > 0 {
			msg += fmt.Sprintf(", %d held by pods outside the cells", extN)
		}
		if len(others) > 0 {
			msg += fmt.Sprintf("; %d more it allows bound to other VCs' cells", len(others))
		}
		return msg
	}
	if len(held) > 0 && up >= k.gpus && up-unfit < k.gpus {
		return fmt.Sprintf("its candidate nodes with room (%s) hold pods outside the cells, and a cell of VC %s binds to such a node only when no node without them can serve it", firstNames(held, 5), k.vc)
	}
	return ""
}

// words is allowWords, or its words with no node tainted when the round
// did not set it.
func (t *tenancyStage) words() string {
	if t.allowWords == "" {
		return "its node selector or affinity allows"
	}
	return t.allowWords
}

// candidates is the cells node indices, ascending, of the nodes of kinds
// allowed (when picky) by the node names allowed: found through the
// names, not a scan of every node, when picky.
func (w *whyRound) candidates(kinds []tenancy.NodeKind, picky bool, allowed []string) []int {
	of := func(i int) bool {
		return slices.ContainsFunc(w.kinds[i], func(nk tenancy.NodeKind) bool { return slices.Contains(kinds, nk) })
	}
	var cand []int
	if !picky {
		for i := range w.kinds {
			if of(i) {
				cand = append(cand, i)
			}
		}
		return cand
	}
	for _, n := range allowed {
		if i, ok := w.index[n]; ok && of(i) {
			cand = append(cand, i)
		}
	}
	slices.Sort(cand)
	return slices.Compact(cand)
}

// oppKinds is the node kinds an opportunistic gang of leaf type leaf
// ("": any) may be given: every chain's of that leaf type, pinned cells
// aside. Found once per layout.
func (w *whyRound) oppKinds(leaf string) []tenancy.NodeKind {
	if kinds, ok := w.opp[leaf]; ok {
		return kinds
	}
	var kinds []tenancy.NodeKind
	for _, ks := range w.kinds {
		for _, nk := range ks {
			if nk.Pinned == "" && (leaf == "" || nk.LeafType == leaf) && !slices.Contains(kinds, nk) {
				kinds = append(kinds, nk)
			}
		}
	}
	w.opp[leaf] = kinds
	return kinds
}

// whyRound is what why reads of the cells, once a round: each VC's GPU
// pools with their leaves free of guaranteed groups, the kinds of each
// cells node, each node's GPUs with the VC they are bound to, and the
// quarantined GPUs.
type whyRound struct {
	snap  *snapshot
	l     *tenant.Layout
	c     *tenancy.Scheduler
	pools map[string][]whyPool
	kinds [][]tenancy.NodeKind   // by cells node index
	devs  [][]tenancy.NodeDevice // by cells node index, read when first asked for (devices)
	read  []bool                 // devs[i] read this round
	sdevs [][]whyDev             // by cells node index, for the layout l (kindsOf)
	quar  map[tenancy.QuarantinedDevice]bool
	qread bool // quar read this round
	// held: the devices a gang of the cells holds on the nodes told bad
	// (taken), read this round when tread.
	held  map[tenancy.Device]bool
	tread bool
	// heldOn: what the pods bound to a node hold there
	// (state.Store.HeldOn), set each round; outs: by cells node index,
	// the devices of a node told bad that pods outside the cells hold
	// (outside), read this round when first asked.
	heldOn func(node string) (named []int, counted int)
	outs   map[int][]bool
	down   map[int]bool // the stage's: cells node index -> told bad
	// memo: the reasons found this round, by the key of the gangs they
	// are for, one per allowed node list (a key holds its hash).
	memo map[whyKey][]whyMemo
	// cands: the candidates found this round, by the key of the gangs
	// they are for less its size (gpus, per: 0), one per allowed node
	// list.
	cands map[whyKey][]candMemo
	// index: each cells node's index by name; opp: the node kinds an
	// opportunistic gang may be given, by leaf type (oppKinds); both for
	// the layout l.
	index map[string]int
	opp   map[string][]tenancy.NodeKind
	seed  maphash.Seed // of the allowed lists' hashes
}

// whyKey is what why's reason reads of a waiting gang, past its own
// withdrawn preemption and held cells (the rest is the round's): its VC
// and pinned cell (a guaranteed gang's; "" for an opportunistic one,
// whose reason reads neither), whether it is opportunistic, its leaf
// type, its GPUs in pods of per GPUs each, and the nodes its selector
// and affinity allow (picky: not every node; allowed: their names'
// hash).
type whyKey struct {
	vc, pinned, leaf string
	opp, picky       bool
	gpus, per        int
	allowed          uint64
}

// whyMemo is a reason found this round for the gangs of a key allowed
// the nodes named.
type whyMemo struct {
	allowed []string
	msg     string
}

// candMemo is the candidate nodes found this round for the gangs of a
// key (less its size) allowed the nodes named, and an opportunistic
// gang's pools on them.
type candMemo struct {
	allowed []string
	cand    []int
	pools   []whyPool
}

// hashNames is the hash of the node names, in their order.
func (w *whyRound) hashNames(names []string) uint64 {
	var h maphash.Hash
	h.SetSeed(w.seed)
	for _, n := range names {
		h.WriteString(n)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// whyPool is GPUs of one kind a gang may be given: one of a VC's pools
// (for a guaranteed gang) or one leaf type's GPUs across the cluster
// (for an opportunistic one). Its GPUs free (of guaranteed groups in a
// VC's pool, of any pod for an opportunistic gang) that a gang may use,
// and in all; those no group holds but no gang may use: on nodes
// cordoned or not ready (down, on downNodes), held by pods outside the
// cells (ext, on extNodes: another scheduler's, or a gang running outside
// them), or quarantined (quar; a guaranteed gang's only); and the free
// ones of each view node or node.
type whyPool struct {
	kind        tenancy.NodeKind
	free, total int
	down, quar  int
	downNodes   []string
	ext         int      // held by pods outside the cells (syncExternal)
	extNodes    []string // the nodes of those
	nodes       []int
}

// vcPools is VC vc's GPU pools this round (false for a VC the cells do
// not have). A leaf is free when no guaranteed group holds it and a
// gang may be placed on it: not on bad hardware (a view node bound to a
// failed node, or a quarantined device), which the round never offers a
// guaranteed gang (tenant.HiveD places none on a view node that is not
// Healthy, and hides a leaf OnBad from its VC's placer).
func (w *whyRound) vcPools(t *tenancyStage, vc string) ([]whyPool, bool) {
	if pools, ok := w.pools[vc]; ok {
		return pools, true
	}
	ps, err := w.c.Pools(vc)
	if err != nil {
		return nil, false
	}
	var pools []whyPool
	// lost: on each failed node, by kind, the devices bound to vc that
	// pods outside the cells hold (outside), not yet matched to a leaf no
	// guaranteed group holds: the VC could not use them were it back.
	type nodeKind struct {
		node string
		kind tenancy.NodeKind
	}
	lost := map[nodeKind]int{}
	for _, p := range ps {
		if !p.GPU {
			continue
		}
		sum := whyPool{kind: tenancy.NodeKind{LeafType: p.LeafType, Pinned: p.Pinned}}
		for _, n := range p.Nodes {
			healthy, node := n.Healthy(), n.Node()
			failed := !healthy && t.nodeDown(node)
			nk := nodeKind{node, sum.kind}
			if _, seen := lost[nk]; failed && !seen {
				if i, ok := t.l.Node(node); ok {
					out := w.outside(i)
					for _, d := range w.devices(i) {
						if d.VC == vc && d.Kind == sum.kind && d.GPU < len(out) && out[d.GPU] {
							lost[nk]++
						}
					}
				}
			}
			free := 0
			for _, v := range n.Leaves {
				sum.total++
				switch {
				case v.Busy():
				case failed && lost[nk] > 0:
					lost[nk]-- // a pod outside the cells holds its device
				case failed:
					sum.down++
					if !slices.Contains(sum.downNodes, node) {
						sum.downNodes = append(sum.downNodes, node)
					}
				case v.External():
					sum.ext++
					if !slices.Contains(sum.extNodes, node) {
						sum.extNodes = append(sum.extNodes, node)
					}
				case !healthy || v.OnBad():
					sum.quar++
				default:
					free++
				}
			}
			sum.free += free
			sum.nodes = append(sum.nodes, free)
		}
		pools = append(pools, sum)
	}
	w.pools[vc] = pools
	return pools, true
}

// oppPools is an opportunistic gang's GPUs on its candidate nodes cand,
// of kinds, one pool per leaf type (HiveD places a gang on one chain): a
// GPU is free when its node is up and the round sees it free; on a node
// cordoned or not ready (which the round does not see) a GPU no gang of
// the cells holds is down, as a guaranteed gang's pools count the GPUs
// no guaranteed gang holds there: those it could use were the node back.
func (t *tenancyStage) oppPools(w *whyRound, snap *snapshot, cand []int, kinds []tenancy.NodeKind) []whyPool {
	var pools []whyPool
	var on []int // by pool index: free GPUs on the node, -1 when none of the pool's
	for _, i := range cand {
		nd := t.l.Cluster.Nodes[i]
		for k := range on {
			on[k] = -1
		}
		for _, d := range w.kindsOf(i) {
			if !slices.Contains(kinds, d.kind) {
				continue
			}
			k := slices.IndexFunc(pools, func(p whyPool) bool { return p.kind.LeafType == d.kind.LeafType })
			if k < 0 {
				k = len(pools)
				pools = append(pools, whyPool{kind: tenancy.NodeKind{LeafType: d.kind.LeafType}})
				on = append(on, -1)
			}
			p := &pools[k]
			p.total++
			on[k] = max(on[k], 0) // a node of the pool, free or not
			if t.down[i] {
				if out := w.outside(i); !w.taken(nd.Name, d.gpu) && (d.gpu >= len(out) || !out[d.gpu]) {
					p.down++
					if !slices.Contains(p.downNodes, nd.Name) {
						p.downNodes = append(p.downNodes, nd.Name)
					}
				}
				continue
			}
			if d.id >= 0 {
				if r := t.toSnap[d.id]; r >= 0 && snap.Cluster.IsFree(r) {
					p.free++
					on[k]++
				} else if d.id < len(t.ext) && t.ext[d.id] {
					p.ext++
					if !slices.Contains(p.extNodes, nd.Name) {
						p.extNodes = append(p.extNodes, nd.Name)
					}
				}
			}
		}
		for k, f := range on {
			if f >= 0 {
				pools[k].nodes = append(pools[k].nodes, f)
			}
		}
	}
	return pools
}

// whyDev is a device of a cells node as the layout has it: its kind, its
// index in the node, and its cells GPU id (-1: none).
type whyDev struct {
	kind    tenancy.NodeKind
	gpu, id int
}

// kindsOf is cells node i's devices as the layout has it, read when first
// asked for and kept for the layout: unlike the VC a device is bound to
// (devices), its kind and id do not change from round to round.
func (w *whyRound) kindsOf(i int) []whyDev {
	if w.sdevs[i] == nil {
		nd := w.l.Cluster.Nodes[i]
		ds := w.devices(i)
		out := make([]whyDev, len(ds))
		for k, d := range ds {
			out[k] = whyDev{kind: d.Kind, gpu: d.GPU, id: -1}
			if g, ok := w.l.GPU(nd.Name, d.GPU); ok {
				out[k].id = g
			}
		}
		w.sdevs[i] = out
	}
	return w.sdevs[i]
}

// nodeDown reports whether the cells node named is told bad this round
// (cordoned, not ready, gone, or with another GPU count). A GPU node is
// found through its first device's id, not a scan of every node: why
// asks once per view node of a VC's pools, and a scan made that
// quadratic in the nodes of a large cluster.
func (t *tenancyStage) nodeDown(name string) bool {
	if i, ok := t.l.Node(name); ok {
		return t.down[i]
	}
	for i, n := range t.l.Cluster.Nodes {
		if n.Name == name {
			return t.down[i]
		}
	}
	return false
}

// quarantined reports whether device gpu of node is quarantined in the
// cells this round.
func (w *whyRound) quarantined(node string, gpu int) bool {
	if !w.qread {
		clear(w.quar)
		if w.c.NumQuarantined() > 0 {
			if w.quar == nil {
				w.quar = map[tenancy.QuarantinedDevice]bool{}
			}
			for _, q := range w.c.Quarantined() {
				w.quar[q] = true
			}
		}
		w.qread = true
	}
	return w.quar[tenancy.QuarantinedDevice{Node: node, GPU: gpu}]
}

// taken reports whether a gang of the cells (a group, guaranteed or
// opportunistic, running or preempting) holds device gpu of node, a node
// told bad this round: the round does not see what runs there. Read once
// a round, when first asked.
func (w *whyRound) taken(node string, gpu int) bool {
	if !w.tread {
		clear(w.held)
		for _, name := range w.c.Groups() {
			pods, _ := w.c.Placement(name)
			for _, p := range pods {
				if i, ok := w.l.Node(p.Node); !ok || !w.down[i] {
					continue
				}
				if w.held == nil {
					w.held = map[tenancy.Device]bool{}
				}
				for _, g := range p.GPUs {
					w.held[tenancy.Device{Node: p.Node, GPU: g}] = true
				}
			}
		}
		w.tread = true
	}
	return w.held[tenancy.Device{Node: node, GPU: gpu}]
}

// devices is cells node i's GPUs and the VC each is bound to this round.
func (w *whyRound) devices(i int) []tenancy.NodeDevice {
	if !w.read[i] {
		w.devs[i], w.read[i] = w.c.NodeDevices(w.l.Cluster.Nodes[i].Name), true
	}
	return w.devs[i]
}

// whyNow is the round's whyRound, read afresh for a new snapshot (the
// cells' node kinds only when the layout changed).
func (t *tenancyStage) whyNow(snap *snapshot) *whyRound {
	w := &t.whyR
	if w.snap == snap && w.l == t.l {
		return w
	}
	c := t.hived.Cells()
	w.snap, w.c, w.pools = snap, c, map[string][]whyPool{}
	if w.memo == nil {
		w.memo, w.cands, w.seed = map[whyKey][]whyMemo{}, map[whyKey][]candMemo{}, maphash.MakeSeed()
	}
	clear(w.memo)
	clear(w.cands)
	if w.l != t.l {
		w.l = t.l
		w.kinds = make([][]tenancy.NodeKind, len(t.l.Cluster.Nodes))
		w.index, w.opp = make(map[string]int, len(t.l.Cluster.Nodes)), map[string][]tenancy.NodeKind{}
		for i, n := range t.l.Cluster.Nodes {
			w.kinds[i] = c.NodeKinds(n.Name)
			w.index[n.Name] = i
		}
		w.devs, w.read = make([][]tenancy.NodeDevice, len(t.l.Cluster.Nodes)), make([]bool, len(t.l.Cluster.Nodes))
		w.sdevs = make([][]whyDev, len(t.l.Cluster.Nodes))
	}
	clear(w.read)
	w.qread, w.tread, w.down = false, false, t.down
	clear(w.outs)
	return w
}

// outside is, for cells node i (one told bad this round), which of its
// devices, by index, pods hold that no gang of the cells holds (another
// scheduler's pods, a gang running outside the cells): a gang could not
// use them were the node back, as the round would see them taken. Pods
// that hold by count take the highest devices no pod names and no gang
// of the cells holds, as the Store gives them on a node that is up.
func (w *whyRound) outside(i int) []bool {
	if o, ok := w.outs[i]; ok {
		return o
	}
	nd := w.l.Cluster.Nodes[i]
	n := 0
	for _, d := range w.kindsOf(i) {
		n = max(n, d.gpu+1)
	}
	out := make([]bool, n)
	if w.heldOn != nil {
		named, counted := w.heldOn(nd.Name)
		for _, x := range named {
			if x >= 0 && x < n {
				out[x] = true
			}
		}
		for x := n - 1; x >= 0 && counted > 0; x-- {
			if !out[x] && !w.taken(nd.Name, x) {
				out[x] = true
				counted--
			}
		}
		for x := range out {
			out[x] = out[x] && !w.taken(nd.Name, x)
		}
	}
	if w.outs == nil {
		w.outs = map[int][]bool{}
	}
	w.outs[i] = out
	return out
}
