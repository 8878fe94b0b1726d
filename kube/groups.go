package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamiclister"
	listerschedv1beta1 "k8s.io/client-go/listers/scheduling/v1beta1"
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

// groupKind says which kind of group object a gang has, if any.
type groupKind int

const (
	groupNone    groupKind = iota // pal.io/gang, a Job or a pod alone: no object to report on
	groupNative                   // scheduling.k8s.io/v1beta1 PodGroup: PAL writes its conditions
	groupCosched                  // scheduling.x-k8s.io/v1alpha1 PodGroup: PAL writes phase and counts
)

// groupID names a gang's group object.
type groupID struct {
	kind     groupKind
	ns, name string
}

// gangRef is the gang one source assigns a pod to.
type gangRef struct {
	key      string  // namespace/kind:name, unique across sources
	size     int     // pods to wait for and bind together
	sizeFrom string  // what set size, for messages ("minCount of PodGroup ns/x")
	group    groupID // the object whose status PAL writes (kind groupNone: none)
}

// groupSource is one kind of group object. gangOf reports the gang it
// assigns p to; ok is false when the source says nothing about p; err
// (with ok true) when p names a group that is missing or invalid, and p
// then waits with err as its reason.
type groupSource interface {
	gangOf(p *corev1.Pod) (ref gangRef, ok bool, err error)
}

// alone is the gang of a pod placed by itself.
func alone(p *corev1.Pod) gangRef {
	return gangRef{key: p.Namespace + "/pod:" + p.Name, size: 1}
}

// nativeGroups reads spec.schedulingGroup.podGroupName.
type nativeGroups struct {
	served bool // the apiserver serves scheduling.k8s.io/v1beta1 podgroups
	lister listerschedv1beta1.PodGroupLister
	denied string // served, but listing them failed: why (nothing is watched)
}

var _ groupSource = (*nativeGroups)(nil)

func (n *nativeGroups) gangOf(p *corev1.Pod) (gangRef, bool, error) {
	sg := p.Spec.SchedulingGroup
	if sg == nil || sg.PodGroupName == nil {
		return gangRef{}, false, nil
	}
	name := *sg.PodGroupName
	if name == "" {
		return gangRef{}, true, fmt.Errorf("spec.schedulingGroup.podGroupName is empty")
	}
	id := p.Namespace + "/" + name
	if n.denied != "" {
		return gangRef{}, true, fmt.Errorf("names PodGroup %s in spec.schedulingGroup.podGroupName, but pal scheduler cannot list %s podgroups (%s); "+
			"grant it get, list and watch on them (deploy/rbac.yaml), then restart it", id, NativePodGroupAPI, n.denied)
	}
	if !n.served || n.lister == nil {
		return gangRef{}, true, fmt.Errorf("names PodGroup %s in spec.schedulingGroup.podGroupName, but the apiserver does not serve %s podgroups "+
			"(start it with --feature-gates=GenericWorkload=true --runtime-config=%s=true, then restart pal scheduler)", id, NativePodGroupAPI, NativePodGroupAPI)
	}
	pg, err := n.lister.PodGroups(p.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return gangRef{}, true, fmt.Errorf("waits for PodGroup %s (%s), which does not exist yet", id, NativePodGroupAPI)
	}
	if err != nil {
		return gangRef{}, true, fmt.Errorf("PodGroup %s: %v", id, err)
	}
	return nativeRef(p, pg), true, nil
}

// nativeRef is the gang a native PodGroup makes: minCount pods under the
// gang policy, none under the basic policy.
func nativeRef(p *corev1.Pod, pg *schedv1beta1.PodGroup) gangRef {
	g := pg.Spec.SchedulingPolicy.Gang
	if g == nil || g.MinCount <= 1 {
		return alone(p)
	}
	return gangRef{key: p.Namespace + "/podgroup:" + pg.Name, size: int(g.MinCount),
		sizeFrom: "spec.schedulingPolicy.gang.minCount of PodGroup " + p.Namespace + "/" + pg.Name,
		group:    groupID{groupNative, p.Namespace, pg.Name}}
}

// coschedGroups reads the scheduler-plugins label.
type coschedGroups struct {
	served bool // the PodGroup CRD is installed and PAL has a dynamic client
	lister dynamiclister.Lister
	denied string // served, but listing them failed: why (nothing is watched)
}

var _ groupSource = (*coschedGroups)(nil)

func (c *coschedGroups) gangOf(p *corev1.Pod) (gangRef, bool, error) {
	name, ok := p.Labels[LabelCoschedPodGroup]
	if !ok {
		return gangRef{}, false, nil
	}
	if name == "" {
		return gangRef{}, true, fmt.Errorf("label %s is empty", LabelCoschedPodGroup)
	}
	id := p.Namespace + "/" + name
	gv := CoschedPodGroups.GroupVersion().String()
	if c.denied != "" {
		return gangRef{}, true, fmt.Errorf("names PodGroup %s in label %s, but pal scheduler cannot list %s podgroups (%s); "+
			"grant it get, list and watch on them (deploy/rbac.yaml), then restart it", id, LabelCoschedPodGroup, gv, c.denied)
	}
	if !c.served || c.lister == nil {
		return gangRef{}, true, fmt.Errorf("names PodGroup %s in label %s, but the apiserver does not serve %s podgroups (install the scheduler-plugins PodGroup CRD, then restart pal scheduler)",
			id, LabelCoschedPodGroup, gv)
	}
	u, err := c.lister.Namespace(p.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return gangRef{}, true, fmt.Errorf("waits for PodGroup %s (%s), which does not exist yet", id, gv)
	}
	if err != nil {
		return gangRef{}, true, fmt.Errorf("PodGroup %s: %v", id, err)
	}
	return coschedRef(p, u)
}

// coschedRef is the gang a scheduler-plugins PodGroup makes: minMember
// pods; none when minMember is 0 or 1.
func coschedRef(p *corev1.Pod, u *unstructured.Unstructured) (gangRef, bool, error) {
	id := p.Namespace + "/" + u.GetName()
	min, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "minMember")
	if err != nil || (found && !isWhole(min)) {
		return gangRef{}, true, fmt.Errorf("PodGroup %s (%s): spec.minMember is %v, want a whole number", id, CoschedPodGroups.GroupVersion(), min)
	}
	m := int64(0)
	if found {
		m = toInt64(min)
	}
	if m < 0 || m > 1<<16 {
		return gangRef{}, true, fmt.Errorf("PodGroup %s (%s): spec.minMember %d is out of range 0..65536", id, CoschedPodGroups.GroupVersion(), m)
	}
	if m <= 1 {
		return alone(p), true, nil
	}
	return gangRef{key: p.Namespace + "/coscheduling:" + u.GetName(), size: int(m),
		sizeFrom: "spec.minMember of PodGroup " + id + " (" + CoschedPodGroups.Group + ")",
		group:    groupID{groupCosched, p.Namespace, u.GetName()}}, true, nil
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

// served reports whether the apiserver serves resource in groupVersion
// (false when discovery says the group/version is unknown or fails).
func served(d discovery.DiscoveryInterface, groupVersion, resource string) bool {
	if d == nil {
		return false
	}
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if err != nil || list == nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// groupLabel names a group object in messages: "PodGroup ns/x".
func (g groupID) String() string {
	switch g.kind {
	case groupNative:
		return "PodGroup " + g.ns + "/" + g.name + " (" + NativePodGroupAPI + ")"
	case groupCosched:
		return "PodGroup " + g.ns + "/" + g.name + " (" + CoschedPodGroups.GroupVersion().String() + ")"
	}
	return ""
}

// keyGroupName turns a gang key of a group object into a message name,
// "" for other keys.
func keyGroupName(ns, name string) string {
	switch {
	case strings.HasPrefix(name, "podgroup:"):
		return "PodGroup " + ns + "/" + strings.TrimPrefix(name, "podgroup:")
	case strings.HasPrefix(name, "coscheduling:"):
		return "PodGroup " + ns + "/" + strings.TrimPrefix(name, "coscheduling:") + " (" + CoschedPodGroups.Group + ")"
	}
	return ""
}
