package main

import (
	"github.com/spf13/cobra"

	"github.com/palsched/pal/internal/profilebuild"
	"github.com/palsched/pal/variability"
)

func newProfileBuildCmd() *cobra.Command {
	var o profilebuild.Options
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Turn per-GPU benchmark runs into the per-GPU PM table (GPU_ID, Node_ID, PerfVar_classA..D)",
		Long: `Build reads benchmark runs of representative applications on every GPU
and writes the per-GPU table that pal sim --gpu-scores and pal profile
export --kubernetes read: for each class, each GPU's iteration time
relative to the class's median GPU (the PAL paper's PerfVar; 1.2 = 20%
slower than the median GPU).

Per model, a GPU's value is the mean of its repetitions (a run both over
10% and over 3 scaled MADs from their median is set aside as disturbed)
divided by the median over GPUs of those means; a class with several models takes each
GPU's geometric mean over them and is divided again by its median GPU. A
class no model maps to, and a GPU a class never ran on, get 1.0 (the median
GPU); the report says which. Models map to classes through the model table
(--models, --class-map) or through pal classify -o csv output (--classes).

The table goes to --out, or to stdout; the report (per class: spread,
outliers, GPUs with too few samples, repeat noise; GPUs with low SM clocks)
goes to stdout with --out and to stderr without.

Measurement file:
` + variability.MeasurementFormat,
		Example: `  pal profile build --measurements runs.csv --out gpu-scores.csv
  pal sim --gpu-scores gpu-scores.csv --cluster 16x4
  pal profile build --measurements runs.csv --classes classes.csv -o json --out scores.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return profilebuild.Run(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Measurements, "measurements", "", "CSV of benchmark runs (format above; required)")
	f.StringVar(&o.Out, "out", "", "file to write the per-GPU table to (default: stdout)")
	f.StringVar(&o.Models, "models", "", "model table YAML giving each model's class (default: the embedded one)")
	f.StringVar(&o.ClassMap, "class-map", "artifact", "model table column: artifact (code) or paper (Table II)")
	f.StringVar(&o.Classes, "classes", "", "CSV app,class (pal classify -o csv output) instead of the model table")
	f.StringVar(&o.Cluster, "cluster", "", "integer nodes: the NODESxGPUS grid (default: from the largest node and gpu_index)")
	f.IntVar(&o.MinSamples, "min-samples", 3, "flag GPUs with fewer runs of a model than this")
	f.StringVarP(&o.Output, "output", "o", DefaultOutput, "report format: table or json")
	return cmd
}
