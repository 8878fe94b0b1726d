package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/palsched/pal/devcluster"
	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/internal/atomicfile"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/replay"
	"github.com/palsched/pal/workload"
)

func newReplayCmd() *cobra.Command {
	var traceName, kubeconfig, jobsOut, placementsOut, models, classMap string
	o := replay.Options{Round: 360, Speedup: 180, Namespace: "pal-replay", SchedulerName: "pal"}
	c := &cobra.Command{
		Use:   "replay",
		Short: "Play a trace onto a cluster as pods for pal-kube scheduler and record each job (as pal sim --jobs-out)",
		Long: `Create a trace's jobs as gangs of 1-GPU pods (schedulerName pal) at their
arrival times, scaled by --speedup; kwok (pal-kube dev-cluster) finishes each pod
after the run time the simulator charges on the GPUs it got. Writes the same
per-job CSV as pal sim --jobs-out, and with --placements-out every job's GPUs.

Run pal-kube scheduler with period = round/speedup (2s for the defaults),
alignPeriod: true and arrivalDelay: 0s, so that its rounds line up with the
simulator's: each simulated round of --round seconds takes round/speedup
seconds of wall time.

Each replay names its pods after a run id of its own (replay-XXXXXX), so
replays can follow each other on one cluster; the ConfigMap of that name
owns its pods (the replay recreates an evicted gang, as a Job controller
would, so the scheduler may move them), and deleting it deletes them. A
replay that stops early (Ctrl-C, --timeout, an error) deletes it itself.

A job the replay cannot follow to its end fails, and the replay goes on
with the others: one of its pods ended Failed (OOM-killed, evicted by its
kubelet, a kwok stage), or a bound pod has no usable pal.io/bind-info or
pal.io/slowdown to time it by. Its pods are deleted, it is left out of
--jobs-out and --placements-out (its times would not be the simulator's),
and the replay exits non-zero naming each failed job and why. A pod
deleted before its end (evicted) makes the replay delete its gang mates
and recreate the gang, a preemption; one deleted at or after its end (a
gang mate Succeeded, or its finish time had passed) counts as finished.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if traceName == "" || kubeconfig == "" {
				return fmt.Errorf("--trace and --kubeconfig are required")
			}
			cm, err := workload.ParseClassMap(classMap)
			if err != nil {
				return err
			}
			m := workload.DefaultModels()
			if models != "" {
				if m, err = workload.LoadModels(models); err != nil {
					return err
				}
			}
			tr, from, err := experiment.LoadTrace(traceName, m.WithClassMap(cm))
			if err != nil {
				return err
			}
			o.Trace = tr
			rc, err := devcluster.LoadKubeconfig(kubeconfig)
			if err != nil {
				return err
			}
			rc.QPS, rc.Burst = 200, 400
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			out := cmd.ErrOrStderr()
			o.Log = func(f string, a ...any) { fmt.Fprintf(out, "replay: "+f+"\n", a...) }
			fmt.Fprintf(out, "replay: %d jobs from %s, round %gs simulated = %v wall (speedup %g), namespace %s\n",
				len(tr.Jobs), from, o.Round, time.Duration(o.Round/o.Speedup*float64(time.Second)), o.Speedup, o.Namespace)
			// Ctrl-C and SIGTERM end the replay like --timeout does: it
			// then deletes its ConfigMap, and with it its pods.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := replay.Run(ctx, cs, o)
			if err != nil {
				return err
			}
			if jobsOut != "" {
				if err := experiment.WriteJobsCSV(jobsOut, []*experiment.RunResult{{Placement: "replay", JobRecords: res.Jobs}}); err != nil {
					return err
				}
			}
			if placementsOut != "" {
				if err := writePlacements(placementsOut, func(cw *csv.Writer) {
					for _, p := range res.Placements {
						cw.Write([]string{strconv.Itoa(p.JobID), formatPods(p.Pods)})
					}
				}); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "replayed %d jobs as run %s (kubectl delete configmap -n %s %s deletes its pods)\n",
				len(res.Jobs)+len(res.Failed), res.Run, o.Namespace, res.Run)
			return failedJobs(res, len(tr.Jobs))
		},
	}
	f := c.Flags()
	f.StringVar(&traceName, "trace", "", "trace: sia-philly/1..8, frontera/sia-160job-trace, or a CSV file")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (e.g. DIR/kubeconfig from pal-kube dev-cluster up)")
	f.Float64Var(&o.Speedup, "speedup", o.Speedup, "simulated seconds per wall second (run pal-kube scheduler with timeScale set to the same, so that it credits progress in the trace's seconds)")
	f.Float64Var(&o.Round, "round", o.Round, "simulated round length in seconds (as pal sim --round)")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace for the jobs' pods")
	f.StringVar(&o.SchedulerName, "scheduler-name", o.SchedulerName, "spec.schedulerName of the pods")
	f.DurationVar(&o.Timeout, "timeout", 0, "give up after this much wall time (0: none; either way the replay waits 2m at most for the API server to answer as it starts)")
	f.Float64Var(&o.RestartCost, "restart-cost", 0, "simulated seconds of progress a gang loses each time it is recreated after an eviction (as pal sim --migration-cost and --preemption-cost charge it; compare with pal sim --moves evict-relaunch)")
	f.StringVar(&jobsOut, "jobs-out", "", "write per-job records (CSV, as pal sim --jobs-out)")
	f.StringVar(&placementsOut, "placements-out", "", "write each job's GPUs (node:indices;...) as CSV")
	f.StringVar(&models, "models", "", "model table YAML (default: the embedded one)")
	f.StringVar(&classMap, "class-map", "artifact", "model to class: artifact or paper")
	return c
}

// failedJobs is the error of a replay some of whose jobs failed (nil if
// none did): their count and each one's reason.
func failedJobs(res *replay.Result, total int) error {
	if len(res.Failed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d jobs failed (not in --jobs-out or --placements-out; the other %d are):", len(res.Failed), total, len(res.Jobs))
	for _, f := range res.Failed {
		fmt.Fprintf(&b, "\n  job %d: %s", f.JobID, f.Reason)
	}
	return errors.New(b.String())
}

func formatPods(ps []kube.PodBind) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.Node+":"+kube.FormatIndices(p.GPUs))
	}
	return strings.Join(parts, ";")
}

// writePlacements writes --placements-out: job_id,gpus rows.
func writePlacements(path string, rows func(*csv.Writer)) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"job_id", "gpus"})
		rows(cw)
		cw.Flush()
		return cw.Error()
	})
}
