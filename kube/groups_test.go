package kube

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamiclister"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	listerschedv1beta1 "k8s.io/client-go/listers/scheduling/v1beta1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/workload"
)

// Builders for the tests' PodGroups and the pods that name them.

func nativePG(name string, minCount int32) *schedv1beta1.PodGroup {
	pg := &schedv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1}}
	if minCount > 0 {
		pg.Spec.SchedulingPolicy.Gang = &schedv1beta1.GangSchedulingPolicy{MinCount: minCount}
	} else {
		pg.Spec.SchedulingPolicy.Basic = &schedv1beta1.BasicSchedulingPolicy{}
	}
	return pg
}

func coschedPG(name string, minMember any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CoschedPodGroups.GroupVersion().String(), "kind": "PodGroup",
		"metadata": map[string]any{"namespace": "ns", "name": name},
		"spec":     map[string]any{},
	}}
	if minMember != nil {
		u.Object["spec"].(map[string]any)["minMember"] = minMember
	}
	return u
}

func withNative(p *corev1.Pod, group string) *corev1.Pod {
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

func withCosched(p *corev1.Pod, group string) *corev1.Pod {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[LabelCoschedPodGroup] = group
	return p
}

func nativeLister(pgs ...*schedv1beta1.PodGroup) listerschedv1beta1.PodGroupLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, pg := range pgs {
		_ = idx.Add(pg)
	}
	return listerschedv1beta1.NewPodGroupLister(idx)
}

func coschedLister(us ...*unstructured.Unstructured) dynamiclister.Lister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, u := range us {
		_ = idx.Add(u)
	}
	return dynamiclister.New(idx, CoschedPodGroups)
}

func jobOf(name string, par int) jobGang {
	return func(*corev1.Pod) (string, int) { return "ns/job:" + name, par }
}

// One precedence rule: native PodGroup, then scheduler-plugins PodGroup,
// then pal.io/gang, then the Job, then the pod alone; a named group that
// is missing, unserved or invalid makes the pod wait with that reason.
func TestGangPrecedence(t *testing.T) {
	served := &groupSources{
		native:  nativeGroups{served: true, lister: nativeLister(nativePG("pg", 4), nativePG("basic", 0), nativePG("one", 1))},
		cosched: coschedGroups{served: true, lister: coschedLister(coschedPG("xg", int64(3)), coschedPG("x1", int64(1)), coschedPG("xnone", nil), coschedPG("xstr", "3"), coschedPG("xneg", int64(-2)))},
	}
	unserved := &groupSources{}
	all := func(p *corev1.Pod) *corev1.Pod {
		return withCosched(withNative(p, "pg"), "xg")
	}
	for _, c := range []struct {
		name     string
		p        *corev1.Pod
		src      *groupSources
		job      jobGang
		key      string
		size     int
		sizeFrom string
		kind     podspec.GroupKind
		err      string
	}{
		{"native beats every other form", all(pod("p", 1, gangAnn("g", 2), "")), served, jobOf("j", 5),
			"ns/podgroup:pg", 4, "spec.schedulingPolicy.gang.minCount of PodGroup ns/pg", podspec.GroupNative, ""},
		{"scheduler-plugins beats pal.io/gang and the Job", withCosched(pod("p", 1, gangAnn("g", 2), ""), "xg"), served, jobOf("j", 5),
			"ns/coscheduling:xg", 3, "spec.minMember of PodGroup ns/xg (scheduling.x-k8s.io)", podspec.GroupCosched, ""},
		{"pal.io/gang beats the Job", pod("p", 1, gangAnn("g", 2), ""), served, jobOf("j", 5), "ns/g", 2, AnnGangSize, podspec.GroupNone, ""},
		{"the Job", pod("p", 1, nil, ""), served, jobOf("j", 5), "ns/job:j", 5, "the Job's parallelism", podspec.GroupNone, ""},
		{"alone", pod("p", 1, nil, ""), served, noJob, "ns/pod:p", 1, "", podspec.GroupNone, ""},
		{"a PodGroup makes pal.io/gang-size unread", withNative(pod("p", 1, map[string]string{AnnGangSize: "x"}, ""), "pg"), served, noJob,
			"ns/podgroup:pg", 4, "spec.schedulingPolicy.gang.minCount of PodGroup ns/pg", podspec.GroupNative, ""},
		{"basic policy: no gang", withNative(pod("p", 1, gangAnn("g", 2), ""), "basic"), served, jobOf("j", 5), "ns/pod:p", 1, "", podspec.GroupNone, ""},
		{"minCount 1: no gang", withNative(pod("p", 1, nil, ""), "one"), served, noJob, "ns/pod:p", 1, "", podspec.GroupNone, ""},
		{"minMember 1: no gang", withCosched(pod("p", 1, nil, ""), "x1"), served, noJob, "ns/pod:p", 1, "", podspec.GroupNone, ""},
		{"minMember absent: no gang", withCosched(pod("p", 1, nil, ""), "xnone"), served, noJob, "ns/pod:p", 1, "", podspec.GroupNone, ""},
		{"native group missing: waits", withNative(pod("p", 1, gangAnn("g", 2), ""), "gone"), served, jobOf("j", 5), "", 0, "", 0,
			"waits for PodGroup ns/gone (scheduling.k8s.io/v1beta1), which does not exist yet"},
		{"scheduler-plugins group missing: waits", withCosched(pod("p", 1, nil, ""), "gone"), served, noJob, "", 0, "", 0,
			"waits for PodGroup ns/gone (scheduling.x-k8s.io/v1alpha1), which does not exist yet"},
		{"native API not served: waits", withNative(pod("p", 1, nil, ""), "pg"), unserved, noJob, "", 0, "", 0,
			"the apiserver does not serve scheduling.k8s.io/v1beta1 podgroups (start it with --feature-gates=GenericWorkload=true"},
		{"CRD not installed: waits", withCosched(pod("p", 1, nil, ""), "xg"), unserved, noJob, "", 0, "", 0,
			"does not serve scheduling.x-k8s.io/v1alpha1 podgroups (install the scheduler-plugins PodGroup CRD"},
		{"minMember a string", withCosched(pod("p", 1, nil, ""), "xstr"), served, noJob, "", 0, "", 0,
			"PodGroup ns/xstr (scheduling.x-k8s.io/v1alpha1): spec.minMember is 3, want a whole number"},
		{"minMember negative", withCosched(pod("p", 1, nil, ""), "xneg"), served, noJob, "", 0, "", 0,
			"spec.minMember -2 is out of range 0..65536"},
		{"empty label", withCosched(pod("p", 1, nil, ""), ""), served, noJob, "", 0, "", 0, "label scheduling.x-k8s.io/pod-group is empty"},
		{"empty podGroupName", withNative(pod("p", 1, nil, ""), ""), served, noJob, "", 0, "", 0, "spec.schedulingGroup.podGroupName is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := readPod(c.p, workload.DefaultModels(), c.job, c.src.list()...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want it to contain %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Gang != c.key || s.Size != c.size || s.SizeFrom != c.sizeFrom || s.Group.Kind != c.kind {
				t.Errorf("gang %q size %d from %q kind %d, want %q %d %q %d", s.Gang, s.Size, s.SizeFrom, s.Group.Kind, c.key, c.size, c.sizeFrom, c.kind)
			}
		})
	}
}

// A gang bigger than its PodGroup's minCount waits, naming the field.
func TestPodGroupExactSize(t *testing.T) {
	src := &groupSources{native: nativeGroups{served: true, lister: nativeLister(nativePG("pg", 2))}}
	ours := []*corev1.Pod{withNative(pod("a", 1, nil, ""), "pg"), withNative(pod("b", 1, nil, ""), "pg"), withNative(pod("c", 1, nil, ""), "pg")}
	s, err := buildSnapshot([]*corev1.Node{node("n", 4)}, ours, nil, workload.DefaultModels(), noJob, src.list()...)
	if err != nil {
		t.Fatal(err)
	}
	g := s.ByKey["ns/podgroup:pg"]
	want := "gang ns/podgroup:pg has 3 pods but spec.schedulingPolicy.gang.minCount of PodGroup ns/pg says 2"
	if g == nil || g.State != state.GangWaiting || g.Why != want {
		t.Fatalf("gang %+v, want waiting with %q", g, want)
	}
}

// fakeWithGroups is newFake with both PodGroup APIs in discovery.
func fakeWithGroups(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *fakeCluster) {
	cs, fc := newFake(t, objs...)
	cs.Resources = []*metav1.APIResourceList{
		{GroupVersion: NativePodGroupAPI, APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}}},
		{GroupVersion: CoschedPodGroups.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}}},
	}
	return cs, fc
}

// A native gang of 4 one-GPU pods on two 2-GPU nodes: with 3 pods nothing
// binds and the PodGroup reads Unschedulable with the wait reason; with
// the 4th all four bind, each on its own device, and the PodGroup reads
// PodGroupInitiallyScheduled=True/Scheduled. The same gang under a
// scheduler-plugins PodGroup reads phase PreScheduling, then Scheduled
// with scheduled=4.
func TestRoundPodGroupsAllOrNothing(t *testing.T) {
	for _, kind := range []string{"native", "coscheduling"} {
		t.Run(kind, func(t *testing.T) {
			mk := func(i int) *corev1.Pod {
				p := pod("w-"+itoa(i), 1, nil, "")
				if kind == "native" {
					return withNative(p, "pg")
				}
				return withCosched(p, "pg")
			}
			objs := []runtime.Object{node("n0", 2), node("n1", 2), mk(0), mk(1), mk(2)}
			if kind == "native" {
				objs = append(objs, nativePG("pg", 4))
			}
			cs, fc := fakeWithGroups(t, objs...)
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{CoschedPodGroups: "PodGroupList"}, coschedPG("pg", int64(4)))
			s, err := New(testCfg(), cs, discardLog(), WithDynamic(dyn))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s.startFactories(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
				t.Fatal("informers did not sync")
			}
			s.binder.Start(ctx)
			roundWait(s, ctx, time.Now())
			if len(fc.binds) != 0 {
				t.Fatalf("3 of 4 pods bound %v", keys(fc.binds))
			}
			wantWhy := "gang of 4 waits: 3 of 4 pods exist"
			if kind == "native" {
				c := nativeCond(t, cs)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Unschedulable" || c.Message != wantWhy || c.ObservedGeneration != 1 {
					t.Fatalf("condition %+v, want False/Unschedulable %q", c, wantWhy)
				}
			} else if st := coschedSt(t, dyn); st["phase"] != "Pending" || st["scheduled"] != nil {
				t.Fatalf("status %v, want phase Pending, no scheduled", st)
			}
			if _, err := cs.CoreV1().Pods("ns").Create(ctx, mk(3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitInformer(t, s, "w-3", true)
			roundWait(s, ctx, time.Now())
			if len(fc.binds) != 4 {
				t.Fatalf("binds %v, want all 4", keys(fc.binds))
			}
			// The round after the binds landed writes the group's status.
			roundWait(s, ctx, time.Now())
			seen := map[string]string{}
			for name, b := range fc.binds {
				d := b.Target.Name + "/" + b.Annotations[AnnGPUIndices]
				if other, dup := seen[d]; dup {
					t.Errorf("device %s given to %s and %s", d, other, name)
				}
				seen[d] = name
			}
			if kind == "native" {
				c := nativeCond(t, cs)
				if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Scheduled" || c.Message != "all 4 pods bound by pal" {
					t.Fatalf("condition %+v, want True/Scheduled", c)
				}
			} else {
				st := coschedSt(t, dyn)
				if st["phase"] != "Scheduled" || st["scheduled"] != int64(4) || st["scheduleStartTime"] == nil {
					t.Fatalf("status %v, want phase Scheduled, scheduled 4, a start time", st)
				}
			}
		})
	}
}

func nativeCond(t *testing.T, cs *fake.Clientset) *metav1.Condition {
	t.Helper()
	pg, err := cs.SchedulingV1beta1().PodGroups("ns").Get(context.Background(), "pg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return apimeta.FindStatusCondition(pg.Status.Conditions, schedv1beta1.PodGroupInitiallyScheduled)
}

func coschedSt(t *testing.T, dyn *dynamicfake.FakeDynamicClient) map[string]any {
	t.Helper()
	u, err := dyn.Resource(CoschedPodGroups).Namespace("ns").Get(context.Background(), "pg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _, _ := unstructured.NestedMap(u.Object, "status")
	return st
}

// The True condition is final: a later wait reason does not turn it back.
func TestNativeConditionTrueIsFinal(t *testing.T) {
	now := time.Unix(100, 0)
	pg := nativePG("pg", 2)
	up, _ := nativeWant(true, 2, "pal", "")
	pg.Status.Conditions = nextNativeConditions(pg, up, now)
	if len(pg.Status.Conditions) != 1 || pg.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Fatalf("conditions %+v", pg.Status.Conditions)
	}
	if again := nextNativeConditions(pg, up, now.Add(time.Second)); again != nil {
		t.Errorf("same condition again: %+v, want no write", again)
	}
	down, _ := nativeWant(false, 2, "pal", "gang of 2 waits: 1 of 2 pods exist")
	if got := nextNativeConditions(pg, down, now); got != nil {
		t.Errorf("True went back: %+v", got)
	}
	if _, ok := nativeWant(false, 2, "pal", ""); ok {
		t.Errorf("a condition with nothing to say")
	}
}

// The scheduler-plugins phase follows the counts; Finished and Failed
// are final; fields PAL does not own are kept.
func TestCoschedStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		old   map[string]any
		c     coschedCounts
		phase string
	}{
		{map[string]any{}, coschedCounts{Pods: 2}, "Pending"},
		{map[string]any{}, coschedCounts{Pods: 4}, "PreScheduling"},
		{map[string]any{}, coschedCounts{Pods: 4, Scheduled: 2}, "Scheduling"},
		{map[string]any{}, coschedCounts{Pods: 4, Scheduled: 4}, "Scheduled"},
		{map[string]any{}, coschedCounts{Pods: 4, Scheduled: 4, Running: 3, Succeeded: 1}, "Running"},
		{map[string]any{}, coschedCounts{Pods: 4, Scheduled: 4, Running: 3, Failed: 1}, "Failed"},
		{map[string]any{}, coschedCounts{Pods: 4, Scheduled: 4, Succeeded: 4}, "Finished"},
		{map[string]any{"phase": "Finished"}, coschedCounts{Pods: 4}, "Finished"},
		{map[string]any{"phase": "Failed"}, coschedCounts{}, "Failed"},
	} {
		got := coschedStatus(c.old, 4, c.c, now)
		if got["phase"] != c.phase {
			t.Errorf("%+v from %v: phase %v, want %s", c.c, c.old, got["phase"], c.phase)
		}
	}
	got := coschedStatus(map[string]any{"occupiedBy": "ns/job", "scheduleStartTime": "2020-01-01T00:00:00Z"}, 2, coschedCounts{Pods: 2, Scheduled: 2, Running: 1}, now)
	if got["occupiedBy"] != "ns/job" || got["scheduleStartTime"] != "2020-01-01T00:00:00Z" || got["scheduled"] != int64(2) || got["running"] != int64(1) {
		t.Errorf("status %v: kept fields or counts wrong", got)
	}
	if got := coschedStatus(map[string]any{}, 2, coschedCounts{Pods: 2, Scheduled: 1}, now); got["scheduleStartTime"] != "2026-01-02T03:04:05Z" {
		t.Errorf("start time %v, want the first bind's", got["scheduleStartTime"])
	}
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Evicting a native gang marks its PodGroup DisruptionTarget=True with
// reason PreemptionByScheduler and the eviction's reason; binding it
// again removes that condition and leaves PodGroupInitiallyScheduled True.
func TestNativeDisruptionTarget(t *testing.T) {
	pg := nativePG("pg", 2)
	up, _ := nativeWant(true, 2, "pal", "")
	pg.Status.Conditions = nextNativeConditions(pg, up, time.Unix(1, 0))
	cs, fc := fakeWithGroups(t, pg, node("n0", 4))
	s := startRounds(t, testCfg(), cs)
	members := []*corev1.Pod{owned(withNative(pod("a", 2, nil, "n0"), "pg")), owned(withNative(pod("b", 2, nil, "n0"), "pg"))}
	g := &gang{Key: "ns/podgroup:pg", Spec: podspec.Spec{Size: 2, Group: podspec.GroupID{Kind: podspec.GroupNative, NS: "ns", Name: "pg"}}, Bound: members}
	s.submit(s.evict(g, "preempted for gang ns/big"))
	_ = s.binder.Wait(context.Background())
	s.statusWG.Wait()
	if len(fc.evicted) != 2 {
		t.Fatalf("evicted %v", fc.evicted)
	}
	got, err := cs.SchedulingV1beta1().PodGroups("ns").Get(context.Background(), "pg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := apimeta.FindStatusCondition(got.Status.Conditions, schedv1beta1.DisruptionTarget)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != "PreemptionByScheduler" || d.Message != "preempted for gang ns/big" {
		t.Fatalf("DisruptionTarget %+v", d)
	}
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, schedv1beta1.PodGroupInitiallyScheduled) {
		t.Errorf("PodGroupInitiallyScheduled lost: %+v", got.Status.Conditions)
	}
	again := nextNativeConditions(got, up, time.Unix(2, 0))
	if len(again) != 1 || again[0].Type != schedv1beta1.PodGroupInitiallyScheduled {
		t.Errorf("after a new bind: %+v, want only PodGroupInitiallyScheduled", again)
	}
}

// Whatever a scheduler-plugins PodGroup holds, coschedRef answers a gang
// of 2..65536 pods of that group, the pod alone, or an error naming the
// PodGroup, and never panics.
func FuzzCoschedRef(f *testing.F) {
	for _, s := range []string{`{"spec":{"minMember":4}}`, `{"spec":{"minMember":"4"}}`, `{"spec":{"minMember":1.5}}`,
		`{"spec":{"minMember":-1}}`, `{"spec":{}}`, `{"spec":{"minMember":1e30}}`, `{"spec":7}`, `{}`} {
		f.Add(s)
	}
	// A long minMember of control bytes, and a long list of numbers.
	f.Add(`{"spec":{"minMember":"` + strings.Repeat(`\u0001`, 8000) + `"}}`)
	f.Add(`{"spec":{"minMember":[` + strings.Repeat("1e300,", 2000) + `1]}}`)
	f.Fuzz(func(t *testing.T, js string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(`{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"x","namespace":"ns"}}`)); err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if json.Unmarshal([]byte(js), &body) != nil {
			return
		}
		if spec, ok := body["spec"]; ok {
			u.Object["spec"] = spec
		}
		p := pod("p", 1, nil, "")
		ref, ok, err := podspec.CoschedRef(p, u)
		switch {
		case !ok:
			t.Fatalf("%s: not claimed", js)
		case err != nil:
			if !strings.Contains(err.Error(), "PodGroup ns/x") {
				t.Fatalf("%.300s: error %.300q does not name the PodGroup", js, err)
			}
			// A PodGroup is anyone's object: whatever its spec holds,
			// the error stays short.
			if n := len(err.Error()); n > 2048 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
		case ref.Key == "ns/pod:p":
			if ref.Size != 1 {
				t.Fatalf("%s: alone with size %d", js, ref.Size)
			}
		case ref.Key != "ns/coscheduling:x" || ref.Size < 2 || ref.Size > 1<<16:
			t.Fatalf("%s: %+v", js, ref)
		}
	})
}

// A PodGroup API that is served but that this replica may not list is not
// watched (its informer would never sync and no round would run): the
// scheduler runs rounds, and a pod naming such a group waits, saying what
// to grant.
func TestPodGroupsServedButForbidden(t *testing.T) {
	cs, fc := fakeWithGroups(t, node("n0", 4), withNative(pod("a", 1, nil, ""), "pg"), pod("b", 1, nil, ""))
	cs.PrependReactor("list", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "podgroups"}, "", errors.New("RBAC"))
	})
	s := startRounds(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	if len(fc.binds) != 1 || fc.binds["b"] == nil {
		t.Fatalf("binds %v, want b only", keys(fc.binds))
	}
	if why := s.lastWhy["ns/pod:a"]; !strings.Contains(why, "cannot list scheduling.k8s.io/v1beta1 podgroups") || !strings.Contains(why, "grant it get, list and watch") {
		t.Errorf("a waits with %q", why)
	}
}
