package variability

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// synthProfile has rows with distinct values i+1 (normalised by the
// median) and uuids u0, u1, ... with `reps` rows each.
func synthProfile(t *testing.T, rows, reps int) *Profile {
	t.Helper()
	var b strings.Builder
	b.WriteString("uuid,perf\n")
	for i := range rows {
		b.WriteString("u" + strconv.Itoa(i/reps) + "," + strconv.Itoa(i+1) + "\n")
	}
	p, err := ReadProfile("synth.csv", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func allClasses(p *Profile) map[Class]*Profile {
	return map[Class]*Profile{ClassA: p, ClassB: p, ClassC: p, ClassD: p}
}

func TestAssignDeterministicAndFromProfile(t *testing.T) {
	ps, err := LoadNamed("longhorn")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []SampleMode{WithReplacement, WithoutReplacement} {
		t.Run(mode.String(), func(t *testing.T) {
			a, err := Assign(ps, 64, mode, NewRand(42), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Assign(ps, 64, mode, NewRand(42), nil)
			c, _ := Assign(ps, 64, mode, NewRand(43), nil)
			same := true
			for cl := range Class(NumClasses) {
				if !slices.Equal(a.Values[cl], b.Values[cl]) {
					t.Fatalf("class %s differs between equal seeds", cl)
				}
				same = same && slices.Equal(a.Values[cl], c.Values[cl])
				norm := ps[cl].Normalised()
				for g, v := range a.Values[cl] {
					if !slices.Contains(norm, v) {
						t.Fatalf("class %s GPU %d: %v is not a profile row", cl, g, v)
					}
				}
			}
			if same {
				t.Error("different seeds gave the same table")
			}
			// B and C draw from one file but separately.
			if slices.Equal(a.Values[ClassB], a.Values[ClassC]) {
				t.Error("classes B and C got identical draws")
			}
		})
	}
}

func TestAssignWithoutReplacement(t *testing.T) {
	p := synthProfile(t, 10, 1)
	tests := []struct {
		gpus, maxUse int
	}{
		{7, 1}, {10, 1}, {25, 3},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.gpus), func(t *testing.T) {
			tb, err := Assign(allClasses(p), tc.gpus, WithoutReplacement, NewRand(1), nil)
			if err != nil {
				t.Fatal(err)
			}
			for c := range Class(NumClasses) {
				uses := map[float64]int{}
				for _, v := range tb.Values[c] {
					uses[v]++
				}
				for v, n := range uses {
					if n > tc.maxUse {
						t.Errorf("class %s: value %v used %d times, at most %d allowed", c, v, n, tc.maxUse)
					}
				}
				if tc.gpus >= 10 && len(uses) != 10 {
					t.Errorf("class %s: %d of 10 rows used", c, len(uses))
				}
			}
		})
	}
}

func TestAssignByUUID(t *testing.T) {
	p := synthProfile(t, 6, 2) // u0: 1,2  u1: 3,4  u2: 5,6; median 3.5
	tb, err := Assign(allClasses(p), 3, ByUUID, nil, []string{"u2", "u0", "u1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{5.5 / 3.5, 1.5 / 3.5, 3.5 / 3.5}
	for c := range Class(NumClasses) {
		for g, w := range want {
			if math.Abs(tb.Values[c][g]-w) > 1e-12 {
				t.Errorf("class %s GPU %d = %v, want %v", c, g, tb.Values[c][g], w)
			}
		}
	}
}

func TestAssignErrors(t *testing.T) {
	p := synthProfile(t, 4, 1)
	tests := []struct {
		name     string
		profiles map[Class]*Profile
		n        int
		mode     SampleMode
		noRand   bool
		uuids    []string
		want     string
	}{
		{"zero GPUs", allClasses(p), 0, WithReplacement, false, nil, "need between 1 and"},
		{"too many GPUs", allClasses(p), MaxGPUs + 1, WithReplacement, false, nil, "need between 1 and"},
		{"missing class", map[Class]*Profile{ClassA: p}, 4, WithReplacement, false, nil, "no profile for class B"},
		{"no rng", allClasses(p), 4, WithReplacement, true, nil, "random generator"},
		{"no rng without", allClasses(p), 4, WithoutReplacement, true, nil, "random generator"},
		{"uuid count", allClasses(p), 2, ByUUID, true, []string{"u0"}, "one uuid per GPU"},
		{"unknown uuid", allClasses(p), 2, ByUUID, true, []string{"u0", "GPU-nope"}, `uuid "GPU-nope" has no rows`},
		{"bad mode", allClasses(p), 2, SampleMode(9), false, nil, "unknown sampling mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := NewRand(1)
			if tc.noRand {
				rng = nil
			}
			_, err := Assign(tc.profiles, tc.n, tc.mode, rng, tc.uuids)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseSampleMode(t *testing.T) {
	for in, want := range map[string]SampleMode{"with": WithReplacement, "Without": WithoutReplacement, "uuid": ByUUID, " by-uuid ": ByUUID} {
		got, err := ParseSampleMode(in)
		if err != nil || got != want {
			t.Errorf("ParseSampleMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseSampleMode("sometimes"); err == nil {
		t.Error("no error for an unknown mode")
	}
}
