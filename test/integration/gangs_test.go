//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
)

// Gangs as the platform writes them, on a dev cluster started with
// --native-gangs: a native PodGroup (scheduling.k8s.io/v1beta1, minCount
// 4) and a scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1,
// minMember 4), each of four 2-GPU pods on five 4-GPU nodes. With three
// of four pods present nothing of the gang binds (all-or-nothing); when
// the fourth arrives all four bind, no device is given twice, and the
// PodGroup's status reads what `kubectl get podgroups` shows: the native
// one PodGroupInitiallyScheduled=True/Scheduled, the scheduler-plugins
// one phase Running with scheduled 4. A pod naming a native PodGroup that
// does not exist waits, saying so, and binds once the group (minCount 1:
// no gang) is created. A batch/v1 Job whose pod template names a native
// PodGroup is one gang of that PodGroup, not of the Job (the precedence
// rule: the PodGroup's key is in every member's bind-info). Last, the two
// examples in deploy/examples bind as docs/gangs.md says.
func TestPodGroupGangs(t *testing.T) {
	e := newEnvOpts(t, devcluster.Options{Nodes: 10, GPUsPerNode: 4, NativeGangs: true,
		APIServerArgs: []string{"audit-log-maxage=1"}})
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.cl.PID("kube-apiserver")))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(devcluster.NativeGangArgs, "--audit-log-maxage=1") {
		if !strings.Contains(string(cmdline), f+"\x00") {
			t.Errorf("kube-apiserver runs without %s: %q", f, cmdline)
		}
	}
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(e.cl.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(e.cl.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	mkNative := func(name string, min int32) {
		pg := &schedv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Spec: schedv1beta1.PodGroupSpec{SchedulingPolicy: schedv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedv1beta1.GangSchedulingPolicy{MinCount: min}}}}
		if _, err := e.cs.SchedulingV1beta1().PodGroups(e.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create native PodGroup %s: %v", name, err)
		}
	}
	mkNative("native", 4)
	x := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "cosched", "namespace": e.ns},
		"spec":     map[string]any{"minMember": int64(4)},
	}}
	if _, err := dyn.Resource(kube.CoschedPodGroups).Namespace(e.ns).Create(ctx, x, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create scheduler-plugins PodGroup: %v", err)
	}
	mkPod := func(name string, gpus int, native, cosched string) string {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: corev1.PodSpec{SchedulerName: "pal", Containers: []corev1.Container{{Name: "train", Image: "train:latest",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(gpus)}}}}}}
		if native != "" {
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &native}
		}
		if cosched != "" {
			p.Labels = map[string]string{kube.LabelCoschedPodGroup: cosched}
		}
		if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		return name
	}
	var nat, cos []string
	for i := range 3 {
		nat = append(nat, mkPod(fmt.Sprintf("nat-%d", i), 2, "native", ""))
		cos = append(cos, mkPod(fmt.Sprintf("cos-%d", i), 2, "", "cosched"))
	}
	late := mkPod("late", 1, "later", "")
	s, _ := e.runSchedulerWith(testConfig(), cs, "pal", kube.WithDynamic(dyn))

	// Three of four: the native group says why it waits, the
	// scheduler-plugins group is Pending, the late pod waits for its group.
	nativeCond := func() *metav1.Condition {
		pg, err := e.cs.SchedulingV1beta1().PodGroups(e.ns).Get(ctx, "native", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return apimeta.FindStatusCondition(pg.Status.Conditions, schedv1beta1.PodGroupInitiallyScheduled)
	}
	coschedStatus := func() map[string]any {
		u, err := dyn.Resource(kube.CoschedPodGroups).Namespace(e.ns).Get(ctx, "cosched", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		return st
	}
	e.eventually(20*time.Second, "native PodGroup Unschedulable while 3 of 4 pods exist", func() bool {
		c := nativeCond()
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Unschedulable" && c.Message == "gang of 4 waits: 3 of 4 pods exist"
	})
	e.eventually(10*time.Second, "scheduler-plugins PodGroup Pending", func() bool { return coschedStatus()["phase"] == "Pending" })
	e.eventually(10*time.Second, "the late pod told its group is missing", func() bool {
		return e.hasEvent(late, "FailedScheduling", "waits for PodGroup jobs/later (scheduling.k8s.io/v1beta1), which does not exist yet")
	})
	r := s.Rounds()
	e.eventually(10*time.Second, "two more rounds", func() bool { return s.Rounds() >= r+2 })
	if n := e.countBound(append(append(nat, cos...), late)...); n != 0 {
		t.Fatalf("%d pods bound with 3 of 4 gang members present and the late pod's group missing, want 0", n)
	}

	// The fourth members arrive: each gang binds whole.
	nat = append(nat, mkPod("nat-3", 2, "native", ""))
	cos = append(cos, mkPod("cos-3", 2, "", "cosched"))
	e.eventually(20*time.Second, "both gangs bound", func() bool { return e.bound(nat...) && e.bound(cos...) })
	e.checkNoDoubleGPU()
	for _, gang := range [][]string{nat, cos} {
		nodes := map[string]int{}
		for _, n := range gang {
			nodes[e.pod(n).Spec.NodeName]++
		}
		if len(nodes) != 2 {
			t.Errorf("gang %v on nodes %v, want 2 whole 4-GPU nodes", gang, nodes)
		}
	}
	e.eventually(10*time.Second, "native PodGroup PodGroupInitiallyScheduled=True", func() bool {
		c := nativeCond()
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "Scheduled" && c.Message == "all 4 pods bound by pal"
	})
	e.eventually(20*time.Second, "scheduler-plugins PodGroup Running with scheduled 4", func() bool {
		st := coschedStatus()
		return st["phase"] == "Running" && fmt.Sprint(st["scheduled"]) == "4" && fmt.Sprint(st["running"]) == "4" && st["scheduleStartTime"] != nil
	})
	// What kubectl get shows: the server's table for each kind.
	for _, path := range []string{"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/jobs/podgroups", "/apis/scheduling.k8s.io/v1beta1/namespaces/jobs/podgroups"} {
		tab := getTable(t, cs, path)
		t.Logf("kubectl get %s:\n%s", path, tab)
		if strings.Contains(path, "x-k8s") && !strings.Contains(tab, "cosched | Running | 4 | 4 | 4") {
			t.Errorf("table %s, want row cosched | Running | 4 | 4 | 4 (phase, minMember, scheduled, running)", tab)
		}
		if strings.Contains(path, "scheduling.k8s.io") && !strings.Contains(tab, "native | Gang | <none> | Scheduled") {
			t.Errorf("table %s, want row native | Gang | <none> | Scheduled (policy, workload, status)", tab)
		}
	}

	// The late pod's group appears (minCount 1: no gang): it binds.
	mkNative("later", 1)
	e.eventually(20*time.Second, "the late pod bound once its group exists", func() bool { return e.bound(late) })
	e.checkNoDoubleGPU()

	// A Job naming a native PodGroup in its template: the PodGroup wins.
	mkNative("jobpg", 4)
	pgName := "jobpg"
	if _, err := e.cs.BatchV1().Jobs(e.ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "jobpg", Namespace: e.ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](4), Completions: ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: "pal", RestartPolicy: corev1.RestartPolicyNever,
				SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: &pgName},
				Containers: []corev1.Container{{Name: "train", Image: "train:latest",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var jp []string
	e.eventually(30*time.Second, "the Job's 4 pods bound", func() bool { jp = e.jobPods("jobpg"); return len(jp) == 4 && e.bound(jp...) })
	for _, n := range jp {
		bi, err := kube.ParseBindInfo(e.pod(n).Annotations[kube.AnnBindInfo])
		if err != nil || bi.Gang != "jobs/podgroup:jobpg" || len(bi.Pods) != 4 {
			t.Errorf("pod %s bind-info %+v (%v), want gang jobs/podgroup:jobpg of 4", n, bi, err)
		}
	}
	e.checkNoDoubleGPU()

	// The examples: 8 pods of 2 GPUs on the 4 nodes left.
	var ex []string
	for _, f := range []string{"podgroup-native.yaml", "podgroup-coscheduling.yaml"} {
		ex = append(ex, applyUnstructured(t, dyn, e.ns, f)...)
	}
	if len(ex) != 8 {
		t.Fatalf("examples hold pods %v, want 8", ex)
	}
	e.eventually(30*time.Second, "the examples' gangs bound", func() bool { return e.bound(ex...) })
	e.checkNoDoubleGPU()
	e.eventually(10*time.Second, "the examples' PodGroups report it", func() bool {
		pg, err := e.cs.SchedulingV1beta1().PodGroups(e.ns).Get(ctx, "gpt-native", metav1.GetOptions{})
		u, err2 := dyn.Resource(kube.CoschedPodGroups).Namespace(e.ns).Get(ctx, "gpt-cosched", metav1.GetOptions{})
		if err != nil || err2 != nil {
			return false
		}
		sched, _, _ := unstructured.NestedInt64(u.Object, "status", "scheduled")
		return apimeta.IsStatusConditionTrue(pg.Status.Conditions, schedv1beta1.PodGroupInitiallyScheduled) && sched == 4
	})
}

// applyUnstructured creates every object of deploy/examples/FILE (Pods
// and both kinds of PodGroup) in ns and returns the pods' names.
func applyUnstructured(t *testing.T, dyn dynamic.Interface, ns, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("deploy/examples/%s: %v", file, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("deploy/examples/%s: %v", file, err)
		}
		gvr := map[string]schema.GroupVersionResource{
			"v1/Pod":                                {Version: "v1", Resource: "pods"},
			"scheduling.k8s.io/v1beta1/PodGroup":    {Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"},
			"scheduling.x-k8s.io/v1alpha1/PodGroup": kube.CoschedPodGroups,
		}[u.GetAPIVersion()+"/"+u.GetKind()]
		if gvr.Resource == "" {
			t.Fatalf("deploy/examples/%s: unexpected %s %s", file, u.GetAPIVersion(), u.GetKind())
		}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("deploy/examples/%s: create %s %s: %v", file, u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "Pod" {
			pods = append(pods, u.GetName())
		}
	}
	return pods
}

// getTable reads path as the server-side table kubectl prints: the
// first cells of each row joined with " | ".
func getTable(t *testing.T, cs *kubernetes.Clientset, path string) string {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Raw()
	if err != nil {
		t.Fatalf("GET %s as a table: %v", path, err)
	}
	var tab metav1.Table
	if err := json.Unmarshal(raw, &tab); err != nil {
		t.Fatal(err)
	}
	var lines []string
	var head []string
	for _, c := range tab.ColumnDefinitions {
		head = append(head, c.Name)
	}
	lines = append(lines, strings.Join(head, " | "))
	for _, r := range tab.Rows {
		var cells []string
		for _, c := range r.Cells {
			cells = append(cells, fmt.Sprint(c))
		}
		lines = append(lines, strings.Join(cells, " | "))
	}
	return strings.Join(lines, "\n")
}
