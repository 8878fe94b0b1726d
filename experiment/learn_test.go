package experiment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// With --actual-gpu-scores naming the very table the scheduler believes
// (the artifact's pinned one), with or without learning, workload 3
// under PAL and PM-First still gives the artifact's printed averages
// (106,396.16 and 111,521.66 s, TestArtifactCalibrationWorkload3).
func TestActualScoresEqualBeliefsKeepCalibration(t *testing.T) {
	pinned := filepath.Join("..", "data", "reference", "pal-artifact-gpu-pmscores.csv")
	for _, learn := range []bool{false, true} {
		o, err := Preset("artifact")
		if err != nil {
			t.Fatal(err)
		}
		o.Trace, o.Placements = "sia-philly/3", "pal,pm-first"
		o.GPUScores, o.ActualGPUScores, o.LearnScores = pinned, pinned, learn
		in, runs, err := RunAll(o)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"pal": 106396.16, "pm-first": 111521.66}
		for _, r := range runs {
			if got := math.Round(r.AvgJCT*100) / 100; got != want[r.Placement] {
				t.Errorf("learn %v, %s: avg JCT %.2f, want %.2f", learn, r.Placement, got, want[r.Placement])
			}
		}
		h := in.Describe()
		if h["true_gpu_values"] != pinned || (h["score_learning"] != "") != learn {
			t.Errorf("header %q / %q", h["true_gpu_values"], h["score_learning"])
		}
	}
}

// A GPU event slows the only GPU mid-run: one 1-GPU job of 1000
// iterations of 1 s (model synergy) on 1x1, 100 s rounds. It runs 100
// iterations a round until t = 500 (500 done), when the event makes the
// GPU 2.0x slower: 50 a round, 10 more rounds for the remaining 500, so it
// ends at t = 1500 instead of 1000. The scheduler believes 1.0 throughout.
func TestGPUEventSlowsRunningJob(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "t.csv", "job_id,num_gpus,submit_time,duration,model\n0,1,0,1000,synergy\n")
	scores := writeFile(t, dir, "s.csv", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,1,1,1,1\n")
	events := writeFile(t, dir, "e.csv", "time_s,gpu,class,new_score\n500,0,*,2.0\n")
	// And --actual-gpu-scores at 2.0 from the start: 1000 iterations at
	// 50 a round, t = 2000.
	slow := writeFile(t, dir, "slow.csv", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,2,2,2,2\n")
	for _, tc := range []struct {
		events, actual string
		want           float64
	}{{"", "", 1000}, {events, "", 1500}, {"", slow, 2000}} {
		o, err := Preset("artifact")
		if err != nil {
			t.Fatal(err)
		}
		o.Trace, o.Cluster, o.Round, o.Placements, o.GPUScores, o.GPUEvents = trace, "1x1", 100, "pal", scores, tc.events
		o.ActualGPUScores = tc.actual
		_, runs, err := RunAll(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := runs[0].AvgJCT; got != tc.want {
			t.Errorf("events %q: JCT %v, want %v", tc.events, got, tc.want)
		}
	}
	o, _ := Preset("artifact")
	o.Trace, o.Cluster, o.Placements, o.GPUScores = trace, "1x1", "pal", scores
	o.GPUEvents = writeFile(t, dir, "bad.csv", "time_s,gpu,class,new_score\n0,3,A,1\n")
	if _, _, err := RunAll(o); err == nil || !strings.Contains(err.Error(), `bad.csv:2: field "gpu": GPU 3, but --cluster 1x1 has GPUs 0..0`) {
		t.Errorf("bad event: %v", err)
	}
}

// What a job shows decides what is learnt. On 1x2, GPU 1 truly runs at
// 2.0 while both GPUs are believed 1.0; a 2-GPU job (1000 iterations of
// 1 s, 100 s rounds) runs at 2.0 from t = 0 to 2000, then a 1-GPU job
// (500 iterations, submitted at 1000) goes where PAL believes faster.
// From the job's pace alone the slow pair's blame is a tie and goes to
// the first GPU, 0, raised round after round towards 2.0, so the 1-GPU
// job starts on GPU 1 at 2.0. Its pace pins GPU 1, 1.5, 1.75, ...,
// 1.984375 after six rounds, when GPU 1 explains the pair's slowness and
// GPU 0's guess is withdrawn: the job moves to GPU 0 having run 300
// iterations in 600 s, and runs the last 200 in 200 s (JCT 1800 s with
// its 1000 s wait). From each GPU's own pace GPU 1 is pinned in the
// first round and the job runs on GPU 0 from the start (500 s, JCT
// 1500 s). The 2-GPU job's JCT is 2000 s either way: average 1900
// against 1750. With telemetry's hint that GPU 1 runs 2x slow from t = 0
// (--gpu-hints), job paces are enough: the pair's pace 2.0 is what the
// hinted GPU explains, nothing is blamed on GPU 0, and the 1-GPU job
// runs on GPU 0 from the start, 1750 again.
func TestLearnFromGPU(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "t.csv", "job_id,num_gpus,submit_time,duration,model\n0,2,0,1000,synergy\n1,1,1000,500,synergy\n")
	hdr := "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n"
	believed := writeFile(t, dir, "b.csv", hdr+"0,0,1,1,1,1\n1,0,1,1,1,1\n")
	actual := writeFile(t, dir, "a.csv", hdr+"0,0,1,1,1,1\n1,0,2,2,2,2\n")
	hints := writeFile(t, dir, "h.csv", "time_s,gpu,slowdown\n0,1,2\n")
	for _, tc := range []struct {
		from, hints string
		want        float64
	}{{"job", "", 1900}, {"gpu", "", 1750}, {"job", hints, 1750}} {
		o, err := Preset("artifact")
		if err != nil {
			t.Fatal(err)
		}
		o.Trace, o.Cluster, o.Round, o.Placements, o.ExtraLoad = trace, "1x2", 100, "pal", 0
		o.GPUScores, o.ActualGPUScores, o.LearnScores, o.LearnFrom, o.GPUHints = believed, actual, true, tc.from, tc.hints
		in, runs, err := RunAll(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := runs[0].AvgJCT; got != tc.want {
			t.Errorf("--learn-from %s --gpu-hints %q: avg JCT %v, want %v", tc.from, tc.hints, got, tc.want)
		}
		if h := in.Describe()["gpu_hints"]; (h != "") != (tc.hints != "") {
			t.Errorf("--gpu-hints %q: inputs say %q", tc.hints, h)
		}
		if h := in.Describe()["score_learning"]; strings.Contains(h, "each GPU's own pace") != (tc.from == "gpu") {
			t.Errorf("--learn-from %s: inputs say %q", tc.from, h)
		}
	}
	for _, tc := range []struct {
		from  string
		learn bool
		want  string
		hints string
	}{{"gpu", false, "--learn-from gpu: needs --learn-scores", ""}, {"pod", true, `--learn-from "pod": want job or gpu`, ""},
		{"job", false, "--gpu-hints " + hints + ": needs --learn-scores", hints},
		{"job", true, `bad.csv:2: field "gpu": GPU 2, but --cluster 1x2 has GPUs 0..1`, writeFile(t, dir, "bad.csv", "time_s,gpu,slowdown\n0,2,2\n")}} {
		o, _ := Preset("artifact")
		o.Trace, o.Cluster, o.Placements, o.GPUScores = trace, "1x2", "pal", believed
		o.LearnScores, o.LearnFrom, o.GPUHints = tc.learn, tc.from, tc.hints
		if _, _, err := RunAll(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--learn-from %s: error %v, want %q", tc.from, err, tc.want)
		}
	}
}

// --gpu-events-known tells the scheduler each event as it happens. On
// 1x2, both GPUs believed and truly 1.0, 100 s rounds; at t = 100 GPU 0
// becomes 2.0 for every class; a 1-GPU job of 1000 iterations of 1 s
// arrives at 200. Not told, the scheduler sees a tie and takes the first
// GPU, 0, where the job runs at 2.0: JCT 2000 s. Told, GPU 0 scores
// slower and the job runs on GPU 1: 1000 s. Told without events, or
// with --learn-scores, is an error naming the flag.
func TestGPUEventsKnown(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "t.csv", "job_id,num_gpus,submit_time,duration,model\n0,1,200,1000,synergy\n")
	scores := writeFile(t, dir, "s.csv", "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,1,1,1,1\n1,0,1,1,1,1\n")
	events := writeFile(t, dir, "e.csv", "time_s,gpu,class,new_score\n100,0,*,2.0\n")
	run := func(known, learn bool, ev string) (float64, map[string]string, error) {
		o, err := Preset("artifact")
		if err != nil {
			t.Fatal(err)
		}
		o.Trace, o.Cluster, o.Round, o.Placements, o.GPUScores, o.GPUEvents = trace, "1x2", 100, "pal", scores, ev
		o.GPUEventsKnown, o.LearnScores = known, learn
		in, runs, err := RunAll(o)
		if err != nil {
			return 0, nil, err
		}
		return runs[0].AvgJCT, in.Describe(), nil
	}
	for _, tc := range []struct {
		known bool
		want  float64
	}{{false, 2000}, {true, 1000}} {
		got, h, err := run(tc.known, false, events)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("known %v: JCT %v, want %v", tc.known, got, tc.want)
		}
		if told := strings.Contains(h["true_gpu_values"], "told to the scheduler"); told != tc.known {
			t.Errorf("known %v: header %q", tc.known, h["true_gpu_values"])
		}
	}
	for _, tc := range []struct {
		learn bool
		ev    string
	}{{false, ""}, {true, events}} {
		if _, _, err := run(true, tc.learn, tc.ev); err == nil || !strings.Contains(err.Error(), "--gpu-events-known") {
			t.Errorf("learn %v events %q: error %v, want one naming --gpu-events-known", tc.learn, tc.ev, err)
		}
	}
}
