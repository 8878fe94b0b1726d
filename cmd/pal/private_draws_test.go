package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

type drawsOut struct {
	Runs []struct {
		AvgJCT float64 `json:"avg_jct_s"`
		Draws  int     `json:"private_draws"`
		VCs    []struct {
			VC      string     `json:"vc"`
			Jobs    int        `json:"jobs"`
			MeanJCT float64    `json:"mean_jct_s"`
			Speed   [4]float64 `json:"speed"`
		} `json:"vcs"`
		ClusterSpeed [4]float64 `json:"cluster_speed"`
	} `json:"runs"`
}

// drawsRun runs tenancy/testdata/draws*: VC w's one job of two 2-GPU
// pods, 6000 s on median GPUs, no locality penalty, on a cluster whose
// nodes 0 and 1 run at 1 and nodes 2 and 3 at 2 (twice as slow).
func drawsRun(t *testing.T, extra ...string) (drawsOut, [][]string) {
	t.Helper()
	return drawsRunTrace(t, "../../tenancy/testdata/draws-trace.csv", extra...)
}

// drawsRunTrace is drawsRun on another trace of w's jobs.
func drawsRunTrace(t *testing.T, trace string, extra ...string) (drawsOut, [][]string) {
	t.Helper()
	jobs := filepath.Join(t.TempDir(), "jobs.csv")
	args := append([]string{"sim", "--trace", trace, "--cells", "../../tenancy/testdata/draws.yaml",
		"--gpu-scores", "../../tenancy/testdata/draws-gpus.csv", "--round", "60", "--locality-penalty", "1", "--placement", "packed-sticky",
		"-o", "json", "--jobs-out", jobs}, extra...)
	text, err := run(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	var out drawsOut
	if err := json.Unmarshal([]byte(text[strings.Index(text, "{"):]), &out); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(out.Runs) != 1 || len(out.Runs[0].VCs) != 1 || out.Runs[0].VCs[0].VC != "w" {
		t.Fatalf("runs: %+v", out.Runs)
	}
	return out, readJobsOut(t, jobs)
}

// Worked by hand: a draw gives w two of the four nodes, both fast in one
// pair of six (the job runs 6000 s, speed 1), else the job runs at the
// pace of its slowest GPU, 2 (12000 s; speed 1.5 with one slow node, 2
// with two). Over K draws the share of 6000 s runs is near 1/6, the mean
// speed near 1.5 (the cluster's), and the mean JCT is exactly the mix of
// 6000 and 12000 the runs show.
func TestSimPrivateDraws(t *testing.T) {
	const k = 600
	out, recs := drawsRun(t, "--tenancy", "private", "--private-draws", "600", "--seed", "3")
	r := out.Runs[0]
	w := r.VCs[0]
	if r.Draws != k || w.Jobs != k || len(recs) != k+1 {
		t.Fatalf("draws %d, w's jobs %d, %d job rows; want %d", r.Draws, w.Jobs, len(recs)-1, k)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	fast := 0
	for _, rec := range recs[1:] {
		switch rec[col["jct_s"]] {
		case "6000.00":
			fast++
		case "12000.00":
		default:
			t.Fatalf("a draw's JCT %s, want 6000 or 12000", rec[col["jct_s"]])
		}
	}
	share := float64(fast) / k
	if math.Abs(share-1.0/6) > 0.05 {
		t.Errorf("share of draws on two fast nodes %.3f, want about 1/6 (sd 0.015)", share)
	}
	if want := share*6000 + (1-share)*12000; math.Abs(w.MeanJCT-want) > 1e-6 || math.Abs(r.AvgJCT-want) > 1e-6 {
		t.Errorf("mean JCT %g (summary %g), want %g from the runs", w.MeanJCT, r.AvgJCT, want)
	}
	if math.Abs(w.Speed[0]-1.5) > 0.04 || w.Speed[1] != 0 {
		t.Errorf("w's delivered speed %v, want about 1.5 for class A (sd 0.012) and none for B", w.Speed)
	}
	if r.ClusterSpeed != [4]float64{1.5, 1.5, 1.5, 1.5} {
		t.Errorf("cluster speed %v, want 1.5 per class", r.ClusterSpeed)
	}
	// The seed decides the draws: the same seed the same figures, another
	// seed others.
	again, _ := drawsRun(t, "--tenancy", "private", "--private-draws", "600", "--seed", "3")
	if again.Runs[0].VCs[0] != w {
		t.Errorf("seed 3 twice: %+v and %+v", w, again.Runs[0].VCs[0])
	}
	other, _ := drawsRun(t, "--tenancy", "private", "--private-draws", "600", "--seed", "4")
	if other.Runs[0].VCs[0] == w {
		t.Errorf("seeds 3 and 4 drew alike: %+v", w)
	}
	// Without draws the private cluster has median GPUs (pinned values
	// belong to the shared cluster's GPUs): 6000 s at speed 1.
	plain, _ := drawsRun(t, "--tenancy", "private")
	if p := plain.Runs[0].VCs[0]; p.MeanJCT != 6000 || p.Speed[0] != 1 || plain.Runs[0].Draws != 0 {
		t.Errorf("private without draws: %+v", plain.Runs[0])
	}
	// Shared under hived: packed-sticky takes nodes 0 and 1, the fast ones.
	h, _ := drawsRun(t, "--tenancy", "hived")
	if p := h.Runs[0].VCs[0]; p.MeanJCT != 6000 || p.Speed[0] != 1 {
		t.Errorf("hived: %+v", h.Runs[0])
	}
	// hived-speed binds w's first node cell to the slowest node that keeps
	// its mean at or below the cluster's 1.5 (n0: a slow node alone is
	// 2), its second to the slowest that still does (n2: (1+1+2+2)/4):
	// 12000 s at speed 1.5, w's share, where hived-pm takes both fast
	// nodes (w's job arrives with the round: it has not waited, so w is
	// no queue). --check-invariants checks HiveD's safety every round.
	hs, _ := drawsRun(t, "--tenancy", "hived-speed", "--check-invariants")
	if p := hs.Runs[0].VCs[0]; p.MeanJCT != 12000 || p.Speed[0] != 1.5 {
		t.Errorf("hived-speed: %+v", hs.Runs[0])
	}
	for _, bad := range [][]string{{"--tenancy", "hived", "--private-draws", "2"}, {"--tenancy", "private", "--private-draws", "-1"}} {
		args := append([]string{"sim", "--trace", "../../tenancy/testdata/draws-trace.csv", "--cells", "../../tenancy/testdata/draws.yaml"}, bad...)
		if text, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "--private-draws") {
			t.Errorf("%v: %v\n%s", bad, err, text)
		}
	}
}
