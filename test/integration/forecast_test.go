//go:build integration

package integration

import (
	"context"
	"fmt"
	"math"
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

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/replay"
	"github.com/palsched/pal/workload"
)

// forecastTrace keeps gangs waiting on 16 GPUs under FIFO: three jobs
// fill the cluster at 0 s for 3 to 6 rounds, a 16-GPU gang waits for
// all of them and a 12-GPU one for most, and every later job queues
// behind. pal sim (--preset artifact --cluster 4x4, parityInputs'
// scores, packed-sticky) has 10 jobs waiting at 1080 s, the last
// starting at 5400 s and ending at 6120 s: 17 rounds, 34 s of wall time
// at one 360 s round per 2 s.
const forecastTrace = `job_id,num_gpus,submit_time,duration,model
1,8,0,5000,BERT
2,4,0,4000,resnet50
3,4,0,6000,vgg19
4,8,100,3000,BERT
5,16,200,3000,BERT
6,2,300,2000,BERT
7,4,400,3000,DCGAN
8,1,500,1500,resnet50
9,12,600,2500,BERT
10,2,700,1500,PointNet
11,4,800,2000,vgg19
12,3,900,2500,BERT
13,6,1000,2000,resnet50
14,1,1100,1200,resnet50
`

// forecastLine is one waiting gang as pal-kube forecast prints it.
type forecastLine struct {
	gang     string // namespace/name
	position int
	start    time.Time // zero when it printed "-"
}

// parseForecast reads pal-kube forecast's table: the forecast's time
// from its header and one line per waiting gang.
func parseForecast(out string) (time.Time, []forecastLine, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "# forecast at ") {
		return time.Time{}, nil, fmt.Errorf("no forecast header")
	}
	at, err := time.Parse(time.RFC3339, strings.Fields(lines[0])[3])
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("header: %v", err)
	}
	head := strings.Fields(lines[1])
	if len(head) < 4 || head[1] != "gang" || head[3] != "estimated_start" {
		return time.Time{}, nil, fmt.Errorf("unexpected columns %q", lines[1])
	}
	var rows []forecastLine
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) < 4 {
			return time.Time{}, nil, fmt.Errorf("short line %q", l)
		}
		r := forecastLine{gang: f[1]}
		if _, err := fmt.Sscan(f[0], &r.position); err != nil {
			return time.Time{}, nil, fmt.Errorf("line %q: position: %v", l, err)
		}
		if f[3] != "-" {
			if r.start, err = time.Parse(time.RFC3339, f[3]); err != nil {
				return time.Time{}, nil, fmt.Errorf("line %q: %v", l, err)
			}
		}
		rows = append(rows, r)
	}
	return at, rows, nil
}

// pendingGangs are the gangs of the replay's namespace with a pod that
// is not bound, as namespace/name.
func pendingGangs(t *testing.T, e *env, ns string) []string {
	t.Helper()
	list, err := e.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		g := ns + "/" + p.Annotations[kube.AnnGang]
		if p.Spec.NodeName == "" && p.Status.Phase != corev1.PodSucceeded && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// nearestRank is the q-quantile of sorted xs by nearest rank.
func nearestRank(xs []float64, q float64) float64 {
	return xs[max(0, int(math.Ceil(q*float64(len(xs))))-1)]
}

// pal-kube forecast on a dev cluster while a trace is replayed (FIFO,
// packed-sticky, exact durations, one 360 s round per 2 s of wall time)
// prints an estimated start for exactly the gangs that wait, and those
// starts are the starts the gangs then get.
//
// The forecast is taken half a period after one of the scheduler's
// rounds, once at least 8 gangs wait. The scheduler aligns its rounds to
// the period, so the forecast starts at its next round (not at the
// moment the command runs, which would put every start half a round
// off), and the pending set must be the apiserver's before and after the
// command (binds happen only at rounds). Every estimated start it prints
// (RFC 3339, whole seconds) is then a real round's boundary, since rounds
// fall on even wall seconds. Under strict FIFO order with a sticky
// placement and the simulator's own durations, later arrivals do not
// delay a waiting gang and nothing moves, so the forward run is the run
// itself: a right forecast is exact, a wrong one is off by whole rounds
// (360 s). The test asserts every gang's absolute error is under half
// a round (so the median and the head gang's too), and logs the median,
// p90 and max.
func TestForecastOnReplayedTrace(t *testing.T) {
	const R, speedup, minPending = 360.0, 180.0, 8
	wr := time.Duration(R / speedup * float64(time.Second))
	tracePath, scoresPath := parityInputs(t, forecastTrace)
	e := newEnv(t, 4, 4)
	installScores(t, e, scoresPath)
	kc := testConfig()
	kc.Period = kube.Duration{Duration: wr}
	kc.AlignPeriod, kc.ArrivalDelay = true, kube.Duration{}
	kc.Scheduler, kc.Placement = "fifo", "packed-sticky"
	kc.TimeScale = speedup
	e.runScheduler(kc, "pal")
	body, err := yaml.Marshal(kc)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "pal.yaml")
	if err := os.WriteFile(cfgFile, body, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.ReadTraceFile(tracePath, workload.DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pal-replay"
	type result struct {
		res *replay.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := replay.Run(context.Background(), e.cs, replay.Options{Trace: tr, Round: R, Speedup: speedup,
			Namespace: ns, SchedulerName: "pal", Timeout: 3 * time.Minute, Log: t.Logf})
		done <- result{res, err}
	}()

	// At each round boundary b (rounds are aligned to multiples of the
	// period on the wall clock), half a period after it: the pending set,
	// the forecast, the pending set again.
	var (
		at      time.Time // the forecast's time as printed
		round   time.Time // the round it follows
		rows    []forecastLine
		pending []string
		out     string
	)
	deadline := time.Now().Add(time.Minute)
	for b := time.Now().Truncate(wr).Add(wr); ; b = b.Add(wr) {
		if time.Now().After(deadline) {
			t.Fatalf("no round within a minute with %d gangs waiting and the same ones after the forecast", minPending)
		}
		time.Sleep(time.Until(b.Add(wr / 2)))
		before := pendingGangs(t, e, ns)
		if len(before) < minPending {
			continue
		}
		c0 := time.Now()
		o, err := exec.Command(kubeBin, "forecast", "--kubeconfig", e.cl.Kubeconfig, "--config", cfgFile).CombinedOutput()
		c1 := time.Now()
		if err != nil {
			t.Fatalf("pal-kube forecast: %v\n%s", err, o)
		}
		after := pendingGangs(t, e, ns)
		fat, fr, err := parseForecast(string(o))
		if err != nil {
			t.Fatalf("pal-kube forecast output: %v\n%s", err, o)
		}
		t.Logf("forecast after the round at %s: ran %v-%v after it, printed time %s, %d waiting",
			b.Format(time.RFC3339Nano), c0.Sub(b), c1.Sub(b), fat.Format(time.RFC3339), len(fr))
		if !slices.Equal(before, after) {
			t.Logf("retrying: the pending set changed (%v -> %v)", before, after)
			continue
		}
		if next := b.Add(wr); c1.Before(next) && !fat.Equal(next) {
			t.Errorf("forecast taken %v into the period starts at %s, want the scheduler's next round %s",
				c0.Sub(b), fat.Format(time.RFC3339Nano), next.Format(time.RFC3339Nano))
		}
		at, round, rows, pending, out = fat, b, fr, before, string(o)
		break
	}
	t.Logf("pal-kube forecast:\n%s", out)

	var forecast []string
	for _, r := range rows {
		forecast = append(forecast, r.gang)
		if r.start.IsZero() {
			t.Errorf("%s: no estimated start", r.gang)
		} else if r.start.Before(at) {
			t.Errorf("%s: estimated start %s before the forecast's time %s", r.gang, r.start.Format(time.RFC3339), at.Format(time.RFC3339))
		}
	}
	slices.Sort(forecast)
	if !slices.Equal(forecast, pending) {
		t.Fatalf("forecast gangs %v; the apiserver's pending gangs %v", forecast, pending)
	}

	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.res
	trace := func(w time.Time) float64 { return w.Sub(res.Start).Seconds() * speedup }
	// Actual starts: the round in each gang's bind-info, as the
	// apiserver holds its pods.
	list, err := e.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]time.Time{}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		bi, err := kube.ParseBindInfo(p.Annotations[kube.AnnBindInfo])
		if err != nil {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		rs, err := time.Parse(time.RFC3339Nano, bi.Round)
		if err != nil {
			t.Fatalf("pod %s: bind-info round: %v", p.Name, err)
		}
		g := ns + "/" + p.Annotations[kube.AnnGang]
		if old, ok := bound[g]; !ok || rs.Before(old) {
			bound[g] = rs
		}
	}
	firstStart := map[string]float64{} // the replay's record, by gang
	for i, j := range tr.Jobs {
		firstStart[fmt.Sprintf("%s/%s-%05d-j%d", ns, res.Run, i, j.ID)] = res.Jobs[i].FirstStart
	}
	t.Logf("forecast at %.0f s of the trace (the round at %.0f s): %d waiting gangs", trace(at), trace(round), len(rows))
	var errs []float64
	for _, r := range rows {
		b, ok := bound[r.gang]
		if !ok {
			t.Errorf("%s: never bound", r.gang)
			continue
		}
		actual := trace(b)
		if fs, ok := firstStart[r.gang]; !ok || math.Abs(fs-actual) > R/4 {
			t.Errorf("%s: bound in the round at %.0f s, the replay records its start at %v s", r.gang, actual, fs)
		}
		if r.start.IsZero() {
			continue
		}
		eta := trace(r.start)
		d := math.Abs(eta - actual)
		t.Logf("position %2d %s: estimated start %6.0f s, actual %6.0f s, error %4.0f s", r.position, r.gang, eta, actual, d)
		if !(d < R/2) {
			t.Errorf("position %d, %s: estimated start %.0f s, actual %.0f s: off by %.0f s, want under half a round (%.0f s)", r.position, r.gang, eta, actual, d, R/2)
		}
		errs = append(errs, d)
	}
	if len(errs) == 0 {
		t.Fatal("no gang to measure")
	}
	slices.Sort(errs)
	med, p90 := nearestRank(errs, 0.5), nearestRank(errs, 0.9)
	t.Logf("forecast error over %d gangs (trace seconds): median %.0f, p90 %.0f, max %.0f", len(errs), med, p90, errs[len(errs)-1])
}
