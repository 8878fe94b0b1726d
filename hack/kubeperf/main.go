// Command kubeperf measures pal scheduler on a dev cluster: N pods in
// gangs of 1-8 one-GPU pods on M kwok nodes, pods bound per second,
// create-to-bound latency (p50, p99), and the CPU seconds the scheduler
// and the kube-apiserver spent in the same run. Run it through
// hack/kube-perf.sh.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/metrics"
)

func main() {
	nodes := flag.Int("nodes", 1000, "kwok nodes")
	gpus := flag.Int("gpus", 8, "GPUs per node")
	pods := flag.Int("pods", 10000, "pods to create")
	run := flag.Duration("run", 5*time.Second, "how long each pod runs once bound (kwok finishes it)")
	pal := flag.String("pal", "", "pal binary (built by hack/kube-perf.sh)")
	seed := flag.Uint64("seed", 1, "seed of the gang sizes")
	placement := flag.String("placement", "pal", "placement")
	flag.Parse()
	if err := measure(*nodes, *gpus, *pods, *run, *pal, *seed, *placement); err != nil {
		fmt.Fprintln(os.Stderr, "kubeperf:", err)
		os.Exit(1)
	}
}

// cpuSeconds is a process's user+system CPU time from /proc.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100 // USER_HZ
}

func measure(nNodes, gpus, nPods int, run time.Duration, pal string, seed uint64, placement string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "pal-kubeperf")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	t := time.Now()
	cl, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, Nodes: nNodes, GPUsPerNode: gpus})
	if err != nil {
		return err
	}
	defer cl.Down()
	fmt.Printf("dev cluster: %d nodes x %d GPUs ready in %.1f s\n", nNodes, gpus, time.Since(t).Seconds())
	cs, err := cl.Client()
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "perf"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "pal.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("period: 1s\narrivalDelay: 100ms\nqps: 3000\nburst: 6000\nbindWorkers: 64\nmetricsAddr: \"\"\nplacement: %s\nleaderElection: {enabled: false}\n", placement)), 0o644); err != nil {
		return err
	}
	logf, _ := os.Create(filepath.Join(dir, "scheduler.log"))
	sched := exec.Command(pal, "scheduler", "--config", cfg, "--kubeconfig", cl.Kubeconfig, "--log-level", "warn")
	sched.Stdout, sched.Stderr = logf, logf
	if err := sched.Start(); err != nil {
		return err
	}
	defer func() { _ = sched.Process.Kill(); _ = sched.Wait() }()

	var mu sync.Mutex
	created := map[string]time.Time{}
	boundAt := map[string]time.Time{}
	done := make(chan struct{})
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("perf"))
	pi := f.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := boundAt[p.Name]; !ok {
			boundAt[p.Name] = time.Now()
			if len(boundAt) == nPods {
				close(done)
			}
		}
	}
	_, _ = pi.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }})
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), pi.HasSynced)
	time.Sleep(2 * time.Second) // the scheduler's informers sync

	api, schedPID := cl.PID("kube-apiserver"), sched.Process.Pid
	cpu0 := map[string]float64{"scheduler": cpuSeconds(schedPID), "kube-apiserver": cpuSeconds(api), "etcd": cpuSeconds(cl.PID("etcd")), "kwok": cpuSeconds(cl.PID("kwok"))}

	rng := rand.New(rand.NewPCG(seed, 0x70657266))
	type podReq struct {
		name, gang string
		size       int
	}
	var reqs []podReq
	sizes := map[int]int{}
	for g := 0; len(reqs) < nPods; g++ {
		n := min(1+rng.IntN(8), nPods-len(reqs))
		sizes[n]++
		for i := range n {
			reqs = append(reqs, podReq{fmt.Sprintf("g%05d-%d", g, i), fmt.Sprintf("g%05d", g), n})
		}
	}
	start := time.Now()
	work := make(chan podReq)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for r := range work {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: "perf", Annotations: map[string]string{
					kube.AnnGang: r.gang, kube.AnnGangSize: strconv.Itoa(r.size), devcluster.AnnFinishAfter: run.String()}},
					Spec: corev1.PodSpec{SchedulerName: "pal", TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c", Image: "x",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}}}
				mu.Lock()
				created[r.name] = time.Now()
				mu.Unlock()
				if _, err := cs.CoreV1().Pods("perf").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					fmt.Fprintln(os.Stderr, "create:", err)
				}
			}
		})
	}
	for _, r := range reqs {
		work <- r
	}
	close(work)
	wg.Wait()
	createdIn := time.Since(start)
	select {
	case <-done:
	case <-time.After(15 * time.Minute):
		return fmt.Errorf("only %d of %d pods bound after 15 minutes (see %s)", len(boundAt), nPods, filepath.Join(dir, "scheduler.log"))
	}
	mu.Lock()
	defer mu.Unlock()
	var last time.Time
	var lat []float64
	for n, b := range boundAt {
		lat = append(lat, b.Sub(created[n]).Seconds())
		if b.After(last) {
			last = b
		}
	}
	slices.SortFunc(lat, cmp.Compare[float64])
	cpu := map[string]float64{"scheduler": cpuSeconds(schedPID), "kube-apiserver": cpuSeconds(api), "etcd": cpuSeconds(cl.PID("etcd")), "kwok": cpuSeconds(cl.PID("kwok"))}
	span := last.Sub(start).Seconds()
	fmt.Printf("pods: %d in gangs of 1-8 (sizes: %v), seed %d, each runs %v once bound; placement %s\n", nPods, sizes, seed, run, placement)
	fmt.Printf("created in %.1f s; all bound %.1f s after the first create\n", createdIn.Seconds(), span)
	fmt.Printf("pods bound per second: %.0f\n", float64(nPods)/span)
	fmt.Printf("create-to-bound latency: p50 %.2f s, p99 %.2f s, max %.2f s\n", metrics.Quantile(lat, 0.5), metrics.Quantile(lat, 0.99), lat[len(lat)-1])
	for _, k := range []string{"scheduler", "kube-apiserver", "etcd", "kwok"} {
		fmt.Printf("CPU %-15s %6.1f s\n", k, cpu[k]-cpu0[k])
	}
	ds, da := cpu["scheduler"]-cpu0["scheduler"], cpu["kube-apiserver"]-cpu0["kube-apiserver"]
	fmt.Printf("scheduler CPU / apiserver CPU: %.1f%% (goal <= 20%%)\n", 100*ds/da)
	return nil
}
