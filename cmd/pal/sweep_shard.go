package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/palsched/pal/internal/atomicfile"
	"github.com/palsched/pal/reproduce/sweep"
	"github.com/palsched/pal/reproduce/sweep/kubejob"
)

// shardFlags are pal sweep's flags for running a grid in parts: one part
// here (--shard), or every part as a Kubernetes Indexed Job (--kubernetes).
type shardFlags struct {
	shard string

	kubernetes          bool
	shards, parallelism int
	image, claim        string
	jobName, namespace  string
	cpu, memory         string
}

// jobFlags are the flags that shape the Job rather than the grid, so the
// pods' command line leaves them out.
var jobFlags = map[string]bool{"kubernetes": true, "shards": true, "parallelism": true, "image": true,
	"results-claim": true, "job-name": true, "job-namespace": true, "pod-cpu": true, "pod-memory": true,
	"shard": true, "out": true, "output": true, "workers": true, "wide": true}

func bindShardFlags(fs *pflag.FlagSet) *shardFlags {
	s := &shardFlags{}
	fs.StringVar(&s.shard, "shard", "", "run part K/N of the grid (K from 0) and write a part file (DIR/part-K-of-N.json with --out) for pal sweep merge")
	fs.BoolVar(&s.kubernetes, "kubernetes", false, "print a Kubernetes Indexed Job that runs the grid in --shards parts instead of running it")
	fs.IntVar(&s.shards, "shards", 0, "--kubernetes: number of parts (the Job's completions)")
	fs.IntVar(&s.parallelism, "parallelism", 0, "--kubernetes: parts running at once (0: all)")
	fs.StringVar(&s.image, "image", "pal:latest", "--kubernetes: the pal image (hack/image.sh builds it)")
	fs.StringVar(&s.claim, "results-claim", "pal-sweep-results", "--kubernetes: PersistentVolumeClaim the parts are written to, mounted at "+kubejob.ResultsDir)
	fs.StringVar(&s.jobName, "job-name", "pal-sweep", "--kubernetes: the Job's name")
	fs.StringVar(&s.namespace, "job-namespace", "default", "--kubernetes: the Job's namespace")
	fs.StringVar(&s.cpu, "pod-cpu", "2", "--kubernetes: CPU each pod requests (its --workers)")
	fs.StringVar(&s.memory, "pod-memory", "2Gi", "--kubernetes: memory each pod requests and is limited to")
	return s
}

// parse checks --shard against the output options and returns it.
func (s *shardFlags) parse(output string) (sweep.Shard, error) {
	if s.shard == "" {
		return sweep.Shard{}, nil
	}
	sh, err := sweep.ParseShard(s.shard)
	if err != nil {
		return sh, fmt.Errorf("--shard %v", err)
	}
	if output != "table" {
		return sh, fmt.Errorf("--shard writes a part file (JSON) for pal sweep merge; give the output format to merge, not -o %s", output)
	}
	return sh, nil
}

// writeSweepPart writes one shard's part file: DIR/part-K-of-N.json, or
// stdout without --out.
func writeSweepPart(cmd *cobra.Command, dir string, res *sweep.Result, sh sweep.Shard, pts []sweep.Point, total int) error {
	idx := make([]int, len(pts))
	for i, p := range pts {
		idx[i] = p.Index
	}
	part := sweep.NewPart(res, sh, idx, total)
	// A part with no rows of its own still says which part it is.
	if dir == "" {
		return sweep.WritePart(cmd.OutOrStdout(), part)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, fmt.Sprintf("part-%d-of-%d.json", part.Shard, part.Shards))
	if err := atomicfile.Write(path, func(w io.Writer) error { return sweep.WritePart(w, part) }); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "pal: shard %d/%d: %d of the grid's %d runs in %s\n", part.Shard, part.Shards, len(pts), total, path)
	return nil
}

// writeSweepJob prints the Indexed Job whose pods run this grid's parts:
// the grid flags as given here, each pod with its --shard.
func writeSweepJob(cmd *cobra.Command, s *shardFlags, fs *pflag.FlagSet) error {
	var args []string
	fs.Visit(func(f *pflag.Flag) {
		if jobFlags[f.Name] {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	job, err := kubejob.Build(kubejob.Spec{Name: s.jobName, Namespace: s.namespace, Image: s.image,
		Shards: s.shards, Parallelism: s.parallelism, SweepArgs: args, Claim: s.claim, CPU: s.cpu, Memory: s.memory})
	if err != nil {
		return err
	}
	b, err := kubejob.YAML(job)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "# pal sweep as a Kubernetes Indexed Job: %d parts, results in PVC %s.\n", s.shards, s.claim)
	fmt.Fprintf(w, "# When it completes: pal sweep merge --out DIR <the claim's part-*-of-%d.json>\n", s.shards)
	_, err = w.Write(b)
	return err
}

func newSweepMergeCmd() *cobra.Command {
	var (
		outDir, output string
		wide           bool
	)
	cmd := &cobra.Command{
		Use:   "merge PART.json...",
		Short: "Join the part files of a sharded sweep (pal sweep --shard K/N) into the sweep's result",
		Long: `Join the part files that pal sweep --shard K/N wrote, one per K, into the
result the whole grid gives when run at once: the same sweep.csv byte for
byte, the same sweep.json but for each run's wall time, and the same table.
The packed-sticky comparison is recomputed across parts.

Every part must come from the same grid and options, each K from 0 to N-1
exactly once, and each part complete; otherwise merge says which file is
wrong and writes nothing.`,
		Example: `  pal sweep --trace sia-philly/all --locality-penalty 1,2,3 --shard 0/3 --out parts
  pal sweep --trace sia-philly/all --locality-penalty 1,2,3 --shard 1/3 --out parts
  pal sweep --trace sia-philly/all --locality-penalty 1,2,3 --shard 2/3 --out parts
  pal sweep merge --out sweep-l parts/part-*-of-3.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if output != "table" && output != "csv" && output != "json" {
				return fmt.Errorf("--output %q: want table, csv or json", output)
			}
			parts := make([]sweep.NamedPart, 0, len(files))
			for _, f := range files {
				fh, err := os.Open(f)
				if err != nil {
					return err
				}
				p, err := sweep.ReadPart(f, fh)
				fh.Close()
				if err != nil {
					return err
				}
				parts = append(parts, sweep.NamedPart{Name: f, Part: p})
			}
			m, err := sweep.Merge(parts)
			if err != nil {
				return err
			}
			return writeSweepResult(cmd.OutOrStdout(), outDir, output, wide, m.Document, m.Inputs)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&outDir, "out", "", "write DIR/sweep.csv and DIR/sweep.json instead of printing")
	fs.StringVarP(&output, "output", "o", "table", "stdout format without --out: table, csv or json")
	fs.BoolVar(&wide, "wide", false, "table output: every column of the CSV, not just the headline ones")
	return cmd
}
