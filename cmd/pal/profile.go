package main

import (
	"encoding/csv"
	"fmt"
	"github.com/palsched/pal/cluster"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/variability"
)

// newProfileCmd groups the commands that inspect variability profiles.
func newProfileCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Build and inspect GPU variability profiles, PM-score bins and L×V orders (pal-kube profile measures and exports them on a cluster)",
	}
	cmd.AddCommand(newProfileShowCmd(), newProfileBuildCmd())
	return cmd
}

// profileShowOpts are the flags of `pal profile show`.
type profileShowOpts struct {
	profile, gpuScores, cluster string
	seed, binSeed               uint64
	sampling, kStrategy, engine string
	localityModel, output       string
	localityPenalty             float64
	nInit                       int
}

func newProfileShowCmd() *cobra.Command {
	var o profileShowOpts
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show each class's PM-score bins and L×V traversal for a cluster",
		Long: `Show draws raw per-GPU values from a variability profile (or reads a
pinned per-GPU table), bins each class with K-Means and prints the bins and
PAL's L×V traversal order, i.e. exactly what placement will see.`,
		Example: `  pal profile show --profile longhorn --cluster 16x4
  pal profile show --gpu-scores data/reference/pal-artifact-gpu-pmscores.csv
  pal profile show --profile frontera --k-strategy paper --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfileShow(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", variability.DefaultProfile,
		"profile set: "+strings.Join(variability.KnownProfiles(), ", ")+", a profiles.json, a directory holding one, or one CSV for all classes")
	f.StringVar(&o.gpuScores, "gpu-scores", "", "pinned per-GPU table (GPU_ID,Node_ID,PerfVar_classA..D) instead of drawing from --profile")
	f.StringVar(&o.cluster, "cluster", "16x4", "cluster shape NODESxGPUS to draw values for (ignored with --gpu-scores)")
	f.Uint64Var(&o.seed, "seed", DefaultSeed, "seed of the per-GPU draws")
	f.StringVar(&o.sampling, "sampling", "with", "with (artifact) or without (paper) replacement")
	f.StringVar(&o.kStrategy, "k-strategy", "artifact", "artifact (K = 2 + outliers) or paper (silhouette sweep)")
	f.Uint64Var(&o.binSeed, "bin-seed", DefaultSeed, "seed of k-means++ (pal sim seeds it with --seed)")
	f.IntVar(&o.nInit, "n-init", 10, "k-means++ restarts per fit")
	f.StringVar(&o.engine, "engine", "lloyd", "k-means engine: lloyd (k-means++ + Lloyd, as the artifact) or exact (dynamic programming)")
	f.Float64Var(&o.localityPenalty, "locality-penalty", variability.DefaultLocalityPenalty, "across-node penalty L")
	f.StringVar(&o.localityModel, "locality-model", "constant", "constant (--locality-penalty for every class) or per-class (blox-pal main's A 1.16, B 1.0, C 1.0, D 1.10)")
	f.StringVarP(&o.output, "output", "o", DefaultOutput, "table, json or csv")
	return cmd
}

func runProfileShow(w io.Writer, o profileShowOpts) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	strat, err := variability.ParseKStrategy(o.kStrategy)
	if err != nil {
		return fmt.Errorf("--k-strategy: %w", err)
	}
	engine, err := variability.ParseEngine(o.engine)
	if err != nil {
		return fmt.Errorf("--engine: %w", err)
	}
	var loc variability.LocalityModel
	switch o.localityModel {
	case "constant":
		loc = variability.ConstantLocality(o.localityPenalty)
	case "per-class":
		loc = variability.BPMainLocality(o.localityPenalty)
	default:
		return fmt.Errorf("--locality-model %q: want constant or per-class", o.localityModel)
	}
	if err := loc.Validate(); err != nil {
		return fmt.Errorf("--locality-penalty: %w", err)
	}

	var raw *variability.Table
	var source string
	if o.gpuScores != "" {
		gs, err := variability.ReadGPUScoresFile(o.gpuScores)
		if err != nil {
			return err
		}
		raw, source = gs.Table, "pinned table "+o.gpuScores
	} else {
		nodes, gpus, err := cluster.ParseShape(o.cluster)
		if err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
		mode, err := variability.ParseSampleMode(o.sampling)
		if err != nil {
			return fmt.Errorf("--sampling: %w", err)
		}
		if mode == variability.ByUUID {
			return fmt.Errorf("--sampling uuid needs real GPU uuids; use --gpu-scores for a pinned table")
		}
		profiles, err := variability.LoadProfileSet(o.profile)
		if err != nil {
			return err
		}
		raw, err = variability.Assign(profiles, nodes*gpus, mode, variability.NewRand(o.seed), nil)
		if err != nil {
			return err
		}
		source = fmt.Sprintf("profile %s, %dx%d GPUs sampled %s replacement, seed %d", o.profile, nodes, gpus, mode, o.seed)
	}
	sc, err := variability.NewScores(raw, variability.BinOptions{Strategy: strat, Seed: o.binSeed, NInit: o.nInit, Engine: engine}, loc.ForClass)
	if err != nil {
		return err
	}
	rep := newProfileReport(source, strat, loc, sc)
	if o.output == "json" {
		return writeJSON(w, rep)
	}
	if o.output == "csv" {
		return rep.writeCSV(w)
	}
	return rep.writeTable(w)
}

// profileReport is the JSON shape of `pal profile show`.
type profileReport struct {
	Source    string        `json:"source"`
	GPUs      int           `json:"gpus"`
	KStrategy string        `json:"k_strategy"`
	Locality  string        `json:"locality"`
	Classes   []classReport `json:"classes"`
}

type classReport struct {
	Class      string      `json:"class"`
	K          int         `json:"k"`
	Silhouette *float64    `json:"silhouette,omitempty"`
	Outliers   int         `json:"outliers"`
	Threshold  float64     `json:"outlier_threshold"`
	Bins       []binReport `json:"bins"`
	LxV        []lvReport  `json:"lxv"`
}

type binReport struct {
	Score   float64 `json:"score"`
	Raw     float64 `json:"raw"`
	GPUs    int     `json:"gpus"`
	Outlier bool    `json:"outlier"`
}

type lvReport struct {
	V        float64 `json:"v"`
	Locality string  `json:"locality"`
	Product  float64 `json:"product"`
}

func newProfileReport(source string, strat variability.KStrategy, loc variability.LocalityModel, sc *variability.Scores) *profileReport {
	r := &profileReport{Source: source, GPUs: sc.Raw.NumGPUs(), KStrategy: strat.String(), Locality: loc.Describe()}
	for c := range variability.Class(variability.NumClasses) {
		b := sc.Bins[c]
		cr := classReport{Class: c.String(), K: b.K, Outliers: len(b.Outliers), Threshold: b.Threshold}
		if b.HasSilhouette() {
			s := b.Silhouette
			cr.Silhouette = &s
		}
		if math.IsInf(cr.Threshold, 0) || math.IsNaN(cr.Threshold) {
			cr.Threshold = 0 // JSON cannot carry ±Inf; no threshold when < 2 GPUs
		}
		for j, v := range b.Centroids {
			cr.Bins = append(cr.Bins, binReport{Score: v, Raw: b.RawCentroids[j], GPUs: b.Counts[j], Outlier: b.OutlierBin[j]})
		}
		for _, e := range sc.LV[c] {
			l := "within"
			if e.Across {
				l = "across"
			}
			cr.LxV = append(cr.LxV, lvReport{V: e.V, Locality: l, Product: e.Product})
		}
		r.Classes = append(r.Classes, cr)
	}
	return r
}

func (r *profileReport) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "source:     %s (%d GPUs)\n", r.Source, r.GPUs)
	fmt.Fprintf(w, "k-strategy: %s\n", r.KStrategy)
	fmt.Fprintf(w, "locality:   %s\n", r.Locality)
	for i, c := range r.Classes {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "class %s: K=%d", c.Class, c.K)
		if c.Silhouette != nil {
			fmt.Fprintf(w, ", silhouette %.3f", *c.Silhouette)
		}
		fmt.Fprintf(w, ", %d outlier GPU(s) above %.4f\n", c.Outliers, c.Threshold)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  bin\tscore\traw\tGPUs\toutlier")
		for j, b := range c.Bins {
			out := ""
			if b.Outlier {
				out = "yes"
			}
			fmt.Fprintf(tw, "  %d\t%.4f\t%.4f\t%d\t%s\n", j, b.Score, b.Raw, b.GPUs, out)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  L×V: %s\n", variability.FormatLxV(r.lv(i)))
	}
	return nil
}

// writeCSV writes one row per bin; the inputs come first as comments.
func (r *profileReport) writeCSV(w io.Writer) error {
	fmt.Fprintf(w, "# source: %s (%d GPUs)\n# k_strategy: %s\n# locality: %s\n", r.Source, r.GPUs, r.KStrategy, r.Locality)
	cw := csv.NewWriter(w)
	cw.Write([]string{"class", "k", "bin", "score", "raw", "gpus", "outlier"})
	for _, c := range r.Classes {
		for j, b := range c.Bins {
			cw.Write([]string{c.Class, strconv.Itoa(c.K), strconv.Itoa(j), strconv.FormatFloat(b.Score, 'f', -1, 64),
				strconv.FormatFloat(b.Raw, 'f', -1, 64), strconv.Itoa(b.GPUs), strconv.FormatBool(b.Outlier)})
		}
	}
	cw.Flush()
	return cw.Error()
}

func (r *profileReport) lv(i int) []variability.LVEntry {
	out := make([]variability.LVEntry, len(r.Classes[i].LxV))
	for j, e := range r.Classes[i].LxV {
		out[j] = variability.LVEntry{V: e.V, Across: e.Locality == "across", Product: e.Product}
	}
	return out
}
