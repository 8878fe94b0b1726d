package kube

import (
	"context"
	"os"
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
		// A Themis app name is a metric label: a 100 kB one made /metrics 100 kB bigger.
		{pod("a", 1, map[string]string{AnnApp: strings.Repeat("x", 254)}, ""), "annotation pal.io/app=\"xxxx"},
		{pod("a", 1, map[string]string{AnnApp: strings.Repeat("x", 100000)}, ""), "want an app name of at most 253 bytes of UTF-8, got 100000 bytes"},
		{pod("a", 1, map[string]string{AnnApp: "bad\xff"}, ""), "want an app name of at most 253 bytes of UTF-8"},
	} {
		if _, err := readPod(c.p, m, noJob); err == nil || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 1000 {
			t.Errorf("readPod(%.200v) = %.300v, want %q (in at most 1000 bytes)", c.p.Annotations, err, c.want)
		}
	}
	if _, err := readPod(pod("a", 1, map[string]string{AnnApp: strings.Repeat("x", 253)}, ""), m, noJob); err != nil {
		t.Errorf("an app name of 253 bytes: %v", err)
	}
}

// A required constraint the placement does not read keeps a pending pod
// waiting, told which (it would be bound in breach of it); a preferred
// one, a spread that may be broken, or any of them on a pod already bound
// is not an error.
func TestReadPodUnplaceableConstraints(t *testing.T) {
	m := workload.DefaultModels()
	term := []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}
	weighted := []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term[0]}}
	with := func(node string, f func(*corev1.PodSpec)) *corev1.Pod {
		p := pod("a", 1, nil, node)
		f(&p.Spec)
		return p
	}
	spread := func(w corev1.UnsatisfiableConstraintAction) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: w}}
		}
	}
	for _, c := range []struct {
		name string
		p    *corev1.Pod
		want string // "" for none
	}{
		{"required affinity", with("", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}
		}),
			"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution: pal-kube scheduler does not place by inter-pod affinity"},
		{"required anti-affinity", with("", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}
		}), "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution: pal-kube scheduler does not place by inter-pod anti-affinity, and would bind the pod without it"},
		{"spread that may not be broken", with("", spread(corev1.DoNotSchedule)), "spec.topologySpreadConstraints[0] (whenUnsatisfiable: DoNotSchedule)"},
		{"preferred anti-affinity", with("", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: weighted}}
		}), ""},
		{"spread that may be broken", with("", spread(corev1.ScheduleAnyway)), ""},
		{"bound already", with("n0", spread(corev1.DoNotSchedule)), ""},
	} {
		_, err := readPod(c.p, m, noJob)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
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

// A gang one of whose pods requires what the placement does not read
// waits whole, and its other pods say why, not that the pod is missing.
func TestGangWithUnplaceablePodSaysWhy(t *testing.T) {
	g1 := pod("g-1", 1, gangAnn("g", 3), "")
	g1.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	cs, fc := newFake(t, node("n0", 4), pod("g-0", 1, gangAnn("g", 3), ""), g1, pod("g-2", 1, gangAnn("g", 3), ""))
	s := startRounds(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	if len(fc.binds) > 0 {
		t.Errorf("bound %v, want nothing (the gang lacks a placeable g-1)", keys(fc.binds))
	}
	want := "gang of 3 waits: 2 of its pods can be placed; pod ns/g-1 cannot: spec.topologySpreadConstraints[0] (whenUnsatisfiable: DoNotSchedule): pal-kube scheduler does not place by topology spread"
	if got := s.lastWhy["ns/g"]; !strings.HasPrefix(got, want) {
		t.Errorf("g waits with\n%q, want it to start\n%q", got, want)
	}
}
