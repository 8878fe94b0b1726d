// Package state is pal-kube scheduler's view of the cluster, kept current
// from the informers' events rather than rebuilt every round: the GPU
// nodes and their numbering, our pods read once per change and grouped
// into gangs, each gang's scheduling job, which pod holds which GPU
// (ours by the indices they carry, other schedulers' by count), and the
// assume cache, which holds the GPUs of binds whose outcome the informers
// have not shown yet.
//
// The informers' handlers only note what changed (the newest object per
// key, in a small locked inbox). The round's goroutine owns everything
// else: Sync applies the changes noted since the last round, reading each
// changed pod once and re-resolving only the nodes and gangs they touch,
// so a round's cost follows what changed, not the cluster's size (as
// kube-scheduler's cache does with its per-node generations). Snapshot is
// the round's view: the gangs in key order and a copy of the GPU owner
// table the round may change.
//
// The state a sequence of changes leaves equals the state a fresh Store
// builds from the objects that sequence ends with (the property test
// checks it after every step): every rule below is a function of the
// current objects, never of the order they arrived in.
package state

import (
	"iter"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/workload"
)

// Owner ids in the owner table beyond any job id: GPUs of other
// schedulers' pods (and of our bound pods that no longer read), and of
// our pods that hold GPUs outside a placeable gang.
const (
	OwnerForeign = 1 << 50
	OwnerLeaving = 1<<50 + 1
)

// Config is what a Store reads pods with.
type Config struct {
	// SchedulerName is ours: pods with another one are other
	// schedulers' (they count as used GPUs on their nodes).
	SchedulerName string
	// Reader reads our pods (models, Jobs, PodGroups).
	Reader *podspec.Reader
	// Epoch is the Unix time (seconds) that is 0 on the jobs' clock
	// (workload.Job.Submit).
	Epoch float64
}

// Store is the scheduler's state. The On* methods may be called from any
// goroutine; Sync, Snapshot, Assume* and the accessors belong to one
// goroutine (the round's).
type Store struct {
	cfg Config

	mu     sync.Mutex
	in     inbox
	events uint64 // changes noted, ever

	// Owned by the round's goroutine.
	nodes   map[string]*corev1.Node // every node seen, usable or not
	lay     layout
	use     map[string]*nodeUse  // by node name: who holds what there
	pods    map[string]*podEntry // our pods by namespace/name
	foreign map[string]*other    // other schedulers' bound pods by namespace/name
	gangs   map[string]*Gang
	byJob   map[*workload.Job]*Gang
	sorted  []*Gang // gangs by key
	grouped []*Gang // those of a group object
	byRef   map[string]map[string]bool
	bad     map[string]*BadPod
	// badOf: the unreadable pending pods whose gang their reading got
	// to, by gang key, then pod key: the gang's wait says why it lacks
	// them.
	badOf   map[string]map[string]string
	badList []BadPod
	assumed map[string]*assumption
	nextID  int
	aseq    uint64

	reapply     map[string]bool // pods whose assumption changed: laid over again at Sync
	dirtyGangs  map[*Gang]bool
	dirtyNodes  map[string]bool
	gpusDirty   map[*Gang]bool
	removed     []*Gang
	resorted    bool
	badDirty    bool
	warnDirty   bool
	warnings    []string
	applied     uint64 // changes applied by the last Sync (inbox entries and assumptions)
	generation  uint64 // raised by every Sync that changed something
	planChanged bool   // the last Sync changed what a placement reads
	planGen     uint64 // raised by every Sync that changed what a placement reads
	layoutGen   uint64 // raised whenever the nodes are numbered again
	nodeInfoGen uint64 // raised when a node is added or its hardware identity changes
	labelsGen   uint64 // raised when a node is added, deleted or noted with other labels or taints
	tainted     int    // usable nodes that are Tainted
}

// inbox is what changed since the last Sync: the newest object per key
// (nil: deleted), the referenced objects (Jobs, PodGroups) that changed,
// and what the binder learnt.
type inbox struct {
	pods    map[string]*corev1.Pod
	foreign map[string]*corev1.Pod
	nodes   map[string]*corev1.Node
	refs    map[string]bool
	settled []Settlement
}

// New makes an empty Store.
func New(cfg Config) *Store {
	s := &Store{cfg: cfg, nextID: 1,
		nodes: map[string]*corev1.Node{}, use: map[string]*nodeUse{}, pods: map[string]*podEntry{},
		foreign: map[string]*other{}, gangs: map[string]*Gang{}, byJob: map[*workload.Job]*Gang{}, byRef: map[string]map[string]bool{},
		bad: map[string]*BadPod{}, badOf: map[string]map[string]string{}, assumed: map[string]*assumption{},
		reapply: map[string]bool{}, dirtyGangs: map[*Gang]bool{}, dirtyNodes: map[string]bool{}, gpusDirty: map[*Gang]bool{}}
	s.in.reset()
	return s
}

func (in *inbox) reset() {
	in.pods, in.foreign, in.nodes, in.refs = map[string]*corev1.Pod{}, map[string]*corev1.Pod{}, map[string]*corev1.Node{}, map[string]bool{}
	in.settled = nil
}

// Key is how the Store names a pod: namespace/name.
func Key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// OnPod notes a new or changed pod of ours (from the informer on our
// schedulerName).
func (s *Store) OnPod(p *corev1.Pod) { s.note(func(in *inbox) { in.pods[Key(p)] = p }) }

// Noted is the newest change to the pod of ours under key that waits
// for the next Sync (nil: its deletion), and whether one waits. An
// informer's lister shows a change before its handlers have run, so a
// test that changes a pod and needs the next round to see it waits here,
// not on the lister.
func (s *Store) Noted(key string) (*corev1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.in.pods[key]
	return p, ok
}

// NotedNode is Noted for a node: its newest change waiting for the next
// Sync (nil: its deletion), and whether one waits.
func (s *Store) NotedNode(name string) (*corev1.Node, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.in.nodes[name]
	return n, ok
}

// OnPodDeleted notes that a pod of ours is gone.
func (s *Store) OnPodDeleted(key string) { s.note(func(in *inbox) { in.pods[key] = nil }) }

// OnBoundPod notes a new or changed bound pod of any scheduler (from the
// informer on bound, unfinished pods); only other schedulers' are kept.
func (s *Store) OnBoundPod(p *corev1.Pod) { s.note(func(in *inbox) { in.foreign[Key(p)] = p }) }

// OnBoundPodDeleted notes that a bound pod left that informer (deleted,
// or finished).
func (s *Store) OnBoundPodDeleted(key string) { s.note(func(in *inbox) { in.foreign[key] = nil }) }

// OnNode notes a new or changed node.
func (s *Store) OnNode(n *corev1.Node) { s.note(func(in *inbox) { in.nodes[n.Name] = n }) }

// OnNodeDeleted notes that a node is gone.
func (s *Store) OnNodeDeleted(name string) { s.note(func(in *inbox) { in.nodes[name] = nil }) }

// OnRef notes that an object pods' reading depends on changed (a Job, a
// PodGroup; named as podspec.Refs names them): its pods are read again.
func (s *Store) OnRef(ref string) { s.note(func(in *inbox) { in.refs[ref] = true }) }

// Settle notes what the binder learnt of a bind or eviction.
func (s *Store) Settle(x Settlement) { s.note(func(in *inbox) { in.settled = append(in.settled, x) }) }

func (s *Store) note(f func(*inbox)) {
	s.mu.Lock()
	f(&s.in)
	s.events++
	s.mu.Unlock()
}

// Events is how many changes were noted so far (any goroutine).
func (s *Store) Events() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// Generation rises with every Sync that changed the state: two rounds
// that see the same generation see the same state.
func (s *Store) Generation() uint64 { return s.generation }

// PlanGeneration rises with every Sync that changed what a placement
// reads: a gang's state, size, members' count, GPUs or spec, who holds
// a device, or the nodes. A pod's status or annotations changing alone
// does not raise it.
func (s *Store) PlanGeneration() uint64 { return s.planGen }

// LayoutGeneration rises whenever the usable nodes change (and every GPU
// is numbered again).
func (s *Store) LayoutGeneration() uint64 { return s.layoutGen }

// NodeInfoGeneration rises whenever a Sync adds a node, or finds a node's
// Status.NodeInfo.SystemUUID or MachineID changed (a kubelet on another
// machine took the Node object of its name over): what a reader keys by
// node name and machine may be stale. Any other change of a node (its
// status, labels, taints) does not raise it.
func (s *Store) NodeInfoGeneration() uint64 { return s.nodeInfoGen }

// NodeLabelsGeneration rises whenever a Sync adds or deletes a node, or
// finds a node noted with labels or taints other than it had (or noted
// again as the very object it holds, which may have been changed in
// place): two rounds that see the same generation see the same nodes by
// name, with the same labels and taints. What a reader computes from the
// nodes' names, labels and taints alone (which nodes a node selector
// matches, which a pod's tolerations allow) holds while it stays.
func (s *Store) NodeLabelsGeneration() uint64 { return s.labelsGen }

// TaintedNodes is how many usable nodes carry a taint that keeps the
// gangs that do not tolerate it off (Tainted): while there is none, a
// gang that names no node selector or affinity may use every node.
func (s *Store) TaintedNodes() int { return s.tainted }

// Nodes are every node as of the last Sync, usable or not, in no order.
// They are the Store's: read only.
func (s *Store) Nodes() iter.Seq[*corev1.Node] { return maps.Values(s.nodes) }

// Handlers are informer event handlers that feed the Store; pods and
// bound pods take the first two, nodes the third. Deletions arriving as
// tombstones (DeletedFinalStateUnknown, after a re-list) count as
// deletions.
func (s *Store) Handlers() (ours, bound, nodes cache.ResourceEventHandler) {
	podKey := func(obj any) (string, bool) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return t.Key, true
		}
		if p, ok := obj.(*corev1.Pod); ok {
			return Key(p), true
		}
		return "", false
	}
	ours = cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				s.OnPod(p)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				s.OnPod(p)
			}
		},
		DeleteFunc: func(obj any) {
			if k, ok := podKey(obj); ok {
				s.OnPodDeleted(k)
			}
		},
	}
	bound = cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				s.OnBoundPod(p)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				s.OnBoundPod(p)
			}
		},
		DeleteFunc: func(obj any) {
			if k, ok := podKey(obj); ok {
				s.OnBoundPodDeleted(k)
			}
		},
	}
	nodes = cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				s.OnNode(n)
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				s.OnNode(n)
			}
		},
		DeleteFunc: func(obj any) {
			switch n := obj.(type) {
			case *corev1.Node:
				s.OnNodeDeleted(n.Name)
			case cache.DeletedFinalStateUnknown:
				s.OnNodeDeleted(n.Key)
			}
		},
	}
	return ours, bound, nodes
}

// pod is one pod of ours as the Store read it.
type podEntry struct {
	key  string
	obj  *corev1.Pod // as the informer last showed it
	eff  *corev1.Pod // obj with its assumption laid over it (obj when none)
	spec podspec.Spec
	err  error
	refs []string
	gang *Gang
	role role
	idx  []int // bound, live: its device indices (nil: unreadable, see ierr); roleOther: those its annotation names (heldBy)
	ierr error
	held []int // global GPU ids its indices hold after resolution (nil: none)
	fore int   // bound but unreadable: the GPUs it counts as on its node
}

type role uint8

const (
	roleNone     role = iota // pending and finished or deleting: ignored
	roleBad                  // pending and unreadable: waits with its error
	roleOther                // bound and unreadable: holds its request by count
	rolePending              // gang member, not bound
	roleBound                // gang member, bound and not finished
	roleFinished             // gang member, bound and finished
)

// other is a bound pod that holds GPUs by count: another scheduler's,
// or one of ours that no longer reads.
type other struct {
	key  string
	node string
	want int
}

// Sync applies every change noted since the last Sync and reports
// whether anything changed.
func (s *Store) Sync() bool {
	s.mu.Lock()
	in := s.in
	s.in.reset()
	s.mu.Unlock()
	s.removed = s.removed[:0:0]
	s.applied = 0
	s.planChanged = false

	layoutChanged := false
	for name, n := range in.nodes {
		if s.applyNode(name, n) {
			layoutChanged = true
		}
		s.applied++
	}
	for _, x := range in.settled {
		s.settle(x)
	}
	for key, p := range in.foreign {
		s.applyForeign(key, p)
		s.applied++
	}
	for ref := range in.refs {
		for key := range s.byRef[ref] {
			s.reapply[key] = true
		}
		s.applied++
	}
	for key, p := range in.pods {
		delete(s.reapply, key)
		s.applyPod(key, p)
		s.applied++
	}
	for key := range s.reapply {
		if e := s.pods[key]; e != nil {
			s.applyPod(key, e.obj)
		}
		s.applied++
	}
	clear(s.reapply)
	if layoutChanged {
		s.rebuildLayout()
	}
	s.resolve()
	if s.applied > 0 {
		s.generation++
	}
	if s.planChanged {
		s.planGen++
	}
	return s.applied > 0
}
