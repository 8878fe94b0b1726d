package profilebench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/palsched/pal/kube"
)

// A GPU that someone else's job uses while it is measured measures that
// job too, and so do its node's other GPUs (they share power, cooling and
// PCIe). With ApplyOptions.Cordon, Apply cordons each node before its
// first run and uncordons it after its last, so that no scheduler places
// new work there meanwhile (the benchmark pods are bound already and run
// regardless). Cordoning does not move what already runs there, so
// before a node's first run Apply also says which other pods hold its
// GPUs.

// AnnCordonedBy marks a node that pal-kube profile bench cordoned, with the
// run id. Only a node that carries it is uncordoned: a node an operator
// had cordoned before the run stays cordoned after it.
const AnnCordonedBy = "pal.io/profile-cordoned-by"

// nodeBackoff spaces the tries of a node's cordon or uncordon: 6 tries
// in about 1.5 s.
var nodeBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 6}

// cordon cordons node for run unless it is cordoned already, and says
// whether the cordon is the run's (marked AnnCordonedBy with runID,
// now or by an earlier, interrupted Apply of the run).
// A patch names the resourceVersion it read, so a node changed
// meanwhile (its kubelet, a label, another controller) is refused with
// 409 Conflict; it is read again and the patch retried, as is a call
// refused for a reason that passes (passing), nodeBackoff apart.
func cordon(ctx context.Context, cs kubernetes.Interface, node, runID string) (ours bool, err error) {
	err = retry.OnError(nodeBackoff, func(err error) bool { return apierrors.IsConflict(err) || passing(ctx, err) }, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Spec.Unschedulable {
			ours = n.Annotations[AnnCordonedBy] == runID
			return nil
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"annotations":     map[string]string{AnnCordonedBy: runID},
				"resourceVersion": n.ResourceVersion, // refused if someone changed the node meanwhile
			},
			"spec": map[string]any{"unschedulable": true},
		})
		_, err = cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		ours = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("cordoning node %s: %w", node, err)
	}
	return ours, nil
}

// uncordon lifts run's cordon of node: only when the node still carries
// run's mark (an operator who took the node over meanwhile, by removing
// the mark, keeps it as they left it).
// A conflict is retried as in cordon.
func uncordon(ctx context.Context, cs kubernetes.Interface, node, runID string) (lifted bool, err error) {
	err = retry.OnError(nodeBackoff, func(err error) bool { return apierrors.IsConflict(err) || passing(ctx, err) }, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			lifted = false // the node left the cluster, its cordon with it
			return nil
		}
		if err != nil {
			return err
		}
		if n.Annotations[AnnCordonedBy] != runID {
			lifted = false
			return nil
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"annotations":     map[string]any{AnnCordonedBy: nil},
				"resourceVersion": n.ResourceVersion,
			},
			"spec": map[string]any{"unschedulable": false},
		})
		_, err = cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		lifted = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("uncordoning node %s: %w", node, err)
	}
	return lifted, nil
}

// Uncordon lifts every cordon run runID left (an Apply that was killed
// before its last run ended), and returns the nodes it uncordoned.
func Uncordon(ctx context.Context, cs kubernetes.Interface, runID string) ([]string, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []string
	for _, n := range list.Items {
		if n.Annotations[AnnCordonedBy] != runID {
			continue
		}
		ok, err := uncordon(ctx, cs, n.Name, runID)
		if err != nil {
			return out, err
		}
		if ok {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// neighbours are the pods other than run's that hold GPUs on node (not
// finished), as "namespace/name (N GPUs)".
func neighbours(ctx context.Context, cs kubernetes.Interface, node, runID string) ([]string, error) {
	list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		p := &list.Items[i]
		if p.Labels[LabelRun] == runID || isFinished(p) || p.Spec.NodeName != node {
			continue
		}
		if g, err := kube.PodGPUs(p); err == nil && g > 0 {
			out = append(out, fmt.Sprintf("%s/%s (%d GPUs)", p.Namespace, p.Name, g))
		}
	}
	slices.Sort(out)
	return out, nil
}

// nodeRuns counts each node's runs.
func nodeRuns(runs []Run) map[string]int {
	m := map[string]int{}
	for _, r := range runs {
		m[r.Node]++
	}
	return m
}
