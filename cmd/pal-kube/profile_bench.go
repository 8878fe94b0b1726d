package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/internal/profilebuild"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/profilebench"
)

// benchClientFor opens the cluster a kubeconfig names ($KUBECONFIG,
// ~/.kube/config, then in-cluster when it is empty); tests replace it.
var benchClientFor = func(kubeconfig string) (kubernetes.Interface, error) {
	return profileClient(kubeconfig, "pal-profile-bench")
}

// profileClient is the client of the profile commands that reach the
// cluster (bench, collect, dcgm --service).
func profileClient(kubeconfig, agent string) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %v", err)
	}
	rc.UserAgent = agent
	// Two calls a node to cordon it and two to lift it: at client-go's
	// default 5 calls a second, lifting a 5,000-node benchmark's cordons
	// after Ctrl-C took over half an hour.
	rc.QPS, rc.Burst = 50, 100
	return kubernetes.NewForConfig(rc)
}

// benchCollectOpts are the flags bench and collect share.
type benchCollectOpts struct {
	kubeconfig, namespace, measurementsOut, gpuScoresOut string
	cleanup, allowPartial                                bool
	poll, timeout                                        time.Duration
}

func (o *benchCollectOpts) flags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	f.StringVar(&o.namespace, "namespace", "default", "namespace of the run's pods and ConfigMap")
	f.StringVar(&o.measurementsOut, "measurements-out", "", "file to write the measurement CSV to (default: stdout)")
	f.StringVar(&o.gpuScoresOut, "gpu-scores-out", "", "also run pal profile build (embedded model table) on the measurements and write the per-GPU table to this file; needs --measurements-out")
	f.BoolVar(&o.allowPartial, "allow-partial", false, "write --gpu-scores-out even when runs failed, its comments naming each GPU and model left unmeasured or measured by only some of its runs (default: not written then)")
	f.BoolVar(&o.cleanup, "cleanup", false, "after collecting, delete the run's succeeded pods (and its ConfigMap once no pod is left) if pal-kube profile bench --apply created them, and uncordon the nodes a killed --apply --cordon of the run left; failed pods stay")
	f.DurationVar(&o.poll, "poll", 2*time.Second, "how often the run's pods are listed while waiting")
	f.DurationVar(&o.timeout, "timeout", 24*time.Hour, "give up waiting for the runs after this long")
}

// profileBenchOpts are the flags of `pal-kube profile bench`.
type profileBenchOpts struct {
	benchCollectOpts
	image, models, nodes, nodeSelector, scheduler, runID, output, out string
	gpusPerNode, repetitions, iterations                              int
	parallel, apply, collect, cordon                                  bool
	runTimeout                                                        time.Duration
}

func newProfileBenchCmd() *cobra.Command {
	var o profileBenchOpts
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark image on every GPU of a cluster and collect the measurements pal profile build reads",
		Long: `Bench writes, and with --apply creates, one bare pod per GPU, model and
repetition on every GPU of the selected nodes. Each pod is bound to its
node (spec.nodeName), carries its device in pal.io/gpu-indices as pal
scheduler writes it, and gets NVIDIA_VISIBLE_DEVICES set to that one
device, so the NVIDIA runtime shows it that GPU and no device plugin has
to choose one. Its schedulerName (--scheduler-name, pal's) makes a
running pal-kube scheduler count the device as taken.

Each node is measured on its allocatable GPUs (devices 0..allocatable-1,
as pal-kube scheduler numbers them). A node whose allocatable
nvidia.com/gpu is below its capacity (a GPU its device plugin withholds)
has GPUs no run measures: the output names the node and how many, and
so do the measurement CSV and the score table ('# unmeasured:').

Without --parallel, one run per node runs at a time (GPUs of a node share
power, cooling and PCIe; a neighbour's load would be measured too); with
--parallel, one run per GPU. Only --apply enforces that order: it starts
each node's (or GPU's) next run when the previous one has finished, and
returns when all have. Applying the written file with kubectl instead
starts every run at once.

--collect then reads each run's result line from its termination message
or, failing that, the tail of its log, and writes the measurement CSV
(--measurements-out); failed runs are listed in its comments and make the
command fail, and --gpu-scores-out is then not written unless
--allow-partial (its comments then name the GPUs left unmeasured). A GPU
and model some of whose runs failed is scored from the others, fewer
than --repetitions and not a fair sample of them (a run killed at
--run-timeout is the slowest): the CSV and the table name it in a
'# partial:' comment, and it makes the result partial like any failed
run. pal-kube profile collect does the same for a run started
earlier. The benchmark contract (environment, result line) is in
docs/profile-bench.md; the result line:
  ` + profilebench.ResultFormat + `

Before a node's first run, --apply names the other pods that hold its
GPUs (their load is measured too); with --cordon it cordons the node
until its last run has finished (marked pal.io/profile-cordoned-by=RUN;
a node cordoned already is left as it is, and --cleanup lifts what a
killed --apply left). Stopped early (Ctrl-C, --timeout, an error),
--apply deletes its runs still going and lifts its cordons; run again
with the same flags and --run-id, it resumes.

The run's objects carry the label pal.io/profile-run=RUN; its ConfigMap
pal-bench-RUN holds the plan. --cleanup deletes only pods that --apply
created (owner reference to that ConfigMap, by UID).`,
		Example: `  pal-kube profile bench --image my/bench:1 --models resnet50,vgg19 --node-selector pool=a100 --out bench.yaml
  pal-kube profile bench --image my/bench:1 --models resnet50,vgg19 --apply --cordon --collect --measurements-out runs.csv
  pal profile build --measurements runs.csv --out gpu-scores.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfileBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	o.flags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.image, "image", "", "benchmark image (required; the contract is in docs/profile-bench.md)")
	f.StringVar(&o.models, "models", "", "comma-separated models to benchmark, passed as PAL_BENCH_MODEL (required)")
	f.StringVar(&o.nodes, "nodes", "", "comma-separated node names (default: every node with allocatable nvidia.com/gpu)")
	f.StringVar(&o.nodeSelector, "node-selector", "", "label selector of the nodes, e.g. pool=a100")
	f.IntVar(&o.gpusPerNode, "gpus-per-node", 0, "with --nodes and without --apply: GPUs per node, without asking the cluster")
	f.BoolVar(&o.parallel, "parallel", false, "one run per GPU at a time (default: one run per node at a time)")
	f.IntVar(&o.repetitions, "repetitions", 5, "runs per GPU and model")
	f.IntVar(&o.iterations, "iterations", 100, "timed iterations per run, passed as PAL_BENCH_ITERATIONS")
	f.StringVar(&o.scheduler, "scheduler-name", "pal", "spec.schedulerName of the pods: pal-kube scheduler's, so it counts their GPUs as taken")
	f.StringVar(&o.runID, "run-id", "", "run id in names and labels (default: the UTC time, YYYYMMDD-HHMMSS)")
	f.DurationVar(&o.runTimeout, "run-timeout", 30*time.Minute, "each pod's activeDeadlineSeconds: a run still going after this fails")
	f.StringVarP(&o.output, "output", "o", "yaml", "format of the written objects: yaml or json (a v1 List)")
	f.StringVar(&o.out, "out", "", "file to write the objects to (default: stdout without --apply, not written with it)")
	f.BoolVar(&o.apply, "apply", false, "create the objects and wait until every run has finished")
	f.BoolVar(&o.collect, "collect", false, "with --apply: collect the results into the measurement CSV")
	f.BoolVar(&o.cordon, "cordon", false, "with --apply: cordon each node from before its first run until its last has finished, so no scheduler places new work on its GPUs meanwhile (a node cordoned already is left as it is; needs patch on nodes)")
	return cmd
}

func runProfileBench(ctx context.Context, stdout, stderr io.Writer, o profileBenchOpts) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.output != "yaml" && o.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", o.output)
	}
	if o.image == "" || o.models == "" {
		return fmt.Errorf("--image and --models are required")
	}
	if o.cordon && !o.apply {
		return fmt.Errorf("--cordon needs --apply: only a running benchmark knows when a node's last run has finished")
	}
	if o.collect && !o.apply {
		return fmt.Errorf("--collect needs --apply (pal-kube profile collect --run-id RUN collects a run started earlier)")
	}
	if o.gpusPerNode != 0 && (o.nodes == "" || o.apply || o.nodeSelector != "") {
		return fmt.Errorf("--gpus-per-node goes with --nodes, without --apply or --node-selector")
	}
	if o.gpuScoresOut != "" && o.measurementsOut == "" {
		return fmt.Errorf("--gpu-scores-out needs --measurements-out")
	}
	if o.runID == "" {
		o.runID = time.Now().UTC().Format("20060102-150405")
	}
	var cs kubernetes.Interface
	var nodes []profilebench.Node
	if o.gpusPerNode != 0 {
		for _, n := range splitList(o.nodes) {
			nodes = append(nodes, profilebench.Node{Name: n, GPUs: o.gpusPerNode})
		}
	} else {
		var err error
		if cs, err = benchClientFor(o.kubeconfig); err != nil {
			return err
		}
		if nodes, err = benchNodes(ctx, cs, o.nodes, o.nodeSelector, stderr); err != nil {
			return err
		}
	}
	plan, err := profilebench.NewPlan(nodes, profilebench.Options{RunID: o.runID, Image: o.image, Namespace: o.namespace,
		SchedulerName: o.scheduler, Models: splitList(o.models), Repetitions: o.repetitions, Iterations: o.iterations,
		PerGPU: o.parallel, Deadline: o.runTimeout})
	if err != nil {
		return err
	}
	gpus := 0
	for _, n := range plan.Nodes {
		gpus += n.GPUs
	}
	fmt.Fprintf(stderr, "run %s: %d runs (%d GPUs on %d nodes x %d models x %d repetitions), one per %s at a time, image %s, namespace %s\n",
		plan.RunID, len(plan.Runs), gpus, len(plan.Nodes), len(plan.Models), plan.Repetitions, plan.Concurrency, plan.Image, plan.Namespace)
	for _, u := range plan.UnmeasuredNotes() {
		fmt.Fprintf(stderr, "run %s: %s\n", plan.RunID, u)
	}
	if !o.apply || o.out != "" {
		if err := writeBenchObjects(stdout, o.out, o.output, plan); err != nil {
			return err
		}
	}
	if !o.apply {
		return nil
	}
	// Ctrl-C and SIGTERM end the wait like --timeout does: Apply then
	// lifts its cordons before the command exits.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := profilebench.Apply(ctx, cs, plan, profilebench.ApplyOptions{Poll: o.poll, Progress: stderr, Cordon: o.cordon}); err != nil {
		return fmt.Errorf("run %s: %w", plan.RunID, err)
	}
	if !o.collect {
		fmt.Fprintf(stderr, "run %s finished; pal-kube profile collect --run-id %s --namespace %s collects it\n", plan.RunID, plan.RunID, plan.Namespace)
		return nil
	}
	return collectRun(ctx, cs, plan, stdout, stderr, o.benchCollectOpts)
}

// benchNodes are the GPU nodes --nodes and --node-selector pick. A named
// node without GPUs is an error; a selected one is skipped, saying so.
// Cordoned nodes are kept: cordoning is how an operator keeps other
// work off the GPUs being measured.
func benchNodes(ctx context.Context, cs kubernetes.Interface, names, selector string, stderr io.Writer) ([]profilebench.Node, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var out []profilebench.Node
	if names != "" {
		for _, n := range splitList(names) {
			node, ok := byName[n]
			if !ok {
				return nil, fmt.Errorf("--nodes: node %s not found (or not matching --node-selector %q)", n, selector)
			}
			g := kube.NodeGPUs(node)
			if g == 0 {
				return nil, fmt.Errorf("--nodes: node %s has no allocatable %s%s", n, kube.ResourceGPU, capacityNote(node))
			}
			out = append(out, benchNode(node, g))
		}
		return out, nil
	}
	for _, node := range list.Items {
		if g := kube.NodeGPUs(&node); g > 0 {
			out = append(out, benchNode(&node, g))
		} else {
			fmt.Fprintf(stderr, "skipping node %s: no allocatable %s%s\n", node.Name, kube.ResourceGPU, capacityNote(&node))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node with allocatable %s matches --node-selector %q", kube.ResourceGPU, selector)
	}
	return out, nil
}

// nodeCapacity is a node's nvidia.com/gpu capacity (0: none, or not a
// count).
func nodeCapacity(n *corev1.Node) int {
	q, ok := n.Status.Capacity[kube.ResourceGPU]
	if !ok {
		return 0
	}
	v, exact := q.AsInt64()
	if !exact || v <= 0 || v > 1024 {
		return 0
	}
	return int(v)
}

// benchNode is node n with g allocatable GPUs, and its capacity where
// that is more: the GPUs its device plugin withholds go unmeasured, and
// the plan says so.
func benchNode(n *corev1.Node, g int) profilebench.Node {
	bn := profilebench.Node{Name: n.Name, GPUs: g}
	if c := nodeCapacity(n); c > g {
		bn.Capacity = c
	}
	return bn
}

// capacityNote tells, for a node without allocatable GPUs, of the GPUs
// it has all the same (every one withheld, so none measured).
func capacityNote(n *corev1.Node) string {
	if c := nodeCapacity(n); c > 0 {
		return fmt.Sprintf(" (capacity %d: all %d unmeasured)", c, c)
	}
	return ""
}

// writeBenchObjects writes the run's ConfigMap and pods as YAML
// documents or as one JSON v1 List.
func writeBenchObjects(stdout io.Writer, path, format string, plan *profilebench.Plan) error {
	cm, err := plan.ConfigMap()
	if err != nil {
		return err
	}
	objs := []runtime.Object{cm}
	for _, p := range plan.Pods() {
		objs = append(objs, p)
	}
	var b bytes.Buffer
	if format == "json" {
		list := corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
		for _, o := range objs {
			list.Items = append(list.Items, runtime.RawExtension{Object: o})
		}
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(&b, "# pal-kube profile bench run %s: apply with pal-kube profile bench --apply (kubectl apply starts every run at once)\n", plan.RunID)
		for _, o := range objs {
			y, err := yaml.Marshal(o)
			if err != nil {
				return err
			}
			b.WriteString("---\n")
			b.Write(y)
		}
	}
	if path == "" || path == "-" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// collectRun collects a finished run into the measurement CSV, runs
// build when asked, cleans up when asked, and fails if any run did.
func collectRun(ctx context.Context, cs kubernetes.Interface, plan *profilebench.Plan, stdout, stderr io.Writer, o benchCollectOpts) error {
	c, err := profilebench.Collect(ctx, cs, plan, profilebench.ClientLogs(cs))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := c.WriteCSV(&b); err != nil {
		return err
	}
	if o.measurementsOut == "" || o.measurementsOut == "-" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			return err
		}
	} else if err := os.WriteFile(o.measurementsOut, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "run %s: %d of %d runs measured\n", plan.RunID, len(c.Measured), len(plan.Runs))
	for _, f := range c.Failed {
		fmt.Fprintf(stderr, "failed: pod %s/%s (node %s GPU %d, %s repetition %d): %s\n", plan.Namespace, f.Pod, f.Node, f.GPU, f.Model, f.Repetition, f.Why)
	}
	// A table built from part of the runs places on GPUs it has no
	// measurement of as median GPUs, scores a GPU some of whose runs of
	// a model failed from the others (Collection.Partial), and nothing
	// downstream (pal-kube profile export, the scheduler) tells it from
	// a whole one: it is written only when asked for (--allow-partial),
	// its comments then naming what is unmeasured or partial.
	partial := ""
	if o.gpuScoresOut != "" && len(c.Failed) > 0 && !o.allowPartial {
		partial = fmt.Sprintf("; --gpu-scores-out %s not written (--allow-partial writes it)", o.gpuScoresOut)
		fmt.Fprintf(stderr, "--gpu-scores-out %s not written: %d of %d runs failed, and a table of the rest would count the GPUs they leave unmeasured as median GPUs, and score those they leave partly measured from fewer runs than asked; measure them again, or pass --allow-partial to write it with those GPUs named in its comments\n",
			o.gpuScoresOut, len(c.Failed), len(plan.Runs))
	}
	build := o.gpuScoresOut != "" && partial == "" && len(c.Measured) > 0
	if !build { // else pal profile build warns of them
		for _, u := range c.Unmeasured() {
			fmt.Fprintf(stderr, "unmeasured: %s\n", u)
		}
		for _, u := range c.Partial() {
			fmt.Fprintf(stderr, "partial: %s\n", u)
		}
	}
	if build {
		if err := profilebuild.Run(stderr, stderr, profilebuild.Options{Measurements: o.measurementsOut, Out: o.gpuScoresOut,
			ClassMap: "artifact", Output: "table", MinSamples: 3}); err != nil {
			return fmt.Errorf("pal profile build on %s: %w", o.measurementsOut, err)
		}
	}
	var cleanupErr error
	if o.cleanup {
		deleted, kept, err := profilebench.Cleanup(ctx, cs, plan.Namespace, plan.RunID)
		if err != nil {
			cleanupErr = fmt.Errorf("cleanup: %w", err)
			fmt.Fprintln(stderr, cleanupErr)
		} else {
			fmt.Fprintf(stderr, "cleanup: deleted %d object(s), kept %d: %s\n", len(deleted), len(kept), strings.Join(kept, ", "))
		}
		// A --cordon benchmark that was killed left its cordons.
		if nodes, err := profilebench.Uncordon(ctx, cs, plan.RunID); err != nil {
			fmt.Fprintf(stderr, "cleanup: cordons of run %s not checked: %v\n", plan.RunID, err)
		} else if len(nodes) > 0 {
			fmt.Fprintf(stderr, "cleanup: uncordoned %s (cordoned by run %s)\n", strings.Join(nodes, ", "), plan.RunID)
		}
	}
	if len(c.Failed) > 0 {
		return fmt.Errorf("%d of %d runs of %s gave no measurement (listed above and in the CSV's comments)%s", len(c.Failed), len(plan.Runs), plan.RunID, partial)
	}
	return cleanupErr
}

// profileCollectOpts are the flags of `pal-kube profile collect`.
type profileCollectOpts struct {
	benchCollectOpts
	runID string
	wait  bool
}

func newProfileCollectCmd() *cobra.Command {
	var o profileCollectOpts
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Collect a pal-kube profile bench run's results into the measurement CSV",
		Long: `Collect reads the plan of run RUN from its ConfigMap pal-bench-RUN, then
each planned pod's result line (termination message, else the tail of
its log), and writes the measurement CSV pal profile build reads. A run
whose pod is missing, unfinished, failed, moved off its device or printed
no valid result line is listed in the CSV's comments and on stderr, and
the command fails; --gpu-scores-out is then written only with
--allow-partial, its comments naming the GPUs left unmeasured
('# unmeasured:') and each GPU and model measured by only some of its
runs ('# partial:'). --wait first waits until every pod has finished.`,
		Example: `  pal-kube profile collect --run-id 20261201-120000 --namespace bench --measurements-out runs.csv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if o.runID == "" {
				return fmt.Errorf("--run-id is required")
			}
			if o.gpuScoresOut != "" && o.measurementsOut == "" {
				return fmt.Errorf("--gpu-scores-out needs --measurements-out")
			}
			cs, err := benchClientFor(o.kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, o.timeout)
			defer cancel()
			plan, _, err := profilebench.LoadPlan(ctx, cs, o.namespace, o.runID)
			if err != nil {
				return err
			}
			if o.wait {
				if err := waitFinished(ctx, cs, plan, o.poll); err != nil {
					return err
				}
			}
			return collectRun(ctx, cs, plan, cmd.OutOrStdout(), cmd.ErrOrStderr(), o.benchCollectOpts)
		},
	}
	o.flags(cmd)
	cmd.Flags().StringVar(&o.runID, "run-id", "", "the run to collect (required)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait until every existing pod of the run has finished")
	return cmd
}

// waitFinished polls until no pod of the run is Pending or Running.
func waitFinished(ctx context.Context, cs kubernetes.Interface, plan *profilebench.Plan, poll time.Duration) error {
	for {
		list, err := cs.CoreV1().Pods(plan.Namespace).List(ctx, metav1.ListOptions{LabelSelector: plan.Selector()})
		if err != nil {
			return err
		}
		live := 0
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				live++
			}
		}
		if live == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods of run %s still running: %w", live, plan.RunID, ctx.Err())
		case <-time.After(poll):
		}
	}
}
