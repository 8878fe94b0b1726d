// Package profilebuild turns per-GPU benchmark runs into the per-GPU PM
// table and its report: the work of pal profile build, which pal-kube
// profile collect also does on what it has just measured. It lives
// outside both commands so that the two binaries share one
// implementation without the research binary linking the cluster client.
package profilebuild

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/jsonround"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// Options are pal profile build's flags.
type Options struct {
	// Measurements is the CSV of benchmark runs; Out the file the table
	// goes to ("" or "-": stdout, the report then to stderr).
	Measurements, Out string
	// Models and ClassMap (the model table and its column) or Classes
	// (a CSV app,class) give each model's class.
	Models, ClassMap, Classes string
	// Cluster is the NODESxGPUS grid of integer nodes ("": inferred).
	Cluster string
	// Output is the report's format: table or json.
	Output     string
	MinSamples int
}

// Run builds the table and writes it and the report.
func Run(stdout, stderr io.Writer, o Options) error {
	if o.Measurements == "" {
		return fmt.Errorf("--measurements is required")
	}
	if o.Output != "table" && o.Output != "json" {
		return fmt.Errorf("--output %s: want table or json", quote.Value(o.Output))
	}
	if o.MinSamples < 1 {
		return fmt.Errorf("--min-samples %d: want at least 1", o.MinSamples)
	}
	opts := variability.BuildOptions{MinSamples: o.MinSamples}
	if o.Cluster != "" {
		n, g, err := cluster.ParseShape(o.Cluster)
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
	f, err := os.Open(o.Measurements)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := variability.ReadMeasurements(o.Measurements, f)
	if err != nil {
		return err
	}
	gs, rep, err := variability.Build(m, opts)
	if err != nil {
		return err
	}
	unmeasured, partial, err := measurementNotes(o.Measurements)
	if err != nil {
		return err
	}
	comments := []string{
		"per-GPU PM table built by pal profile build",
		fmt.Sprintf("measurements: %s (%d runs, %d GPUs)", o.Measurements, rep.Rows, rep.GPUs),
		"layout: " + rep.Layout,
		"classes: " + classSource + " (" + modelClassList(rep.ModelClass) + ")",
		"value: per model, the mean of the GPU's runs (outliers past 10% and 3 scaled MADs of their median left out) / median GPU; per class, geometric mean over its models / median GPU; unmeasured = 1.0",
	}
	for _, u := range unmeasured {
		comments = append(comments, "unmeasured: "+u)
		fmt.Fprintf(stderr, "warning: unmeasured: %s\n", u)
	}
	for _, u := range partial {
		comments = append(comments, "partial: "+u)
		fmt.Fprintf(stderr, "warning: partial: %s\n", u)
	}
	var tbl bytes.Buffer
	if err := variability.WriteGPUScores(&tbl, gs, comments); err != nil {
		return err
	}
	repW := stderr
	if o.Out != "" && o.Out != "-" {
		if err := os.WriteFile(o.Out, tbl.Bytes(), 0o644); err != nil {
			return err
		}
		repW = stdout
	} else if _, err := stdout.Write(tbl.Bytes()); err != nil {
		return err
	}
	rep.Source = fmt.Sprintf("%s; classes from %s", o.Measurements, classSource)
	if o.Output == "json" {
		return jsonround.Encode(repW, rep, "  ")
	}
	return writeBuildReport(repW, rep)
}

// UnmeasuredComment starts a comment line of a measurement CSV that names
// GPUs without a measurement (pal-kube profile bench writes them, above
// the header): Run carries each into the table's comments and warns of
// it, since the table alone cannot show a GPU it has no row for.
const UnmeasuredComment = "# unmeasured: "

// PartialComment starts a comment line of a measurement CSV that names
// a GPU and model measured by fewer runs than asked (pal-kube profile
// bench writes them): Run carries each into the table's comments and
// warns of it, since the table's value alone cannot show it.
const PartialComment = "# partial: "

// measurementNotes are the UnmeasuredComment and PartialComment lines
// of the measurement file's leading comments, without the prefix.
func measurementNotes(path string) (unmeasured, partial []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if !strings.HasPrefix(l, "#") {
			break
		}
		if u, ok := strings.CutPrefix(l, UnmeasuredComment); ok && strings.TrimSpace(u) != "" {
			unmeasured = append(unmeasured, strings.TrimSpace(u))
		}
		if u, ok := strings.CutPrefix(l, PartialComment); ok && strings.TrimSpace(u) != "" {
			partial = append(partial, strings.TrimSpace(u))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: reading its comments: %v", path, err)
	}
	return unmeasured, partial, nil
}

// buildClassOf is the model-to-class mapping the flags choose, and how
// to name it.
func buildClassOf(o Options) (func(string) (variability.Class, error), string, error) {
	if o.Classes != "" {
		f, err := os.Open(o.Classes)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		m, err := variability.ReadAppClasses(filepath.Base(o.Classes), f)
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
			return 0, fmt.Errorf("model %s is not in %s (it has %s)", quote.Value(model), o.Classes, strings.Join(names, ", "))
		}, o.Classes, nil
	}
	cm, err := workload.ParseClassMap(o.ClassMap)
	if err != nil {
		return nil, "", err
	}
	models := workload.DefaultModels()
	src := "the embedded model table"
	if o.Models != "" {
		if models, err = workload.LoadModels(o.Models); err != nil {
			return nil, "", err
		}
		src = o.Models
	}
	models = models.WithClassMap(cm)
	src += ", class map " + string(cm)
	return func(model string) (variability.Class, error) {
		if _, c, ok := models.Lookup(model); ok {
			return c, nil
		}
		return 0, fmt.Errorf("model %s is not in the model table (it has %s; --models or --classes add one)", quote.Value(model), strings.Join(models.Names(), ", "))
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
