package profilebench

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ApplyOptions configure Apply.
type ApplyOptions struct {
	// Poll is how often the run's pods are listed (0: 2 s).
	Poll time.Duration
	// Progress gets one line per started and finished run (nil: none).
	Progress io.Writer
	// Sleep waits between polls (nil: a timer on Poll); tests replace it
	// to act as the kubelet between two looks.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Apply creates the run's ConfigMap (marked AnnCreatedBy), then its pods,
// each owned by the ConfigMap, starting a pod only when the previous
// run of its queue (its node, or its GPU with per-GPU concurrency) has
// finished, and returns when every run has finished or ctx ends. Run it
// again with the same plan after an interruption and it resumes: pods
// that exist and are owned by the run count as started.
func Apply(ctx context.Context, cs kubernetes.Interface, plan *Plan, o ApplyOptions) error {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	progress := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	cm, err := ensureConfigMap(ctx, cs, plan)
	if err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}

	// queues[k] are the runs of queue k still to start, in plan order.
	var order []string
	queues := map[string][]Run{}
	for _, r := range plan.Runs {
		if _, ok := queues[r.Queue]; !ok {
			order = append(order, r.Queue)
		}
		queues[r.Queue] = append(queues[r.Queue], r)
	}
	inFlight := map[string]string{} // queue -> pod started and not yet seen finished
	done := 0
	for {
		list, err := cs.CoreV1().Pods(plan.Namespace).List(ctx, metav1.ListOptions{LabelSelector: plan.Selector()})
		if err != nil {
			return err
		}
		pods := map[string]*corev1.Pod{}
		for i := range list.Items {
			pods[list.Items[i].Name] = &list.Items[i]
		}
		for _, q := range order {
			for {
				if name, ok := inFlight[q]; ok {
					p := pods[name]
					if p != nil && !isFinished(p) {
						break // still running: the queue waits
					}
					state := "gone"
					if p != nil {
						state = string(p.Status.Phase)
					}
					progress("finished %s: %s (%d of %d)", name, state, done+1, len(plan.Runs))
					delete(inFlight, q)
					done++
				}
				if len(queues[q]) == 0 {
					break
				}
				r := queues[q][0]
				queues[q] = queues[q][1:]
				if p, ok := pods[r.Pod]; ok {
					if !ownedBy(p, cm) {
						return fmt.Errorf("pod %s/%s exists and was not created by run %s: delete it or pick another --run-id", p.Namespace, p.Name, plan.RunID)
					}
					inFlight[q] = r.Pod // resumed
					continue
				}
				pod := plan.Pod(r)
				pod.OwnerReferences = []metav1.OwnerReference{owner}
				created, err := cs.CoreV1().Pods(plan.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("creating pod %s: %w", r.Pod, err)
				}
				pods[r.Pod] = created
				inFlight[q] = r.Pod
				progress("started %s on %s GPU %d: %s repetition %d", r.Pod, r.Node, r.GPU, r.Model, r.Repetition)
			}
		}
		if done == len(plan.Runs) {
			return nil
		}
		if err := o.Sleep(ctx, o.Poll); err != nil {
			return fmt.Errorf("%d of %d runs finished: %w", done, len(plan.Runs), err)
		}
	}
}

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ensureConfigMap creates the run's ConfigMap, or finds the one an
// interrupted Apply of the same plan created.
func ensureConfigMap(ctx context.Context, cs kubernetes.Interface, plan *Plan) (*corev1.ConfigMap, error) {
	want, err := plan.ConfigMap()
	if err != nil {
		return nil, err
	}
	want.Annotations = map[string]string{AnnCreatedBy: "pal profile bench --apply"}
	cm, err := cs.CoreV1().ConfigMaps(plan.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cm, err = cs.CoreV1().ConfigMaps(plan.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if cm.Annotations[AnnCreatedBy] == "" || !reflect.DeepEqual(cm.Data, want.Data) {
			return nil, fmt.Errorf("configmap %s/%s exists with another plan or was not created by pal profile bench --apply: pick another --run-id", cm.Namespace, cm.Name)
		}
	} else if err != nil {
		return nil, fmt.Errorf("creating configmap %s/%s: %w", want.Namespace, want.Name, err)
	}
	if cm.UID == "" {
		return nil, fmt.Errorf("configmap %s/%s has no UID: the API server did not set one", cm.Namespace, cm.Name)
	}
	return cm, nil
}
