//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	admv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/kube"
)

// applyDeploy creates every object in deploy/*.yaml with client-go (no
// kubectl), in file order: namespace first, the admission policy last.
func applyDeploy(t *testing.T, cs kubernetes.Interface) map[string]runtime.Object {
	t.Helper()
	objs := map[string]runtime.Object{}
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml", "service.yaml", "admission-policy.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		applyManifests(t, cs, "deploy/"+f, raw, objs)
	}
	return objs
}

// manifest is one decoded document of a YAML stream.
type manifest struct {
	obj runtime.Object
	gvk *schema.GroupVersionKind
}

// decodeManifests splits a YAML stream into its objects, in order (a
// document of comments only is skipped); name says where it came from.
func decodeManifests(t *testing.T, name string, raw []byte) []manifest {
	t.Helper()
	var out []manifest
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			if runtime.IsMissingKind(err) { // a document of comments only
				continue
			}
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, manifest{obj, gvk})
	}
	return out
}

// applyManifests creates each object of a YAML stream, in order, and
// records it in objs by kind; name says where the stream came from.
func applyManifests(t *testing.T, cs kubernetes.Interface, name string, raw []byte, objs map[string]runtime.Object) {
	t.Helper()
	ctx := context.Background()
	for _, m := range decodeManifests(t, name, raw) {
		obj, gvk := m.obj, m.gvk
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			_, err = cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *admv1.ValidatingAdmissionPolicy:
			_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
		case *admv1.ValidatingAdmissionPolicyBinding:
			_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("%s: unexpected %v", name, gvk)
		}
		if err != nil {
			t.Fatalf("%s: apply %v: %v", name, gvk.Kind, err)
		}
		objs[gvk.Kind] = obj
	}
}

// The manifests apply cleanly, and the scheduler runs under the service
// account with the least-privilege role: it can do its whole job, and the
// role allows nothing beyond what the job needs.
func TestDeployAndRBAC(t *testing.T) {
	e := newEnv(t, 1, 4)
	checkInstalled(t, e, "deploy/", applyDeploy(t, e.cs))
}

// checkInstalled runs, under the installed service account and with the
// installed config, the scheduler's whole job, then checks that the role
// allows nothing more. src names what installed objs (deploy/, the chart).
func checkInstalled(t *testing.T, e *env, src string, objs map[string]runtime.Object) {
	t.Helper()
	ctx := context.Background()
	dep := objs["Deployment"].(*appsv1.Deployment)
	if *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.ServiceAccountName != "pal-scheduler" ||
		dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot == nil || !*dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s deployment: replicas %d, SA %q, non-root %v", src, *dep.Spec.Replicas, dep.Spec.Template.Spec.ServiceAccountName, dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot)
	}
	// The scheduler's own config, from the deployed ConfigMap.
	cm := objs["ConfigMap"].(*corev1.ConfigMap)
	cfg := kube.DefaultConfig()
	if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatalf("%s ConfigMap config.yaml: %v", src, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s ConfigMap config.yaml: %v", src, err)
	}
	cfg.MetricsAddr = ""
	cfg.Period = kube.Duration{Duration: 300 * time.Millisecond}
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky" // exercises eviction too
	cfg.PreemptBarePods = true                               // of the test's bare pods

	// A token for the service account (TokenRequest).
	tr, err := e.cs.CoreV1().ServiceAccounts("pal-system").CreateToken(ctx, "pal-scheduler",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := &rest.Config{Host: e.cl.Server, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	saCS, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}

	// Enough: the whole job under the SA (Lease, ConfigMap, binds, events, evictions).
	if _, err := e.cs.CoreV1().ConfigMaps("pal-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system"},
		Data: map[string]string{kube.ScoresKey: "node,gpu_index,class,score\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, _ := e.runSchedulerWith(cfg, saCS, "sa")
	old := e.gang("old", 2, 2, nil)
	e.eventually(20*time.Second, "bound under the service account", func() bool { return e.bound(old...) })
	time.Sleep(time.Second)
	nw := e.gang("new", 2, 2, nil)
	e.eventually(20*time.Second, "eviction under the service account", func() bool { return e.pod(old[0]) == nil && e.pod(old[1]) == nil })
	e.eventually(20*time.Second, "new gang bound", func() bool { return e.bound(nw...) })
	// Events are posted after the binds they report (they wait for the
	// binder), so the test waits for this one.
	e.eventually(20*time.Second, "a Scheduled event written under the service account", func() bool { return e.hasEvent(nw[0], "Scheduled", "gpu-node-000") })
	if l, err := e.cs.CoordinationV1().Leases("pal-system").Get(ctx, "pal-scheduler", metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity == nil {
		t.Errorf("Lease not held under the service account: %v", err)
	}
	if s.Binds() != 4 {
		t.Errorf("binds %d, want 4", s.Binds())
	}

	// No more: what the role must not allow.
	user := "system:serviceaccount:pal-system:pal-scheduler"
	for _, c := range []struct {
		allowed                       bool
		verb, group, res, sub, ns, nm string
	}{
		{true, "create", "", "pods", "binding", "jobs", ""},
		{true, "patch", "", "pods", "", "jobs", "p"}, // its annotations (promises, forecasts, leases)
		{true, "create", "", "pods", "eviction", "jobs", ""},
		{true, "watch", "", "nodes", "", "", ""},
		{true, "update", "coordination.k8s.io", "leases", "", "pal-system", "pal-scheduler"},
		{true, "list", "", "configmaps", "", "pal-system", ""},
		{true, "watch", "scheduling.k8s.io", "podgroups", "", "", ""},
		{true, "patch", "scheduling.k8s.io", "podgroups", "status", "jobs", "pg"},
		{true, "list", "scheduling.x-k8s.io", "podgroups", "", "jobs", ""},
		{true, "update", "scheduling.x-k8s.io", "podgroups", "status", "jobs", "pg"},
		{false, "update", "scheduling.k8s.io", "podgroups", "", "jobs", "pg"},
		{false, "create", "scheduling.x-k8s.io", "podgroups", "", "jobs", ""},
		{false, "delete", "scheduling.k8s.io", "podgroups", "", "jobs", "pg"},
		{false, "create", "", "pods", "", "jobs", ""},
		{false, "delete", "", "pods", "", "jobs", ""},
		{false, "update", "", "pods", "", "jobs", ""},
		{false, "patch", "", "pods", "status", "jobs", ""},
		{false, "update", "", "nodes", "", "", ""},
		{false, "get", "", "secrets", "", "pal-system", ""},
		{false, "list", "", "configmaps", "", "jobs", ""},
		{false, "update", "coordination.k8s.io", "leases", "", "kube-system", "kube-scheduler"},
		{false, "create", "batch", "jobs", "", "jobs", ""},
		{false, "update", "", "configmaps", "", "pal-system", "pal-variability"},
		// The learned scores' shards: made and deleted, never updated.
		{true, "create", "", "configmaps", "", "pal-system", ""},
		{true, "delete", "", "configmaps", "", "pal-system", "pal-learned-scores-othergeneration-1"},
		{true, "update", "", "configmaps", "", "pal-system", "pal-learned-scores"},
		{false, "update", "", "configmaps", "", "pal-system", "pal-learned-scores-othergeneration-1"},
		// The evicted gangs' work (evictedWorkConfigMap).
		{true, "update", "", "configmaps", "", "pal-system", "pal-evicted-work"},
		{false, "delete", "", "configmaps", "", "jobs", ""},
	} {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:pal-system", "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: c.res, Subresource: c.sub, Namespace: c.ns, Name: c.nm}}}
		got, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != c.allowed {
			t.Errorf("%s: %s %s %s/%s in %q: allowed %v, want %v", src, user, c.verb, c.res, c.sub, c.ns, got.Status.Allowed, c.allowed)
		}
	}
}

func ptrInt64(v int64) *int64 { return &v }
