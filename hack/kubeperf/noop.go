package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/kube"
)

// noopSchedulerName is the schedulerName of the no-op binder's pods.
const noopSchedulerName = "kubeperf-noop"

// gangGates are the feature gates of kube-scheduler's gang
// configuration, on the apiserver and the scheduler.
const gangGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// mostAllocatedProfile makes kube-scheduler's NodeResourcesFit score
// nodes by how much of their nvidia.com/gpu is taken (MostAllocated),
// so it packs a node before it starts the next; its default,
// LeastAllocated on CPU and memory, spreads.
const mostAllocatedProfile = `profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: nvidia.com/gpu
          weight: 1
`

// rooms hands out nodes' free GPUs first fit, nodes in name order: no
// scoring, no gangs, no filters but room.
type rooms struct {
	names []string
	free  map[string]int
	next  int // nodes before it are full
}

func newRooms(nodes []*corev1.Node) *rooms {
	r := &rooms{free: map[string]int{}}
	for _, n := range nodes {
		if g := kube.NodeGPUs(n); g > 0 {
			r.names = append(r.names, n.Name)
			r.free[n.Name] = g
		}
	}
	slices.Sort(r.names)
	return r
}

// take is a node with want free GPUs, taken, or "" when none has room.
func (r *rooms) take(want int) string {
	for i := r.next; i < len(r.names); i++ {
		n := r.names[i]
		if r.free[n] >= want {
			r.free[n] -= want
			for r.next < len(r.names) && r.free[r.names[r.next]] == 0 {
				r.next++
			}
			return n
		}
	}
	return ""
}

// runNoopBinder binds the perf namespace's pending pods of
// noopSchedulerName, in the order the informer shows them, each to the
// first node with room, on workers goroutines through one client at
// qps/burst, until SIGTERM. It is the apiserver's ceiling for binds: a
// scheduler can bind no faster on the same cluster and client limits.
// It posts no events and writes nothing else.
func runNoopBinder(kubeconfig string, qps float32, burst, workers int) error {
	rc, err := devcluster.LoadKubeconfig(kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = qps, burst
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("noop binder: list nodes: %v", err)
	}
	var list []*corev1.Node
	for i := range nodes.Items {
		list = append(list, &nodes.Items[i])
	}
	r := newRooms(list)

	queue := make(chan *corev1.Pod, 1<<16)
	var mu sync.Mutex
	seen := map[string]bool{}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.AndSelectors(fields.OneTermEqualSelector("spec.schedulerName", noopSchedulerName),
				fields.OneTermEqualSelector("spec.nodeName", "")).String()
		}))
	pi := f.Core().V1().Pods().Informer()
	_, _ = pi.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[p.Name] {
			seen[p.Name] = true
			queue <- p
		}
	}})
	f.Start(ctx.Done())
	var wg sync.WaitGroup
	binds := make(chan *corev1.Binding, workers)
	for range workers {
		wg.Go(func() {
			for b := range binds {
				if err := cs.CoreV1().Pods(b.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "noop binder: bind %s: %v\n", b.Name, err)
				}
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			close(binds)
			wg.Wait()
			return nil
		case p := <-queue:
			want, err := kube.PodGPUs(p)
			if err != nil {
				fmt.Fprintf(os.Stderr, "noop binder: %s: %v\n", p.Name, err)
				continue
			}
			node := r.take(want)
			if node == "" {
				fmt.Fprintf(os.Stderr, "noop binder: no node has %d free GPUs for %s\n", want, p.Name)
				continue
			}
			binds <- &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		}
	}
}
