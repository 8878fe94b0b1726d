package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/palsched/pal/internal/quote"
)

// Where a pod's gang comes from. A pod may carry several of these forms
// (the 1.37 Job controller writes spec.schedulingGroup into pods it also
// owns; an operator may add the scheduler-plugins label beside it). PAL
// takes exactly one, the first in this order, and ignores the others:
//
//  1. native: spec.schedulingGroup.podGroupName, a scheduling.k8s.io/v1beta1
//     PodGroup (Kubernetes' own gang API, the most specific statement);
//  2. coscheduling: the label scheduling.x-k8s.io/pod-group, a
//     scheduling.x-k8s.io/v1alpha1 PodGroup (scheduler-plugins);
//  3. annotation: pal.io/gang with pal.io/gang-size;
//  4. owner: the pod's batch/v1 Job controller, parallelism > 1;
//  5. otherwise the pod is alone.
//
// Explicit objects go first because they are written for the purpose,
// while a Job owner is only inferred; among objects, the API Kubernetes
// itself serves beats a CRD, and a CRD beats PAL's own annotation, so a
// workload written for the platform is scheduled as the platform reads
// it. A pod that names a group object which is missing, not served or
// invalid waits with that reason (never placed alone): the group may be
// created after its pods.
//
// PAL's gangs are exact: a PodGroup's minCount (minMember) is the number
// of pods PAL waits for and binds together; a group with more pods than
// that waits, saying so. A basic-policy PodGroup, or a minimum of 0 or 1,
// makes no gang: each pod is placed alone.
const (
	// LabelCoschedPodGroup names a pod's scheduler-plugins PodGroup (in the
	// pod's namespace).
	LabelCoschedPodGroup = "scheduling.x-k8s.io/pod-group"
	// NativePodGroupAPI is the group/version of Kubernetes' PodGroup.
	NativePodGroupAPI = "scheduling.k8s.io/v1beta1"
)

// CoschedPodGroups is the scheduler-plugins PodGroup resource, read
// through the dynamic client (PAL does not import scheduler-plugins).
var CoschedPodGroups = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// GroupKind says which kind of group object a gang has, if any.
type GroupKind int

const (
	GroupNone    GroupKind = iota // pal.io/gang, a Job or a pod alone: no object to report on
	GroupNative                   // scheduling.k8s.io/v1beta1 PodGroup: PAL writes its conditions
	GroupCosched                  // scheduling.x-k8s.io/v1alpha1 PodGroup: PAL writes phase and counts
)

// GroupID names a gang's group object.
type GroupID struct {
	Kind     GroupKind
	NS, Name string
}

// GangRef is the gang one source assigns a pod to.
type GangRef struct {
	Key      string  // namespace/kind:name, unique across sources
	Size     int     // pods to wait for and bind together
	SizeFrom string  // what set size, for messages ("minCount of PodGroup ns/x")
	Group    GroupID // the object whose status PAL writes (kind groupNone: none)
}

// GroupSource is one kind of group object. GangOf reports the gang it
// assigns p to; ok is false when the source says nothing about p; err
// (with ok true) when p names a group that is missing or invalid, and p
// then waits with err as its reason.
type GroupSource interface {
	GangOf(p *corev1.Pod) (ref GangRef, ok bool, err error)
}

// Alone is the gang of a pod placed by itself.
func Alone(p *corev1.Pod) GangRef {
	return GangRef{Key: p.Namespace + "/pod:" + p.Name, Size: 1}
}

// NativeRef is the gang a native PodGroup makes: minCount pods under the
// gang policy, none under the basic policy.
func NativeRef(p *corev1.Pod, pg *schedv1beta1.PodGroup) GangRef {
	g := pg.Spec.SchedulingPolicy.Gang
	if g == nil || g.MinCount <= 1 {
		return Alone(p)
	}
	return GangRef{Key: p.Namespace + "/podgroup:" + pg.Name, Size: int(g.MinCount),
		SizeFrom: "spec.schedulingPolicy.gang.minCount of PodGroup " + p.Namespace + "/" + pg.Name,
		Group:    GroupID{GroupNative, p.Namespace, pg.Name}}
}

// CoschedRef is the gang a scheduler-plugins PodGroup makes: minMember
// pods; none when minMember is 0 or 1.
func CoschedRef(p *corev1.Pod, u *unstructured.Unstructured) (GangRef, bool, error) {
	id := p.Namespace + "/" + u.GetName()
	min, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "minMember")
	if err != nil || (found && !isWhole(min)) {
		return GangRef{}, true, fmt.Errorf("PodGroup %s (%s): spec.minMember is %s, want a whole number", id, CoschedPodGroups.GroupVersion(), quote.Text(fmt.Sprint(min)))
	}
	m := int64(0)
	if found {
		m = toInt64(min)
	}
	if m < 0 || m > 1<<16 {
		return GangRef{}, true, fmt.Errorf("PodGroup %s (%s): spec.minMember %d is out of range 0..65536", id, CoschedPodGroups.GroupVersion(), m)
	}
	if m <= 1 {
		return Alone(p), true, nil
	}
	return GangRef{Key: p.Namespace + "/coscheduling:" + u.GetName(), Size: int(m),
		SizeFrom: "spec.minMember of PodGroup " + id + " (" + CoschedPodGroups.Group + ")",
		Group:    GroupID{GroupCosched, p.Namespace, u.GetName()}}, true, nil
}

// isWhole reports whether a decoded JSON number is an integer.
func isWhole(v any) bool {
	switch x := v.(type) {
	case int64, int32, int:
		return true
	case float64:
		return x == float64(int64(x))
	}
	return false
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

// String names a group object in messages: "PodGroup ns/x".
func (g GroupID) String() string {
	switch g.Kind {
	case GroupNative:
		return "PodGroup " + g.NS + "/" + g.Name + " (" + NativePodGroupAPI + ")"
	case GroupCosched:
		return "PodGroup " + g.NS + "/" + g.Name + " (" + CoschedPodGroups.GroupVersion().String() + ")"
	}
	return ""
}

// KeyGroupName turns a gang key of a group object into a message name,
// "" for other keys.
func KeyGroupName(ns, name string) string {
	switch {
	case strings.HasPrefix(name, "podgroup:"):
		return "PodGroup " + ns + "/" + strings.TrimPrefix(name, "podgroup:")
	case strings.HasPrefix(name, "coscheduling:"):
		return "PodGroup " + ns + "/" + strings.TrimPrefix(name, "coscheduling:") + " (" + CoschedPodGroups.Group + ")"
	}
	return ""
}
