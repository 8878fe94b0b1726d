//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/replay"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/workload"
)

// themisTrace is three apps on 16 GPUs: app a fills the cluster at 300 s,
// b and c arrive while a's leases run, so the auctions at lease ends take
// GPUs from a (the simulator stops jobs eight times: six preemptions, two
// moves carried out as stops). Arrivals are 225 s past a round boundary:
// the replay creates each job's pods a quarter round (1 s of wall time at
// 4 s rounds) before the boundary that admits it, and a pod's creation
// time has whole seconds, so the scheduler reads exactly the trace's
// arrival, 75 s (1 s of wall time) before the boundary.
const themisTrace = `job_id,num_gpus,submit_time,duration,model,app
1,8,225,10000,BERT,a
2,8,225,10000,BERT,a
3,4,525,6000,BERT,b
4,4,525,6000,BERT,b
5,2,825,4000,BERT,c
6,4,1125,3000,vgg19,c
7,2,1425,3000,BERT,a
`

// The same app trace through pal sim --scheduler themis (4x4, the same GPU
// scores, 300 s rounds, --moves evict-relaunch as the driver carries moves
// out, lease 600 s) and through pal-kube scheduler with scheduler: themis on
// the dev cluster (one 300 s round = 4 s wall, so that a round that evicts
// several gangs of 8 pods on a loaded machine ends before the next; kwok
// finishes the pods): every
// job starts, is stopped, runs and ends in the same rounds on the same
// final GPUs, so the apps' GPU time and finish order are the simulator's.
// No gang is evicted before its lease ends: every eviction comes at least
// a lease (600 s = 8 s wall) after the round that placed the pod, the
// driver counted no refused revocation, and the simulator's policy saw no
// lease broken.
func TestThemisSchedulerMatchesSim(t *testing.T) {
	const R, speedup = 300.0, 75.0
	tracePath, scoresPath := parityInputs(t, themisTrace)

	// The simulator, as pal sim --scheduler themis --trace T --cluster 4x4
	// --gpu-scores S --extra-load 0 --round 300 --moves evict-relaunch.
	o, _ := experiment.Preset("artifact")
	o.Scheduler, o.Trace, o.Cluster, o.GPUScores, o.ExtraLoad = "themis", tracePath, "4x4", scoresPath, 0
	o.Round, o.Moves = R, string(sim.MovesEvictRelaunch)
	o.Explicit.Flags = []string{"round"}
	o = o.Effective()
	in, err := experiment.Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := in.Config(o.Placements)
	if err != nil {
		t.Fatal(err)
	}
	simRes, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.Scheduler.(*themis.Policy).Stats().Violations; len(v) > 0 {
		t.Errorf("sim: lease violations %v", v)
	}
	stops := 0
	for _, j := range simRes.Jobs {
		stops += j.Preemptions + j.Migrations
	}
	if stops == 0 {
		t.Fatalf("sim: no job was stopped: the trace does not test leases")
	}

	// The dev cluster.
	e := newEnv(t, 4, 4)
	installScores(t, e, scoresPath)
	kc := testConfig()
	kc.Period = kube.Duration{Duration: time.Duration(R / speedup * float64(time.Second))}
	kc.AlignPeriod, kc.ArrivalDelay = true, kube.Duration{}
	kc.Scheduler = "themis"
	kc.MigrationCost = kube.Duration{} // pal sim's default: moves are free
	kc.TimeScale = speedup
	s, _ := e.runScheduler(kc, "pal")

	// Watch evictions: a pod deleted before it succeeded, against the
	// round that placed it.
	leaseWall := time.Duration(themis.DefaultLease / speedup * float64(time.Second))
	var mu sync.Mutex
	var evictions []string
	var early []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace("pal-replay"))
	pi := f.Core().V1().Pods().Informer()
	_, _ = pi.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Spec.NodeName == "" {
			return
		}
		bi, err := kube.ParseBindInfo(p.Annotations[kube.AnnBindInfo])
		if err != nil {
			return
		}
		placed, err := time.Parse(time.RFC3339Nano, bi.Round)
		if err != nil {
			return
		}
		held := time.Since(placed)
		mu.Lock()
		defer mu.Unlock()
		evictions = append(evictions, fmt.Sprintf("%s after %v", p.Name, held.Round(10*time.Millisecond)))
		if held < leaseWall {
			early = append(early, fmt.Sprintf("%s evicted %v after the round that placed it (lease %v)", p.Name, held, leaseWall))
		}
	}})
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), pi.HasSynced)

	tr, err := workload.ReadTraceFile(tracePath, workload.DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Run(context.Background(), e.cs, replay.Options{Trace: tr, Round: R, Speedup: speedup,
		Namespace: "pal-replay", SchedulerName: "pal", Timeout: 4 * time.Minute, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}

	// Job by job against the simulator.
	if len(res.Jobs) != len(simRes.Jobs) {
		t.Fatalf("replay finished %d jobs, sim %d", len(res.Jobs), len(simRes.Jobs))
	}
	for i, rj := range res.Jobs {
		sj := simRes.Jobs[i]
		t.Logf("job %d (app %s): sim start %5.0f end %5.0f run %5.0f stops %d GPUs %v | replay start %5.0f end %5.0f run %5.0f stops %d GPUs %v",
			sj.ID, tr.Jobs[i].App, sj.FirstStart, sj.Completion, sj.Run, sj.Preemptions+sj.Migrations, sj.GPUIDs,
			rj.FirstStart, rj.Completion, rj.Run, rj.Preemptions, rj.GPUIDs)
		if rj.ID != sj.ID || rj.FirstStart != sj.FirstStart || rj.Completion != sj.Completion || rj.Run != sj.Run ||
			rj.Preemptions != sj.Preemptions+sj.Migrations || !slices.Equal(rj.GPUIDs, sj.GPUIDs) {
			t.Errorf("job %d: replay differs from sim", sj.ID)
		}
	}
	// The auction outcome per app: GPU time and finish order.
	simShare, repShare := appGPUTime(tr, simRes.Jobs), appGPUTime(tr, res.Jobs)
	t.Logf("GPU-seconds per app: sim %v, replay %v; finish order: sim %v, replay %v",
		simShare, repShare, finishOrder(tr, simRes.Jobs), finishOrder(tr, res.Jobs))
	if fmt.Sprint(simShare) != fmt.Sprint(repShare) || !slices.Equal(finishOrder(tr, simRes.Jobs), finishOrder(tr, res.Jobs)) {
		t.Errorf("apps' GPU time or finish order differ")
	}

	// Leases.
	mu.Lock()
	t.Logf("%d pods evicted: %v", len(evictions), evictions)
	if len(evictions) == 0 {
		t.Errorf("no pod was evicted: the replay did not test leases")
	}
	for _, m := range early {
		t.Error(m)
	}
	mu.Unlock()
	body := scrape(t, s)
	if !strings.Contains(body, "\npal_lease_revocations_total 0\n") {
		t.Errorf("pal_lease_revocations_total is not 0:\n%s", grepLines(body, "pal_lease"))
	}
	t.Logf("metrics: %s", grepLines(body, "pal_app_rho"))
	if !strings.Contains(body, "\npal_app_rho{app=\"pal-replay/a\"} ") {
		t.Errorf("no pal_app_rho series for app pal-replay/a (the last auction's only app)")
	}

	// Scheduled events name the app and its ρ.
	evs, err := e.cs.CoreV1().Events("pal-replay").List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"reason": "Scheduled"}.AsSelector().String()})
	if err != nil {
		t.Fatal(err)
	}
	withRho := 0
	for _, ev := range evs.Items {
		if strings.Contains(ev.Message, "themis app pal-replay/") && strings.Contains(ev.Message, ", rho ") {
			withRho++
		}
	}
	if withRho == 0 {
		t.Errorf("no Scheduled event names a Themis app and its rho (%d Scheduled events)", len(evs.Items))
	}
}

// appGPUTime is each app's GPU-seconds (run time x GPUs over its jobs).
func appGPUTime(tr *workload.Trace, jobs []metrics.JobRecord) map[string]float64 {
	app := map[int]string{}
	for _, j := range tr.Jobs {
		app[j.ID] = j.App
	}
	out := map[string]float64{}
	for _, j := range jobs {
		out[app[j.ID]] += j.Run * float64(j.GPUs)
	}
	return out
}

// finishOrder is the apps by the completion of their last job.
func finishOrder(tr *workload.Trace, jobs []metrics.JobRecord) []string {
	app := map[int]string{}
	for _, j := range tr.Jobs {
		app[j.ID] = j.App
	}
	end := map[string]float64{}
	for _, j := range jobs {
		end[app[j.ID]] = math.Max(end[app[j.ID]], j.Completion)
	}
	var names []string
	for a := range end {
		names = append(names, a)
	}
	slices.SortFunc(names, func(x, y string) int {
		if end[x] != end[y] {
			return int(math.Copysign(1, end[x]-end[y]))
		}
		return strings.Compare(x, y)
	})
	return names
}

func scrape(t *testing.T, s *kube.Scheduler) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return "\n" + string(b)
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
