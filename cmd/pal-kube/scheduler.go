package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/kube/forecast"
)

func newSchedulerCmd() *cobra.Command {
	var cfgPath, kubeconfig, metricsAddr, logLevel string
	var logJSON, printConfig, noLeader bool
	c := &cobra.Command{
		Use:   "scheduler",
		Short: "Run PAL as a Kubernetes scheduler (schedulerName pal)",
		Long: `Run PAL as a standalone Kubernetes scheduler. It places the pods whose
spec.schedulerName is "pal" (configurable) in rounds, with the simulator's
scheduling orders and placements, binds them through pods/binding with the
annotations pal.io/gpu-indices and pal.io/bind-info, and evicts gangs that
the round preempts or migrates. --print-config shows every setting and its
default; a --config file lists only what it changes.

Pod annotations it reads: pal.io/gang + pal.io/gang-size (a gang: placed all
or nothing), pal.io/class (A..D) or pal.io/model (class from the model
table), pal.io/iterations (for SRTF). Pods of a batch/v1 Job with
parallelism > 1 form a gang without annotations.

Evicting a pod that has a controller (a Job's, a StatefulSet's) makes the
controller recreate it; evicting a bare pod deletes it for good. So a gang
with a bare pod is never migrated, and preempted only with
preemptBarePods: true.

With leader election on (the default) the namespace of the config's
namespace field (pal-system) must exist. /metrics, /healthz and /readyz are
served on metricsAddr (default 127.0.0.1:10261). SIGTERM or Ctrl-C stops the
scheduler (it releases its Lease first); run the built binary, not go run
in the background, whose child keeps running when the parent is killed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kube.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("metrics-addr") {
				cfg.MetricsAddr = metricsAddr
			}
			if noLeader {
				cfg.LeaderElection.Enabled = false
			}
			if printConfig {
				b, err := yaml.Marshal(cfg)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %v", err)
			}
			opts := &slog.HandlerOptions{Level: level}
			var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
			if logJSON {
				h = slog.NewJSONHandler(os.Stderr, opts)
			}
			log := slog.New(h)
			rc, client, dyn, err := clusterClients(kubeconfig, cfg, "pal-scheduler")
			if err != nil {
				return err
			}
			s, err := kube.New(cfg, client, log, kube.WithDynamic(dyn), kube.WithForecaster(forecast.Run))
			if err != nil {
				return err
			}
			// Events and binds: clients and rate limiters of their own.
			events, err := limitedClient(rc, cfg.EventQPS, cfg.EventBurst)
			if err != nil {
				return err
			}
			s.UseEventClient(events)
			binds, err := limitedClient(rc, cfg.BindQPS, cfg.BindBurst)
			if err != nil {
				return err
			}
			s.UseBindClient(binds)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			if cfg.MetricsAddr != "" {
				ln, err := net.Listen("tcp", cfg.MetricsAddr)
				if err != nil {
					return fmt.Errorf("metricsAddr: %v", err)
				}
				srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
				go func() {
					if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
						log.Error("metrics server", "err", err)
					}
				}()
				defer func() {
					sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					_ = srv.Shutdown(sctx)
				}()
				log.Info("serving /metrics, /healthz, /readyz", "addr", ln.Addr().String())
			}
			if err = s.Run(ctx); err != nil {
				return err
			}
			log.Info("stopped", "reason", context.Cause(ctx))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfgPath, "config", "", "YAML config (see --print-config for every field and its default)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG)")
	f.StringVar(&metricsAddr, "metrics-addr", "", "override the config's metricsAddr (\"\" turns the server off)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&logJSON, "log-json", false, "write logs as JSON lines")
	f.BoolVar(&printConfig, "print-config", false, "print the effective config as YAML and exit")
	f.BoolVar(&noLeader, "no-leader-election", false, "run rounds without taking the Lease (a single replica only)")
	return c
}

// limitedClient is a client of rc's cluster with rate limits of its own.
// clusterClients reads kubeconfig ($KUBECONFIG, ~/.kube/config, then
// in-cluster when empty) and makes the typed and dynamic clients both the
// scheduler and the forecast read the cluster through, at cfg's client
// limits; rc is the config they share, for clients of their own limits.
func clusterClients(kubeconfig string, cfg kube.Config, agent string) (*rest.Config, *kubernetes.Clientset, *dynamic.DynamicClient, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kubeconfig: %v", err)
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	rc.UserAgent = agent
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, nil, err
	}
	return rc, client, dyn, nil
}

func limitedClient(rc *rest.Config, qps float32, burst int) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(rc)
	c.QPS, c.Burst = qps, burst
	return kubernetes.NewForConfig(c)
}
