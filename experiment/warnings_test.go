package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/workload"
)

// A row that keeps the run going past a year is blamed on the term that
// does it, in a short message: a submit_time of 1e300 on submit_time (not
// on duration_s, whose 10 h is harmless), a duration of 2e8 s on
// duration_s. No number in the message runs past a few digits.
func TestWarnLongBlamesTheRightColumn(t *testing.T) {
	for _, tc := range []struct {
		row, field, says string
	}{
		{"1,4,1e300,36000,BERT", "submit_time", "arrives at 1e+300 s (3.17e+292 years)"},
		{"1,4,0,2e8,BERT", "duration_s", "(6.3 years) on median GPUs"},
	} {
		tr, err := workload.ReadTrace("t.csv", strings.NewReader("job_id,num_gpus,submit_time,duration_s,model\n"+tc.row+"\n"), workload.DefaultModels())
		if err != nil {
			t.Fatal(err)
		}
		in := &Inputs{Trace: tr, Opts: Options{Round: 360}}
		in.warnLong()
		if len(in.Warnings) != 1 {
			t.Fatalf("%s: warnings %q", tc.row, in.Warnings)
		}
		w := in.Warnings[0]
		if !strings.HasPrefix(w, `t.csv:2: field "`+tc.field+`": job 1 `) || !strings.Contains(w, tc.says) || len(w) > 250 {
			t.Errorf("%s: warning %q, want it on %s saying %q", tc.row, w, tc.field, tc.says)
		}
	}
}

// An unknown node is answered with the cluster's node names: all of up
// to eight, else a sample with the count.
func TestNodeSample(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		want  string
	}{
		{2, "n0, n1"},
		{8, "n0, n1, n2, n3, n4, n5, n6, n7"},
		{16, "n0, n1, n2, n3, n4, n5, ..., n15 (16 nodes)"},
	} {
		c, err := cluster.New(tc.nodes, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.Nodes {
			c.Nodes[i].Name = fmt.Sprintf("n%d", i)
		}
		if got := nodeSample(c); got != tc.want {
			t.Errorf("%d nodes: %q, want %q", tc.nodes, got, tc.want)
		}
	}
}

// A streamed trace whose rows all end within LongRun is not read again
// for the warning (the file is gone by then, and no warning says so); one
// with a long row is, and warns as a trace held whole does.
func TestWarnLongReadsOnlyLateTraces(t *testing.T) {
	for _, tc := range []struct {
		name, rows string
		removed    bool
		want       []string // each warning's start
	}{
		{"short rows, file gone", "1,4,0,36000,BERT\n2,1,60,100,BERT\n", true, nil},
		{"a long row", "1,4,0,36000,BERT\n2,1,60,2e8,BERT\n", false, []string{`field "duration_s": job 2 `}},
		{"a long row, file gone", "1,4,0,36000,BERT\n2,1,60,2e8,BERT\n", true, []string{"reading the trace for long rows: "}},
	} {
		p := filepath.Join(t.TempDir(), "t.csv")
		if err := os.WriteFile(p, []byte("job_id,num_gpus,submit_time,duration_s,model\n"+tc.rows), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := workload.StreamTraceFile(p, workload.DefaultModels())
		if err != nil || !tr.Streamed() {
			t.Fatalf("%s: %v, streamed %v", tc.name, err, tr != nil && tr.Streamed())
		}
		if tc.removed {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		in := &Inputs{Trace: tr, Opts: Options{Round: 360}}
		in.warnLong()
		if len(in.Warnings) != len(tc.want) {
			t.Fatalf("%s: warnings %q, want %d", tc.name, in.Warnings, len(tc.want))
		}
		for i, w := range tc.want {
			if !strings.Contains(in.Warnings[i], w) {
				t.Errorf("%s: warning %q, want it to hold %q", tc.name, in.Warnings[i], w)
			}
		}
	}
}
