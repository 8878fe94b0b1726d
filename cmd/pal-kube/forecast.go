package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/kube/forecast"
	"github.com/palsched/pal/whatif"
)

func newForecastCmd() *cobra.Command {
	var cfgPath, kubeconfig string
	var timeout time.Duration
	var whatIfs []string
	var draws int
	var noise, arrivals float64
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
themis or a tenancy.

--what-if KEY=VALUE (repeatable, each on its own) runs the forecast again
with one setting changed from the next round on: placement=P, scheduler=S,
backfill=none|easy, drain=NODE (the node takes no gang), add-node=NAME:GPUS
(a node of median GPUs joins). Each prints the waiting gangs' mean wait
and mean JCT (from their arrival) under both, and each gang's start under
both.

--forecast-draws K adds the columns estimated_start_p10/p50/p90: the
forecast run K times, each with every stated remaining work scaled by a
lognormal draw of mean 1 and coefficient of variation --duration-noise
(seeded by the config's seed), for when pal.io/iterations are estimates.

--assume-arrivals RATE assumes gangs keep arriving, RATE an hour (a
seeded Poisson process, each a copy of a running or waiting gang drawn at
random); it applies to the forecast and its what-ifs, off by default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kube.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			cfg.LeaderElection.Enabled = false
			_, client, dyn, err := clusterClients(kubeconfig, cfg, "pal-forecast")
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
			at := time.Now()
			if cfg.AlignPeriod {
				at = kube.NextAlignedRound(at, cfg.Period.Duration)
			}
			st, err := s.Forecast(at)
			if err != nil {
				return err
			}
			var alts []*kube.ForecastState
			for _, kv := range whatIfs {
				alt, err := forecast.WhatIf(st, kv)
				if err != nil {
					return err
				}
				alts = append(alts, alt)
			}
			opts := forecast.Options{ArrivalsPerHour: arrivals, Seed: cfg.Seed}
			rows, err := forecast.RunWith(st, opts)
			if err != nil {
				return err
			}
			var spread []forecast.Spread
			if draws > 0 {
				if spread, err = forecast.Noisy(st, draws, noise, cfg.Seed); err != nil {
					return err
				}
			}
			if err := printForecast(cmd.OutOrStdout(), st, rows, spread); err != nil {
				return err
			}
			for i, alt := range alts {
				altRows, err := forecast.RunWith(alt, opts)
				if err != nil {
					return fmt.Errorf("--what-if %s: %v", whatIfs[i], err)
				}
				if err := printWhatIf(cmd.OutOrStdout(), whatIfs[i], st, rows, alt, altRows); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfgPath, "config", "", "the scheduler's YAML config (its policies are the forecast's)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG)")
	f.DurationVar(&timeout, "timeout", time.Minute, "give up if the cluster cannot be read within this time")
	f.StringArrayVar(&whatIfs, "what-if", nil, "forecast again with one setting `KEY=VALUE` changed ("+forecast.WhatIfKeys+"; repeatable), and print both side by side")
	f.Lookup("what-if").DefValue = ""
	f.IntVar(&draws, "forecast-draws", 0, "run the forecast this many times with noisy remaining work and print each gang's estimated start p10/p50/p90 (0: off)")
	f.Float64Var(&arrivals, "assume-arrivals", 0, "assume gangs keep arriving, this many an hour (seeded Poisson, shapes drawn from the cluster's gangs; 0: none)")
	f.Float64Var(&noise, "duration-noise", 0.3, "with --forecast-draws: coefficient of variation of the remaining work's lognormal factor")
	return c
}

// printForecast writes the rows as a table, times in RFC 3339 (UTC),
// with the starts' spread over noisy draws when there is one.
func printForecast(w io.Writer, st *kube.ForecastState, rows []kube.ForecastRow, spread []forecast.Spread) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "# forecast at %s under %s/%s, backfill %s: %d waiting gangs\n", st.At.UTC().Format(time.RFC3339), st.SchedulerName, st.PlacementName, st.Backfill, len(rows))
	head := "position\tgang\tgpus\testimated_start\testimated_finish"
	if spread != nil {
		head += "\testimated_start_p10\testimated_start_p50\testimated_start_p90"
	}
	fmt.Fprintln(tw, head+"\treason")
	at := func(t float64) string {
		if t < 0 {
			return "-"
		}
		return kube.ETA(st, t).UTC().Format(time.RFC3339)
	}
	for i, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t", r.Position, r.Gang, r.GPUs, at(r.Start), at(r.Finish))
		if spread != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t", at(spread[i].P10), at(spread[i].P50), at(spread[i].P90))
		}
		fmt.Fprintf(tw, "%s\n", r.Reason)
	}
	return tw.Flush()
}

// printWhatIf prints a what-if beside the forecast it changes: the
// waiting gangs' summary under both, then each gang's start under both.
func printWhatIf(w io.Writer, kv string, st *kube.ForecastState, rows []kube.ForecastRow, alt *kube.ForecastState, altRows []kube.ForecastRow) error {
	a, b := forecast.Summarize(st, rows), forecast.Summarize(alt, altRows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\n# what-if %s (%s/%s, backfill %s)\n", kv, alt.SchedulerName, alt.PlacementName, alt.Backfill)
	perVC, err := whatif.Write(tw, "waiting_gangs", a, b)
	if err != nil {
		return err
	}
	fmt.Fprintln(tw, "max_rho\t-\t-\t(themis is not forecast)")
	if !perVC {
		fmt.Fprintln(tw, "per_vc_mean_wait\t-\t-\t(a tenancy is not forecast: one VC, the mean wait above)")
	}
	fmt.Fprintln(tw, "gang\testimated_start\twhat-if_start")
	at := func(st *kube.ForecastState, t float64) string {
		if t < 0 {
			return "-"
		}
		return kube.ETA(st, t).UTC().Format(time.RFC3339)
	}
	for i, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Gang, at(st, r.Start), at(alt, altRows[i].Start))
	}
	return tw.Flush()
}
