package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--tenancy", "private"}, "--forecast-at: not with --tenancy private"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--what-if", "tenancy=hived"}, "--what-if tenancy=hived: want tenancy=none, or hived, hived-pm or hived-speed from a run under one of them"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--tenancy", "hived", "--what-if", "tenancy=quota"}, "--what-if tenancy=quota: want tenancy=none"},
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
		"# forecast what-if backfill=easy, packed-sticky (waiting jobs; themis figures are not forecast)\nwaiting_jobs now what-if\nstarted 4 of 4 4 of 4\nmean_wait_s 1375.0 675.0\nmean_jct_s 2100.0 1400.0",
		"# forecast what-if placement=pal, packed-sticky (waiting jobs; themis figures are not forecast)\nwaiting_jobs now what-if\nstarted 4 of 4 4 of 4\nmean_wait_s 1375.0 1375.0\nmean_jct_s 2100.0 2100.0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks\n%s\n\n%s", want, out)
		}
	}
}

// --forecast-draws, --duration-noise and --assume-arrivals on the hand
// case under strict order, forecast at 0 (the gang starts at 1000 s,
// when the 8-GPU job's 1000 s are done; the three 2-GPU jobs at 1500 s,
// after the gang's 500 s). With no noise every draw is the forecast:
// p10 = p50 = p90 = the start. With CV 0.5 the gang's start spreads
// (p10 < p90, each a round boundary), as does every job's behind it.
// Arrivals assumed after 0 queue behind under strict FIFO, so the
// starts stay; the header says what was assumed.
func TestSimForecastDrawsAndArrivals(t *testing.T) {
	dir := t.TempDir()
	hand := []string{"sim", "--trace", "../../examples/backfill/trace.csv", "--cluster", "4x4",
		"--gpu-scores", "../../examples/backfill/uniform-16-gpus.csv", "--locality-penalty", "1", "--round", "100",
		"--placement", "packed-sticky", "--forecast-at", "0"}
	starts := func(t *testing.T, fc string) (head []string, rows map[string][]string) {
		rs := readJobsOut(t, fc)
		rows = map[string][]string{}
		for _, r := range rs[1:] {
			rows[r[2]] = r
		}
		return rs[0], rows
	}
	for _, c := range []struct {
		name   string
		args   []string
		header string
		check  func(t *testing.T, head []string, rows map[string][]string)
	}{
		{"no noise", []string{"--forecast-draws", "5", "--duration-noise", "0"}, "5 draws of the remaining work x a lognormal factor of mean 1 and CV 0 per job (seed 42)",
			func(t *testing.T, head []string, rows map[string][]string) {
				if want := "estimated_start_s,estimated_finish_s,estimated_start_p10_s,estimated_start_p50_s,estimated_start_p90_s,reason"; !strings.HasSuffix(strings.Join(head, ","), want) {
					t.Errorf("header %v, want it to end %s", head, want)
				}
				for id, want := range map[string]string{"1": "1000.00", "2": "1500.00", "3": "1500.00", "4": "1500.00"} {
					if r := rows[id]; r[6] != want || r[8] != want || r[9] != want || r[10] != want {
						t.Errorf("job %s: start %s, p10/p50/p90 %s/%s/%s, want %s for all", id, r[6], r[8], r[9], r[10], want)
					}
				}
			}},
		{"CV 0.5", []string{"--forecast-draws", "40", "--duration-noise", "0.5"}, "40 draws",
			func(t *testing.T, _ []string, rows map[string][]string) {
				for _, id := range []string{"1", "2", "3", "4"} {
					r := rows[id]
					p10, _ := strconv.ParseFloat(r[8], 64)
					p50, _ := strconv.ParseFloat(r[9], 64)
					p90, _ := strconv.ParseFloat(r[10], 64)
					if !(p10 < p90 && p10 <= p50 && p50 <= p90) || math.Mod(p10, 100) != 0 || math.Mod(p90, 100) != 0 {
						t.Errorf("job %s: p10/p50/p90 %v/%v/%v, want a spread on round boundaries", id, p10, p50, p90)
					}
				}
			}},
		{"arrivals", []string{"--assume-arrivals", "60"}, "60 jobs/h assumed to arrive after it (Poisson, seed 42",
			func(t *testing.T, head []string, rows map[string][]string) {
				if slices.Contains(head, "estimated_start_p50_s") {
					t.Errorf("spread columns without --forecast-draws: %v", head)
				}
				for id, want := range map[string]string{"1": "1000.00", "2": "1500.00", "3": "1500.00", "4": "1500.00"} {
					if r := rows[id]; r[6] != want {
						t.Errorf("job %s: start %s with arrivals, want %s", id, r[6], want)
					}
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := filepath.Join(dir, "fc.csv")
			out, err := run(t, append(append(slices.Clone(hand), "--forecast-out", fc), c.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, c.header) {
				t.Errorf("the inputs do not say %q:\n%s", c.header, out)
			}
			head, rows := starts(t, fc)
			if len(rows) != 4 {
				t.Fatalf("%d waiting jobs forecast, want 4", len(rows))
			}
			c.check(t, head, rows)
		})
	}
	// Under strict SRTF the arrivals go ahead of the longer waiting jobs.
	// Without them (worked out by hand): at 0 only the 300 s job fits
	// before the gang, which waits for its 2 GPUs and runs 300-800; then
	// the 600, 1000 and 1500 s jobs start together at 800. With 12 an
	// hour assumed (--seed 42's draws: a golden value), shorter copies
	// arriving before 800 go ahead of the 1500 s job, which starts at
	// 5900; the others keep their starts.
	for _, c := range []struct {
		rate string
		want map[string]string
	}{
		{"0", map[string]string{"1": "300.00", "3": "800.00", "0": "800.00", "4": "800.00"}},
		{"12", map[string]string{"1": "300.00", "3": "800.00", "0": "800.00", "4": "5900.00"}},
	} {
		fc := filepath.Join(dir, "srtf.csv")
		args := append(slices.Clone(hand), "--scheduler", "srtf", "--forecast-out", fc)
		if c.rate != "0" {
			args = append(args, "--assume-arrivals", c.rate)
		}
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		_, rows := starts(t, fc)
		for id, want := range c.want {
			if got := rows[id][6]; got != want {
				t.Errorf("srtf, %s arrivals an hour: job %s starts %s, want %s", c.rate, id, got, want)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--forecast-draws", "3"}, "--forecast-draws goes with --forecast-at"},
		{[]string{"--assume-arrivals", "2"}, "--assume-arrivals goes with --forecast-at"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--duration-noise", "0.5"}, "--duration-noise goes with --forecast-draws"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--forecast-draws", "-1"}, "--forecast-draws -1"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--forecast-draws", "2", "--duration-noise", "-1"}, "--duration-noise -1"},
		{[]string{"--forecast-at", "0", "--forecast-out", "x.csv", "--assume-arrivals", "-1"}, "--assume-arrivals -1"},
	} {
		out, err := run(t, append([]string{"sim", "--trace", "../../examples/backfill/trace.csv", "--cluster", "4x4"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q\n%s", c.args, err, c.want, out)
		}
	}
}
