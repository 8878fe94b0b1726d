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
