package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/internal/atomicfile"
	"github.com/palsched/pal/workload"
)

// newTraceCmd groups the workload generators. Their output is an ordinary
// PAL-format trace, so `pal sim --trace FILE` runs it like any other and
// the file is a record of exactly what was simulated.
func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Generate or join workload traces in the PAL format",
	}
	cmd.AddCommand(newTraceSynergyCmd(), newTraceThemisCmd(), newTracePhillyVCCmd(), newTraceConcatCmd())
	return cmd
}

func newTraceSynergyCmd() *cobra.Command {
	var (
		opt       workload.SynergyOptions
		track     string
		philly    string
		mix       string
		modelsF   string
		classMap  string
		out       string
		trackHelp = trackUsage + " (written with tracked=0; the paper: 2000-3000)"
	)
	cmd := &cobra.Command{
		Use:   "synergy",
		Short: "Synergy-style trace from Philly GPU demands (the PAL paper's A3 workload)",
		Long: `Generate a Synergy-style trace as the PAL artifact builds it: job k needs the
GPUs of the k-th Philly job (mod N) that ran strictly between 10^1.5 and 10^4
minutes on at most 16 GPUs, in trace order; its length is Gavel-like (20%:
60*10^U(3,4) s, else 60*10^U(1.5,3) s, at 1 s per iteration); arrivals are
Poisson at --rate jobs per hour, in whole seconds, the first at 0.

Every job is class A (model "synergy") unless --class-mix says otherwise:
  none      every job "synergy", class A (what the artifact's runs do)
  artifact  classes A/B/C at 34/33/33 (the artifact's unused model_class_split)
  zoo       every model in the table except "synergy", equally likely
  K:W,...   weights per class letter or model name, e.g. A:50,B:50 or resnet50:1,BERT:1
A class is written as a model of that class (see --class-map), so simulate the
trace with the same --class-map and --models.

The Philly GPU demands come from the embedded philly/philly.csv (Pollux's
processed Philly trace) unless --philly names another file with columns
duration (seconds) and num_gpus.`,
		Example: "  pal trace synergy --rate 10 --jobs 4000 --seed 42 --track 2000-3000 > synergy-10.csv",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if track != "" {
				t, err := workload.ParseTrackRange(track)
				if err != nil {
					return fmt.Errorf("--track: %v", err)
				}
				opt.Track = &t
			}
			if opt.Mix, err = workload.ParseClassMix(mix); err != nil {
				return fmt.Errorf("--class-mix: %v", err)
			}
			cm, err := workload.ParseClassMap(classMap)
			if err != nil {
				return err
			}
			models := workload.DefaultModels()
			if modelsF != "" {
				if models, err = workload.LoadModels(modelsF); err != nil {
					return err
				}
			}
			opt.Models = models.WithClassMap(cm)

			var jobs []workload.Spec
			if philly == "" {
				jobs, err = workload.GenerateSynergyEmbedded(opt)
			} else {
				f, ferr := os.Open(philly)
				if ferr != nil {
					return ferr
				}
				jobs, err = workload.GenerateSynergy(philly, f, opt)
				f.Close()
			}
			if err != nil {
				return err
			}
			if toStdout, err := writeTraceOut(cmd, out, jobs); err != nil || toStdout {
				return err
			}
			tracked := 0
			for i := range jobs {
				if jobs[i].Tracked {
					tracked++
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "pal: wrote %d jobs (%d tracked), last arrival at %.1f h, to %s\n",
				len(jobs), tracked, jobs[len(jobs)-1].Submit/3600, out)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.Float64Var(&opt.Rate, "rate", 10, "mean arrivals per hour (the paper's loads: 8, 10, 12, 14)")
	fs.IntVar(&opt.Jobs, "jobs", 4000, "number of jobs")
	fs.Uint64Var(&opt.Seed, "seed", DefaultSeed, "seed of the lengths, arrivals and class draws")
	fs.StringVar(&track, "track", "", trackHelp)
	fs.StringVar(&philly, "philly", "", "processed Philly CSV (default: the embedded philly/philly.csv)")
	fs.StringVar(&mix, "class-mix", workload.MixNone, "none, artifact, zoo, or KEY:WEIGHT,... over class letters or model names")
	fs.StringVar(&modelsF, "models", "", "model table YAML (default: the embedded one)")
	fs.StringVar(&classMap, "class-map", string(workload.ClassMapArtifact), "model to class: artifact (code) or paper (Table II)")
	fs.StringVar(&out, "out", "", "write the trace to this file instead of stdout")
	return cmd
}

// writeTraceOut writes a generated trace to --out, or to stdout when --out
// is empty or "-" (toStdout).
func writeTraceOut(cmd *cobra.Command, out string, jobs []workload.Spec) (toStdout bool, err error) {
	return renderTraceOut(cmd, out, func(w io.Writer) error { return workload.WriteTrace(w, jobs) })
}

// renderTraceOut writes what render writes to --out, or to stdout when
// --out is empty or "-" (toStdout). A failure never leaves half a trace
// behind: stdout gets the trace rendered in memory first, --out a
// temporary file renamed into place (so a trace larger than memory can
// be written).
func renderTraceOut(cmd *cobra.Command, out string, render func(io.Writer) error) (toStdout bool, err error) {
	if out != "" && out != "-" {
		return false, atomicfile.Write(out, render)
	}
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return false, err
	}
	_, err = cmd.OutOrStdout().Write(buf.Bytes())
	return true, err
}
