package devcluster

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/internal/quote"
)

// PodGroupCRD is the scheduler-plugins PodGroup CRD the dev cluster
// installs with NativeGangs (a minimal schema of the fields PAL uses).
//
//go:embed podgroup-crd.yaml
var PodGroupCRD []byte

// NativeGangArgs are the kube-apiserver flags that serve Kubernetes'
// own PodGroup API: the GenericWorkload feature gate (beta, off by
// default in 1.37) and the scheduling.k8s.io/v1beta1 group.
var NativeGangArgs = []string{"--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"}

// ownFlags are kube-apiserver flags Up sets itself; another value would
// cut the cluster off from its own clients.
var ownFlags = map[string]bool{"etcd-servers": true, "bind-address": true, "secure-port": true, "cert-dir": true,
	"token-auth-file": true, "advertise-address": true, "service-account-key-file": true,
	"service-account-signing-key-file": true, "service-account-issuer": true}

// ParseAPIServerArg reads one --apiserver-arg value, KEY=VALUE (a
// leading "--" is allowed), into the flag "--KEY=VALUE". KEY is a flag
// name (lower-case letters, digits and dashes, not one Up sets itself);
// VALUE may be empty but holds no control characters.
func ParseAPIServerArg(s string) (string, error) {
	kv := strings.TrimPrefix(s, "--")
	key, val, ok := strings.Cut(kv, "=")
	if !ok {
		return "", fmt.Errorf("--apiserver-arg %s: want KEY=VALUE, such as feature-gates=GenericWorkload=true", quote.Value(s))
	}
	if key == "" || len(key) > 100 {
		return "", fmt.Errorf("--apiserver-arg %s: empty or overlong flag name", quote.Value(s))
	}
	for i, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0) {
			return "", fmt.Errorf("--apiserver-arg %s: flag name %s may hold only a-z, 0-9 and inner dashes", quote.Value(s), quote.Value(key))
		}
	}
	if ownFlags[key] {
		return "", fmt.Errorf("--apiserver-arg %s: dev-cluster sets --%s itself", quote.Value(s), key)
	}
	for _, r := range val {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("--apiserver-arg %s: control character in the value", quote.Value(s))
		}
	}
	return "--" + key + "=" + val, nil
}

// InstallPodGroupCRD creates the scheduler-plugins PodGroup CRD (if it
// is not there) and waits until the apiserver serves it.
func InstallPodGroupCRD(ctx context.Context, rc *rest.Config) error {
	j, err := yaml.YAMLToJSON(PodGroupCRD)
	if err != nil {
		return fmt.Errorf("podgroup-crd.yaml: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return fmt.Errorf("podgroup-crd.yaml: %v", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %v", u.GetName(), err)
	}
	d, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l, err := d.ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1"); err == nil {
			for _, r := range l.APIResources {
				if r.Name == "podgroups" {
					return nil
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("CRD %s created but not served after 30 s", u.GetName())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
