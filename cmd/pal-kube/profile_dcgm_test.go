package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/profilebuild"
)

// serveDCGMSample serves the telemetry package's exporter sample, as an
// exporter would, and returns its URL.
func serveDCGMSample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "telemetry", "testdata", "dcgm-exporter-a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(b) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// pal-kube profile dcgm end to end against a served exporter sample: GPU 1 of
// testdata/dcgm-exporter-a100.txt is thermally throttled at 72% of the
// busy median clock (see the telemetry package's test for the numbers).
func TestProfileDCGM(t *testing.T) {
	url := serveDCGMSample(t)
	out, err := run(t, "profile", "dcgm", "--url", url)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "gpu-node-001  1    GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02  1005          0.720        sw_thermal,hw_thermal  yes       1.39") {
		t.Errorf("table:\n%s", out)
	}
	out, err = run(t, "profile", "dcgm", "--url", url, "-o", "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `pal_gpu_degraded{gpu="1",node="gpu-node-001",uuid="GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02"} 1`) {
		t.Errorf("prometheus:\n%s", out)
	}
}

// pal-kube profile dcgm -o hints: the sample's throttled GPU (gpu-node-001 GPU
// 1, prior 1395/1005 = 1.3881) located in the table pal sim will believe,
// by each of the three ways a table can name it, and the file read back
// by pal sim --gpu-hints.
func TestProfileDCGMHints(t *testing.T) {
	url := serveDCGMSample(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const cols = "PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD"
	rows := func(f func(g int) string) string {
		var sb strings.Builder
		for g := range 8 {
			fmt.Fprintf(&sb, "%d,%d,%s1,1,1,1\n", g, g/4, f(g))
		}
		return sb.String()
	}
	named := write("named.csv", "GPU_ID,Node_ID,node_name,gpu_index,"+cols+"\n"+rows(func(g int) string { return fmt.Sprintf("gpu-node-00%d,%d,", g/4, g%4) }))
	byUUID := write("uuid.csv", "GPU_ID,Node_ID,GPU_UUID,"+cols+"\n"+rows(func(g int) string {
		if g == 6 {
			return "GPU-3c4a5b1e-0d2f-4e77-9a10-6f1b2c3d4e02,"
		}
		return fmt.Sprintf("GPU-other-%d,", g)
	}))
	ints := write("ints.csv", "GPU_ID,Node_ID,"+cols+"\n"+rows(func(int) string { return "" }))
	for _, tc := range []struct {
		name  string
		args  []string
		want  string // the data row
		by    string
		error string
	}{
		{"node name and index", []string{"--gpu-scores", named}, "0,5,1.3881", "1 by node_name and gpu_index", ""},
		{"uuid", []string{"--gpu-scores", byUUID, "--at", "3600"}, "3600,6,1.3881", "1 by uuid", ""},
		{"not in the table", []string{"--gpu-scores", ints}, "", "", "flagged GPU gpu-node-001/1"},
		{"no table", nil, "", "", "-o hints needs --gpu-scores"},
		{"negative time", []string{"--gpu-scores", named, "--at", "-1"}, "", "", "--at -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append([]string{"profile", "dcgm", "--url", url, "-o", "hints"}, tc.args...)...)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("error %v, want one containing %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "\ntime_s,gpu,slowdown\n"+tc.want+"\n") || strings.Count(out, "\n") != 4 || !strings.Contains(out, "1 of 4 scraped GPUs flagged") || !strings.Contains(out, tc.by) {
				t.Errorf("hints:\n%s", out)
			}
		})
	}
	if _, err := run(t, "profile", "dcgm", "--url", url, "--gpu-scores", named); err == nil || !strings.Contains(err.Error(), "-o table does not use it") {
		t.Errorf("--gpu-scores without -o hints: %v", err)
	}
	// The file is what pal sim --gpu-hints reads.
	out, err := run(t, "profile", "dcgm", "--url", url, "-o", "hints", "--gpu-scores", byUUID)
	if err != nil {
		t.Fatal(err)
	}
	hints := write("hints.csv", out)
	trace := write("trace.csv", "job_id,num_gpus,submit_time,duration_s\n0,2,0,3600\n")
	o, err := experiment.Preset("artifact")
	if err != nil {
		t.Fatal(err)
	}
	o.Trace, o.Cluster, o.Pinned, o.GPUScores, o.LearnScores, o.GPUHints, o.Placements = trace, "2x4", false, byUUID, true, hints, "pal"
	in, err := experiment.Prepare(o)
	if err != nil {
		t.Fatalf("pal sim's inputs refuse the hints: %v", err)
	}
	if !slices.ContainsFunc(in.Header(), func(i experiment.Input) bool {
		return i.Name == "gpu_hints" && strings.HasPrefix(i.Value, "1 telemetry hint(s) from "+hints)
	}) {
		t.Errorf("pal sim's inputs do not name the hints file: %v", in.Header())
	}
}

// Named nodes end to end: two nodes' runs (class A only, resnet50), built
// and exported. Medians: nb/1 2.0, nb/0 1.0, na/0 1.0, na/1 1.0; their
// median 1.0, so nb/1 is 2 and the others 1 (classes B-D unmeasured: 1).
// Without --map the export places GPUs by the table's node_name and
// gpu_index; -o is the format (kubernetes, the default) and --out the path.
func TestProfileBuildExportNamedNodes(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.csv")
	os.WriteFile(m, []byte("node,gpu_index,gpu_uuid,model,iter_time_s\nnb,1,GPU-d,resnet50,2\nnb,0,GPU-c,resnet50,1\nna,0,GPU-a,resnet50,1\nna,1,GPU-b,resnet50,1\n"), 0o644)
	tbl := filepath.Join(dir, "t.csv")
	var report strings.Builder
	if err := profilebuild.Run(&report, &report, profilebuild.Options{Measurements: m, Out: tbl, ClassMap: "artifact", Output: "table", MinSamples: 1}); err != nil {
		t.Fatal(err)
	}
	y := filepath.Join(dir, "cm.yaml")
	for _, args := range [][]string{
		{"profile", "export", "--gpu-scores", tbl, "--out", y},
		{"profile", "export", "--gpu-scores", tbl, "-o", "kubernetes", "--out", y},
	} {
		if _, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		b, err := os.ReadFile(y)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"nb,1,A,2\n", "nb,0,A,1\n", "na,1,D,1\n", "pal.io/source: " + tbl} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%v: ConfigMap lacks %q:\n%s", args, want, b)
			}
		}
	}
	if _, err := run(t, "profile", "export", "--gpu-scores", tbl, "-o", "yaml"); err == nil || !strings.Contains(err.Error(), `--output "yaml": want kubernetes`) {
		t.Errorf("-o yaml: %v", err)
	}
}
