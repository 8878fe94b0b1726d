package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hand-computed backfill case through pal sim (examples/backfill:
// 4x4 alike GPUs, FIFO, 100 s rounds). Worked out by hand: an 8-GPU job
// runs 0-1000; the 16-GPU gang (500 s) needs every GPU, so its
// reservation under easy is t = 1000 on all 16; the 2-GPU jobs of 300,
// 600 and 1500 s then start at 0 only if they end by 1000.
func TestSimBackfillHandCase(t *testing.T) {
	want := map[string]map[string]string{ // job -> first start, completion
		"none":   {"0": "0.00,1000.00", "1": "1000.00,1500.00", "2": "1500.00,1800.00", "3": "1500.00,2100.00", "4": "1500.00,3000.00"},
		"easy":   {"0": "0.00,1000.00", "1": "1000.00,1500.00", "2": "0.00,300.00", "3": "0.00,600.00", "4": "1500.00,3000.00"},
		"greedy": {"0": "0.00,1000.00", "1": "1500.00,2000.00", "2": "0.00,300.00", "3": "0.00,600.00", "4": "0.00,1500.00"},
	}
	for mode, w := range want {
		jobs := filepath.Join(t.TempDir(), "jobs.csv")
		out, err := run(t, "sim", "--trace", "../../examples/backfill/trace.csv", "--cluster", "4x4",
			"--gpu-scores", "../../examples/backfill/uniform-16-gpus.csv", "--locality-penalty", "1", "--round", "100",
			"--placement", "packed-sticky,pal", "--backfill", mode, "--jobs-out", jobs)
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		if got := strings.Contains(out, "backfill:"); got != (mode != "none") {
			t.Errorf("%s: header names backfill %v, want %v:\n%s", mode, got, mode != "none", out)
		}
		recs := readJobsOut(t, jobs)
		if len(recs) != 1+2*5 {
			t.Fatalf("%s: %d rows in --jobs-out", mode, len(recs))
		}
		for _, r := range recs[1:] {
			if got := r[8] + "," + r[9]; got != w[r[1]] {
				t.Errorf("%s %s: job %s first start, completion %s, want %s", mode, r[0], r[1], got, w[r[1]])
			}
		}
	}
}

func TestSimBackfillBadValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backfill", "eazy"}, `backfill "eazy": want none, easy or greedy`},
		{[]string{"--backfill", "easy", "--tenancy", "quota"}, "not with --tenancy quota"},
		{[]string{"--backfill", "greedy", "--scheduler", "themis"}, "not with --scheduler themis"},
	} {
		out, err := run(t, append([]string{"sim", "--trace", "../../examples/backfill/trace.csv", "--cluster", "4x4"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q\n%s", c.args, err, c.want, out)
		}
	}
}

// With exact durations (the simulator's own model, what --forecast-at
// runs on) and no arrival after the forecast's time, every job waiting
// then gets, in --forecast-out, the first start and the completion that
// --jobs-out records for it in the same run (a job preempted before
// then: the completion). Random traces of 20 jobs
// (seeded) on 4x4 GPUs, under strict order and both backfills.
func TestSimForecastMatchesJobsOut(t *testing.T) {
	dir := t.TempDir()
	compared := 0
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		var b strings.Builder
		b.WriteString("job_id,num_gpus,submit_time,duration_s\n")
		at := 0.0
		for i := range 20 {
			at += float64(r.IntN(300))
			fmt.Fprintf(&b, "%d,%d,%g,%d\n", i, []int{1, 2, 4, 8, 16}[r.IntN(5)], at, 60+r.IntN(3000))
		}
		tr := filepath.Join(dir, fmt.Sprintf("t%d.csv", seed))
		if err := os.WriteFile(tr, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		T := fmt.Sprint(at) // the last arrival: nothing arrives after it
		for _, mode := range []string{"none", "easy", "greedy"} {
			jobs, fc := filepath.Join(dir, "jobs.csv"), filepath.Join(dir, "fc.csv")
			if out, err := run(t, "sim", "--trace", tr, "--cluster", "4x4", "--round", "60", "--placement", "packed-sticky,pal",
				"--backfill", mode, "--forecast-at", T, "--forecast-out", fc, "--jobs-out", jobs); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			actual := map[string][]string{}
			for _, r := range readJobsOut(t, jobs)[1:] {
				actual[r[0]+"/"+r[1]] = r
			}
			for _, r := range readJobsOut(t, fc)[1:] {
				a := actual[r[0]+"/"+r[2]]
				want := a[8] + "," + a[9] // first start, completion
				if a[13] != "0" {
					// Preempted before the forecast: its first start was
					// earlier; the end still has to match.
					want = r[6] + "," + a[9]
				}
				if got := r[6] + "," + r[7]; got != want {
					t.Errorf("seed %d %s %s: job %s forecast at %s: start, end %s; the run: %s", seed, mode, r[0], r[2], r[1], got, want)
				}
				compared++
			}
		}
	}
	t.Logf("%d forecasts compared", compared)
	if compared < 50 {
		t.Errorf("only %d waiting jobs compared", compared)
	}
}

func TestSimForecastFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--forecast-at", "100"}, "--forecast-at and --forecast-out go together"},
		{[]string{"--forecast-out", "x.csv"}, "--forecast-at and --forecast-out go together"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--tenancy", "quota"}, "--forecast-at: not with --tenancy quota"},
		{[]string{"--what-if", "backfill=easy"}, "--what-if: only with --forecast-at"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--what-if", "drain=n1"}, "do not change the cluster"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--what-if", "speed=2"}, "--what-if speed: unknown setting"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--what-if", "scheduler=themis"}, "not with a scheduler that places too"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--what-if", "backfill=eazy"}, "--what-if backfill=eazy"},
	} {
		out, err := run(t, append([]string{"sim", "--trace", "../../examples/backfill/trace.csv", "--cluster", "4x4"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q\n%s", c.args, err, c.want, out)
		}
	}
}

// A what-if on the hand case: the run under strict order, forecast at 0
// (jobs 1-4 wait: the gang starts at 1000, the three 2-GPU jobs at 1500;
// waits 1000, 1500 x 3, mean 1375; JCTs 1500, 1800, 2100, 3000, mean
// 2100). Under backfill=easy from the next round the 300 s and 600 s
// jobs start at 100 (they end by the gang's reservation at 1000), the
// rest as before: waits 1000, 100, 100, 1500 (mean 675), JCTs 1500, 400,
// 700, 3000 (1400). placement=pal changes nothing here.
func TestSimForecastWhatIf(t *testing.T) {
	fc := filepath.Join(t.TempDir(), "fc.csv")
	out, err := run(t, "sim", "--trace", "../../examples/backfill/trace.csv", "--cluster", "4x4",
		"--gpu-scores", "../../examples/backfill/uniform-16-gpus.csv", "--locality-penalty", "1", "--round", "100",
		"--placement", "packed-sticky", "--forecast-at", "0", "--forecast-out", fc, "--what-if", "backfill=easy", "--what-if", "placement=pal")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"# forecast what-if backfill=easy, packed-sticky (waiting jobs; per-VC and themis figures are not forecast)\nwaiting_jobs now what-if\nstarted 4 of 4 4 of 4\nmean_wait_s 1375.0 675.0\nmean_jct_s 2100.0 1400.0",
		"# forecast what-if placement=pal, packed-sticky (waiting jobs; per-VC and themis figures are not forecast)\nwaiting_jobs now what-if\nstarted 4 of 4 4 of 4\nmean_wait_s 1375.0 1375.0\nmean_jct_s 2100.0 2100.0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks\n%s\n\n%s", want, out)
		}
	}
}
