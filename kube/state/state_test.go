package state

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/workload"
)

func node(name string, gpus int) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{podspec.ResourceGPU: podspec.GPUQuantity(gpus)}}}
}

func pod(name string, gpus int, ann map[string]string, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name), Annotations: ann,
		CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Spec: corev1.PodSpec{SchedulerName: "pal", NodeName: nodeName, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{podspec.ResourceGPU: podspec.GPUQuantity(gpus)}}}}}}
}

func gangAnn(g string, size int, extra ...string) map[string]string {
	a := map[string]string{podspec.AnnGang: g, podspec.AnnGangSize: podspec.FormatIndices([]int{size})}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return a
}

func reader() *podspec.Reader { return &podspec.Reader{Models: workload.DefaultModels()} }

// build is a Store holding these objects, synced.
func build(nodes []*corev1.Node, ours, foreign []*corev1.Pod) *Store {
	st := New(Config{SchedulerName: "pal", Reader: reader()})
	for _, n := range nodes {
		st.OnNode(n)
	}
	for _, p := range ours {
		st.OnPod(p)
	}
	for _, p := range foreign {
		st.OnBoundPod(p)
	}
	st.Sync()
	return st
}

// One state on a hand-built cluster. Nodes a and b (4 GPUs each, sorted
// by name: a's devices are GPUs 0-3, b's 4-7) and a CPU node, which is
// not a GPU node. The running gang holds a/1 (GPU 1) and b/0 (GPU 4);
// the other scheduler's 2-GPU pod on a takes a's highest free devices, 3
// and 2; the gang with 2 of its 3 pods waits; the 8-GPU pod fits no
// node; the pod with a malformed size is bad; the 2x2 gang queues.
func TestSnapshot(t *testing.T) {
	nodes := []*corev1.Node{node("b", 4), node("a", 4), node("cpu", 0)}
	ours := []*corev1.Pod{
		pod("run-1", 1, gangAnn("run", 2, podspec.AnnGPUIndices, "0"), "b"),
		pod("run-0", 1, gangAnn("run", 2, podspec.AnnGPUIndices, "1"), "a"),
		pod("part-0", 1, gangAnn("part", 3), ""),
		pod("part-1", 1, gangAnn("part", 3), ""),
		pod("huge", 8, nil, ""),
		pod("bad", 1, map[string]string{podspec.AnnGang: "x", podspec.AnnGangSize: "many"}, ""),
		pod("q-1", 2, gangAnn("q", 2, podspec.AnnModel, "BERT"), ""),
		pod("q-0", 2, gangAnn("q", 2, podspec.AnnModel, "BERT"), ""),
	}
	foreign := []*corev1.Pod{pod("other", 2, nil, "a")}
	foreign[0].Spec.SchedulerName = "default-scheduler"
	st := build(nodes, ours, foreign)
	s := st.Snapshot()
	if !slices.Equal(s.NodeNames, []string{"a", "b"}) || s.Cluster.Size() != 8 {
		t.Fatalf("nodes %v size %d, want [a b] and 8 GPUs (cpu node skipped)", s.NodeNames, s.Cluster.Size())
	}
	run := s.ByKey["ns/run"].Job.ID
	for g, want := range map[int]int{0: -1, 1: run, 2: OwnerForeign, 3: OwnerForeign, 4: run, 5: -1} {
		if s.Cluster.Owner(g) != want {
			t.Errorf("GPU %d owner %d, want %d", g, s.Cluster.Owner(g), want)
		}
	}
	want := map[string]struct {
		st  GangState
		why string
	}{
		"ns/run":      {GangRunning, ""},
		"ns/part":     {GangWaiting, "gang of 3 waits: 2 of 3 pods exist"},
		"ns/pod:huge": {GangWaiting, "each pod asks 8 GPUs but the largest node has 4"},
		"ns/q":        {GangQueued, ""},
	}
	for k, w := range want {
		g := s.ByKey[k]
		if g == nil {
			t.Fatalf("no gang %s", k)
		}
		if g.State != w.st || g.Why != w.why {
			t.Errorf("gang %s: state %v %q, want %v %q", k, g.State, g.Why, w.st, w.why)
		}
	}
	if g := s.ByKey["ns/run"]; !slices.Equal(g.GPUs, []int{1, 4}) {
		t.Errorf("running gang holds %v, want [1 4]", g.GPUs)
	}
	if len(s.Bad) != 1 || s.Bad[0].Pod.Name != "bad" || !strings.Contains(s.Bad[0].Why, `pal.io/gang-size="many"`) {
		t.Errorf("bad pods %+v", s.Bad)
	}
	q := s.ByKey["ns/q"]
	if q.Job.GPUs != 4 || q.Job.Model != "BERT" || q.Pending[0].Name != "q-0" {
		t.Errorf("queued gang job %+v, first pod %s", q.Job.Spec, q.Pending[0].Name)
	}
	// The 2-GPU pods split only along node boundaries.
	if got := s.Split(q, []int{0, 1, 4, 5}); len(got) != 2 || got[0].Node != "a" || !slices.Equal(got[1].GPUs, []int{0, 1}) {
		t.Errorf("split = %+v", got)
	}
	if got := s.Split(q, []int{0, 4, 5, 6}); got != nil {
		t.Errorf("split of a 1+3 set into 2-GPU pods = %+v, want nil", got)
	}
	// A gang keeps its job (and id) while its pods change.
	id, job := q.Job.ID, q.Job
	q1 := ours[6].DeepCopy()
	q1.Labels = map[string]string{"touched": "yes"}
	st.OnPod(q1)
	if !st.Sync() {
		t.Fatal("a changed pod changed nothing")
	}
	if g := st.Snapshot().ByKey["ns/q"]; g.Job != job || g.Job.ID != id {
		t.Errorf("job changed across rounds")
	}
	if st.Sync() {
		t.Error("a Sync with nothing noted reports a change")
	}
}

// Two pods recording one device: the first by gang and pod name holds
// it, the second holds nothing and a warning names both.
func TestSnapshotDoubleIndex(t *testing.T) {
	ours := []*corev1.Pod{
		pod("x", 1, map[string]string{podspec.AnnGPUIndices: "2"}, "a"),
		pod("y", 1, map[string]string{podspec.AnnGPUIndices: "2"}, "a"),
	}
	s := build([]*corev1.Node{node("a", 4)}, ours, nil).Snapshot()
	want := "pod ns/y on a holds devices 2 already held by pod ns/x"
	if len(s.Warnings) != 1 || s.Warnings[0] != want {
		t.Fatalf("warnings %q, want [%q]", s.Warnings, want)
	}
	if !slices.Equal(s.ByKey["ns/pod:x"].GPUs, []int{2}) || len(s.ByKey["ns/pod:y"].GPUs) != 0 {
		t.Errorf("x holds %v, y %v", s.ByKey["ns/pod:x"].GPUs, s.ByKey["ns/pod:y"].GPUs)
	}
}

// A bound pod the scheduler does not place holds the devices its
// pal.io/gpu-indices names (the documented setup exposes them to it
// through that annotation), not just its request's worth from the
// highest index down. On a (4 GPUs): our pod "blank" requests no GPU
// (its spec does not read) but names device 0; another scheduler's pod
// requests 1 and names device 1. So GPUs 0 and 1 are held and 2 and 3
// free; counted by request only, 0 would be free and the foreign pod
// would hold 3. Found by FuzzRoundPods: a pending pod was given device 0
// beside "blank". A pod whose named devices are taken already, or lie
// beyond the node, holds its count instead, with a warning: on b, our
// gang pod holds device 1, which a foreign pod names too, so that pod
// holds b's highest, 7.
func TestSnapshotNamedDevicesHeld(t *testing.T) {
	ours := []*corev1.Pod{
		pod("blank", 0, map[string]string{podspec.AnnGPUIndices: "0"}, "a"),
		pod("run", 1, map[string]string{podspec.AnnGPUIndices: "1"}, "b"),
	}
	long := make([]int, 20)
	for i := range long {
		long[i] = i
	}
	foreign := []*corev1.Pod{
		pod("other", 1, map[string]string{podspec.AnnGPUIndices: "1"}, "a"),
		pod("clash", 1, map[string]string{podspec.AnnGPUIndices: "1"}, "b"),
		pod("long", 1, map[string]string{podspec.AnnGPUIndices: podspec.FormatIndices(long)}, "c"),
	}
	for _, p := range foreign {
		p.Spec.SchedulerName = "default-scheduler"
	}
	s := build([]*corev1.Node{node("a", 4), node("b", 4), node("c", 4)}, ours, foreign).Snapshot()
	run := s.ByKey["ns/pod:run"].Job.ID
	for g, want := range map[int]int{0: OwnerForeign, 1: OwnerForeign, 2: -1, 3: -1, 4: -1, 5: run, 6: -1, 7: OwnerForeign, 8: OwnerForeign, 11: OwnerForeign} {
		if s.Cluster.Owner(g) != want {
			t.Errorf("GPU %d owner %d, want %d", g, s.Cluster.Owner(g), want)
		}
	}
	// On c a pod naming devices 0-19 of 4 holds its count, 20, which is
	// all of c and 16 short; the warning lists 16 of the indices.
	want := []string{
		"pod ns/clash on b names devices 1 it cannot hold (beyond the node or already held): it holds its count",
		"pod ns/long on c names devices 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,... it cannot hold (beyond the node or already held): it holds its count",
		"node c is overcommitted: pod ns/long wants 16 more nvidia.com/gpu than are free",
	}
	if !slices.Equal(s.Warnings, want) {
		t.Errorf("warnings %q\nwant %q", s.Warnings, want)
	}
}

// Finished members hold nothing: a gang with one member done and one
// running is leaving (not placed, the running one keeps its GPU), and a
// gang whose members all finished lets a new wave of pods form it again.
func TestSnapshotFinishedMembers(t *testing.T) {
	done := func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodSucceeded; return p }
	ours := []*corev1.Pod{
		done(pod("a-0", 1, gangAnn("a", 2, podspec.AnnGPUIndices, "0"), "n")),
		pod("a-1", 1, gangAnn("a", 2, podspec.AnnGPUIndices, "1"), "n"),
		done(pod("b-0", 1, gangAnn("b", 2, podspec.AnnGPUIndices, "2"), "n")),
		done(pod("b-1", 1, gangAnn("b", 2, podspec.AnnGPUIndices, "3"), "n")),
		pod("b-2", 1, gangAnn("b", 2), ""),
		pod("b-3", 1, gangAnn("b", 2), ""),
	}
	s := build([]*corev1.Node{node("n", 4)}, ours, nil).Snapshot()
	if g := s.ByKey["ns/a"]; g.State != GangLeaving || !slices.Equal(g.GPUs, []int{1}) {
		t.Errorf("gang a: state %v GPUs %v, want leaving holding [1]", g.State, g.GPUs)
	}
	if g := s.ByKey["ns/b"]; g.State != GangQueued {
		t.Errorf("gang b (new wave): state %v %q, want queued", g.State, g.Why)
	}
	if s.Cluster.FreeCount() != 3 {
		t.Errorf("free GPUs %d, want 3", s.Cluster.FreeCount())
	}
}
