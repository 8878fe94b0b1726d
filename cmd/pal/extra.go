package main

import "github.com/spf13/cobra"

// addExtraCommands wires the commands that live in their own files. A
// command that talks to a cluster is wired in cmd/pal-kube instead (see
// the package doc).
func addExtraCommands(root *cobra.Command) {
	root.AddCommand(newTraceCmd(), newProfileCmd(), newClassifyCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newSweepCmd())
	root.AddCommand(newCellsCmd())
	root.AddCommand(newThemisCmd())
}
