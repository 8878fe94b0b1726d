package variability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadNamed(t *testing.T) {
	tests := []struct {
		name string
		rows [NumClasses]int
		// shared[c] is the class whose *Profile class c reuses.
		shared [NumClasses]Class
	}{
		{"longhorn", [NumClasses]int{1404, 1096, 1096, 880}, [NumClasses]Class{ClassA, ClassB, ClassB, ClassD}},
		{"frontera", [NumClasses]int{1480, 1656, 1656, 1240}, [NumClasses]Class{ClassA, ClassB, ClassB, ClassD}},
		{"ls6", [NumClasses]int{219, 219, 219, 219}, [NumClasses]Class{ClassA, ClassA, ClassA, ClassA}},
		{" LongHorn ", [NumClasses]int{1404, 1096, 1096, 880}, [NumClasses]Class{ClassA, ClassB, ClassB, ClassD}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := LoadNamed(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			for c := range Class(NumClasses) {
				if ps[c].Len() != tc.rows[c] {
					t.Errorf("class %s: %d rows, want %d", c, ps[c].Len(), tc.rows[c])
				}
				if ps[c] != ps[tc.shared[c]] {
					t.Errorf("class %s should share class %s's profile", c, tc.shared[c])
				}
			}
		})
	}
}

func TestLoadNamedUnknown(t *testing.T) {
	_, err := LoadNamed("summit")
	if err == nil || !strings.Contains(err.Error(), "frontera, longhorn, ls6") {
		t.Fatalf("error %v should list the known names", err)
	}
}

func TestLoadProfileSet(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fast := write("csv/fast.csv", "uuid,perf\na,1\nb,2\nc,3\n")
	write("csv/slow.csv", "uuid,perf\na,10\n")
	js := write("profiles.json", `{"classA":"csv/fast.csv","classB":"csv/slow.csv","classC":"csv/slow.csv","classD":"csv/fast.csv"}`)
	bad := write("bad/profiles.json", `{"classA":"x.csv"}`)
	write("broken.json", `{`)

	tests := []struct {
		name, spec string
		rows       [NumClasses]int
		wantErr    string
	}{
		{"name", "ls6", [NumClasses]int{219, 219, 219, 219}, ""},
		{"json", js, [NumClasses]int{3, 1, 1, 3}, ""},
		{"dir", dir, [NumClasses]int{3, 1, 1, 3}, ""},
		{"csv", fast, [NumClasses]int{3, 3, 3, 3}, ""},
		{"missing class", bad, [NumClasses]int{}, "no file for classB"},
		{"broken json", filepath.Join(dir, "broken.json"), [NumClasses]int{}, "want an object"},
		{"nothing", filepath.Join(dir, "nope"), [NumClasses]int{}, "neither a known name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := LoadProfileSet(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for c := range Class(NumClasses) {
				if ps[c].Len() != tc.rows[c] {
					t.Errorf("class %s: %d rows, want %d", c, ps[c].Len(), tc.rows[c])
				}
			}
		})
	}
}
