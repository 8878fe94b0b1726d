package main

import (
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"

	"github.com/palsched/pal/workload"
)

func newTraceConcatCmd() *cobra.Command {
	var (
		opt     workload.ConcatOptions
		modelsF string
		out     string
	)
	cmd := &cobra.Command{
		Use:   "concat FILE...",
		Short: "Join PAL-format traces into one: one after another, or overlaid",
		Long: `Concat joins trace files (the format pal sim --trace reads) into one trace.

By default the files run one after another: the first keeps its submit
times, and each next file's time 0 is put at the last arrival so far plus
--gap seconds, so every file keeps its own timeline (an idle start
included). With --overlay every file keeps its own submit times and the
files are merged. Jobs are written by submit time; jobs with equal submit
times keep file order (as given), then row order.

Job ids are renumbered 0..N-1 in output order (ids may repeat across the
inputs), so a later --track window names the new ids. The output has
every optional column that any input's header has: tracked (a row of a
file without it is tracked=1), app, vc, priority and pod_gpus (one app or
VC name in two files is one app or VC). Columns the trace reader does not
know are dropped. A file of duration_s rows without a model column joins
only files of that kind. A file whose rows are all tracked=0 is accepted
(background load to add to another).

Every file is checked as pal sim checks a trace (errors name the file,
line and field) and nothing is written if one fails. Memory is one file's
rows at a time (about 150 bytes a job), and to stdout the output too
(about 45 bytes a job); --overlay holds every file's rows. With --out, a
summary goes to stderr.`,
		Example: `  pal trace synergy --rate 1000 --jobs 500000 --seed 1 --out a.csv
  pal trace synergy --rate 1000 --jobs 500000 --seed 2 --out b.csv
  pal trace concat a.csv b.csv --gap 3.6 --out 1m.csv     # 1,000,000 jobs
  pal trace concat load.csv background.csv --overlay > mixed.csv`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if !(opt.Gap >= 0) || math.IsInf(opt.Gap, 0) {
				return fmt.Errorf("--gap %v: want a finite number of seconds >= 0", opt.Gap)
			}
			if opt.Overlay && cmd.Flags().Changed("gap") {
				return fmt.Errorf("--gap has no meaning with --overlay (the files keep their own submit times)")
			}
			models := workload.DefaultModels()
			if modelsF != "" {
				var err error
				if models, err = workload.LoadModels(modelsF); err != nil {
					return err
				}
			}
			var st workload.ConcatStats
			toStdout, err := renderTraceOut(cmd, out, func(w io.Writer) error {
				var err error
				st, err = workload.ConcatTraceFiles(w, files, models, opt)
				return err
			})
			if err != nil || toStdout {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "pal: wrote %d jobs (%d tracked) from %d files, last arrival at %.1f h, to %s\n",
				st.Jobs, st.Tracked, len(files), st.LastArrival/3600, out)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.Float64Var(&opt.Gap, "gap", 0, "seconds from the last arrival so far to the next file's time 0 (e.g. 3600/rate to keep a Poisson stream's mean gap)")
	fs.BoolVar(&opt.Overlay, "overlay", false, "keep every file's submit times and merge the files by them")
	fs.StringVar(&modelsF, "models", "", "model table YAML the traces' models come from (default: the embedded one)")
	fs.StringVar(&out, "out", "", "write the trace to this file instead of stdout")
	return cmd
}
