package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

func newTracePhillyVCCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "philly-vc",
		Short: "Write the Philly trace with its real VCs (trace.csv) and their cells (cells.yaml)",
		Long: `Philly-vc turns the embedded Philly job trace into a trace with the columns
job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,priority (submit times in
seconds after the first job, durations in seconds, pods that fit 8-GPU nodes)
and writes the cells of the 11 large Philly VCs (352 nodes of 8 GPUs, PCIe
pairs and sockets inside, each VC its node count from philly_vc.csv). Rows
of other VCs are left out and counted on stderr.`,
		Example: `  pal trace philly-vc --out philly
  pal sim --trace philly/trace.csv --cells philly/cells.yaml --tenancy hived --placement packed-sticky --round 300`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := workload.EmbeddedPhillyVCTrace(8)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			f, err := os.Create(filepath.Join(out, "trace.csv"))
			if err != nil {
				return err
			}
			if err := workload.WriteTenancyTrace(f, p.Trace.Jobs); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			g, err := os.Create(filepath.Join(out, "cells.yaml"))
			if err != nil {
				return err
			}
			if err := tenancy.WriteYAML(g, tenant.PhillyCells(p.VCs)); err != nil {
				g.Close()
				return err
			}
			if err := g.Close(); err != nil {
				return err
			}
			var why []string
			for k := range p.Dropped {
				why = append(why, k)
			}
			sort.Strings(why)
			for _, k := range why {
				fmt.Fprintf(cmd.ErrOrStderr(), "pal: left out %d rows (%s)\n", p.Dropped[k], k)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d jobs of %d VCs to %s and their cells to %s (time 0 = %s)\n",
				len(p.Trace.Jobs), len(p.VCs), filepath.Join(out, "trace.csv"), filepath.Join(out, "cells.yaml"), p.Start.Format("2006-01-02 15:04:05"))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "philly-vc", "output directory")
	return cmd
}
