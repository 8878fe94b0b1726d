package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/variability"
)

// The acceptance check end to end: the artifact's pinned 16x4 table is
// turned into benchmark runs (five per GPU and class, each with up to 5%
// noise, uniform in [-5%, +5%], from seed 7; the models are the
// embedded table's class representatives resnet50 A, BERT B, vgg19 C,
// PointNet D at their iteration times), pal profile build recovers a
// table, and pal sim on Sia-Philly workload 3 under PAL gives an average
// JCT within 1% of the known table's.
func TestProfileBuildThroughSim(t *testing.T) {
	dir := t.TempDir()
	known := filepath.Join("..", "..", "data", "reference", "pal-artifact-gpu-pmscores.csv")
	f, err := os.Open(known)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := variability.ReadGPUScores(known, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	models := [variability.NumClasses]string{"resnet50", "BERT", "vgg19", "PointNet"}
	base := [variability.NumClasses]float64{0.17540429367763434, 0.179, 0.300610341, 0.28125}
	rng := variability.NewRand(7)
	var b strings.Builder
	b.WriteString("node,gpu_index,gpu_uuid,model,iter_time_s\n")
	for g := range gs.Table.NumGPUs() {
		for c := range variability.NumClasses {
			for range 5 {
				noise := 1 + 0.05*(2*rng.Float64()-1)
				fmt.Fprintf(&b, "%d,%d,GPU-%02d,%s,%.9g\n", g/4, g%4, g, models[c], base[c]*gs.Table.Values[c][g]*noise)
			}
		}
	}
	meas := filepath.Join(dir, "runs.csv")
	if err := os.WriteFile(meas, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(dir, "built.csv")
	rep, err := run(t, "profile", "build", "--measurements", meas, "--out", built, "--cluster", "16x4")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep, "layout:      integer nodes, 16x4 (from --cluster)") {
		t.Errorf("report:\n%s", rep)
	}
	avg := func(scores string) float64 {
		out, err := run(t, "sim", "--trace", "sia-philly/3", "--placement", "pal", "--gpu-scores", scores, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Runs []struct {
				Avg float64 `json:"avg_jct_s"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Runs) != 1 {
			t.Fatalf("sim output %v: %s", err, out)
		}
		return doc.Runs[0].Avg
	}
	k, r := avg(known), avg(built)
	t.Logf("avg JCT: known table %.2f s, built table %.2f s (%+.3f%%)", k, r, 100*(r/k-1))
	if math.Abs(r/k-1) >= 0.01 {
		t.Errorf("built table's avg JCT %.2f s is not within 1%% of the known table's %.2f s", r, k)
	}
}

func TestProfileBuildCLIErrors(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.csv")
	os.WriteFile(m, []byte("node,gpu_index,gpu_uuid,model,iter_time_s\n0,0,,alexnet,1\n"), 0o644)
	cls := filepath.Join(dir, "classes.csv")
	os.WriteFile(cls, []byte("app,class\nalexnet,A\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "build"}, "--measurements is required"},
		{[]string{"profile", "build", "--measurements", m}, `m.csv:2: field "model": model "alexnet" is not in the model table`},
		{[]string{"profile", "build", "--measurements", m, "-o", "csv"}, `--output "csv": want table or json`},
		{[]string{"profile", "build", "--measurements", m, "--cluster", "2"}, "--cluster"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	out, err := run(t, "profile", "build", "--measurements", m, "--classes", cls)
	if err != nil {
		t.Fatal(err)
	}
	// One GPU, one run: its value is the median, 1; the classes' source is named.
	if !strings.Contains(out, "\n0,0,1,1,1,1\n") || !strings.Contains(out, "# classes: "+cls+" (alexnet=A)") {
		t.Errorf("output:\n%s", out)
	}
}
