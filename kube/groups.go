package kube

import (
	"fmt"

	"github.com/palsched/pal/kube/podspec"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamiclister"
	listerschedv1beta1 "k8s.io/client-go/listers/scheduling/v1beta1"
)

// nativeGroups reads spec.schedulingGroup.podGroupName.
type nativeGroups struct {
	served bool // the apiserver serves scheduling.k8s.io/v1beta1 podgroups
	lister listerschedv1beta1.PodGroupLister
	denied string // served, but listing them failed: why (nothing is watched)
}

var _ podspec.GroupSource = (*nativeGroups)(nil)

func (n *nativeGroups) GangOf(p *corev1.Pod) (podspec.GangRef, bool, error) {
	sg := p.Spec.SchedulingGroup
	if sg == nil || sg.PodGroupName == nil {
		return podspec.GangRef{}, false, nil
	}
	name := *sg.PodGroupName
	if name == "" {
		return podspec.GangRef{}, true, fmt.Errorf("spec.schedulingGroup.podGroupName is empty")
	}
	id := p.Namespace + "/" + name
	if n.denied != "" {
		return podspec.GangRef{}, true, fmt.Errorf("names PodGroup %s in spec.schedulingGroup.podGroupName, but pal-kube scheduler cannot list %s podgroups (%s); "+
			"grant it get, list and watch on them (deploy/rbac.yaml), then restart it", id, NativePodGroupAPI, n.denied)
	}
	if !n.served || n.lister == nil {
		return podspec.GangRef{}, true, fmt.Errorf("names PodGroup %s in spec.schedulingGroup.podGroupName, but the apiserver does not serve %s podgroups "+
			"(start it with --feature-gates=GenericWorkload=true --runtime-config=%s=true, then restart pal-kube scheduler)", id, NativePodGroupAPI, NativePodGroupAPI)
	}
	pg, err := n.lister.PodGroups(p.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return podspec.GangRef{}, true, fmt.Errorf("waits for PodGroup %s (%s), which does not exist yet", id, NativePodGroupAPI)
	}
	if err != nil {
		return podspec.GangRef{}, true, fmt.Errorf("PodGroup %s: %v", id, err)
	}
	return podspec.NativeRef(p, pg), true, nil
}

// coschedGroups reads the scheduler-plugins label.
type coschedGroups struct {
	served bool // the PodGroup CRD is installed and PAL has a dynamic client
	lister dynamiclister.Lister
	denied string // served, but listing them failed: why (nothing is watched)
}

var _ podspec.GroupSource = (*coschedGroups)(nil)

func (c *coschedGroups) GangOf(p *corev1.Pod) (podspec.GangRef, bool, error) {
	name, ok := p.Labels[LabelCoschedPodGroup]
	if !ok {
		return podspec.GangRef{}, false, nil
	}
	if name == "" {
		return podspec.GangRef{}, true, fmt.Errorf("label %s is empty", LabelCoschedPodGroup)
	}
	id := p.Namespace + "/" + name
	gv := CoschedPodGroups.GroupVersion().String()
	if c.denied != "" {
		return podspec.GangRef{}, true, fmt.Errorf("names PodGroup %s in label %s, but pal-kube scheduler cannot list %s podgroups (%s); "+
			"grant it get, list and watch on them (deploy/rbac.yaml), then restart it", id, LabelCoschedPodGroup, gv, c.denied)
	}
	if !c.served || c.lister == nil {
		return podspec.GangRef{}, true, fmt.Errorf("names PodGroup %s in label %s, but the apiserver does not serve %s podgroups (install the scheduler-plugins PodGroup CRD, then restart pal-kube scheduler)",
			id, LabelCoschedPodGroup, gv)
	}
	u, err := c.lister.Namespace(p.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return podspec.GangRef{}, true, fmt.Errorf("waits for PodGroup %s (%s), which does not exist yet", id, gv)
	}
	if err != nil {
		return podspec.GangRef{}, true, fmt.Errorf("PodGroup %s: %v", id, err)
	}
	return podspec.CoschedRef(p, u)
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
