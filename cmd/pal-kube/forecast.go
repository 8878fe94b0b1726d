package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/kube/forecast"
)

func newForecastCmd() *cobra.Command {
	var cfgPath, kubeconfig string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "forecast",
		Short: "Print when each waiting gang should start and end, from the cluster as it is now",
		Long: `Read the cluster as pal-kube scheduler's round does (the same informers and
snapshot, the same --config), order and place the gangs as a round would
without binding anything, and run the round's policies on from there with
no new arrivals (the simulator's forward run). It prints every waiting
gang: its queue position, GPUs, estimated start and end (RFC 3339) and why
it waits now. A running gang's remaining work is its pal.io/iterations
less what its time since its bind-info's round gives; a gang without
pal.io/iterations never ends within the forecast, and gangs behind it may
show no start ("-"). It writes nothing to the cluster. Not with scheduler
themis or a tenancy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kube.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			cfg.LeaderElection.Enabled = false
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %v", err)
			}
			rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
			rc.UserAgent = "pal-forecast"
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(rc)
			if err != nil {
				return err
			}
			s, err := kube.New(cfg, client, slog.New(slog.NewTextHandler(io.Discard, nil)), kube.WithDynamic(dyn))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if err := s.Read(ctx); err != nil {
				return err
			}
			st, err := s.Forecast(time.Now())
			if err != nil {
				return err
			}
			rows, err := forecast.Run(st)
			if err != nil {
				return err
			}
			return printForecast(cmd.OutOrStdout(), st, rows)
		},
	}
	f := c.Flags()
	f.StringVar(&cfgPath, "config", "", "the scheduler's YAML config (its policies are the forecast's)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG)")
	f.DurationVar(&timeout, "timeout", time.Minute, "give up if the cluster cannot be read within this time")
	return c
}

// printForecast writes the rows as a table, times in RFC 3339 (UTC).
func printForecast(w io.Writer, st *kube.ForecastState, rows []kube.ForecastRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "# forecast at %s under %s/%s, backfill %s: %d waiting gangs\n", st.At.UTC().Format(time.RFC3339), st.SchedulerName, st.PlacementName, st.Backfill, len(rows))
	fmt.Fprintln(tw, "position\tgang\tgpus\testimated_start\testimated_finish\treason")
	at := func(t float64) string {
		if t < 0 {
			return "-"
		}
		return kube.ETA(st, t).UTC().Format(time.RFC3339)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", r.Position, r.Gang, r.GPUs, at(r.Start), at(r.Finish), r.Reason)
	}
	return tw.Flush()
}
