package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/internal/sizecap"
)

// newThemisCmd groups the finish-time-fairness tools.
func newThemisCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "themis",
		Short: "Finish-time fairness (Themis): explain auctions",
	}
	cmd.AddCommand(newThemisAuctionCmd(), newThemisSimCmd())
	return cmd
}

func newThemisAuctionCmd() *cobra.Command {
	var input string
	cmd := &cobra.Command{
		Use:   "auction --input FILE",
		Short: "Hold one partial-allocation auction and print its outcome as JSON",
		Long: `Auction reads one Themis auction from a YAML file, holds it and prints JSON:
which apps bid (the ⌊(1−f)·n⌋ worst-off of the n apps that can use more GPUs,
at least one), each app's ρ, its proportional-fair bundle, the fraction c_i it
keeps after the hidden payment, and what everyone holds once leftovers are
handed out.

ρ = ((now − arrival) + remaining / rate) / T_id, where rate counts the spread
factor (and, with gpu_scores, the slowest GPU's PM-score) and
T_id = total / min(GPUs / n_avg, max_gpus). Bids are one per useful bundle
size, each on the app's best-packed bundle; the proportional-fair choice of
sizes is exact (dynamic programming), then sizes are packed onto disjoint
GPUs, larger first.

` + fairness.FileFormat,
		Example: `  pal themis auction --input fairness/testdata/t4.yaml
  pal themis auction --input fairness/testdata/t5.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runThemisAuction(cmd.OutOrStdout(), input)
		},
	}
	cmd.Flags().StringVarP(&input, "input", "i", "", "auction file (YAML; - for stdin)")
	_ = cmd.MarkFlagRequired("input")
	return cmd
}

func runThemisAuction(w io.Writer, input string) error {
	var (
		b   []byte
		err error
	)
	name := input
	if input == "-" {
		name = "<stdin>"
		b, err = sizecap.ReadAll(name, os.Stdin, fairness.MaxFileBytes, "an auction file")
	} else {
		b, err = sizecap.ReadFile(input, fairness.MaxFileBytes, "an auction file")
	}
	if err != nil {
		return err
	}
	f, err := fairness.ParseAuctionFile(name, b)
	if err != nil {
		return err
	}
	out, err := f.Run()
	if err != nil {
		return err
	}
	return writeJSON(w, out)
}
