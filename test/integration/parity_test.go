//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/replay"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// parityTrace queues jobs on 16 GPUs so that later jobs start on GPUs
// that earlier ones free: placement depends on the whole history.
const parityTrace = `job_id,num_gpus,submit_time,duration,model
1,4,0,5000,BERT
2,2,0,3000,resnet50
3,8,100,7000,vgg19
4,1,400,2000,BERT
5,2,700,300,GPT2
6,4,720,20000,DCGAN
7,3,1000,3000,PointNet
8,6,1100,5000,BERT
9,1,1500,1000,resnet50
10,4,1800,4000,vgg19
11,2,2000,2000,BERT
12,5,2100,3000,BERT
`

// One small trace replayed through the dev cluster and pal scheduler
// under FIFO and a sticky placement (packed-sticky) gives every job the
// same GPUs, start and completion as pal sim on the same cluster (4x4)
// and GPU scores. Time scaling: one simulated 360 s round is 2 s of wall
// time (speedup 180).
func TestParityWithSim(t *testing.T) { parity(t, "packed-sticky") }

// The same under PAL does not hold, and is not a driver bug: PAL is a
// non-sticky placement (place.PAL.Sticky() is false) that re-plans every
// job each round, and on this trace the simulator itself moves running
// jobs (job 1 from GPUs 4-7 to 0-3 at 720 s, job 3 five times ...) at no
// cost. The driver makes the same moves, but a move there is an eviction
// and a relaunch a round later, so times and later placements drift, and
// the replay records a job's last placement where the simulator's
// observer records its first. PAL_PARITY=1 runs it.
func TestParityWithSimPAL(t *testing.T) {
	if os.Getenv("PAL_PARITY") == "" {
		t.Skip("PAL is non-sticky: the simulator migrates for free, the driver by eviction; PAL_PARITY=1 runs it")
	}
	parity(t, "pal")
}

func parity(t *testing.T, placement string) {
	const R, speedup = 360.0, 180.0
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.csv")
	scoresPath := filepath.Join(dir, "gpu-scores.csv")
	if err := os.WriteFile(tracePath, []byte(parityTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n")
	for g := range 16 {
		fmt.Fprintf(&sb, "%d,%d,%.3f,%.3f,%.3f,%.3f\n", g, g/4, 0.8+0.05*float64((g*7)%9), 0.9+0.03*float64((g*5)%7), 0.95+0.02*float64((g*3)%5), 1+0.01*float64(g%4))
	}
	if err := os.WriteFile(scoresPath, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// The simulator, exactly as pal sim --trace T --cluster 4x4
	// --gpu-scores S --extra-load 0 --placement P runs it, recording the
	// GPUs of each launch.
	o, _ := experiment.Preset("artifact")
	o.Trace, o.Cluster, o.GPUScores, o.ExtraLoad, o.Placements = tracePath, "4x4", scoresPath, 0, placement
	in, err := experiment.Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := in.Config(placement)
	if err != nil {
		t.Fatal(err)
	}
	simGPUs := map[int][]int{}
	cfg.Observe = func(_ float64, order []*workload.Job, alloc [][]int) {
		for i, j := range order {
			if placement != "pal" && alloc[i] != nil && j.Running() && !slices.Equal(alloc[i], j.GPUsHeld) {
				t.Errorf("sim: %s moved running job %d from %v to %v", placement, j.ID, j.GPUsHeld, alloc[i])
			}
			if alloc[i] != nil && !j.Running() {
				if _, seen := simGPUs[j.ID]; seen {
					t.Errorf("sim: job %d launched twice", j.ID)
				}
				simGPUs[j.ID] = alloc[i]
			}
		}
	}
	simRes, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The same on the dev cluster.
	e := newEnv(t, 4, 4)
	out, err := exec.Command(palBin, "profile", "export", "--kubernetes", "--gpu-scores", scoresPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(out, &cm); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("pal-system").Create(context.Background(), &cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := testConfig()
	kc.Period = kube.Duration{Duration: time.Duration(R / speedup * float64(time.Second))}
	kc.AlignPeriod, kc.ArrivalDelay = true, kube.Duration{}
	kc.Scheduler, kc.Placement = "fifo", placement
	e.runScheduler(kc, "pal")
	tr, err := workload.ReadTraceFile(tracePath, workload.DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Run(context.Background(), e.cs, replay.Options{Trace: tr, Round: R, Speedup: speedup,
		Namespace: "pal-replay", SchedulerName: "pal", Timeout: 4 * time.Minute, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}

	if len(res.Jobs) != len(simRes.Jobs) {
		t.Fatalf("replay finished %d jobs, sim %d", len(res.Jobs), len(simRes.Jobs))
	}
	for i, rj := range res.Jobs {
		sj := simRes.Jobs[i]
		var want []string
		for _, g := range simGPUs[sj.ID] {
			want = append(want, fmt.Sprintf("gpu-node-%03d:%d", g/4, g%4))
		}
		var got []string
		for _, p := range res.Placements[i].Pods {
			for _, x := range p.GPUs {
				got = append(got, fmt.Sprintf("%s:%d", p.Node, x))
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		t.Logf("job %2d: sim GPUs %v start %5.0f end %5.0f | replay GPUs %v start %5.0f end %5.0f",
			sj.ID, want, sj.FirstStart, sj.Completion, got, rj.FirstStart, rj.Completion)
		if !slices.Equal(got, want) {
			t.Errorf("job %d: replay GPUs %v, sim %v", sj.ID, got, want)
		}
		if rj.FirstStart != sj.FirstStart || rj.Completion != sj.Completion {
			t.Errorf("job %d: replay start/end %v/%v, sim %v/%v", sj.ID, rj.FirstStart, rj.Completion, sj.FirstStart, sj.Completion)
		}
	}
}
