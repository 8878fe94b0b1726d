package state

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/kube/podspec"
)

// BadPod is a pending pod of ours whose annotations or requests are
// wrong: it waits, and Why is its event's message.
type BadPod struct {
	Pod *corev1.Pod
	Why string
}

// applyPod replaces what the Store knows of one pod of ours by obj (nil:
// the pod is gone), read once.
func (s *Store) applyPod(key string, obj *corev1.Pod) {
	if old := s.pods[key]; old != nil {
		s.detach(old)
		delete(s.pods, key)
	}
	a := s.assumed[key]
	if obj == nil || obj.Spec.SchedulerName != s.cfg.SchedulerName {
		// Gone (or not ours: a client that does not filter by field
		// sent it). Its bind or eviction has nothing left to hold.
		delete(s.assumed, key)
		return
	}
	if a != nil && a.uid != obj.UID {
		delete(s.assumed, key) // another pod of that name
		a = nil
	}
	e := &podEntry{key: key, obj: obj, eff: obj}
	if a != nil {
		var empty bool
		if e.eff, empty = a.overlay(obj); empty {
			delete(s.assumed, key) // the informer shows what was assumed
		}
	}
	s.read(e)
	s.pods[key] = e
	s.attach(e)
}

// read classifies a pod and reads its spec and indices.
func (s *Store) read(e *podEntry) {
	p := e.eff
	terminal := podspec.IsTerminal(p)
	deleting := p.DeletionTimestamp != nil
	if p.Spec.NodeName == "" && (terminal || deleting) || deleting && terminal {
		e.role = roleNone
		return
	}
	e.refs = podspec.Refs(p)
	e.spec, e.err = s.cfg.Reader.Read(p)
	switch {
	case e.err != nil && p.Spec.NodeName == "":
		e.role = roleBad
	case e.err != nil:
		// Bound by us earlier with annotations that read differently
		// now (a changed model table): it still holds its request, and
		// the devices its indices name (see heldBy).
		e.role = roleNone
		if !terminal {
			if n, idx := heldBy(p); n > 0 {
				e.role, e.fore, e.idx = roleOther, n, idx
			}
		}
	case p.Spec.NodeName == "":
		e.role = rolePending
	case terminal:
		e.role = roleFinished
	default:
		e.role = roleBound
		e.idx, e.ierr = podspec.ParseIndices(p.Annotations[podspec.AnnGPUIndices])
	}
}

// attach adds a read pod to its gang, node and references.
func (s *Store) attach(e *podEntry) {
	for _, r := range e.refs {
		m := s.byRef[r]
		if m == nil {
			m = map[string]bool{}
			s.byRef[r] = m
		}
		m[e.key] = true
	}
	switch e.role {
	case roleBad:
		s.bad[e.key] = &BadPod{Pod: e.eff, Why: e.err.Error()}
		s.badDirty = true
		if gk := e.spec.Gang; gk != "" {
			m := s.badOf[gk]
			if m == nil {
				m = map[string]string{}
				s.badOf[gk] = m
			}
			m[e.key] = e.err.Error()
			if g := s.gangs[gk]; g != nil {
				s.dirtyGangs[g] = true
			}
		}
	case roleOther:
		u := s.nodeUse(e.eff.Spec.NodeName)
		u.others[e.key] = e.fore
		if e.idx != nil {
			u.at[e.key] = e.idx
		}
		s.dirtyNodes[e.eff.Spec.NodeName] = true
	case rolePending, roleBound, roleFinished:
		g := s.gangs[e.spec.Gang]
		if g == nil {
			g = &Gang{Key: e.spec.Gang, members: map[string]*podEntry{}}
			s.gangs[g.Key] = g
			s.resorted = true
		}
		g.members[e.eff.Name] = e
		e.gang = g
		s.dirtyGangs[g] = true
		if e.role == roleBound {
			u := s.nodeUse(e.eff.Spec.NodeName)
			u.claims[e.key] = e
			s.dirtyNodes[e.eff.Spec.NodeName] = true
		}
	}
}

// detach undoes attach.
func (s *Store) detach(e *podEntry) {
	for _, r := range e.refs {
		if m := s.byRef[r]; m != nil {
			delete(m, e.key)
			if len(m) == 0 {
				delete(s.byRef, r)
			}
		}
	}
	switch e.role {
	case roleBad:
		delete(s.bad, e.key)
		s.badDirty = true
		if gk := e.spec.Gang; gk != "" {
			if m := s.badOf[gk]; m != nil {
				delete(m, e.key)
				if len(m) == 0 {
					delete(s.badOf, gk)
				}
			}
			if g := s.gangs[gk]; g != nil {
				s.dirtyGangs[g] = true
			}
		}
	case roleOther:
		if u := s.use[e.eff.Spec.NodeName]; u != nil {
			delete(u.others, e.key)
			delete(u.at, e.key)
		}
		s.dirtyNodes[e.eff.Spec.NodeName] = true
	case rolePending, roleBound, roleFinished:
		g := e.gang
		delete(g.members, e.eff.Name)
		s.dirtyGangs[g] = true
		if e.role == roleBound {
			if u := s.use[e.eff.Spec.NodeName]; u != nil {
				delete(u.claims, e.key)
			}
			s.dirtyNodes[e.eff.Spec.NodeName] = true
		}
	}
}

// applyForeign replaces what the Store knows of one bound pod of another
// scheduler (nil: gone, or finished).
func (s *Store) applyForeign(key string, p *corev1.Pod) {
	if old := s.foreign[key]; old != nil {
		if u := s.use[old.node]; u != nil {
			delete(u.others, "foreign:"+key)
			delete(u.at, "foreign:"+key)
		}
		s.dirtyNodes[old.node] = true
		delete(s.foreign, key)
	}
	if p == nil || p.Spec.SchedulerName == s.cfg.SchedulerName || p.Spec.NodeName == "" || podspec.IsTerminal(p) {
		return
	}
	want, idx := heldBy(p)
	if want == 0 {
		return
	}
	o := &other{key: key, node: p.Spec.NodeName, want: want}
	s.foreign[key] = o
	u := s.nodeUse(o.node)
	u.others["foreign:"+key] = want
	if idx != nil {
		u.at["foreign:"+key] = idx
	}
	s.dirtyNodes[o.node] = true
}

// heldBy is what a bound pod the scheduler does not place holds on its
// node: the devices its pal.io/gpu-indices annotation names, if it reads,
// and as many GPUs in all as the larger of that and its request. The
// documented setup exposes a pod's devices through that annotation
// (NVIDIA_VISIBLE_DEVICES from the downward API), so a pod that names
// devices uses them whatever it requests, and another pod given them
// would share them.
func heldBy(p *corev1.Pod) (n int, idx []int) {
	if s, ok := p.Annotations[podspec.AnnGPUIndices]; ok {
		if x, err := podspec.ParseIndices(s); err == nil {
			idx = x
		}
	}
	n, err := podspec.PodGPUs(p)
	if err != nil {
		n = 0
	}
	return max(n, len(idx)), idx
}

func (s *Store) nodeUse(name string) *nodeUse {
	u := s.use[name]
	if u == nil {
		u = &nodeUse{claims: map[string]*podEntry{}, others: map[string]int{}, at: map[string][]int{}}
		s.use[name] = u
	}
	return u
}
