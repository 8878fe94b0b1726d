package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fairTrace is three apps on 1x2 GPUs at speed 1: a and b (one 1-GPU
// 600 s job each) run 0-600 s, c (one 2-GPU 600 s job) 600-1200 s. By
// hand: a and b live with 3 apps alive, N_avg 3, share min(2/3, 1), ideal
// max(600/(2/3), 600) = 900 s, ρ = 600/900; c lives 1200 s with 3 apps
// for 600 s and 1 for 600 s, N_avg 2, share min(2/2, 2) = 1, ideal
// 1200 s, ρ = 1. GPU time: 2 GPUs busy for 1200 s = 2400 GPU-s.
func fairTrace(t *testing.T) (trace, scores string) {
	t.Helper()
	dir := t.TempDir()
	trace, scores = filepath.Join(dir, "apps.csv"), filepath.Join(dir, "flat.csv")
	if err := os.WriteFile(trace, []byte("job_id,num_gpus,submit_time,duration_s,app\n0,1,0,600,a\n1,1,0,600,b\n2,2,0,600,c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scores, []byte("GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,1,1,1,1\n1,0,1,1,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return trace, scores
}

func TestSimFairnessOfAppTrace(t *testing.T) {
	trace, scores := fairTrace(t)
	apps := filepath.Join(t.TempDir(), "apps-rho.csv")
	args := []string{"sim", "--trace", trace, "--cluster", "1x2", "--gpu-scores", scores, "--round", "60", "--placement", "packed-sticky", "--apps-out", apps}
	out, err := run(t, append(args, "-o", "csv")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// max ρ 1, p95 ρ 1 (nearest rank of 3), none over 2, mean (2/3+2/3+1)/3,
	// Jain (7/3)² / (3·(4/9+4/9+1)) = 49/51.
	wantHead := "lost_gpu_s,extras_generated,wall_ms,apps,max_rho,p95_rho,apps_rho_gt_2,mean_rho,jain,gpu_time_s"
	wantTail := ",3,1.000000,1.000000,0,0.777778,0.960784,2400.00"
	var head, row string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "trace,") {
			head = l
		} else if strings.Contains(l, ",packed-sticky,") {
			row = l
		}
	}
	if !strings.HasSuffix(head, wantHead) || !strings.HasSuffix(row, wantTail) {
		t.Errorf("csv header %q\nrow %q\nwant them to end %q and %q", head, row, wantHead, wantTail)
	}
	b, err := os.ReadFile(apps)
	if err != nil {
		t.Fatal(err)
	}
	wantApps := `placement,app,jobs,arrival_s,finish_s,t_shared_s,work_gpu_s,demand_gpus,n_avg,t_ideal_s,rho,held_gpu_s
packed-sticky,a,1,0,600,600,600,1,3,900,0.6666666667,600
packed-sticky,b,1,0,600,600,600,1,3,900,0.6666666667,600
packed-sticky,c,1,0,1200,1200,1200,2,2,1200,1,1200
`
	if string(b) != wantApps {
		t.Errorf("--apps-out:\n%s\nwant\n%s", b, wantApps)
	}

	out, err = run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max ρ", "p95 ρ", "apps ρ > 2", "GPU time (GPU-s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	i := strings.Index(out, "finish-time fairness")
	if i < 0 || !strings.Contains(out[i:], "│ packed-sticky │    3 │ 1.000 │ 1.000 │          0 │ 0.778  │ 0.961 │ 2400") {
		t.Errorf("no ρ row for packed-sticky after the JCT table:\n%s", out)
	}
}

// A trace without apps under a non-fair scheduler prints no ρ table, and
// --apps-out says why it has nothing to write.
func TestSimFairnessOnlyWithApps(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "plain.csv")
	if err := os.WriteFile(trace, []byte("job_id,num_gpus,submit_time,duration_s\n0,1,0,600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "sim", "--trace", trace, "--cluster", "1x2", "--placement", "packed-sticky", "-o", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "rho") {
		t.Errorf("a trace without apps got fairness columns:\n%s", out)
	}
	_, err = run(t, "sim", "--trace", trace, "--cluster", "1x2", "--placement", "packed-sticky", "--apps-out", filepath.Join(dir, "a.csv"))
	if err == nil || !strings.Contains(err.Error(), "no app column") {
		t.Errorf("--apps-out without apps: err %v, want one saying the trace has no app column", err)
	}
	// Themis measures every job as its own app.
	out, err = run(t, "sim", "--trace", trace, "--cluster", "1x2", "--scheduler", "themis", "-o", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "max_rho") {
		t.Errorf("--scheduler themis without apps: no fairness columns:\n%s", out)
	}
}

// pal sim and pal themis sim print one ρ table: the same heading line
// after the name column and, for the same schedule of fairTrace (FIFO
// and SRTF both run a and b first, then c, on GPUs at speed 1 in 60 s
// rounds), the same figures.
func TestSimAndThemisSimOneRhoTable(t *testing.T) {
	trace, scores := fairTrace(t)
	rhoTable := func(out string) []string {
		i := strings.Index(out, "finish-time fairness")
		if i < 0 {
			t.Fatalf("no ρ table:\n%s", out)
		}
		var rows []string
		for _, l := range strings.Split(out[i:], "\n") {
			if strings.HasPrefix(l, "│") {
				// Drop the name column.
				rows = append(rows, l[strings.Index(l[len("│"):], "│")+len("│"):])
			}
		}
		return rows
	}
	sim, err := run(t, "sim", "--trace", trace, "--cluster", "1x2", "--gpu-scores", scores, "--round", "60", "--placement", "packed-sticky")
	if err != nil {
		t.Fatal(err)
	}
	th, err := run(t, "themis", "sim", "--trace", trace, "--cluster", "1x2", "--policy", "srtf", "--flat", "--round", "60")
	if err != nil {
		t.Fatal(err)
	}
	a, b := rhoTable(sim), rhoTable(th)
	if len(a) != 2 || len(b) != 2 || a[0] != b[0] || a[1] != b[1] {
		t.Errorf("ρ tables differ:\npal sim:\n%s\npal themis sim:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}
