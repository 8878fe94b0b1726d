package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/tenancy"
)

// newCellsCmd groups the commands on HiveD-format cells files.
func newCellsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cells",
		Short: "Validate and draw a cells file (HiveD's cell types, physical cells and virtual clusters)",
		Long: `A cells file (HiveD's format) describes the cluster and its virtual
clusters (VCs). pal sim --cells FILE --tenancy quota|hived|hived-pm|private
runs a trace on it; check validates one and show draws it.

` + cellsTraceColumns,
	}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a cells file and print chains, levels, each VC's cells and the splittable margin per level",
		Long: `Check loads a cells file in HiveD's format and validates it, including the
initial VC assignment with the full recursive splittable check. It prints
each chain's levels with its free cells, the VC cells not yet bound and the
splittable margin, then each VC's cells. An illegal file exits non-zero
with an error naming the file, line and field (for an illegal assignment,
the chain, the level and the VCs reserving it).

FILE is a cells file (hivedscheduler.yaml) or a HiveD deployment file: the
ConfigMap holding hivedscheduler.yaml in its data is read, the other
Kubernetes objects are skipped, and any other extra YAML document is an
error. HiveD v0.2's reservationId and reservedCells are read as
pinnedCellId and pinnedCells.

Limits: a cluster, and one cell, holds at most 524,288 devices (2^19);
YAML aliases may repeat at most 1,048,576 nodes in all; pinned cells may
not overlap; a VC's cellNumber x cell size is checked against its chain
before any cell is built.`,
		Example: "  pal cells check tenancy/testdata/hived-design.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := tenancy.Load(args[0])
			if err != nil {
				return err
			}
			return s.WriteCheck(cmd.OutOrStdout())
		},
	}
	show := &cobra.Command{
		Use:     "show FILE",
		Short:   "Draw the physical cell hierarchy of a cells file as text",
		Example: "  pal cells show tenancy/testdata/hived-design.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := tenancy.Load(args[0])
			if err != nil {
				return err
			}
			if w := s.Config().Warning(); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			return s.WriteTree(cmd.OutOrStdout())
		},
	}
	cmd.AddCommand(check, show)
	return cmd
}

// cellsTraceColumns is what a trace carries for a run on cells: the
// columns pal sim reads only under --tenancy.
const cellsTraceColumns = `With --tenancy, a trace (see pal sim --help for every column) may carry:
  vc              the job's VC, a name under virtualClusters in the cells
                  file; may be empty when the cells define one VC (and
                  without --cells, the one VC holding the whole --cluster)
  priority        -1: opportunistic (runs on whatever is idle and holds no
                  VC cell); 0..1000: guaranteed, inside its VC's cells
                  (default 0)
  pod_gpus        GPUs per pod; it divides num_gpus, and each pod stays
                  inside one node (default: the job is one pod)
  pinned_cell     --tenancy hived: run inside this pinned cell of the VC
                  (pinnedCellId in the cells file)
  leaf_cell_type  --tenancy hived: only on devices of this leaf cell type
A job naming an unknown VC, or needing more GPUs or larger pods than its VC
can ever hold, is an error naming its file, line and field before the run.`
