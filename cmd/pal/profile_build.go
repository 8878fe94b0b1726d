package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// profileBuildOpts are the flags of `pal profile build`.
type profileBuildOpts struct {
	measurements, out, models, classMap, classes, cluster, output string
	minSamples                                                    int
}

func newProfileBuildCmd() *cobra.Command {
	var o profileBuildOpts
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
			return runProfileBuild(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.measurements, "measurements", "", "CSV of benchmark runs (format above; required)")
	f.StringVar(&o.out, "out", "", "file to write the per-GPU table to (default: stdout)")
	f.StringVar(&o.models, "models", "", "model table YAML giving each model's class (default: the embedded one)")
	f.StringVar(&o.classMap, "class-map", "artifact", "model table column: artifact (code) or paper (Table II)")
	f.StringVar(&o.classes, "classes", "", "CSV app,class (pal classify -o csv output) instead of the model table")
	f.StringVar(&o.cluster, "cluster", "", "integer nodes: the NODESxGPUS grid (default: from the largest node and gpu_index)")
	f.IntVar(&o.minSamples, "min-samples", 3, "flag GPUs with fewer runs of a model than this")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "report format: table or json")
	return cmd
}

func runProfileBuild(stdout, stderr io.Writer, o profileBuildOpts) error {
	if o.measurements == "" {
		return fmt.Errorf("--measurements is required")
	}
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output %q: want table or json", o.output)
	}
	if o.minSamples < 1 {
		return fmt.Errorf("--min-samples %d: want at least 1", o.minSamples)
	}
	opts := variability.BuildOptions{MinSamples: o.minSamples}
	if o.cluster != "" {
		n, g, err := cluster.ParseShape(o.cluster)
		if err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
		opts.Nodes, opts.GPUsPerNode = n, g
	}
	classOf, classSource, err := buildClassOf(o)
	if err != nil {
		return err
	}
	opts.ClassOf = classOf
	f, err := os.Open(o.measurements)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := variability.ReadMeasurements(o.measurements, f)
	if err != nil {
		return err
	}
	gs, rep, err := variability.Build(m, opts)
	if err != nil {
		return err
	}
	comments := []string{
		"per-GPU PM table built by pal profile build",
		fmt.Sprintf("measurements: %s (%d runs, %d GPUs)", o.measurements, rep.Rows, rep.GPUs),
		"layout: " + rep.Layout,
		"classes: " + classSource + " (" + modelClassList(rep.ModelClass) + ")",
		"value: per model, the mean of the GPU's runs (outliers past 10% and 3 scaled MADs of their median left out) / median GPU; per class, geometric mean over its models / median GPU; unmeasured = 1.0",
	}
	var tbl bytes.Buffer
	if err := variability.WriteGPUScores(&tbl, gs, comments); err != nil {
		return err
	}
	repW := stderr
	if o.out != "" && o.out != "-" {
		if err := os.WriteFile(o.out, tbl.Bytes(), 0o644); err != nil {
			return err
		}
		repW = stdout
	} else if _, err := stdout.Write(tbl.Bytes()); err != nil {
		return err
	}
	rep.Source = fmt.Sprintf("%s; classes from %s", o.measurements, classSource)
	if o.output == "json" {
		return writeJSON(repW, rep)
	}
	return writeBuildReport(repW, rep)
}

// buildClassOf is the model-to-class mapping the flags choose, and how
// to name it.
func buildClassOf(o profileBuildOpts) (func(string) (variability.Class, error), string, error) {
	if o.classes != "" {
		f, err := os.Open(o.classes)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		m, err := variability.ReadAppClasses(filepath.Base(o.classes), f)
		if err != nil {
			return nil, "", err
		}
		names := make([]string, 0, len(m))
		for a := range m {
			names = append(names, a)
		}
		sort.Strings(names)
		return func(model string) (variability.Class, error) {
			if c, ok := m[model]; ok {
				return c, nil
			}
			return 0, fmt.Errorf("model %q is not in %s (it has %s)", model, o.classes, strings.Join(names, ", "))
		}, o.classes, nil
	}
	cm, err := workload.ParseClassMap(o.classMap)
	if err != nil {
		return nil, "", err
	}
	models := workload.DefaultModels()
	src := "the embedded model table"
	if o.models != "" {
		if models, err = workload.LoadModels(o.models); err != nil {
			return nil, "", err
		}
		src = o.models
	}
	models = models.WithClassMap(cm)
	src += ", class map " + string(cm)
	return func(model string) (variability.Class, error) {
		if _, c, ok := models.Lookup(model); ok {
			return c, nil
		}
		return 0, fmt.Errorf("model %q is not in the model table (it has %s; --models or --classes add one)", model, strings.Join(models.Names(), ", "))
	}, src, nil
}

func modelClassList(mc map[string]string) string {
	var parts []string
	for m, c := range mc {
		parts = append(parts, m+"="+c)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func gpuName(r variability.GPURef) string {
	return fmt.Sprintf("GPU %d (node %s #%d)", r.GPU, r.Node, r.Index)
}

func writeBuildReport(w io.Writer, r *variability.BuildReport) error {
	fmt.Fprintf(w, "source:      %s\n", r.Source)
	fmt.Fprintf(w, "runs:        %d on %d GPUs\n", r.Rows, r.GPUs)
	fmt.Fprintf(w, "layout:      %s\n", r.Layout)
	fmt.Fprintf(w, "min samples: %d\n", r.MinSamples)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nclass\tmodels\truns\tGPUs\tmin\tmax\tspread\tcv\toutliers\tfew samples\trepeat noise (median / worst)")
	for _, c := range r.Classes {
		if len(c.Models) == 0 {
			fmt.Fprintf(tw, "%s\t-\t0\t0\t\t\t\t\t\t\tnot measured: every GPU 1.0\n", c.Class)
			continue
		}
		worst := "-"
		if c.RepeatNoiseWorst != nil {
			worst = fmt.Sprintf("%.2f%% %s %s", 100*c.RepeatNoiseWorst.Value, gpuName(*c.RepeatNoiseWorst), c.RepeatNoiseWorst.Model)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.4f\t%.4f\t%.3fx\t%.2f%%\t%d\t%d\t%.2f%% / %s\n", c.Class, strings.Join(c.Models, ","), c.Runs, c.Measured,
			c.Min, c.Max, c.Spread, 100*c.CV, len(c.Outliers), len(c.FewSamples), 100*c.RepeatNoiseMedian, worst)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Classes {
		for _, g := range c.Outliers {
			fmt.Fprintf(w, "class %s outlier: %s at %.4f (above %.4f)\n", c.Class, gpuName(g), g.Value, c.Threshold)
		}
		for _, g := range c.FewSamples {
			fmt.Fprintf(w, "class %s few samples: %s has %d run(s) of %s\n", c.Class, gpuName(g), int(g.Value), g.Model)
		}
		if n := len(c.Unmeasured); n > 0 {
			fmt.Fprintf(w, "class %s unmeasured: %d GPU(s) set to 1.0, first %s\n", c.Class, n, gpuName(c.Unmeasured[0]))
		}
	}
	for _, g := range r.LowClock {
		fmt.Fprintf(w, "low SM clock: %s at %.0f%% of the median GPU's clock\n", gpuName(g), 100*g.Value)
	}
	if r.Hot != nil {
		fmt.Fprintf(w, "hottest: %s at %.1f C\n", gpuName(*r.Hot), r.Hot.Value)
	}
	return nil
}
