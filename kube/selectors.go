package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/go-logr/logr"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/backfill"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
)

// selectorGate keeps a round's answer off the nodes a gang's pods may not
// run on: their node selector and required node affinity, matched as
// kube-scheduler matches them. The placers know nothing of labels; a pod
// bound where its selector does not match is refused by the kubelet
// (NodeAffinity), which fails it, and a bare pod is then lost. Under
// hived the cells already bind a gang only to the nodes it allows (see
// tenancyStage.allow), and the gate finds nothing to change.
//
// A gang placed on a node it does not allow is taken out of the answer.
// A running one stays where it runs when no other gang was given its GPUs
// (kube-scheduler's affinity is IgnoredDuringExecution: a gang that runs
// on a node relabelled since is not moved for it either). Without tenancy
// and Themis, a gang left without GPUs is then placed alone, by a placer
// of the round's placement, on the GPUs the answer leaves free on the
// nodes it allows: it waits only when they cannot hold it, and it takes
// nothing a gang ahead of it was given. There too a running gang moved
// off its nodes keeps its GPUs from the gangs behind it given them, a
// running gang behind a waiting one that was moved onto the nodes that
// one allows goes back to its own GPUs when they are free, and what the
// gate took back is offered, in order, to the gangs the answer left
// without GPUs (not under backfill).
type selectorGate struct {
	memo  map[string]map[string]bool // allowKey -> node name -> allowed
	gen   uint64                     // the nodes' label generation memo is for
	place policy.Placer              // the round's placement, unwrapped, built once
	why   map[int]string             // this round's reasons, by job id
	// free is what each selector allows of the cluster this round's wait
	// reasons read (selectorWhy), by allowsKeyed's key; emptied before
	// them.
	free map[string]allowedFree
	keys podKeys
}

// allows is a gang's test of a node name, nil when none of its pods
// names a node selector or required node affinity. Pods of one gang that
// name different ones (nothing forbids it without tenancy) allow the
// nodes all of them allow.
func (s *Scheduler) allows(g *gang) func(node string) bool {
	f, _ := s.allowsKeyed(g)
	return f
}

// allowsKeyed is allows with a key that is the same for gangs whose pods
// name the same selectors and affinities.
func (s *Scheduler) allowsKeyed(g *gang) (func(node string) bool, string) {
	var keys []string
	var maps []map[string]bool
	tainted := s.state.TaintedNodes() > 0
	for _, ps := range [2][]*corev1.Pod{g.Pending, g.Bound} {
		for _, p := range ps {
			if !constrained(p, tainted) {
				continue // allows every node
			}
			if key, _ := s.allowKeyOf(p); !slices.Contains(keys, key) {
				keys, maps = append(keys, key), append(maps, s.allowedBy(p))
			}
		}
	}
	switch len(maps) {
	case 0:
		return nil, ""
	case 1:
		m := maps[0]
		return func(node string) bool { return m[node] }, keys[0]
	}
	slices.Sort(keys)
	return func(node string) bool {
		for _, m := range maps {
			if !m[node] {
				return false
			}
		}
		return true
	}, strings.Join(keys, "\x00")
}

// allowedBy is the set of node names pod p allows (podAllows), kept per
// what decides it while the nodes' labels and taints stay
// (state.Store.NodeLabelsGeneration).
func (s *Scheduler) allowedBy(p *corev1.Pod) map[string]bool {
	sg := &s.sel
	if gen := s.state.NodeLabelsGeneration(); sg.memo == nil || sg.gen != gen {
		sg.memo, sg.gen = map[string]map[string]bool{}, gen
	}
	key, ok := s.allowKeyOf(p)
	if m := sg.memo[key]; m != nil && ok {
		return m
	}
	allows := podAllows(p)
	m := map[string]bool{}
	for nd := range s.state.Nodes() {
		if allows(nd) {
			m[nd.Name] = true
		}
	}
	if ok {
		sg.memo[key] = m
	}
	return m
}

// podKeys remembers each pod object's allowKey for this round and the
// last: with a node tainted every gang's pods are keyed, each round, and
// a key is a JSON encoding (about a microsecond), while a pod object is
// replaced, never changed, when the pod changes.
type podKeys struct {
	cur, prev map[*corev1.Pod]string
}

// round starts a round's keys: the last round's are kept for this one,
// those of pods no longer asked about go.
func (k *podKeys) round() {
	k.prev, k.cur = k.cur, k.prev
	clear(k.cur)
}

// allowKeyOf is allowKey(p), remembered (see podKeys).
func (s *Scheduler) allowKeyOf(p *corev1.Pod) (string, bool) {
	k := &s.sel.keys
	if key, ok := k.cur[p]; ok {
		return key, true
	}
	key, ok := k.prev[p]
	if !ok {
		if key, ok = allowKey(p); !ok {
			return key, false
		}
	}
	if k.cur == nil {
		k.cur = map[*corev1.Pod]string{}
	}
	k.cur[p] = key
	return key, true
}

// constrained reports whether pod p may be kept off some node: it names
// a node selector or required node affinity, or some node is tainted
// (tainted) and p may not tolerate it.
func constrained(p *corev1.Pod, tainted bool) bool {
	return tainted || len(p.Spec.NodeSelector) > 0 || nodeAffinity(p) != nil
}

// podAllows is pod p's test of a node, as kube-scheduler's NodeAffinity
// and TaintToleration filters judge it (their matching, from
// k8s.io/component-helpers): the node's labels match p's node selector
// and required node affinity, and p tolerates each of its taints that
// keeps pods off (state.KeepsOff; nvidia.com/gpu's is not one). A pod
// bound where it does not tolerate a NoSchedule taint would run, but the
// operator put the taint there to keep it off; a NoExecute one would
// have it evicted.
func podAllows(p *corev1.Pod) func(*corev1.Node) bool { return podAllowsBy(p, keepsOff) }

// podAllowsBy is podAllows reading only the taints read says yes to.
func podAllowsBy(p *corev1.Pod, read func(*corev1.Taint) bool) func(*corev1.Node) bool {
	aff := nodeaffinity.GetRequiredNodeAffinity(p)
	tol := p.Spec.Tolerations
	return func(n *corev1.Node) bool {
		if ok, err := aff.Match(n); err != nil || !ok {
			return false
		}
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, tol, read, false)
		return !untolerated
	}
}

// notAllowedOn says why pod p may not run on node n (podAllows), or "".
func notAllowedOn(p *corev1.Pod, n *corev1.Node) string {
	if n == nil {
		return ""
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
		return "is not allowed on node " + n.Name + " by its node selector or affinity"
	}
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, p.Spec.Tolerations, keepsOff, false); untolerated {
		return "does not tolerate node " + n.Name + "'s taint " + t.Key + ":" + string(t.Effect)
	}
	return ""
}

func keepsOff(t *corev1.Taint) bool { return state.KeepsOff(*t) }

// allOn reports whether every GPU of gpus is on a node allowed says yes to.
func allOn(cl *cluster.Cluster, gpus []int, allowed func(string) bool) bool {
	for _, x := range gpus {
		if !allowed(cl.Nodes[cl.NodeOf(x)].Name) {
			return false
		}
	}
	return true
}

// honorSelectors applies the gate (see selectorGate) to the round's
// answer alloc for order, in place.
func (s *Scheduler) honorSelectors(snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang, alloc [][]int) {
	clear(s.sel.why)
	cl := snap.Cluster
	var off []int // positions answered onto nodes they do not allow
	var tests []func(string) bool
	for i, j := range order {
		if alloc[i] == nil || j.GPUsHeld != nil && slices.Equal(alloc[i], j.GPUsHeld) {
			continue // nothing given, or it stays where it runs
		}
		g := byJob[j]
		if g == nil {
			continue
		}
		ok := s.allows(g)
		if ok == nil || allOn(cl, alloc[i], ok) {
			continue
		}
		off = append(off, i)
		tests = append(tests, ok)
		alloc[i] = nil
	}
	if len(off) == 0 {
		return
	}
	used := make([]bool, cl.Size())
	for _, a := range alloc {
		for _, x := range a {
			used[x] = true
		}
	}
	inOrder := make(map[int]bool, len(order))
	for _, j := range order {
		inOrder[j.ID] = true
	}
	if s.sel.why == nil {
		s.sel.why = map[int]string{}
	}
	alone := s.ten == nil && s.th == nil
	// taken: the gangs the gate took GPUs back from for a running gang
	// ahead of them, to be placed again on what is left (below).
	taken := map[int]bool{}
	for k, i := range off {
		j, ok := order[i], tests[k]
		if h := j.GPUsHeld; h != nil && allOn(cl, h, ok) && alone {
			// A running gang the placer moved off the nodes it allows
			// keeps its GPUs from the gangs behind it that were given
			// them (a placer that is not sticky re-plans the round, and
			// a later gang given a running one's GPUs had it preempted,
			// under FIFO too, for a gang of lower rank).
			behind := true
			var on []int
			for p := range order {
				if p != i && alloc[p] != nil && slices.ContainsFunc(alloc[p], func(x int) bool { return slices.Contains(h, x) }) {
					behind = behind && p > i
					on = append(on, p)
				}
			}
			if behind {
				for _, p := range on {
					for _, x := range alloc[p] {
						used[x] = false
					}
					alloc[p] = nil
					taken[p] = true
				}
			}
		}
		if h := j.GPUsHeld; h != nil && allOn(cl, h, ok) && !slices.ContainsFunc(h, func(x int) bool { return used[x] }) {
			alloc[i] = h // it stays: nothing else was given its GPUs
		} else if alone {
			free := func(x int) bool {
				o := cl.Owner(x)
				return !used[x] && (o == cluster.Free || inOrder[o]) && ok(cl.Nodes[cl.NodeOf(x)].Name)
			}
			alloc[i] = s.placeAlone(cl, j, free)
			if alloc[i] == nil && j.GPUsHeld == nil {
				// A running gang behind it that the placer moved onto the
				// nodes it allows (a placer that is not sticky re-plans
				// the round, and gave it this gang's place) goes back to
				// its own GPUs when nothing else was given them, and this
				// gang is placed again on what it leaves.
				back := false
				allowed := func(x int) bool { return ok(cl.Nodes[cl.NodeOf(x)].Name) }
				for p := i + 1; p < len(order); p++ {
					h := order[p].GPUsHeld
					if h == nil || alloc[p] == nil || slices.Equal(alloc[p], h) || !slices.ContainsFunc(alloc[p], allowed) ||
						slices.ContainsFunc(h, func(x int) bool { return used[x] }) {
						continue
					}
					if okp := s.allows(byJob[order[p]]); okp != nil && !allOn(cl, h, okp) {
						continue
					}
					for _, x := range alloc[p] {
						used[x] = false
					}
					alloc[p] = h
					for _, x := range h {
						used[x] = true
					}
					back = true
				}
				if back {
					alloc[i] = s.placeAlone(cl, j, free)
				}
			}
		}
		if alloc[i] == nil {
			s.sel.why[j.ID] = s.allowWords() + " none of the GPUs the placement chose, and the GPUs left free on the nodes it allows cannot hold it"
			continue
		}
		for _, x := range alloc[i] {
			used[x] = true
		}
	}
	if !alone || backfill.Unwrap(s.pol.place) != nil {
		return // backfill's reservations read the answer as it was
	}
	// What the gate took back may serve the gangs the answer left
	// without GPUs for want of it: each, in order, is placed alone on
	// the GPUs left free on the nodes it allows (a running gang that
	// lost its GPUs to one ahead of it stays out: the answer preempted
	// it). Before, such a gang waited with GPUs free that it may use,
	// for as long as the gang given them, and unable to use them, waited.
	failed := map[int]bool{}
	for _, i := range off {
		failed[i] = alloc[i] == nil
	}
	// A placement alone scans every GPU, and a backlog may hold thousands
	// of gangs: the GPUs left only shrink as this goes, so a gang asking
	// more than are left, or of the shape (GPUs, pod size, allowed nodes)
	// of one that found no room, is not tried.
	left := 0
	for x := range cl.Size() {
		if !used[x] && cl.Owner(x) == cluster.Free {
			left++
		}
	}
	type shape struct {
		gpus, pod int
		allows    string
	}
	noRoom := map[shape]bool{}
	for i, j := range order {
		if alloc[i] != nil || failed[i] || j.GPUsHeld != nil && !taken[i] || byJob[j] == nil {
			continue
		}
		ok, key := s.allowsKeyed(byJob[j])
		if h := j.GPUsHeld; h != nil && (ok == nil || allOn(cl, h, ok)) && !slices.ContainsFunc(h, func(x int) bool { return used[x] }) {
			alloc[i] = h // taken back for a gang ahead of it, and its own GPUs free
		} else {
			sh := shape{j.GPUs, j.PodGPUs, key}
			if j.GPUs > left || noRoom[sh] {
				continue
			}
			alloc[i] = s.placeAlone(cl, j, func(x int) bool {
				return !used[x] && cl.Owner(x) == cluster.Free && (ok == nil || ok(cl.Nodes[cl.NodeOf(x)].Name))
			})
			if alloc[i] == nil {
				noRoom[sh] = true
			}
		}
		for _, x := range alloc[i] {
			if cl.Owner(x) == cluster.Free {
				left--
			}
			used[x] = true
		}
	}
}

// placeAlone places job j by itself on the GPUs of cl that free says yes
// to, through a placer of the round's placement (made once, through the
// policy layer's registry, without backfill or another wrapper the round's
// own placer carries: this is one gang on leftovers, not a round); nil
// when they cannot hold it or its pods do not fit whole on a node.
func (s *Scheduler) placeAlone(cl *cluster.Cluster, j *workload.Job, free func(int) bool) []int {
	if s.sel.place == nil {
		p, err := s.cfg.newPlacer()
		if err != nil {
			return nil // the config was validated: never
		}
		s.sel.place = p
	}
	var sizes, toReal []int
	var names []string
	for _, nd := range cl.Nodes {
		k := 0
		for _, x := range nd.GPUs {
			if free(x) {
				toReal = append(toReal, x)
				k++
			}
		}
		if k > 0 {
			sizes, names = append(sizes, k), append(names, nd.Name)
		}
	}
	if len(toReal) < j.GPUs {
		return nil
	}
	view, err := cluster.NewSized(sizes)
	if err != nil {
		return nil
	}
	for i := range view.Nodes {
		view.Nodes[i].Name = names[i]
	}
	env := policy.Env{Cluster: view, Rand: s.rand.Rand, Locality: s.rand.Locality, Scores: s.viewScores(toReal)}
	held := j.GPUsHeld
	j.GPUsHeld = nil // placed afresh on the view
	defer func() { j.GPUsHeld = held }()
	got := s.sel.place.Place(&env, []*workload.Job{j})
	if len(got) != 1 || len(got[0]) != j.GPUs || j.PodGPUs > 0 && !place.PodsFit(view, got[0], j.PodGPUs) {
		return nil
	}
	out := make([]int, len(got[0]))
	for k, v := range got[0] {
		out[k] = toReal[v]
	}
	slices.Sort(out)
	return out
}

// selectorWhy is why waiting gang g (job j) may wait for its node
// selector or required node affinity, "; "-led, or "": the gate's
// reason this round, and, outside hived (whose cells count what the gang
// may use themselves), how much of what it allows is free, since the
// round's "N GPUs free" counts GPUs it may not use: "its node selector or
// affinity allows 2 nodes (n0, n1): 3 of their 8 GPUs free" (after the
// gate's reason ": it allows ..."). A gang whose pods fit on no node has
// its own reason, which this does not follow.
func (s *Scheduler) selectorWhy(j *workload.Job, g *gang, cl *cluster.Cluster) string {
	out := ""
	if w := s.sel.why[j.ID]; w != "" {
		out = "; " + w
	}
	if g == nil || cl == nil || s.ten != nil && s.ten.hived != nil {
		return out
	}
	ok, key := s.allowsKeyed(g)
	if ok == nil {
		return out
	}
	if s.sel.free == nil {
		s.sel.free = map[string]allowedFree{}
	}
	f, seen := s.sel.free[key]
	if !seen {
		for _, nd := range cl.Nodes {
			if !ok(nd.Name) {
				continue
			}
			if len(f.names) < 3 {
				f.names = append(f.names, nd.Name)
			}
			f.nodes++
			k := 0
			for _, x := range nd.GPUs {
				if cl.Owner(x) == cluster.Free {
					k++
				}
			}
			f.total += len(nd.GPUs)
			f.free += k
		}
		s.sel.free[key] = f
	}
	if out == "" {
		out = "; " + s.allowWords()
	} else {
		out += ": it allows" // after the gate's reason, which named them
	}
	if f.nodes == 0 {
		if down := s.allowedOut(g, cl); down != "" {
			return out + " no node with GPUs in the round (" + down + " cordoned or not ready)"
		}
		return out + " no node with GPUs"
	}
	names := strings.Join(f.names, ", ")
	if f.nodes > len(f.names) {
		names += fmt.Sprintf(" and %d more", f.nodes-len(f.names))
	}
	nodes := "nodes"
	if f.nodes == 1 {
		nodes = "node"
	}
	out += fmt.Sprintf(" %d %s (%s): %d of their %d GPUs free", f.nodes, nodes, names, f.free, f.total)
	return out
}

// allowedOut names the nodes with GPUs out of the round (cl: cordoned,
// not ready, or under a node lifecycle taint) that gang g's pods would be allowed
// on were they back, at most three, then "and N more"; "" when none. The
// lifecycle's own taints are not read here: no pod tolerates them for
// its scheduling, and they are what takes the node out.
func (s *Scheduler) allowedOut(g *gang, cl *cluster.Cluster) string {
	in := make(map[string]bool, len(cl.Nodes))
	for _, nd := range cl.Nodes {
		in[nd.Name] = true
	}
	var tests []func(*corev1.Node) bool
	for _, ps := range [2][]*corev1.Pod{g.Pending, g.Bound} {
		for _, p := range ps {
			tests = append(tests, podAllowsBy(p, func(t *corev1.Taint) bool { return keepsOff(t) && !state.SystemTaint(t.Key) }))
		}
	}
	var names []string
	for nd := range s.state.Nodes() {
		if q, has := nd.Status.Allocatable[ResourceGPU]; !has || q.Value() <= 0 || in[nd.Name] {
			continue // no GPUs, or in the round
		}
		if !slices.ContainsFunc(tests, func(ok func(*corev1.Node) bool) bool { return !ok(nd) }) {
			names = append(names, nd.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return firstNames(names, 3)
}

// allowWords names what keeps a gang off nodes in its wait reasons:
// "its node selector or affinity allows", and "its node selector,
// affinity and tolerations allow" while some node is tainted.
func (s *Scheduler) allowWords() string {
	if s.state.TaintedNodes() > 0 {
		return "its node selector, affinity and tolerations allow"
	}
	return "its node selector or affinity allows"
}

// allowedFree is what a selector allows of a round's cluster: how many
// nodes (the first names), their GPUs and those free.
type allowedFree struct {
	names              []string
	nodes, total, free int
}
