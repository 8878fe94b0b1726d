package kube

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestLoadConfigErrors: every way a config file can be wrong is reported
// with the file, the line of the key, and the dotted field, in words an
// operator reads (no JSON, no Go type names).
func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "period: 10s\nperod: 1s\n", `c.yaml:2: field "perod": unknown (known here: alignPeriod,`},
		{"unknown nested key", "themis:\n  knob: 0.8\n  lese: 1s\n", `c.yaml:3: field "themis.lese": unknown (known here: knob, lease)`},
		{"integer", "qps: 5\nburst: many\n", `c.yaml:2: field "burst": want an integer`},
		{"number", "themis:\n  knob: high\n", `c.yaml:2: field "themis.knob": want a number`},
		{"bool", "alignPeriod: [1]\n", `c.yaml:1: field "alignPeriod": want true or false`},
		{"list", "tiresiasThresholds: 5\n", `c.yaml:1: field "tiresiasThresholds": want a list`},
		{"duration", "period: ten\n", `c.yaml:1: field "period": want a duration`},
		{"mapping wanted", "themis: [1]\n", `c.yaml:1: field "themis": want a mapping of keys`},
		{"not a mapping", "- a\n- b\n", `c.yaml:1: the config must be a mapping`},
		{"syntax", "period: 10s\nqps: 1\n  burst: 2\n", `c.yaml:3: mapping values are not allowed`},
		{"unclosed quote", "schedulerName: \"pal\n", `c.yaml:2: found unexpected end of stream`},
		{"invalid value", "namespace: kube-system\nperiod: -1s\n", `c.yaml:2: field period: must be positive, got -1s`},
		{"invalid nested value", "scheduler: themis\nthemis:\n  lease: -5s\n", `c.yaml:3: field themis.lease: must be positive`},
		{"invalid pair", "qps: 5\nburst: 0\n", `c.yaml:1: fields qps and burst: must be positive`},
		{"preemptPastBudgets not a bool", "period: 10s\npreemptPastBudgets: sometimes\n", `c.yaml:2: field "preemptPastBudgets": want true or false`},
		{"preemptPastBudgets with themis", "scheduler: themis\npreemptPastBudgets: true\n", `c.yaml:2: field preemptPastBudgets: not with scheduler themis or a tenancy, which do not order gangs by pod priority`},
		{"dcgm service", "learnScores: true\ndcgm:\n  service: gpu-operator\n", `c.yaml:3: field dcgm.service: "gpu-operator" is not NAMESPACE/NAME`},
		{"dcgm url", "dcgm:\n  port: 9400\n  urls:\n  - http://a:9400/metrics\n  - gpu-node-1:9400\n", `c.yaml:5: field dcgm.urls[1]: "gpu-node-1:9400" is not an http(s) URL`},
		{"dcgm interval", "dcgm:\n  service: a/b\n  interval: 100ms\n", `c.yaml:3: field dcgm.interval: must be at least 1s`},
		{"invalid default-only", "scheduler: nope\n", `c.yaml:1: field scheduler:`},
		{"too large", "# " + strings.Repeat("x", maxConfigBytes) + "\n", `bytes, more than the 1048576 a config may have`},
		// A key with no value is a value forgotten, not a request for the
		// default: it must not load as the default (qps 200, seed 42,
		// Tiresias' own thresholds), nor fail in JSON's words without a line.
		{"no value", "namespace: pal\nqps:\n", `c.yaml:2: field "qps": no value`},
		{"null", "seed: ~\n", `c.yaml:1: field "seed": no value`},
		{"null duration", "period: null\n", `c.yaml:1: field "period": no value`},
		{"null list", "tiresiasThresholds:\n", `c.yaml:1: field "tiresiasThresholds": no value`},
		{"null nested", "themis:\n  knob:\n", `c.yaml:2: field "themis.knob": no value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(p)
			if err == nil {
				t.Fatalf("LoadConfig accepted %q", tc.yaml)
			}
			got := strings.TrimPrefix(err.Error(), filepath.Dir(p)+"/")
			if !strings.Contains(got, tc.want) {
				t.Errorf("error\n  %s\nwant it to contain\n  %s", got, tc.want)
			}
			for _, bad := range []string{"json", "JSON", "Go struct", "kube.", "float64"} {
				if strings.Contains(got, bad) {
					t.Errorf("error speaks of %q: %s", bad, got)
				}
			}
		})
	}
}

// TestLoadConfigGood: a valid file loads, and a key set to its default
// still loads (the per-key check accepts what the whole-file decode does).
func TestLoadConfigGood(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	body := "schedulerName: pal\nperiod: 30s\nalignPeriod: true\nqps: 50\nburst: 100\ntiresiasThresholds: [3600, 7200]\nthemis:\n  knob: 0.8\nleaderElection:\n  enabled: false\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Period.Seconds() != 30 || !c.AlignPeriod || c.QPS != 50 || c.Burst != 100 || len(c.TiresiasThresholds) != 2 || c.Themis.Knob != 0.8 {
		t.Errorf("loaded %+v", c)
	}
}

// FuzzLoadConfig: any file loads or fails with an error naming the file,
// and never panics.
func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{"period: 10s\n", "themis:\n  knob: x\n", "dcgm:\n  service: a/b\n  port: 0\n", "dcgm:\n  urls: [':::']\n", "a: &a [*a, *a]\n", "- 1\n", ": : :\n", "leaderElection:\n  enabled: true\n"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p); err != nil && (!strings.HasPrefix(err.Error(), p) || len(err.Error()) > 2048) {
			t.Fatalf("error does not name the file, or is over 2 KiB: %.300v", err)
		}
	})
}

// --print-config shows every field, unset ones included (no hidden
// default: tiresias-las' thresholds are written out), and what it prints
// loads back to the same config.
func TestPrintedConfigHasEveryField(t *testing.T) {
	def := DefaultConfig()
	b, err := yaml.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, ty reflect.Type, m map[string]any)
	walk = func(prefix string, ty reflect.Type, m map[string]any) {
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			v, ok := m[name]
			if !ok {
				t.Errorf("--print-config lacks %s%s", prefix, name)
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Duration{}) {
				sub, _ := v.(map[string]any)
				walk(prefix+name+".", f.Type, sub)
			}
		}
	}
	walk("", reflect.TypeOf(def), got)
	if th, _ := got["tiresiasThresholds"].([]any); len(th) != 2 || th[0] != 3250.0 || th[1] != 7200.0 {
		t.Errorf("tiresiasThresholds printed as %v, want [3250 7200]", got["tiresiasThresholds"])
	}
	p := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadConfig(p)
	if err != nil {
		t.Fatalf("the printed config does not load: %v", err)
	}
	if !reflect.DeepEqual(back, def) {
		t.Errorf("printed and loaded back:\n%+v\nwant\n%+v", back, def)
	}
}
