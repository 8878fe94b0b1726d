package kube

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/palsched/pal/workload"
)

func node(name string, gpus int) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{ResourceGPU: GPUQuantity(gpus)}}}
}

func pod(name string, gpus int, ann map[string]string, nodeName string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name), Annotations: ann,
		CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Spec: corev1.PodSpec{SchedulerName: "pal", NodeName: nodeName, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: GPUQuantity(gpus)}}}}}}
	return p
}

// owned gives p a controller ownerReference (a StatefulSet's), so that the
// scheduler may evict it: its controller would recreate it.
func owned(p *corev1.Pod) *corev1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "set", UID: "uid-set", Controller: &yes}}
	return p
}

func gangAnn(g string, size int, extra ...string) map[string]string {
	a := map[string]string{AnnGang: g, AnnGangSize: itoa(size)}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return a
}

func itoa(i int) string { return FormatIndices([]int{i}) }

func noJob(*corev1.Pod) (string, int) { return "", 0 }

func TestSnapshot(t *testing.T) {
	nodes := []*corev1.Node{node("b", 4), node("a", 4), node("cpu", 0)}
	ours := []*corev1.Pod{
		// A running gang of two 1-GPU pods on a/1 and b/0.
		pod("run-1", 1, gangAnn("run", 2, AnnGPUIndices, "0"), "b"),
		pod("run-0", 1, gangAnn("run", 2, AnnGPUIndices, "1"), "a"),
		// A gang with 2 of its 3 pods.
		pod("part-0", 1, gangAnn("part", 3), ""),
		pod("part-1", 1, gangAnn("part", 3), ""),
		// Too big for any node.
		pod("huge", 8, nil, ""),
		// Malformed size.
		pod("bad", 1, map[string]string{AnnGang: "x", AnnGangSize: "many"}, ""),
		// A queued 2x2 gang.
		pod("q-1", 2, gangAnn("q", 2, AnnModel, "BERT"), ""),
		pod("q-0", 2, gangAnn("q", 2, AnnModel, "BERT"), ""),
	}
	foreign := []*corev1.Pod{pod("other", 2, nil, "a")}
	jobs := newJobTable(0)
	s, err := buildSnapshot(nodes, ours, foreign, workload.DefaultModels(), noJob, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.nodeNames, []string{"a", "b"}) || s.cl.Size() != 8 {
		t.Fatalf("nodes %v size %d, want [a b] and 8 GPUs (cpu node skipped)", s.nodeNames, s.cl.Size())
	}
	// Foreign pod takes a's highest free devices: 3 and 2.
	for g, want := range map[int]int{0: -1, 1: s.byKey["ns/run"].job.ID, 2: ownerForeign, 3: ownerForeign, 4: s.byKey["ns/run"].job.ID, 5: -1} {
		if s.cl.Owner(g) != want {
			t.Errorf("GPU %d owner %d, want %d", g, s.cl.Owner(g), want)
		}
	}
	want := map[string]struct {
		st  gangState
		why string
	}{
		"ns/run":      {gangRunning, ""},
		"ns/part":     {gangWaiting, "gang of 3 waits: 2 of 3 pods exist"},
		"ns/pod:huge": {gangWaiting, "each pod asks 8 GPUs but the largest node has 4"},
		"ns/q":        {gangQueued, ""},
	}
	for k, w := range want {
		g := s.byKey[k]
		if g == nil {
			t.Fatalf("no gang %s", k)
		}
		if g.state != w.st || g.why != w.why {
			t.Errorf("gang %s: state %v %q, want %v %q", k, g.state, g.why, w.st, w.why)
		}
	}
	if g := s.byKey["ns/run"]; !slices.Equal(g.gpus, []int{1, 4}) {
		t.Errorf("running gang holds %v, want [1 4]", g.gpus)
	}
	if len(s.bad) != 1 || s.bad[0].pod.Name != "bad" || !strings.Contains(s.bad[0].why, `pal.io/gang-size="many"`) {
		t.Errorf("bad pods %+v", s.bad)
	}
	q := s.byKey["ns/q"]
	if q.job.GPUs != 4 || q.job.Model != "BERT" || q.pending[0].Name != "q-0" {
		t.Errorf("queued gang job %+v, first pod %s", q.job.Spec, q.pending[0].Name)
	}
	// The 2-GPU pods split only along node boundaries.
	if got := s.split(q, []int{0, 1, 4, 5}); len(got) != 2 || got[0].Node != "a" || !slices.Equal(got[1].GPUs, []int{0, 1}) {
		t.Errorf("split = %+v", got)
	}
	if got := s.split(q, []int{0, 4, 5, 6}); got != nil {
		t.Errorf("split of a 1+3 set into 2-GPU pods = %+v, want nil", got)
	}
	// A job keeps its id across rounds.
	id := q.job.ID
	s2, _ := buildSnapshot(nodes, ours, foreign, workload.DefaultModels(), noJob, jobs)
	if s2.byKey["ns/q"].job.ID != id {
		t.Errorf("job id changed across rounds")
	}
}

func TestSnapshotDoubleIndex(t *testing.T) {
	ours := []*corev1.Pod{
		pod("x", 1, map[string]string{AnnGPUIndices: "2"}, "a"),
		pod("y", 1, map[string]string{AnnGPUIndices: "2"}, "a"),
	}
	s, err := buildSnapshot([]*corev1.Node{node("a", 4)}, ours, nil, workload.DefaultModels(), noJob, newJobTable(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.warnings) != 1 || !strings.Contains(s.warnings[0], "already held") {
		t.Fatalf("warnings %q, want one about device 2 held twice", s.warnings)
	}
}

func TestReadPodErrors(t *testing.T) {
	m := workload.DefaultModels()
	for _, c := range []struct {
		p    *corev1.Pod
		want string
	}{
		{pod("a", 0, nil, ""), "requests no nvidia.com/gpu"},
		{pod("a", 1, map[string]string{AnnGang: "g"}, ""), `pal.io/gang-size=""`},
		{pod("a", 1, map[string]string{AnnGangSize: "2"}, ""), "without pal.io/gang"},
		{pod("a", 1, map[string]string{AnnModel: "nosuch"}, ""), `pal.io/model="nosuch": unknown model`},
		{pod("a", 1, map[string]string{AnnClass: "Z"}, ""), "annotation pal.io/class"},
		{pod("a", 1, map[string]string{AnnIterations: "-3"}, ""), "pal.io/iterations"},
	} {
		if _, err := readPod(c.p, m, noJob); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("readPod(%v) = %v, want %q", c.p.Annotations, err, c.want)
		}
	}
}

func TestReadNodeScores(t *testing.T) {
	good := "node,gpu_index,class,score\na,0,A,1.1\na,0,B,1\na,0,C,0.9\na,0,D,1\n"
	s, err := ReadNodeScores("cm", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if v := s[GPUKey{"a", 0}]; v[0] != 1.1 || v[2] != 0.9 {
		t.Fatalf("scores %v", v)
	}
	for _, c := range []struct{ in, want string }{
		{"node,gpu_index,class,score\na,0,A,1.1\n", "cm:2: field \"class\": a/0 has no class B row"},
		{"node,gpu_index,class,score\na,x,A,1\n", "cm:2"},
		{"node,gpu_index,class,score\na,0,Q,1\n", "unknown class"},
		{"node,gpu_index,class,score\na,0,A,-1\n", "cm:2"},
		{"node,index\n", "missing column"},
	} {
		if _, err := ReadNodeScores("cm", strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadNodeScores(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestConfig(t *testing.T) {
	if err := func() error { c := DefaultConfig(); return c.Validate() }(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"period: -1s", "field period"},
		{"scheduler: nope", "field scheduler"},
		{"placement: nope", "field placement"},
		{"perod: 1s", `c.yaml:1: field "perod": unknown`},
		{"period: ten", "duration"},
	} {
		f := t.TempDir() + "/c.yaml"
		if err := writeFile(f, c.yaml); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadConfig(%q) = %v, want %q", c.yaml, err, c.want)
		}
	}
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

// Finished members hold nothing: a gang with one member done and one
// running is leaving (not placed, the running one keeps its GPU), and a
// gang whose members all finished lets a new wave of pods form it again.
func TestSnapshotFinishedMembers(t *testing.T) {
	done := func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodSucceeded; return p }
	ours := []*corev1.Pod{
		done(pod("a-0", 1, gangAnn("a", 2, AnnGPUIndices, "0"), "n")),
		pod("a-1", 1, gangAnn("a", 2, AnnGPUIndices, "1"), "n"),
		done(pod("b-0", 1, gangAnn("b", 2, AnnGPUIndices, "2"), "n")),
		done(pod("b-1", 1, gangAnn("b", 2, AnnGPUIndices, "3"), "n")),
		pod("b-2", 1, gangAnn("b", 2), ""),
		pod("b-3", 1, gangAnn("b", 2), ""),
	}
	s, err := buildSnapshot([]*corev1.Node{node("n", 4)}, ours, nil, workload.DefaultModels(), noJob, newJobTable(0))
	if err != nil {
		t.Fatal(err)
	}
	if g := s.byKey["ns/a"]; g.state != gangLeaving || !slices.Equal(g.gpus, []int{1}) {
		t.Errorf("gang a: state %v GPUs %v, want leaving holding [1]", g.state, g.gpus)
	}
	if g := s.byKey["ns/b"]; g.state != gangQueued {
		t.Errorf("gang b (new wave): state %v %q, want queued", g.state, g.why)
	}
	if s.cl.FreeCount() != 3 {
		t.Errorf("free GPUs %d, want 3", s.cl.FreeCount())
	}
}
