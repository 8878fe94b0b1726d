package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/devcluster"
)

func newDevClusterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "dev-cluster",
		Short: "A local Kubernetes control plane with fake GPU nodes (etcd, kube-apiserver, kube-controller-manager and kwok on 127.0.0.1)",
		Long: `Start or stop a local control plane for trying pal-kube scheduler: etcd,
kube-apiserver and kube-controller-manager built from the Go module proxy by
hack/testbin.sh (cached by version under ~/.cache/pal/testbin), and kwok
faking GPU nodes and the pod lifecycle. The controller manager runs the Job,
workload, garbage-collector and disruption controllers, so a batch/v1 Job
creates its pods and recreates evicted ones. up also creates the namespace
pal-system (pal-kube scheduler's Lease and variability ConfigMap). Everything
listens on 127.0.0.1 only.

--native-gangs serves Kubernetes' own gang API (feature gate GenericWorkload,
runtime-config scheduling.k8s.io/v1beta1=true: PodGroup with
spec.schedulingPolicy.gang.minCount, pods naming it in
spec.schedulingGroup.podGroupName) and installs the scheduler-plugins
PodGroup CRD (scheduling.x-k8s.io/v1alpha1, pods labelled
scheduling.x-k8s.io/pod-group), so both forms can be tried with kubectl.
--apiserver-arg KEY=VALUE passes any other kube-apiserver flag (repeat it).`,
	}
	var o devcluster.Options
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the control plane, create the fake GPU nodes, write DIR/kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Dir == "" {
				return fmt.Errorf("--dir is required")
			}
			if o.Nodes < 0 || o.GPUsPerNode <= 0 || o.GPUsPerNode > 1024 || o.Nodes > 100000 {
				return fmt.Errorf("--nodes must be 0..100000 and --gpus-per-node 1..1024")
			}
			for _, a := range o.APIServerArgs {
				if _, err := devcluster.ParseAPIServerArg(a); err != nil {
					return err
				}
			}
			cl, err := devcluster.Up(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dev cluster up: %d nodes x %d GPUs (%s-000 ...)\nkubeconfig: %s\nserver: %s\nlogs: %s/logs\nstop it with: pal-kube dev-cluster down --dir %s\n",
				o.Nodes, o.GPUsPerNode, o.NodePrefix, cl.Kubeconfig, cl.Server, cl.Dir, o.Dir)
			if o.NativeGangs {
				fmt.Fprintln(cmd.OutOrStdout(), "native gangs: scheduling.k8s.io/v1beta1 PodGroups served; scheduling.x-k8s.io/v1alpha1 PodGroup CRD installed")
			}
			return nil
		},
	}
	f := up.Flags()
	f.StringVar(&o.Dir, "dir", "", "directory for state, logs and the kubeconfig")
	f.StringVar(&o.Bin, "bin", "", "directory with etcd, kube-apiserver, kube-controller-manager and kwok (default: hack/testbin.sh's cache)")
	f.IntVar(&o.Nodes, "nodes", 16, "fake GPU nodes")
	f.IntVar(&o.GPUsPerNode, "gpus-per-node", 4, "nvidia.com/gpu per node")
	f.StringVar(&o.NodePrefix, "node-prefix", "gpu-node", "node names are PREFIX-000, PREFIX-001, ...")
	f.BoolVar(&o.NativeGangs, "native-gangs", false, "serve scheduling.k8s.io/v1beta1 PodGroups (GenericWorkload) and install the scheduler-plugins PodGroup CRD")
	f.Var((*repeatedArg)(&o.APIServerArgs), "apiserver-arg", "extra kube-apiserver flag KEY=VALUE (repeatable), e.g. --apiserver-arg audit-log-maxage=1")
	var downDir string
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop exactly the processes `up` started in DIR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if downDir == "" {
				return fmt.Errorf("--dir is required")
			}
			if err := devcluster.Down(downDir); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "dev cluster down:", downDir)
			return nil
		},
	}
	down.Flags().StringVar(&downDir, "dir", "", "the directory given to up")
	c.AddCommand(up, down)
	return c
}

// repeatedArg is a flag given once per value, each kept whole (commas
// included, as kube-apiserver flags may hold them); help shows it as
// KEY=VALUE rather than a Go type name.
type repeatedArg []string

func (a *repeatedArg) String() string     { return strings.Join(*a, " ") }
func (a *repeatedArg) Set(v string) error { *a = append(*a, v); return nil }
func (a *repeatedArg) Type() string       { return "KEY=VALUE" }
