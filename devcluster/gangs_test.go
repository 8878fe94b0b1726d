package devcluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestParseAPIServerArg(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"feature-gates=GenericWorkload=true", "--feature-gates=GenericWorkload=true", ""},
		{"--runtime-config=scheduling.k8s.io/v1beta1=true", "--runtime-config=scheduling.k8s.io/v1beta1=true", ""},
		{"v=4", "--v=4", ""},
		{"audit-log-path=", "--audit-log-path=", ""},
		{"feature-gates", "", "want KEY=VALUE"},
		{"=x", "", "empty or overlong flag name"},
		{"Feature=x", "", "may hold only a-z, 0-9 and inner dashes"},
		{"-x=1", "", "may hold only"},
		{"secure-port=1", "", "dev-cluster sets --secure-port itself"},
		{"v=4\n--x=1", "", "control character"},
	} {
		got, err := ParseAPIServerArg(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseAPIServerArg(%q) = %q, %v; want error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseAPIServerArg(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// Whatever it is given, the parser answers a flag that starts with "--",
// holds one name of the allowed characters before "=", and no control
// characters, or an error naming the input.
func FuzzParseAPIServerArg(f *testing.F) {
	for _, s := range []string{"feature-gates=A=true", "--v=4", "=", "", "x", "secure-port=1", "a=\x00"} {
		f.Add(s)
	}
	// Long values of control and invalid bytes, which %q writes four
	// characters each: one without '=', one in the value, one in the name.
	f.Add(strings.Repeat("\x01", 8000))
	f.Add("feature-gates=" + strings.Repeat("\x01", 8000))
	f.Add(strings.Repeat("\xff", 8000) + "=1")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAPIServerArg(s)
		if err != nil {
			if !strings.Contains(err.Error(), "--apiserver-arg") {
				t.Fatalf("error %.300q does not name the flag", err)
			}
			// The flag's value is the user's: whatever it holds, the
			// error stays a line.
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		key, _, ok := strings.Cut(strings.TrimPrefix(got, "--"), "=")
		if !strings.HasPrefix(got, "--") || !ok || key == "" || ownFlags[key] || strings.ContainsAny(got, "\n\r\x00") {
			t.Fatalf("ParseAPIServerArg(%q) = %q", s, got)
		}
	})
}

// The embedded CRD is the scheduler-plugins PodGroup: its group, kind,
// version with a status subresource, and the minMember field.
func TestPodGroupCRD(t *testing.T) {
	j, err := yaml.YAMLToJSON(PodGroupCRD)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	k, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	if u.GetName() != "podgroups.scheduling.x-k8s.io" || g != "scheduling.x-k8s.io" || k != "PodGroup" || len(vs) != 1 {
		t.Fatalf("CRD %s group %s kind %s versions %d", u.GetName(), g, k, len(vs))
	}
	v := vs[0].(map[string]any)
	_, sub, _ := unstructured.NestedMap(v, "subresources", "status")
	mt, _, _ := unstructured.NestedString(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", "minMember", "type")
	if v["name"] != "v1alpha1" || !sub || mt != "integer" {
		t.Errorf("version %v status subresource %v minMember type %q", v["name"], sub, mt)
	}
}
