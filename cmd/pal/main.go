// Command pal is the PAL GPU-cluster scheduler's command line: the
// round-based simulator (`pal sim`), workload tools, profile inspection and
// the paper's experiments. It is a thin shell over the library packages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "pal:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "pal",
		Short:         "PAL: variability- and locality-aware GPU cluster scheduling",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSimCmd())
	addExtraCommands(root)
	return root
}
