package profilebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
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
	// Cordon cordons each node before its first run and uncordons it
	// after its last (see AnnCordonedBy); it needs patch on nodes.
	Cordon bool
}

// Apply creates the run's ConfigMap (marked AnnCreatedBy), then its pods,
// each owned by the ConfigMap, starting a pod only when the previous
// run of its queue (its node, or its GPU with per-GPU concurrency) has
// finished, and returns when every run has finished or ctx ends. Run it
// again with the same plan after an interruption and it resumes: pods
// that exist and are owned by the run count as started. Returning early
// (ctx ended, an error), it first deletes the runs it started that are
// still going (unfinished measurements; a resumed Apply starts them
// anew). Before a node's first run it says which other pods hold the
// node's GPUs, and with o.Cordon it cordons the node until the node's
// last run has finished (or Apply returns early: a node is never left
// cordoned by a run that is no longer watched, except by a killed
// Apply, which Uncordon undoes).
func Apply(ctx context.Context, cs kubernetes.Interface, plan *Plan, o ApplyOptions) (err error) {
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
	inFlight := map[string]Run{} // queue -> run started and not yet seen finished
	done := 0

	// Per node: runs not yet finished, whether its first run was
	// prepared (neighbours told, cordoned), and whether its cordon is
	// the run's to lift.
	remaining := nodeRuns(plan.Runs)
	prepared, cordoned := map[string]bool{}, map[string]bool{}
	prepare := func(node string) error {
		if prepared[node] {
			return nil
		}
		prepared[node] = true
		if others, err := neighbours(ctx, cs, node, plan.RunID); err != nil {
			progress("node %s: other pods on its GPUs not checked: %v", node, err)
		} else if len(others) > 0 {
			progress("node %s: other pods hold its GPUs, and their load is measured too: %s", node, strings.Join(others, ", "))
		}
		if !o.Cordon {
			return nil
		}
		// Counted as the run's before the patch: one whose answer is
		// lost may have been made all the same, and lift undoes only a
		// cordon that carries the run's mark.
		cordoned[node] = true
		ours, err := cordon(ctx, cs, node, plan.RunID)
		if err != nil {
			return err
		}
		if ours {
			progress("cordoned node %s until its last run has finished", node)
		} else {
			delete(cordoned, node)
			progress("node %s was cordoned already: left as it is", node)
		}
		return nil
	}
	lift := func(ctx context.Context, node, why string) error {
		ok, err := uncordon(ctx, cs, node, plan.RunID)
		if err != nil {
			return err
		}
		if ok {
			progress("uncordoned node %s: %s", node, why)
		}
		delete(cordoned, node)
		return nil
	}
	if o.Cordon {
		defer func() {
			// Returning early (an error, ctx ended): no cordon stays
			// behind (the runs still going were deleted first). Each
			// node has liftTimeout of its own: a bound for them all ran
			// out after the first few dozen at the client's rate.
			nodes := make([]string, 0, len(cordoned))
			for n := range cordoned {
				nodes = append(nodes, n)
			}
			slices.Sort(nodes)
			var left []string
			var first error
			for _, n := range nodes {
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liftTimeout)
				if e := lift(lctx, n, "the benchmark stopped before its last run there finished"); e != nil {
					left = append(left, n)
					if first == nil {
						first = e
					}
				}
				cancel()
			}
			if len(left) == 0 {
				return
			}
			msg := fmt.Sprintf("%d node(s) still cordoned by run %s (pal-kube profile collect --run-id %s --namespace %s --cleanup lifts them): %s; the first: %v",
				len(left), plan.RunID, plan.RunID, plan.Namespace, strings.Join(left, ", "), first)
			if err == nil {
				err = errors.New(msg)
			} else {
				err = fmt.Errorf("%w; and %s", err, msg)
			}
		}()
	}
	// Returning early, the runs still going are deleted, before any
	// cordon is lifted (deferred last, so run first): left, each held its
	// GPU until its deadline, measured on a node no longer cordoned, and
	// was then collected as a run like any other. A resumed Apply starts
	// them anew.
	defer func() {
		if err == nil {
			return
		}
		if e := stopRuns(ctx, cs, plan, cm, progress); e != nil {
			err = fmt.Errorf("%w; and %v", err, e)
		}
	}()
	// failures counts the polls in a row with a call refused for a
	// reason that passes; refused says this poll had one.
	failures := 0
	for {
		refused := false
		list, err := cs.CoreV1().Pods(plan.Namespace).List(ctx, metav1.ListOptions{LabelSelector: plan.Selector()})
		if err != nil {
			if !passing(ctx, err) || failures == maxPollFailures {
				return fmt.Errorf("listing the run's pods: %w", err)
			}
			failures++
			progress("listing the run's pods: %v: tried again at the next poll (%d of %d polls in a row)", err, failures, maxPollFailures)
			if err := o.Sleep(ctx, o.Poll); err != nil {
				return fmt.Errorf("%d of %d runs finished: %w", done, len(plan.Runs), err)
			}
			continue
		}
		pods := map[string]*corev1.Pod{}
		for i := range list.Items {
			pods[list.Items[i].Name] = &list.Items[i]
		}
		for _, q := range order {
			for {
				if r, ok := inFlight[q]; ok {
					p := pods[r.Pod]
					if p != nil && !isFinished(p) {
						break // still running: the queue waits
					}
					state := "gone"
					if p != nil {
						state = string(p.Status.Phase)
					}
					progress("finished %s: %s (%d of %d)", r.Pod, state, done+1, len(plan.Runs))
					delete(inFlight, q)
					done++
					if remaining[r.Node]--; remaining[r.Node] == 0 && o.Cordon {
						// Its last run: lift the run's cordon, also one an
						// interrupted Apply of the run left.
						if err := lift(ctx, r.Node, "its last run has finished"); err != nil {
							return err
						}
					}
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
					if !isFinished(p) {
						if err := prepare(r.Node); err != nil {
							return err
						}
					}
					inFlight[q] = r // resumed
					continue
				}
				if err := prepare(r.Node); err != nil {
					return err
				}
				pod := plan.Pod(r)
				pod.OwnerReferences = []metav1.OwnerReference{owner}
				created, err := cs.CoreV1().Pods(plan.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					if !passing(ctx, err) || failures == maxPollFailures {
						return fmt.Errorf("creating pod %s: %w", r.Pod, err)
					}
					// First in its queue again; made at the next poll, or
					// found there if this create was made after all.
					queues[q] = append([]Run{r}, queues[q]...)
					refused = true
					progress("creating %s: %v: tried again at the next poll", r.Pod, err)
					break
				}
				pods[r.Pod] = created
				inFlight[q] = r
				progress("started %s on %s GPU %d: %s repetition %d", r.Pod, r.Node, r.GPU, r.Model, r.Repetition)
			}
		}
		if done == len(plan.Runs) {
			return nil
		}
		if refused {
			failures++
		} else {
			failures = 0
		}
		if err := o.Sleep(ctx, o.Poll); err != nil {
			return fmt.Errorf("%d of %d runs finished: %w", done, len(plan.Runs), err)
		}
	}
}

// stopRuns deletes the run's pods that Apply created and that have not
// finished, each by UID, and names those it could not delete.
func stopRuns(ctx context.Context, cs kubernetes.Interface, plan *Plan, cm *corev1.ConfigMap, progress func(string, ...any)) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liftTimeout)
	list, err := cs.CoreV1().Pods(plan.Namespace).List(lctx, metav1.ListOptions{LabelSelector: plan.Selector()})
	cancel()
	if err != nil {
		return fmt.Errorf("the run's pods still going were not deleted (listing them: %v): kubectl delete pods -n %s -l %s --field-selector status.phase!=Succeeded,status.phase!=Failed deletes them",
			err, plan.Namespace, plan.Selector())
	}
	var left []string
	var first error
	for i := range list.Items {
		p := &list.Items[i]
		if !ownedBy(p, cm) || isFinished(p) {
			continue
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liftTimeout)
		err := cs.CoreV1().Pods(plan.Namespace).Delete(lctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		cancel()
		switch {
		case err == nil:
			progress("deleted %s (on %s): the benchmark stopped before it finished", p.Name, p.Spec.NodeName)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err): // gone, or another pod of its name
		default:
			left = append(left, p.Name)
			if first == nil {
				first = err
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%d run(s) still going, not deleted (kubectl delete pods -n %s %s): %v", len(left), plan.Namespace, strings.Join(left, " "), first)
	}
	return nil
}

// passing says whether an API error is one that passes by itself (the
// API server restarting or overloaded, a connection lost), so that the
// call is worth making again; not once ctx has ended.
func passing(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ne net.Error
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// maxPollFailures is how many polls in a row may have a call refused
// for a reason that passes (see passing) before Apply gives up: a
// minute at the default poll.
const maxPollFailures = 30

// liftTimeout bounds each call on Apply's way out: a run's deletion, a
// node's uncordon.
var liftTimeout = 10 * time.Second

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
	want.Annotations = map[string]string{AnnCreatedBy: "pal-kube profile bench --apply"}
	cm, err := cs.CoreV1().ConfigMaps(plan.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cm, err = cs.CoreV1().ConfigMaps(plan.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if cm.Annotations[AnnCreatedBy] == "" || !reflect.DeepEqual(cm.Data, want.Data) {
			return nil, fmt.Errorf("configmap %s/%s exists with another plan or was not created by pal-kube profile bench --apply: pick another --run-id", cm.Namespace, cm.Name)
		}
	} else if err != nil {
		return nil, fmt.Errorf("creating configmap %s/%s: %w", want.Namespace, want.Name, err)
	}
	if cm.UID == "" {
		return nil, fmt.Errorf("configmap %s/%s has no UID: the API server did not set one", cm.Namespace, cm.Name)
	}
	return cm, nil
}
