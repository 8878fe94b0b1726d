package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/palsched/pal/internal/helmbin"
	"github.com/palsched/pal/kube"
)

// helm returns the helm binary; without one the test fails under CI=true
// and skips, saying how to get one, elsewhere.
func helm(t *testing.T) string {
	t.Helper()
	p, err := helmbin.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the chart tests need helm under CI: %v", err)
		}
		t.Skipf("chart tests: %v", err)
	}
	return p
}

// objects decodes a multi-document YAML stream into typed objects, keyed
// by kind (one object of each kind per stream here).
func objects(t *testing.T, name string, raw []byte) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		if _, dup := out[gvk.Kind]; dup {
			t.Fatalf("%s: two %s objects", name, gvk.Kind)
		}
		out[gvk.Kind] = obj
	}
	return out
}

func stripComments(doc []byte) string {
	var b strings.Builder
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// deployObjects reads the plain manifests in deploy/.
func deployObjects(t *testing.T) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml", "service.yaml", "admission-policy.yaml"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range objects(t, "deploy/"+f, raw) {
			out[k] = o
		}
	}
	return out
}

// loadConfig parses a ConfigMap's config.yaml with the scheduler's own
// loader (defaults, strict keys, validation), from a file as pal
// scheduler --config reads it.
func loadConfig(t *testing.T, cm *corev1.ConfigMap) (kube.Config, error) {
	t.Helper()
	text, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no config.yaml key", cm.Name)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return kube.LoadConfig(p)
}

func render(t *testing.T, release, ns string, set ...string) map[string]runtime.Object {
	t.Helper()
	out, err := helmbin.Template(helm(t), "chart", release, ns, set...)
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, "helm template "+release, out)
}

// The chart's default values install what deploy/*.yaml installs: the
// same scheduler config (as the scheduler's loader reads it), the same
// RBAC rules, and the same pod.
func TestChartMatchesDeploy(t *testing.T) {
	chart := render(t, "pal", "pal-system")
	plain := deployObjects(t)
	for _, k := range []string{"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if chart[k] == nil {
			t.Fatalf("the chart renders no %s", k)
		}
	}
	if len(chart) != 10 {
		t.Errorf("the chart renders %d kinds, want 10 (no Namespace: helm installs into the release's)", len(chart))
	}
	// The admission policy: the same spec, naming the same service
	// account, as deploy/admission-policy.yaml.
	gv, wv := chart["ValidatingAdmissionPolicy"].(*admv1.ValidatingAdmissionPolicy), plain["ValidatingAdmissionPolicy"].(*admv1.ValidatingAdmissionPolicy)
	if !reflect.DeepEqual(gv.Spec, wv.Spec) || gv.Name != wv.Name {
		t.Errorf("ValidatingAdmissionPolicy differs from deploy/admission-policy.yaml:\nchart  %s %+v\ndeploy %s %+v", gv.Name, gv.Spec, wv.Name, wv.Spec)
	}
	gb, wb := chart["ValidatingAdmissionPolicyBinding"].(*admv1.ValidatingAdmissionPolicyBinding), plain["ValidatingAdmissionPolicyBinding"].(*admv1.ValidatingAdmissionPolicyBinding)
	if !reflect.DeepEqual(gb.Spec, wb.Spec) || gb.Name != wb.Name {
		t.Errorf("ValidatingAdmissionPolicyBinding differs from deploy/admission-policy.yaml:\nchart  %s %+v\ndeploy %s %+v", gb.Name, gb.Spec, wb.Name, wb.Spec)
	}
	checkAdmissionPolicy(t, "deploy/admission-policy.yaml", wv, wb, "system:serviceaccount:pal-system:pal-scheduler")

	got, err := loadConfig(t, chart["ConfigMap"].(*corev1.ConfigMap))
	if err != nil {
		t.Fatalf("chart ConfigMap: %v", err)
	}
	want, err := loadConfig(t, plain["ConfigMap"].(*corev1.ConfigMap))
	if err != nil {
		t.Fatalf("deploy/configmap.yaml: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chart config\n%+v\ndeploy/configmap.yaml config\n%+v", got, want)
	}
	if got.Namespace != "pal-system" || got.LeaderElection.LeaseName != "pal-scheduler" || !got.LeaderElection.Enabled || got.MetricsAddr != ":10261" {
		t.Errorf("config: namespace %q, lease %q (enabled %v), metrics %q", got.Namespace, got.LeaderElection.LeaseName, got.LeaderElection.Enabled, got.MetricsAddr)
	}

	for _, k := range []string{"ClusterRole", "Role"} {
		var g, w []rbacv1.PolicyRule
		switch o := chart[k].(type) {
		case *rbacv1.ClusterRole:
			g, w = o.Rules, plain[k].(*rbacv1.ClusterRole).Rules
		case *rbacv1.Role:
			g, w = o.Rules, plain[k].(*rbacv1.Role).Rules
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s rules differ from deploy/rbac.yaml:\nchart  %+v\ndeploy %+v", k, g, w)
		}
	}
	crb := chart["ClusterRoleBinding"].(*rbacv1.ClusterRoleBinding)
	if s := crb.Subjects; len(s) != 1 || s[0].Name != "pal-scheduler" || s[0].Namespace != "pal-system" || crb.RoleRef.Name != "pal-scheduler" {
		t.Errorf("ClusterRoleBinding %+v -> %+v", s, crb.RoleRef)
	}

	gd, wd := chart["Deployment"].(*appsv1.Deployment), plain["Deployment"].(*appsv1.Deployment)
	if *gd.Spec.Replicas != *wd.Spec.Replicas || gd.Name != wd.Name {
		t.Errorf("deployment %s x%d, deploy/ has %s x%d", gd.Name, *gd.Spec.Replicas, wd.Name, *wd.Spec.Replicas)
	}
	gp, wp := gd.Spec.Template.Spec, wd.Spec.Template.Spec
	if !reflect.DeepEqual(gp.SecurityContext, wp.SecurityContext) || gp.ServiceAccountName != wp.ServiceAccountName ||
		gp.PriorityClassName != wp.PriorityClassName || !reflect.DeepEqual(gp.Volumes, wp.Volumes) {
		t.Errorf("pod spec differs from deploy/deployment.yaml:\nchart  %+v\ndeploy %+v", gp, wp)
	}
	gc, wc := gp.Containers[0], wp.Containers[0]
	gc.Image, wc.Image = "", ""
	gc.ImagePullPolicy = ""
	if !reflect.DeepEqual(gc, wc) {
		t.Errorf("container differs from deploy/deployment.yaml:\nchart  %+v\ndeploy %+v", gc, wc)
	}
	if img := gp.Containers[0].Image; img != "pal:latest" {
		t.Errorf("image %q, want pal:latest (the chart's appVersion)", img)
	}
	gs, ws := chart["Service"].(*corev1.Service).Spec, plain["Service"].(*corev1.Service).Spec
	if !reflect.DeepEqual(gs.Ports, ws.Ports) || gs.Type != ws.Type {
		t.Errorf("Service differs from deploy/service.yaml:\nchart  %+v\ndeploy %+v", gs, ws)
	}
	// Each Service selects its own Deployment's pods.
	for _, c := range []struct {
		name string
		sel  map[string]string
		pod  map[string]string
	}{{"chart", gs.Selector, gd.Spec.Template.Labels}, {"deploy/", ws.Selector, wd.Spec.Template.Labels}} {
		for k, v := range c.sel {
			if c.pod[k] != v {
				t.Errorf("%s: the Service selects %s=%s, the pods have %q", c.name, k, v, c.pod[k])
			}
		}
	}
}

// Values reach the scheduler's config under the keys its loader accepts;
// a mistyped key is caught by that loader, naming the key.
func TestChartValues(t *testing.T) {
	objs := render(t, "gpu", "sched",
		"config.placement=pal", "config.period=30s", "config.scheduler=las", "metrics.port=9100", "replicas=3",
		"image.repository=registry.example/pal", "image.tag=v1.2.3")
	cfg, err := loadConfig(t, objs["ConfigMap"].(*corev1.ConfigMap))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Placement != "pal" || cfg.Period.Duration.String() != "30s" || cfg.Scheduler != "las" || cfg.MetricsAddr != ":9100" ||
		cfg.Namespace != "sched" || cfg.LeaderElection.LeaseName != "gpu-scheduler" || cfg.MigrationCost.Duration.String() != "2m0s" {
		t.Errorf("config from values: %+v", cfg)
	}
	d := objs["Deployment"].(*appsv1.Deployment)
	c := d.Spec.Template.Spec.Containers[0]
	if d.Name != "gpu-scheduler" || d.Namespace != "sched" || *d.Spec.Replicas != 3 || c.Image != "registry.example/pal:v1.2.3" || c.Ports[0].ContainerPort != 9100 {
		t.Errorf("deployment %s/%s x%d image %s port %d", d.Namespace, d.Name, *d.Spec.Replicas, c.Image, c.Ports[0].ContainerPort)
	}
	if rb := objs["RoleBinding"].(*rbacv1.RoleBinding); rb.Namespace != "sched" || rb.Subjects[0].Namespace != "sched" || rb.Subjects[0].Name != "gpu-scheduler" {
		t.Errorf("RoleBinding %s: %+v", rb.Namespace, rb.Subjects)
	}

	cells := render(t, "pal", "pal-system", "config.tenancy=hived", "config.cells=/etc/pal/cells.yaml", "config.cellsConfigMap=pal-cells")
	if !slices.ContainsFunc(cells["Role"].(*rbacv1.Role).Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Equal(r.ResourceNames, []string{"pal-cells-applied"}) && slices.Equal(r.Verbs, []string{"update"})
	}) {
		t.Errorf("with config.cellsConfigMap=pal-cells the Role may not update pal-cells-applied: %+v", cells["Role"].(*rbacv1.Role).Rules)
	}

	bad := render(t, "pal", "pal-system", "config.plcement=pal")
	if _, err := loadConfig(t, bad["ConfigMap"].(*corev1.ConfigMap)); err == nil || !strings.Contains(err.Error(), `"plcement"`) {
		t.Errorf("a mistyped config key: loader said %v, want an unknown-field error naming plcement", err)
	}
	if _, err := helmbin.Template(helm(t), "chart", "pal", "pal-system", "config.leaderElection.enabled=false"); err == nil ||
		!strings.Contains(err.Error(), "replicas > 1 needs config.leaderElection.enabled") {
		t.Errorf("two replicas without leader election rendered: %v", err)
	}
	one := render(t, "pal", "pal-system", "config.leaderElection.enabled=false", "replicas=1")
	if cfg, err := loadConfig(t, one["ConfigMap"].(*corev1.ConfigMap)); err != nil || cfg.LeaderElection.Enabled {
		t.Errorf("one replica without election: %v, enabled %v", err, cfg.LeaderElection.Enabled)
	}
}

// schedulerAnnotations are the pod annotations pal-kube scheduler writes
// (at binding, or patched later) and that the admission policy keeps to
// it: every one the scheduler writes on pods. A new one belongs here and
// in deploy/admission-policy.yaml.
var schedulerAnnotations = []string{
	kube.AnnBindInfo, kube.AnnGPUIndices, kube.AnnSlowdown, kube.AnnLeaseUntil,
	kube.AnnBackfillHead, kube.AnnBackfillPromise, kube.AnnEstimatedStart,
}

// checkAdmissionPolicy checks a rendered policy and its binding: the
// binding denies by the policy, the policy guards pods and their
// subresources on CREATE and UPDATE, fails closed, lists the scheduler's
// annotations (and none its users write), and exempts user (the
// scheduler's service account) in its match condition.
func checkAdmissionPolicy(t *testing.T, src string, p *admv1.ValidatingAdmissionPolicy, b *admv1.ValidatingAdmissionPolicyBinding, user string) {
	t.Helper()
	if b.Spec.PolicyName != p.Name || !slices.Equal(b.Spec.ValidationActions, []admv1.ValidationAction{admv1.Deny}) {
		t.Errorf("%s: binding %s names policy %q (want %q), actions %v (want Deny)", src, b.Name, b.Spec.PolicyName, p.Name, b.Spec.ValidationActions)
	}
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", src, p.Spec.FailurePolicy)
	}
	if r := p.Spec.MatchConstraints.ResourceRules; len(r) != 1 || !slices.Equal(r[0].Resources, []string{"pods", "pods/*"}) ||
		!slices.Equal(r[0].Operations, []admv1.OperationType{admv1.Create, admv1.Update}) || !slices.Equal(r[0].APIGroups, []string{""}) {
		t.Errorf("%s: policy matches %+v, want pods and pods/* on CREATE and UPDATE", src, r)
	}
	if mc := p.Spec.MatchConditions; len(mc) != 1 || !strings.Contains(mc[0].Expression, `request.userInfo.username in ["`+user+`"`) {
		t.Errorf("%s: match conditions %+v do not exempt %s", src, mc, user)
	}
	var owned []string
	for _, v := range p.Spec.Variables {
		if v.Name == "owned" {
			if err := json.Unmarshal([]byte(v.Expression), &owned); err != nil {
				t.Errorf("%s: variable owned %q is not a plain list of strings: %v", src, v.Expression, err)
			}
		}
	}
	if !slices.Equal(owned, schedulerAnnotations) {
		t.Errorf("%s: the policy guards %q, want the scheduler's annotations %q", src, owned, schedulerAnnotations)
	}
	for _, a := range []string{kube.AnnGang, kube.AnnGangSize, kube.AnnApp, kube.AnnClass, kube.AnnModel, kube.AnnIterations,
		kube.AnnVC, kube.AnnPriority, kube.AnnPinnedCell, kube.AnnLeafCellType, kube.AnnProgress, kube.AnnStepTime} {
		if slices.Contains(owned, a) {
			t.Errorf("%s: the policy guards %s, which users write", src, a)
		}
	}
}

// The admission policy names the service account the chart makes, and
// the identities of admissionPolicy.extraUsernames and extraGroups;
// admissionPolicy.enabled=false leaves it out.
func TestChartAdmissionPolicy(t *testing.T) {
	objs := render(t, "gpu", "sched")
	p, _ := objs["ValidatingAdmissionPolicy"].(*admv1.ValidatingAdmissionPolicy)
	b, _ := objs["ValidatingAdmissionPolicyBinding"].(*admv1.ValidatingAdmissionPolicyBinding)
	if p == nil || b == nil {
		t.Fatalf("the chart renders no admission policy by default: %v, %v", p, b)
	}
	if p.Name != "gpu-scheduler-annotations" || b.Name != p.Name {
		t.Errorf("policy %q, binding %q, want gpu-scheduler-annotations", p.Name, b.Name)
	}
	checkAdmissionPolicy(t, "release gpu in sched", p, b, "system:serviceaccount:sched:gpu-scheduler")

	objs = render(t, "gpu", "sched", "serviceAccount.name=palsa",
		"admissionPolicy.extraUsernames={alice,o'brien}", "admissionPolicy.extraGroups={pal:break-glass}")
	p, b = objs["ValidatingAdmissionPolicy"].(*admv1.ValidatingAdmissionPolicy), objs["ValidatingAdmissionPolicyBinding"].(*admv1.ValidatingAdmissionPolicyBinding)
	checkAdmissionPolicy(t, "serviceAccount.name=palsa", p, b, "system:serviceaccount:sched:palsa")
	want := `!(request.userInfo.username in ["system:serviceaccount:sched:palsa","alice","o'brien"]) && ` +
		`!(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ["pal:break-glass"]))`
	if got := p.Spec.MatchConditions[0].Expression; got != want {
		t.Errorf("with extra identities the match condition is\n%s\nwant\n%s", got, want)
	}

	off := render(t, "gpu", "sched", "admissionPolicy.enabled=false")
	for _, k := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if off[k] != nil {
			t.Errorf("admissionPolicy.enabled=false renders a %s", k)
		}
	}
	if len(off) != 8 {
		t.Errorf("admissionPolicy.enabled=false renders %d kinds, want 8", len(off))
	}
}

// The rights preemptPastBudgets needs (deleting pods, patching their
// status) are installed only on request: by
// deploy/rbac-preempt-past-budgets.yaml beside deploy/rbac.yaml, and by
// the chart with rbac.preemptPastBudgets=true, both as a ClusterRole of
// their own with the same two rules, bound to the scheduler's service
// account. The chart's defaults render none of it (TestChartMatchesDeploy
// counts its kinds).
func TestPreemptPastBudgetsRBAC(t *testing.T) {
	raw, err := helmbin.Template(helm(t), "chart", "pal", "pal-system", "rbac.preemptPastBudgets=true")
	if err != nil {
		t.Fatal(err)
	}
	extra := func(name string, raw []byte) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
		var role *rbacv1.ClusterRole
		var bind *rbacv1.ClusterRoleBinding
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := r.Read()
			if err != nil {
				break
			}
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			switch o := obj.(type) {
			case *rbacv1.ClusterRole:
				if strings.HasSuffix(o.Name, "-preempt-past-budgets") {
					role = o
				}
			case *rbacv1.ClusterRoleBinding:
				if strings.HasSuffix(o.Name, "-preempt-past-budgets") {
					bind = o
				}
			}
		}
		if role == nil || bind == nil {
			t.Fatalf("%s: no ClusterRole and ClusterRoleBinding named *-preempt-past-budgets", name)
		}
		if s := bind.Subjects; len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Name != "pal-scheduler" || s[0].Namespace != "pal-system" || bind.RoleRef.Name != role.Name {
			t.Errorf("%s: binding %+v -> %+v, want the pal-scheduler service account bound to %s", name, bind.Subjects, bind.RoleRef, role.Name)
		}
		return role, bind
	}
	plain, err := os.ReadFile("rbac-preempt-past-budgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := extra("helm template --set rbac.preemptPastBudgets=true", raw)
	pr, _ := extra("deploy/rbac-preempt-past-budgets.yaml", plain)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}},
	}
	for name, got := range map[string][]rbacv1.PolicyRule{"the chart": cr.Rules, "deploy/rbac-preempt-past-budgets.yaml": pr.Rules} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s grants %+v, want pods/status patch and pods delete only", name, got)
		}
	}
}
