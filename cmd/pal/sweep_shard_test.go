package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// shardGrid is a small grid (2 penalties x 3 placements = 6 runs) with a
// packed-sticky baseline in every group, so that the comparison column
// needs rows from other shards.
var shardGrid = []string{"sweep", "--trace", "sia-philly/1", "--locality-penalty", "1,2", "--placement", "pal,tiresias,packed-nonsticky"}

var wallMS = regexp.MustCompile(`"wall_ms": [0-9.e+-]+`)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("pal %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// stdoutOnly drops the "pal: ..." notes run() mixes into the output.
func stdoutOnly(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "pal: ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// Sharding a sweep in N parts and merging them, in any order, gives the
// unsharded sweep's sweep.csv byte for byte, its sweep.json but for the
// wall times, and its CSV on stdout.
func TestSweepShardMergeIsUnsharded(t *testing.T) {
	whole := t.TempDir()
	mustRun(t, append(shardGrid, "--out", whole)...)
	wantCSV := readFile(t, filepath.Join(whole, "sweep.csv"))
	wantJSON := wallMS.ReplaceAllString(readFile(t, filepath.Join(whole, "sweep.json")), `"wall_ms": 0`)
	wantStdout := stdoutOnly(mustRun(t, append(shardGrid, "-o", "csv")...))
	if n := strings.Count(wantCSV, "\n"); n != 7 {
		t.Fatalf("unsharded sweep.csv has %d lines, want a header and 6 rows", n)
	}
	const seed = 7 // shuffles the merge order
	rng := rand.New(rand.NewPCG(seed, 0))
	for n := 1; n <= 3; n++ {
		parts := t.TempDir()
		var files []string
		rows := 0
		for k := range n {
			mustRun(t, append(shardGrid, "--shard", strconv.Itoa(k)+"/"+strconv.Itoa(n), "--out", parts)...)
			f := filepath.Join(parts, "part-"+strconv.Itoa(k)+"-of-"+strconv.Itoa(n)+".json")
			rows += strings.Count(readFile(t, f), `"placement": `)
			files = append(files, f)
		}
		if rows != 6 {
			t.Errorf("N=%d: the parts hold %d rows, want the grid's 6 once each", n, rows)
		}
		rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		out := t.TempDir()
		mustRun(t, append([]string{"sweep", "merge", "--out", out}, files...)...)
		if got := readFile(t, filepath.Join(out, "sweep.csv")); got != wantCSV {
			t.Errorf("N=%d, merged in order %v (shuffle seed %d): sweep.csv differs\n got %s\nwant %s", n, files, seed, got, wantCSV)
		}
		if got := wallMS.ReplaceAllString(readFile(t, filepath.Join(out, "sweep.json")), `"wall_ms": 0`); got != wantJSON {
			t.Errorf("N=%d: sweep.json differs beyond wall times\n got %s\nwant %s", n, got, wantJSON)
		}
		if got := stdoutOnly(mustRun(t, append([]string{"sweep", "merge", "-o", "csv"}, files...)...)); got != wantStdout {
			t.Errorf("N=%d: merge -o csv differs\n got %s\nwant %s", n, got, wantStdout)
		}
	}
}

// Parts that do not make up one sweep are refused, naming the files.
func TestSweepMergeErrors(t *testing.T) {
	dir := t.TempDir()
	shard := func(sub, k, n string, extra ...string) string {
		d := filepath.Join(dir, sub)
		mustRun(t, append(append(slices.Clone(shardGrid), extra...), "--shard", k+"/"+n, "--out", d)...)
		return filepath.Join(d, "part-"+k+"-of-"+n+".json")
	}
	a0, a1, a2 := shard("a", "0", "3"), shard("a", "1", "3"), shard("a", "2", "3")
	b0 := shard("b", "0", "2")
	c1 := shard("c", "1", "3", "--seed", "9")
	trunc := filepath.Join(dir, "trunc.json")
	if err := os.WriteFile(trunc, []byte(readFile(t, a0)[:200]), 0o644); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(dir, "partial.json")
	if err := os.WriteFile(partial, []byte(strings.Replace(readFile(t, a1), `"partial": false`, `"partial": true`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	badField := filepath.Join(dir, "field.json")
	if err := os.WriteFile(badField, []byte(strings.Replace(readFile(t, a1), `"shards": 3`, `"shards": "3"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		files []string
		want  string
	}{
		"twice":      {[]string{a0, a1, a0, a2}, a0 + " and " + a0 + " are both shard 0/3"},
		"missing":    {[]string{a2, a0}, "shard 1/3 missing (have 2 of 3 part files)"},
		"shardings":  {[]string{a0, b0}, a0 + " is a part of 3, " + b0 + " of 2"},
		"other grid": {[]string{a0, c1, a2}, a0 + " and " + c1 + " are parts of different sweeps: their "},
		"truncated":  {[]string{a1, trunc}, trunc + ": line "},
		"partial":    {[]string{a0, partial, a2}, partial + ": shard 1/3 is partial"},
		"field type": {[]string{badField}, badField + ": line 4: field shards: "},
		"not a file": {[]string{a0, filepath.Join(dir, "nope.json")}, "nope.json"},
	} {
		out, err := run(t, append([]string{"sweep", "merge", "--out", filepath.Join(dir, "out-"+name)}, c.files...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: merge said %v, want an error containing %q\n%s", name, err, c.want, out)
		}
		if _, serr := os.Stat(filepath.Join(dir, "out-"+name)); serr == nil {
			t.Errorf("%s: merge wrote output despite the error", name)
		}
	}
	if _, err := run(t, append(slices.Clone(shardGrid), "--shard", "3/3")...); err == nil || !strings.Contains(err.Error(), "0 <= K < N") {
		t.Errorf("--shard 3/3: %v", err)
	}
	if _, err := run(t, append(slices.Clone(shardGrid), "--shard", "0/2", "-o", "csv")...); err == nil || !strings.Contains(err.Error(), "part file") {
		t.Errorf("--shard with -o csv: %v", err)
	}
}

// The Job pal sweep --kubernetes prints runs the grid: its pods' command
// lines, with the completion index and a local results directory put in,
// write parts that merge into the unsharded sweep.
func TestSweepKubernetesJobRunsTheGrid(t *testing.T) {
	out := mustRun(t, append(slices.Clone(shardGrid), "--kubernetes", "--shards", "3", "--image", "registry.example/pal:v1",
		"--results-claim", "sweep-pvc", "--job-namespace", "research", "--pod-cpu", "1500m")...)
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := job.Spec
	if job.Kind != "Job" || job.APIVersion != "batch/v1" || job.Namespace != "research" || *s.Completions != 3 || *s.Parallelism != 3 ||
		s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("job: %+v", job)
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	if c.Image != "registry.example/pal:v1" || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "sweep-pvc" ||
		c.VolumeMounts[0].MountPath != "/results" || !*pod.SecurityContext.RunAsNonRoot || c.Env[0].Name != "JOB_COMPLETION_INDEX" {
		t.Errorf("pod: %+v", pod)
	}
	wantArgs := []string{"sweep", "--locality-penalty=1,2", "--placement=pal,tiresias,packed-nonsticky", "--trace=sia-philly/1",
		"--workers=2", "--shard=$(JOB_COMPLETION_INDEX)/3", "--out=/results"}
	if !slices.Equal(c.Command, []string{"/pal"}) || c.Resources.Requests.Cpu().MilliValue() != 1500 || c.Resources.Limits.Memory().String() != "2Gi" ||
		*s.BackoffLimitPerIndex != 2 || *c.SecurityContext.ReadOnlyRootFilesystem != true || *pod.SecurityContext.FSGroup != 65532 {
		t.Errorf("container: %+v", c)
	}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("pod args\n got %q\nwant %q", c.Args, wantArgs)
	}

	results := t.TempDir()
	var files []string
	for k := range 3 {
		args := slices.Clone(c.Args)
		for i, a := range args {
			a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(k))
			args[i] = strings.ReplaceAll(a, "=/results", "="+results)
		}
		mustRun(t, args...)
		files = append(files, filepath.Join(results, "part-"+strconv.Itoa(k)+"-of-3.json"))
	}
	merged, whole := t.TempDir(), t.TempDir()
	mustRun(t, append([]string{"sweep", "merge", "--out", merged}, files...)...)
	mustRun(t, append(slices.Clone(shardGrid), "--out", whole)...)
	if a, b := readFile(t, filepath.Join(merged, "sweep.csv")), readFile(t, filepath.Join(whole, "sweep.csv")); a != b {
		t.Errorf("the Job's merged parts differ from the unsharded sweep:\n%s\n---\n%s", a, b)
	}
	if _, err := run(t, append(slices.Clone(shardGrid), "--kubernetes")...); err == nil || !strings.Contains(err.Error(), "--shards 0") {
		t.Errorf("--kubernetes without --shards: %v", err)
	}
}
