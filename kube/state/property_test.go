package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/workload"
)

// world is what the apiserver holds in the property test: nodes, our
// pods, other schedulers' pods, Jobs' parallelism, and the binds and
// evictions assumed (the round's decisions, part of the state's input).
type world struct {
	rng     *rand.Rand
	nodes   map[string]*corev1.Node
	pods    map[string]*corev1.Pod // ours, by namespace/name
	foreign map[string]*corev1.Pod
	jobs    map[string]int // Job namespace/name -> parallelism
	assumed map[string]assumed
	uid     int
	gangs   int
}

type assumed struct {
	node   string // "": no bind assumed
	annots map[string]string
	evict  bool
	uid    k8stypes.UID
}

func (w *world) reader() *podspec.Reader {
	return &podspec.Reader{Models: workload.DefaultModels(), Job: func(p *corev1.Pod) (string, int) {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.Kind != "Job" {
			return "", 0
		}
		par, ok := w.jobs[p.Namespace+"/"+ref.Name]
		if !ok {
			return "", 0
		}
		return p.Namespace + "/job:" + ref.Name, par
	}}
}

// fresh is a Store built from the world as it is now, in one Sync.
func (w *world) fresh() *Store {
	st := New(Config{SchedulerName: "pal", Reader: w.reader()})
	for _, n := range w.nodes {
		st.OnNode(n)
	}
	for _, p := range w.pods {
		st.OnPod(p)
		if p.Spec.NodeName != "" {
			st.OnBoundPod(p) // the bound-pod informer sees ours too: ignored
		}
	}
	for _, p := range w.foreign {
		st.OnBoundPod(p)
	}
	st.Sync() // the pods are known before a bind can be laid over them
	for _, k := range slices.Sorted(maps.Keys(w.assumed)) {
		a := w.assumed[k]
		if p := w.pods[k]; p != nil && p.UID == a.uid {
			if a.node != "" {
				st.Assume(p, a.node, a.annots)
			}
			if a.evict {
				st.AssumeEvicted(p, time.Unix(5000, 0))
			}
		}
	}
	st.Sync()
	return st
}

// step changes the world at random and tells st what changed, as the
// informers and the round would.
func (w *world) step(st *Store) string {
	r := w.rng
	names := func(m map[string]*corev1.Pod) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	nodeNames := make([]string, 0, len(w.nodes))
	for k := range w.nodes {
		nodeNames = append(nodeNames, k)
	}
	slices.Sort(nodeNames)
	pick := func(list []string) string {
		if len(list) == 0 {
			return ""
		}
		return list[r.IntN(len(list))]
	}
	ours := names(w.pods)
	switch op := r.IntN(100); {
	case op < 8: // a node comes, changes size, or is cordoned
		name := fmt.Sprintf("n%d", r.IntN(6))
		n := node(name, []int{0, 1, 2, 4, 8}[r.IntN(5)])
		n.Spec.Unschedulable = r.IntN(6) == 0
		if r.IntN(8) == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}
		}
		w.nodes[name] = n
		st.OnNode(n)
		return "node " + name
	case op < 11: // a node goes
		name := pick(nodeNames)
		if name == "" {
			return "no node to delete"
		}
		delete(w.nodes, name)
		st.OnNodeDeleted(name)
		return "delete node " + name
	case op < 35: // pods of ours are created: one alone, a whole gang, or one joining a gang
		n, ann := 1, map[string]string{}
		switch r.IntN(8) {
		case 0, 1, 2:
			w.gangs++
			size := 2 + r.IntN(3)
			n = size - r.IntN(4)/3 // now and then one short
			ann = map[string]string{podspec.AnnGang: fmt.Sprintf("g%d", w.gangs), podspec.AnnGangSize: strconv.Itoa(size)}
		case 3:
			ann = map[string]string{podspec.AnnGang: fmt.Sprintf("g%d", r.IntN(w.gangs+1)), podspec.AnnGangSize: strconv.Itoa(2 + r.IntN(3))}
		case 4:
			ann[podspec.AnnGangSize] = "2" // without pal.io/gang: bad
		}
		if r.IntN(3) == 0 {
			ann[podspec.AnnModel] = []string{"BERT", "resnet50", "nosuch"}[r.IntN(3)]
		}
		gpus := []int{1, 1, 2, 4, 0, 9}[r.IntN(6)]
		var job string
		if r.IntN(3) == 0 {
			job = fmt.Sprintf("j%d", r.IntN(2))
		}
		var made []string
		for range n {
			w.uid++
			name := fmt.Sprintf("p%d", w.uid)
			p := pod(name, gpus, maps.Clone(ann), "")
			p.UID = k8stypes.UID(fmt.Sprintf("u%d", w.uid))
			p.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+r.IntN(100)), 0))
			if job != "" {
				yes := true
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: "job-uid", Controller: &yes}}
			}
			w.pods[Key(p)] = p
			st.OnPod(p)
			made = append(made, name)
		}
		return "create " + strings.Join(made, ",")
	case op < 55: // pending pods are bound: one, or all of a gang's, on free
		// devices as PAL would, now and then on clashing or out-of-range ones
		var pending []string
		for _, k := range ours {
			if w.pods[k].Spec.NodeName == "" {
				pending = append(pending, k)
			}
		}
		k := pick(pending)
		if k == "" || len(nodeNames) == 0 {
			return "nothing to bind"
		}
		todo := []string{k}
		if g := w.pods[k].Annotations[podspec.AnnGang]; g != "" && r.IntN(2) == 0 {
			todo = nil
			for _, q := range pending {
				if w.pods[q].Annotations[podspec.AnnGang] == g {
					todo = append(todo, q)
				}
			}
		}
		used := map[string]map[int]bool{}
		for _, p := range w.pods {
			if p.Spec.NodeName != "" {
				if used[p.Spec.NodeName] == nil {
					used[p.Spec.NodeName] = map[int]bool{}
				}
				idx, _ := podspec.ParseIndices(p.Annotations[podspec.AnnGPUIndices])
				for _, x := range idx {
					used[p.Spec.NodeName][x] = true
				}
			}
		}
		for _, k := range todo {
			nn := pick(nodeNames)
			p := w.pods[k].DeepCopy()
			gpus, _ := podspec.PodGPUs(p)
			size := podspec.NodeGPUs(w.nodes[nn])
			var idx []int
			for x := 0; x < size && len(idx) < gpus; x++ {
				if !used[nn][x] {
					idx = append(idx, x)
				}
			}
			switch r.IntN(12) {
			case 0:
				idx = r.Perm(size + 2)[:min(gpus, size+2)] // anywhere, even beyond the node
				slices.Sort(idx)
			case 1:
				idx = []int{0} // a clash, likely
			}
			p.Spec.NodeName = nn
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[podspec.AnnGPUIndices] = podspec.FormatIndices(idx)
			if r.IntN(20) == 0 {
				p.Annotations[podspec.AnnGPUIndices] = "x"
			}
			p.Status.Phase = corev1.PodRunning
			w.pods[k] = p
			st.OnPod(p)
			if r.IntN(2) == 0 {
				st.OnBoundPod(p)
			}
		}
		return "bind " + strings.Join(todo, ",")
	case op < 62: // a bound pod finishes
		k := pick(ours)
		if k == "" || w.pods[k].Spec.NodeName == "" {
			return "nothing finishes"
		}
		p := w.pods[k].DeepCopy()
		p.Status.Phase = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed}[r.IntN(2)]
		w.pods[k] = p
		st.OnPod(p)
		return "finish " + k
	case op < 67: // a pod starts being deleted
		k := pick(ours)
		if k == "" {
			return "nothing deleting"
		}
		p := w.pods[k].DeepCopy()
		t := metav1.NewTime(time.Unix(2000, 0))
		p.DeletionTimestamp = &t
		w.pods[k] = p
		st.OnPod(p)
		return "deleting " + k
	case op < 77: // a pod is gone
		k := pick(ours)
		if k == "" {
			return "nothing to delete"
		}
		delete(w.pods, k)
		st.OnPodDeleted(k)
		return "delete " + k
	case op < 82: // another scheduler's pod comes or goes
		k := fmt.Sprintf("other/f%d", r.IntN(4))
		if r.IntN(3) == 0 || pick(nodeNames) == "" {
			delete(w.foreign, k)
			st.OnBoundPodDeleted(k)
			return "foreign gone " + k
		}
		p := pod(strings.TrimPrefix(k, "other/"), 1+r.IntN(4), nil, pick(nodeNames))
		p.Namespace, p.Spec.SchedulerName = "other", "default-scheduler"
		w.foreign[k] = p
		st.OnBoundPod(p)
		return "foreign " + k
	case op < 85: // a Job's parallelism changes
		j := fmt.Sprintf("ns/j%d", r.IntN(2))
		if r.IntN(4) == 0 {
			delete(w.jobs, j)
		} else {
			w.jobs[j] = 1 + r.IntN(3)
		}
		ns, name, _ := strings.Cut(j, "/")
		st.OnRef(podspec.JobRef(ns, name))
		return "job " + j
	case op < 90: // the round assumes a bind or an eviction (of a pod
		// it bound itself, too, before the informers show the bind)
		k := pick(ours)
		nn := pick(nodeNames)
		if k == "" || nn == "" {
			return "nothing to assume"
		}
		p := w.pods[k]
		a := w.assumed[k]
		if a.uid != p.UID {
			a = assumed{uid: p.UID}
		}
		if p.Spec.NodeName == "" && a.node == "" {
			a.node, a.annots = nn, map[string]string{podspec.AnnGPUIndices: strconv.Itoa(r.IntN(3)), podspec.AnnBindInfo: "{}"}
			w.assumed[k] = a
			st.Assume(p, a.node, a.annots)
			return "assume bind " + k
		}
		a.evict = true
		w.assumed[k] = a
		st.AssumeEvicted(p, time.Unix(5000, 0))
		return "assume eviction " + k
	case op < 94: // the binder settles an assumption
		ks := slices.Sorted(maps.Keys(w.assumed))
		k := pick(ks)
		if k == "" {
			return "nothing to settle"
		}
		a := st.assumed[k]
		if a == nil {
			delete(w.assumed, k) // the informer caught up, or the pod left
			return "settled already " + k
		}
		wa := w.assumed[k]
		if a.bind != nil && (a.evict == nil || r.IntN(2) == 0) {
			o := []Outcome{Bound, NotBound}[r.IntN(2)]
			if o == NotBound {
				wa.node, wa.annots = "", nil
			}
			w.assumed[k] = wa
			st.Settle(Settlement{Key: k, Seq: a.bind.seq, Outcome: o})
			return "settle bind " + k
		}
		if a.evict == nil {
			return "nothing left to settle " + k
		}
		o := []Outcome{Evicted, NotEvicted}[r.IntN(2)]
		if o == NotEvicted {
			wa.evict = false
		}
		w.assumed[k] = wa
		st.Settle(Settlement{Key: k, Seq: a.evict.seq, Outcome: o})
		return "settle eviction " + k
	default: // a re-list: every object again, deletions for what is gone
		for _, n := range w.nodes {
			st.OnNode(n.DeepCopy())
		}
		for _, p := range w.pods {
			st.OnPod(p.DeepCopy())
		}
		for _, p := range w.foreign {
			st.OnBoundPod(p.DeepCopy())
		}
		for i := range 6 {
			if _, ok := w.nodes[fmt.Sprintf("n%d", i)]; !ok {
				st.OnNodeDeleted(fmt.Sprintf("n%d", i))
			}
		}
		return "re-list"
	}
}

// dump writes a Store's state canonically: what a round reads, with job
// ids replaced by gang keys (ids depend on arrival order) and without a
// job's history (its submit time is the earliest of any member it ever
// had; a fresh Store knows only the current ones).
func dump(st *Store) string {
	var b strings.Builder
	snap := st.Snapshot()
	fmt.Fprintf(&b, "nodes %v first %v\n", snap.NodeNames, snap.First)
	owner := map[int]string{OwnerForeign: "foreign", OwnerLeaving: "leaving", cluster.Free: "-"}
	for _, g := range snap.Gangs {
		owner[g.Job.ID] = g.Key
	}
	dev := func(gs []int) string {
		var out []string
		for _, g := range gs {
			n, i := snap.Device(g)
			out = append(out, fmt.Sprintf("%s/%d", n, i))
		}
		return strings.Join(out, ",")
	}
	podNames := func(ps []*corev1.Pod) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name+"@"+p.Spec.NodeName+"["+p.Annotations[podspec.AnnGPUIndices]+"]")
		}
		return strings.Join(out, " ")
	}
	for _, g := range snap.Gangs {
		j := g.Job
		fmt.Fprintf(&b, "gang %s spec %+v state %d why %q pending [%s] bound [%s] finished %v failed %d bare %d jobpods %d gpus [%s] job %d/%g/%s/%s/%g\n",
			g.Key, g.Spec, g.State, g.Why, podNames(g.Pending), podNames(g.Bound), g.Finished, g.Failed, g.Bare(), g.JobPods,
			dev(g.GPUs), j.GPUs, j.Iterations, j.Class, j.Model, j.IterTime)
	}
	if snap.Cluster != nil {
		for g := range snap.Cluster.Size() {
			n, i := snap.Device(g)
			fmt.Fprintf(&b, "%s/%d:%s ", n, i, owner[snap.Cluster.Owner(g)])
		}
		fmt.Fprintf(&b, "\nfree %d\n", snap.Cluster.FreeCount())
	}
	for _, x := range snap.Bad {
		fmt.Fprintf(&b, "bad %s: %s\n", Key(x.Pod), x.Why)
	}
	for _, w := range snap.Warnings {
		fmt.Fprintf(&b, "warn %s\n", w)
	}
	return b.String()
}

// The state a sequence of informer events leaves is the state a fresh
// Store builds from where the sequence ends: random nodes coming, going
// and changing size, pods created, bound (now and then with clashing or
// out-of-range indices), finished, deleted, other schedulers' pods,
// Jobs changing parallelism, assumed binds and evictions and their
// settlements, and re-lists, checked after every step. A job also keeps
// its identity while its gang lives, and its submit time never rises.
func TestIncrementalEqualsRebuild(t *testing.T) {
	steps := 300
	seeds := 6
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		w := &world{rng: rand.New(rand.NewPCG(uint64(seed), 7)), nodes: map[string]*corev1.Node{},
			pods: map[string]*corev1.Pod{}, foreign: map[string]*corev1.Pod{}, jobs: map[string]int{}, assumed: map[string]assumed{}}
		st := New(Config{SchedulerName: "pal", Reader: w.reader()})
		jobs := map[string]*workload.Job{}
		var log []string
		for i := range steps {
			log = append(log, w.step(st))
			if w.rng.IntN(3) == 0 {
				log = append(log, w.step(st)) // two changes in one Sync
			}
			st.Sync()
			got, want := dump(st), dump(w.fresh())
			if got != want {
				t.Fatalf("seed %d step %d: incremental state differs from a rebuild after %s\n--- incremental\n%s--- rebuild\n%s",
					seed, i, strings.Join(log[max(0, len(log)-6):], "; "), got, want)
			}
			snap := st.Snapshot()
			for _, g := range snap.Gangs {
				if old := jobs[g.Key]; old != nil && old != g.Job {
					t.Fatalf("seed %d step %d: gang %s got a new job while it lived", seed, i, g.Key)
				}
				jobs[g.Key] = g.Job
				for _, p := range append(slices.Clone(g.Pending), g.Bound...) {
					if c := float64(p.CreationTimestamp.Unix()); g.Job.Submit > c {
						t.Fatalf("seed %d step %d: gang %s submit %g after member %s's creation %g", seed, i, g.Key, g.Job.Submit, p.Name, c)
					}
				}
			}
			for _, g := range snap.Removed {
				delete(jobs, g.Key)
			}
		}
	}
}
