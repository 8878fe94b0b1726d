package state

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// NodeInfoGeneration rises when a node is added (again, after a
// deletion) or reports another system UUID or machine ID, and for no
// other change of a node; Nodes are every node, usable or not.
func TestNodeInfoGeneration(t *testing.T) {
	withID := func(name, uuid, machine string) *corev1.Node {
		n := node(name, 4)
		n.Status.NodeInfo.SystemUUID, n.Status.NodeInfo.MachineID, n.Status.NodeInfo.KubeletVersion = uuid, machine, "v1.31.0"
		return n
	}
	st := build(nil, nil, nil)
	steps := []struct {
		name string
		do   func()
		rise bool
	}{
		{"a node added", func() { st.OnNode(withID("a", "u1", "m1")) }, true},
		{"another node added, with no identity", func() { st.OnNode(withID("b", "", "")) }, true},
		{"cordoned, kubelet upgraded", func() {
			n := withID("a", "u1", "m1")
			n.Spec.Unschedulable, n.Status.NodeInfo.KubeletVersion = true, "v1.32.0"
			st.OnNode(n)
		}, false},
		{"another system UUID", func() { st.OnNode(withID("a", "u2", "m1")) }, true},
		{"another machine ID", func() { st.OnNode(withID("a", "u2", "m2")) }, true},
		{"deleted", func() { st.OnNodeDeleted("a") }, false},
		{"made again, same machine", func() { st.OnNode(withID("a", "u2", "m2")) }, true},
		{"nothing", func() {}, false},
	}
	for _, s := range steps {
		was := st.NodeInfoGeneration()
		s.do()
		st.Sync()
		if rose := st.NodeInfoGeneration() != was; rose != s.rise {
			t.Errorf("%s: NodeInfoGeneration rose %v, want %v", s.name, rose, s.rise)
		}
	}
	var names []string
	for n := range st.Nodes() {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Nodes %v, want a and b", names)
	}
}
