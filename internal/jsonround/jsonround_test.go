package jsonround

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMarshalRoundsByKey(t *testing.T) {
	type run struct {
		Name   string    `json:"name"`
		AvgJCT float64   `json:"avg_jct_s"`
		Util   float64   `json:"utilization"`
		Jobs   int       `json:"jobs"`
		Big    int64     `json:"big"`
		Xs     []float64 `json:"xs_s"`
		Ratio  []float64 `json:"ratio"`
	}
	v := map[string]any{
		"runs":   []run{{"a", 316034.93999999994, 0.30000000000000004, 160, 1 << 60, []float64{1.005, 2.4449999}, []float64{1.0 / 3}}},
		"nested": map[string]any{"wall_ms": 2.397123, "flag": true, "none": nil, "pct": 12.3456789},
	}
	got, err := Marshal(v, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"nested":{"flag":true,"none":null,"pct":12.3457,"wall_ms":2.4},"runs":[{"name":"a","avg_jct_s":316034.94,"utilization":0.3,"jobs":160,"big":1152921504606846976,"xs_s":[1,2.44],"ratio":[0.333333]}]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	ind, err := Marshal(v, "  ")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if json.Unmarshal(ind, &a) != nil || json.Unmarshal(got, &b) != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("indented differs:\n%s", ind)
	}
}

// FuzzMarshal: any JSON document comes back as valid JSON of the same
// shape, with integers and strings unchanged.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"a_s":1.234,"b":[1,2,{"c":"x"}]}`, `[]`, `3.14159`, `{"k":{"j_s":[1e300,-0.004]}}`, `"s"`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		out, err := Marshal(v, "")
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var w any
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatalf("%q -> invalid %q: %v", s, out, err)
		}
		if shape(v) != shape(w) {
			t.Fatalf("%q -> %q changed shape", s, out)
		}
	})
}

// shape renders a value with every number replaced by 0.
func shape(v any) string {
	var z func(any) any
	z = func(v any) any {
		switch t := v.(type) {
		case float64:
			return 0
		case []any:
			for i := range t {
				t[i] = z(t[i])
			}
		case map[string]any:
			for k := range t {
				t[k] = z(t[k])
			}
		}
		return v
	}
	b, _ := json.Marshal(z(v))
	return string(b)
}
