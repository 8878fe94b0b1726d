package main

import (
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
