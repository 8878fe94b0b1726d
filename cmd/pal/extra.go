package main

import "github.com/spf13/cobra"

// addExtraCommands wires the commands that live in their own files.
func addExtraCommands(root *cobra.Command) {
	root.AddCommand(newTraceCmd(), newProfileCmd(), newClassifyCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newSweepCmd(), newReproduceCmd())
	root.AddCommand(newCellsCmd())
	root.AddCommand(newThemisCmd())
	root.AddCommand(newSchedulerCmd(), newDevClusterCmd(), newReplayCmd())
}
