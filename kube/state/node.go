package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Node is the node of that name as of the last Sync (nil: none), for
// matching a pod's node selector and required node affinity against its
// labels. It is the Store's: read only.
func (s *Store) Node(name string) *corev1.Node { return s.nodes[name] }

// HeldOn is what the pods bound to node name hold there, whether or not
// the node is usable (a round does not see a cordoned or not-ready node's
// devices): the device indices they name (pal.io/gpu-indices: our pods',
// and another scheduler's pod that names its devices), ascending without
// repeats, and the GPUs held by count beyond those (pods that name none,
// or ours whose indices do not read). It is the Store's as of the last
// Sync.
func (s *Store) HeldOn(name string) (named []int, counted int) {
	u := s.use[name]
	if u == nil {
		return nil, 0
	}
	for _, c := range u.claims {
		if c.ierr != nil || c.idx == nil {
			counted += c.spec.GPUs
			continue
		}
		named = append(named, c.idx...)
	}
	for k, want := range u.others {
		idx := u.at[k]
		named = append(named, idx...)
		counted += max(want-len(idx), 0)
	}
	slices.Sort(named)
	return slices.Compact(named), counted
}
