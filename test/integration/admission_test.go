//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/kube/forecast"
)

// schedulerSA is the scheduler's identity as deploy/ names it.
const schedulerSA = "system:serviceaccount:pal-system:pal-scheduler"

// deniedByPolicy says err is deploy/admission-policy.yaml's refusal (not
// RBAC's, not a conflict) and names annotation ann.
func deniedByPolicy(err error, ann string) bool {
	return err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") &&
		strings.Contains(err.Error(), "pal-scheduler-annotations") && strings.Contains(err.Error(), ann)
}

// annPatch is a merge patch setting (or, with a nil value, removing) one
// annotation.
func annPatch(key string, value *string) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	return b
}

func str(s string) *string { return &s }

// The admission policy of deploy/admission-policy.yaml, applied to a real
// apiserver with the service account and RBAC of deploy/: a user who may
// update pods (alice) can neither add, change nor remove the annotations
// the scheduler writes and trusts, on a pod, through pods/status or
// pods/binding, nor create a pod carrying them (a Job's pods neither),
// and the refusal names the annotation; the annotations users write
// (pal.io/model) stay theirs, and deleting or evicting is not touched.
// The scheduler's service account writes them all, and a scheduler
// running under it binds gangs (bind-info through pods/binding) and
// patches its forecast onto a waiting pod as before.
func TestAdmissionPolicySchedulerAnnotations(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	objs := map[string]runtime.Object{}
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		applyManifests(t, e.cs, "deploy/"+f, raw, objs)
	}

	// alice may write pods in jobs, and the scheduler's service account
	// has deploy/rbac.yaml's role alone (patch on pods for its own
	// annotations, the forecast's here; pods/binding): what refuses
	// either below is the policy, not RBAC.
	writer := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-writer", Namespace: e.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/binding", "pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}},
	}}
	if _, err := e.cs.RbacV1().Roles(e.ns).Create(ctx, writer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RbacV1().RoleBindings(e.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pod-writer", Namespace: e.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(user string, groups ...string) *kubernetes.Clientset {
		rc := rest.CopyConfig(e.cl.RestConfig())
		rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	alice := as("alice", "system:authenticated")
	sched := as(schedulerSA, "system:serviceaccounts", "system:serviceaccounts:pal-system", "system:authenticated")

	aliceP := func(pod string, patch []byte, sub ...string) error {
		_, err := alice.CoreV1().Pods(e.ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}, sub...)
		return err
	}
	bindInfo := `{"gang":"jobs/g","pods":{"g-0":{"node":"gpu-node-000","gpus":[0,1]}},"attained":0,"arrived":"2020-01-01T00:00:00Z"}`
	e.gang("g", 1, 2, nil)

	// Every annotation the scheduler writes, with a value.
	owned := map[string]string{kube.AnnBindInfo: bindInfo, kube.AnnGPUIndices: "0,1", kube.AnnSlowdown: "1", kube.AnnLeaseUntil: "2030-01-01T00:00:00Z",
		kube.AnnBackfillHead: "jobs/h", kube.AnnBackfillPromise: "2030-01-01T00:00:00Z", kube.AnnEstimatedStart: "unknown"}
	// The policy is in force once it refuses a dry run of alice's patch
	// of all of them at once (policies reach the apiserver's admission
	// eventually).
	all := map[string]any{}
	for k, v := range owned {
		all[k] = v
	}
	probe, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": all}})
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := alice.CoreV1().Pods(e.ns).Patch(ctx, "g-0", types.MergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if deniedByPolicy(err, "") {
			break
		}
		if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Fatalf("dry run of alice's patch: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the policy still lets alice write the scheduler's annotations (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Each one alone: alice may not add it, the scheduler may.
	for k, v := range owned {
		if err := aliceP("g-0", annPatch(k, str(v))); !deniedByPolicy(err, k) {
			t.Errorf("alice adding %s: %v, want the policy's refusal naming it", k, err)
		}
	}
	if err := aliceP("g-0", annPatch(kube.AnnBindInfo, str(bindInfo))); err != nil && !strings.Contains(err.Error(), "request by alice") {
		t.Errorf("the refusal does not name who asked: %v", err)
	}
	for k, v := range owned {
		if _, err := sched.CoreV1().Pods(e.ns).Patch(ctx, "g-0", types.MergePatchType, annPatch(k, str(v)), metav1.PatchOptions{}); err != nil {
			t.Errorf("the scheduler's service account writing %s: %v", k, err)
		}
	}

	// Present now: alice may not change or remove them, by patch, by
	// update, or through pods/status; her own annotations stay hers.
	if err := aliceP("g-0", annPatch(kube.AnnBindInfo, str(strings.Replace(bindInfo, "2020", "2000", 1)))); !deniedByPolicy(err, kube.AnnBindInfo) {
		t.Errorf("alice moving arrived back in %s: %v", kube.AnnBindInfo, err)
	}
	if err := aliceP("g-0", annPatch(kube.AnnLeaseUntil, nil)); !deniedByPolicy(err, kube.AnnLeaseUntil) {
		t.Errorf("alice removing %s: %v", kube.AnnLeaseUntil, err)
	}
	if err := aliceP("g-0", annPatch(kube.AnnModel, str("resnet50"))); err != nil {
		t.Errorf("alice setting %s on a pod the scheduler annotated: %v", kube.AnnModel, err)
	}
	p, err := alice.CoreV1().Pods(e.ns).Get(ctx, "g-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations[kube.AnnGPUIndices] = "2,3"
	if _, err := alice.CoreV1().Pods(e.ns).Update(ctx, p, metav1.UpdateOptions{}); !deniedByPolicy(err, kube.AnnGPUIndices) {
		t.Errorf("alice updating %s: %v", kube.AnnGPUIndices, err)
	}
	// Through pods/status, which writes a pod's metadata too.
	if err := aliceP("g-0", annPatch(kube.AnnBackfillPromise, str("2099-01-01T00:00:00Z")), "status"); !deniedByPolicy(err, kube.AnnBackfillPromise) {
		t.Errorf("alice patching %s through pods/status: %v", kube.AnnBackfillPromise, err)
	}
	p = e.pod("g-0")
	for k, v := range owned {
		if p.Annotations[k] != v {
			t.Errorf("%s is %q after alice's tries, the scheduler wrote %q", k, p.Annotations[k], v)
		}
	}
	if p.Annotations[kube.AnnModel] != "resnet50" {
		t.Errorf("%s is %q, alice wrote resnet50", kube.AnnModel, p.Annotations[kube.AnnModel])
	}

	// Creating: not with a scheduler annotation, directly or by a Job.
	mk := func(name string, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: ann},
			Spec: corev1.PodSpec{SchedulerName: "pal", Containers: []corev1.Container{{Name: "train", Image: "train:latest",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}}}
	}
	if _, err := alice.CoreV1().Pods(e.ns).Create(ctx, mk("forged", map[string]string{kube.AnnGang: "g", kube.AnnBindInfo: bindInfo}), metav1.CreateOptions{}); !deniedByPolicy(err, kube.AnnBindInfo) {
		t.Errorf("alice creating a pod with %s: %v", kube.AnnBindInfo, err)
	}
	if _, err := alice.CoreV1().Pods(e.ns).Create(ctx, mk("h-0", map[string]string{kube.AnnGang: "h", kube.AnnModel: "vgg16", kube.AnnIterations: "100"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("alice creating a pod with her own annotations: %v", err)
	}
	tmpl := mk("", map[string]string{kube.AnnBindInfo: bindInfo})
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: e.ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}}}
	if _, err := alice.BatchV1().Jobs(e.ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating a Job: %v", err)
	}

	// Binding: alice's binding may not carry them; the scheduler's does.
	bd := func(pod, ann string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: e.ns, Annotations: map[string]string{kube.AnnGPUIndices: ann}},
			Target: corev1.ObjectReference{Kind: "Node", Name: "gpu-node-000"}}
	}
	if err := alice.CoreV1().Pods(e.ns).Bind(ctx, bd("h-0", "0"), metav1.CreateOptions{}); !deniedByPolicy(err, kube.AnnGPUIndices) {
		t.Errorf("alice binding with %s: %v", kube.AnnGPUIndices, err)
	}
	if err := sched.CoreV1().Pods(e.ns).Bind(ctx, bd("h-0", "3"), metav1.CreateOptions{}); err != nil {
		t.Errorf("the scheduler binding with %s: %v", kube.AnnGPUIndices, err)
	} else if p := e.pod("h-0"); p.Spec.NodeName != "gpu-node-000" || p.Annotations[kube.AnnGPUIndices] != "3" {
		t.Errorf("bound by the scheduler: node %q, %s %q", p.Spec.NodeName, kube.AnnGPUIndices, p.Annotations[kube.AnnGPUIndices])
	}

	// Deleting and evicting are not the policy's.
	if err := alice.PolicyV1().Evictions(e.ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "h-0", Namespace: e.ns}}); err != nil {
		t.Errorf("alice evicting her pod: %v", err)
	}
	if err := alice.CoreV1().Pods(e.ns).Delete(ctx, "g-0", metav1.DeleteOptions{}); err != nil {
		t.Errorf("alice deleting a pod the scheduler annotated: %v", err)
	}

	// The Job controller's pods from a template carrying bind-info are
	// refused: the Job says so.
	e.eventually(30*time.Second, "a FailedCreate event on Job forged naming "+kube.AnnBindInfo, func() bool {
		return e.hasEvent("forged", "FailedCreate", kube.AnnBindInfo)
	})
	if pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=forged"}); err != nil || len(pods.Items) != 0 {
		t.Errorf("Job forged has pods %v (%v)", len(pods.Items), err)
	}

	// A scheduler under the service account (a token, as a deployed one
	// authenticates) binds a gang, bind-info and all, and writes a
	// waiting gang's forecast (on two nodes: with every GPU held by
	// running gangs, which FIFO leaves out of its order, nothing is left
	// to forecast on).
	e.eventually(20*time.Second, "g-0 and h-0 gone", func() bool { return e.pod("g-0") == nil && e.pod("h-0") == nil })
	tr, err := e.cs.CoreV1().ServiceAccounts("pal-system").CreateToken(ctx, "pal-scheduler",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCS, err := kubernetes.NewForConfig(&rest.Config{Host: e.cl.Server, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("pal-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system"},
		Data: map[string]string{kube.ScoresKey: "node,gpu_index,class,score\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Namespace = "pal-system"
	cfg.ForecastEvery = 1
	e.runSchedulerWith(cfg, saCS, "sa", kube.WithForecaster(forecast.Run))
	run := e.gang("run", 2, 2, map[string]string{kube.AnnIterations: "1000000"})
	e.eventually(20*time.Second, "gang run bound under the service account", func() bool { return e.bound(run...) })
	for _, n := range run {
		if _, err := kube.ParseBindInfo(e.pod(n).Annotations[kube.AnnBindInfo]); err != nil {
			t.Errorf("%s bound without its bind-info: %v", n, err)
		}
	}
	wait := e.gang("wait", 2, 4, nil) // more than is free: it waits
	e.eventually(20*time.Second, "the forecast written on the waiting pod under the service account", func() bool {
		return e.pod(wait[0]).Annotations[kube.AnnEstimatedStart] != ""
	})
}
