package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/variability"
)

// classifyOpts are the flags of `pal classify`.
type classifyOpts struct {
	apps, point, output string
	k                   int
	seed                uint64
}

// newClassifyCmd is PAL's application classifier (paper §III-A).
func newClassifyCmd() *cobra.Command {
	var o classifyOpts
	cmd := &cobra.Command{
		Use:   "classify",
		Short: "Group applications into variability classes by DRAM and functional-unit utilisation",
		Long: `Classify clusters profiled applications in the 2-D space of DRAM
utilisation × peak functional-unit utilisation (nsight compute's 0-10 scale)
with K-Means, orders the clusters from most compute-bound (class A) to most
memory-bound, and prints each application's class. K is chosen by silhouette
unless --k is given. Without --apps it uses the built-in example, whose
values are illustrative, not measured.`,
		Example: `  pal classify
  pal classify --apps my-apps.csv --k 3 --point 2.0,8.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClassify(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.apps, "apps", "", "CSV with columns app,dram_util,fu_util ('#' lines are comments); default: built-in example")
	f.IntVar(&o.k, "k", 0, "number of classes, 1-4 (0: choose by silhouette)")
	f.StringVar(&o.point, "point", "", "also classify a new application at DRAM,FU")
	f.Uint64Var(&o.seed, "seed", DefaultSeed, "seed of k-means++")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "table, json or csv")
	return cmd
}

// parseUtilPoint reads "DRAM,FU".
func parseUtilPoint(s string) (dram, fu float64, err error) {
	a, b, ok := strings.Cut(s, ",")
	if ok {
		dram, err = strconv.ParseFloat(strings.TrimSpace(a), 64)
		if err == nil {
			fu, err = strconv.ParseFloat(strings.TrimSpace(b), 64)
		}
	}
	if !ok || err != nil || math.IsNaN(dram) || math.IsNaN(fu) || math.IsInf(dram, 0) || math.IsInf(fu, 0) {
		return 0, 0, fmt.Errorf("point %q: want DRAM,FU, e.g. 2.5,7.5", s)
	}
	return dram, fu, nil
}

type classifyReport struct {
	Source     string           `json:"source"`
	K          int              `json:"k"`
	Silhouette *float64         `json:"silhouette,omitempty"`
	Centroids  []centroidReport `json:"centroids"`
	Apps       []appReport      `json:"apps"`
	Point      *appReport       `json:"point,omitempty"`
}

type centroidReport struct {
	Class string  `json:"class"`
	DRAM  float64 `json:"dram_util"`
	FU    float64 `json:"fu_util"`
}

type appReport struct {
	App   string  `json:"app"`
	DRAM  float64 `json:"dram_util"`
	FU    float64 `json:"fu_util"`
	Class string  `json:"class"`
}

func runClassify(w io.Writer, o classifyOpts) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	var apps []variability.App
	var err error
	source := "built-in example (illustrative values, not measured)"
	if o.apps == "" {
		apps, err = variability.ExampleApps()
	} else {
		source = o.apps
		var f *os.File
		if f, err = os.Open(o.apps); err != nil {
			return err
		}
		defer f.Close()
		apps, err = variability.ReadApps(filepath.Base(o.apps), f)
	}
	if err != nil {
		return err
	}
	var pt *appReport
	if o.point != "" {
		d, fu, err := parseUtilPoint(o.point)
		if err != nil {
			return fmt.Errorf("--point: %w", err)
		}
		pt = &appReport{App: "(point)", DRAM: d, FU: fu}
	}
	cl, err := variability.NewClassifier(apps, variability.ClassifierOptions{K: o.k, Seed: o.seed})
	if err != nil {
		return err
	}
	rep := classifyReport{Source: source, K: cl.K}
	if !math.IsNaN(cl.Silhouette) {
		s := cl.Silhouette
		rep.Silhouette = &s
	}
	for c, ct := range cl.Centroids {
		rep.Centroids = append(rep.Centroids, centroidReport{Class: variability.Class(c).String(), DRAM: ct[0], FU: ct[1]})
	}
	for i, a := range cl.Apps {
		rep.Apps = append(rep.Apps, appReport{App: a.Name, DRAM: a.DRAM, FU: a.FU, Class: cl.Class[i].String()})
	}
	if pt != nil {
		pt.Class = cl.Classify(pt.DRAM, pt.FU).String()
		rep.Point = pt
	}
	if o.output == "json" {
		return writeJSON(w, rep)
	}
	if o.output == "csv" {
		fmt.Fprintf(w, "# apps: %s\n# k: %d\n", rep.Source, rep.K)
		if rep.Silhouette != nil {
			fmt.Fprintf(w, "# silhouette: %.4f\n", *rep.Silhouette)
		}
		cw := csv.NewWriter(w)
		cw.Write([]string{"app", "dram_util", "fu_util", "class"})
		for _, a := range append(rep.Apps, pointRows(pt)...) {
			cw.Write([]string{a.App, f4(a.DRAM), f4(a.FU), a.Class})
		}
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintf(w, "apps: %s\n", rep.Source)
	fmt.Fprintf(w, "K=%d", rep.K)
	if rep.Silhouette != nil {
		fmt.Fprintf(w, ", silhouette %.3f", *rep.Silhouette)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "app\tdram_util\tfu_util\tclass")
	for _, a := range rep.Apps {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\n", a.App, a.DRAM, a.FU, a.Class)
	}
	if pt != nil {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\n", pt.App, pt.DRAM, pt.FU, pt.Class)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "class\tcentroid dram_util\tcentroid fu_util\t")
	for _, c := range rep.Centroids {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t\n", c.Class, c.DRAM, c.FU)
	}
	return tw.Flush()
}

func pointRows(pt *appReport) []appReport {
	if pt == nil {
		return nil
	}
	return []appReport{*pt}
}

func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// checkOutput accepts the formats every result-printing command offers.
func checkOutput(o string) error {
	if o != "table" && o != "json" && o != "csv" {
		return fmt.Errorf("--output %q: want table, json or csv", o)
	}
	return nil
}
