package state

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The assume cache. PAL picks the device indices itself, so a GPU is
// given twice if a round hands out the devices of a bind the informers
// do not show yet. A bind is assumed the moment the round decides it:
// from the next Sync on, the pod counts as bound to its node with its
// annotations, and its devices stay held until one of these is seen:
//
//   - the informer shows the pod bound (to any node: what it shows is the
//     truth from then on), or gone, or replaced by another pod of its
//     name;
//   - the binder settles the bind as not bound: the apiserver refused it
//     and the pod is unbound, or the pod is gone, as a direct GET after
//     the error showed (see package kube/bind).
//
// A bind whose outcome is unknown (a timeout, a lost connection, a
// server error: the Binding may be committed or not) settles neither
// way, and its devices stay held while the binder finds out. An
// eviction is assumed the same way (the pod counts as being deleted, so
// its gang leaves the plan) until the informer shows the deletion or the
// binder settles it as refused.

// Outcome is what the binder learnt of an assumed bind or eviction.
type Outcome uint8

const (
	// Bound: the Binding was committed; the pod stays assumed until the
	// informer shows it.
	Bound Outcome = iota + 1
	// NotBound: the pod is not bound and the bind will not land; its
	// devices are free again.
	NotBound
	// Evicted: the eviction was accepted.
	Evicted
	// NotEvicted: the eviction was refused; the pod runs on.
	NotEvicted
)

// Settlement is one Outcome of the assumption Seq of pod Key.
type Settlement struct {
	Key     string
	Seq     uint64
	Outcome Outcome
}

// assumption is what the round decided of one pod that the informers
// have not shown yet: a bind, an eviction, or both (a pod may be evicted
// before the informers show its bind).
type assumption struct {
	uid   types.UID
	bind  *assumedBind
	evict *assumedEviction
}

type assumedBind struct {
	seq    uint64
	node   string
	annots map[string]string
	done   bool // the binder confirmed it
}

type assumedEviction struct {
	seq  uint64
	at   metav1.Time // the deletion time laid over the pod
	done bool
}

// Assume lays a bind over pod p from the next Sync on: it counts as
// bound to node with annots. It returns the assumption's number, which
// the binder's Settlement names.
func (s *Store) Assume(p *corev1.Pod, node string, annots map[string]string) uint64 {
	s.aseq++
	a := s.assumption(p)
	a.bind = &assumedBind{seq: s.aseq, node: node, annots: maps.Clone(annots)}
	return s.aseq
}

// AssumeEvicted lays an eviction over pod p from the next Sync on: it
// counts as being deleted (and still bound where a bind of it is
// assumed).
func (s *Store) AssumeEvicted(p *corev1.Pod, at time.Time) uint64 {
	s.aseq++
	a := s.assumption(p)
	a.evict = &assumedEviction{seq: s.aseq, at: metav1.NewTime(at)}
	return s.aseq
}

func (s *Store) assumption(p *corev1.Pod) *assumption {
	key := Key(p)
	a := s.assumed[key]
	if a == nil || a.uid != p.UID {
		a = &assumption{uid: p.UID}
		s.assumed[key] = a
	}
	s.reapply[key] = true
	return a
}

// Assumed reports the assumptions the informers have not caught up with
// yet, and how many of them the binder has confirmed.
func (s *Store) Assumed() (all, confirmed int) {
	for _, a := range s.assumed {
		for _, done := range a.parts() {
			all++
			if done {
				confirmed++
			}
		}
	}
	return all, confirmed
}

// parts lists whether each part of an assumption is confirmed.
func (a *assumption) parts() []bool {
	var out []bool
	if a.bind != nil {
		out = append(out, a.bind.done)
	}
	if a.evict != nil {
		out = append(out, a.evict.done)
	}
	return out
}

// Unsettled lists the pods whose bind is assumed but not confirmed
// (for a binder that starts again: it asks the apiserver about them).
func (s *Store) Unsettled() []Pending {
	var out []Pending
	for key, a := range s.assumed {
		if b := a.bind; b != nil && !b.done {
			if e := s.pods[key]; e != nil {
				out = append(out, Pending{Pod: e.obj, Node: b.node, Annots: b.annots, Seq: b.seq})
			}
		}
	}
	return out
}

// ForgetUnsettledEvictions drops the assumed evictions the binder has
// not confirmed, for a binder that starts again: the one before may have
// stopped before it posted them, and nothing would settle them then, so
// their gangs would stay out of every plan until their pods ended by
// themselves. One that did land shows as its pod's deletion. It reports
// how many it dropped.
func (s *Store) ForgetUnsettledEvictions() int {
	n := 0
	for key, a := range s.assumed {
		if e := a.evict; e != nil && !e.done {
			a.evict = nil
			if a.bind == nil {
				delete(s.assumed, key)
			}
			s.reapply[key] = true
			n++
		}
	}
	return n
}

// Pending is an assumed bind the binder has not settled.
type Pending struct {
	Pod    *corev1.Pod
	Node   string
	Annots map[string]string
	Seq    uint64
}

func (s *Store) settle(x Settlement) {
	a := s.assumed[x.Key]
	if a == nil {
		return // the informer caught up first
	}
	switch {
	case a.bind != nil && a.bind.seq == x.Seq && x.Outcome == Bound:
		a.bind.done = true
	case a.bind != nil && a.bind.seq == x.Seq && x.Outcome == NotBound:
		a.bind = nil
		s.reapply[x.Key] = true
	case a.evict != nil && a.evict.seq == x.Seq && x.Outcome == Evicted:
		a.evict.done = true
	case a.evict != nil && a.evict.seq == x.Seq && x.Outcome == NotEvicted:
		a.evict = nil
		s.reapply[x.Key] = true
	default:
		return // an older assumption's
	}
	if a.bind == nil && a.evict == nil {
		delete(s.assumed, x.Key)
	}
	s.applied++
}

// overlay is obj as the assumption has it. A part the informer already
// shows is dropped (a bind once obj is bound, to any node; an eviction
// once obj is being deleted or has finished); empty reports that none is
// left.
func (a *assumption) overlay(obj *corev1.Pod) (eff *corev1.Pod, empty bool) {
	if a.bind != nil && obj.Spec.NodeName != "" {
		a.bind = nil
	}
	if a.evict != nil && (obj.DeletionTimestamp != nil || obj.Status.Phase == corev1.PodSucceeded || obj.Status.Phase == corev1.PodFailed) {
		a.evict = nil
	}
	if a.bind == nil && a.evict == nil {
		return obj, true
	}
	q := obj.DeepCopy()
	if a.bind != nil {
		q.Spec.NodeName = a.bind.node
		if q.Annotations == nil {
			q.Annotations = map[string]string{}
		}
		maps.Copy(q.Annotations, a.bind.annots)
	}
	if a.evict != nil {
		q.DeletionTimestamp = &a.evict.at
	}
	return q, false
}
