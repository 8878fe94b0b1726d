package state

import corev1 "k8s.io/api/core/v1"

// Node is the node of that name as of the last Sync (nil: none), for
// matching a pod's node selector and required node affinity against its
// labels. It is the Store's: read only.
func (s *Store) Node(name string) *corev1.Node { return s.nodes[name] }
