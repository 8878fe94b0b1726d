package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTraceConcat(t *testing.T) {
	dir := t.TempDir()
	a, b, bad, o := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv"), filepath.Join(dir, "bad.csv"), filepath.Join(dir, "o.csv")
	const h = "job_id,num_gpus,submit_time,duration,model,tracked\n"
	for p, c := range map[string]string{
		a:   h + "0,1,0,100,BERT,1\n1,2,7,50,GPT2,0\n",
		b:   "job_id,num_gpus,submit_time,duration,model\n4,4,0,10,vgg19\n",
		bad: h + "0,1,0,100,BERT,1\n1,2,7,50,GPT2,maybe\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := run(t, "trace", "concat", a, b, a, "--gap", "3", "--out", o)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pal: wrote 5 jobs (3 tracked) from 3 files, last arrival at 0.0 h, to " + o + "\n"; msg != want {
		t.Errorf("summary %q, want %q", msg, want)
	}
	got, err := os.ReadFile(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := h + "0,1,0,100,BERT,1\n1,2,7,50,GPT2,0\n2,4,10,10,vgg19,1\n3,1,13,100,BERT,1\n4,2,20,50,GPT2,0\n"; string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// To stdout: the trace and nothing else.
	if out, err := run(t, "trace", "concat", b, "--overlay"); err != nil || out != "job_id,num_gpus,submit_time,duration,model\n0,4,0,10,vgg19\n" {
		t.Errorf("stdout %q, %v", out, err)
	}
	// The joined trace runs.
	if _, err := run(t, "sim", "--trace", o, "--placement", "pal"); err != nil {
		t.Errorf("sim on the joined trace: %v", err)
	}

	os.Remove(o)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{a, bad, "--out", o}, bad + `:3: field "tracked": "maybe" is not 1 or 0`},
		{[]string{a, "--gap", "-1"}, "--gap -1: want a finite number of seconds >= 0"},
		{[]string{a, b, "--overlay", "--gap", "0"}, "--gap has no meaning with --overlay"},
		{nil, "requires at least 1 arg"},
	} {
		_, err := run(t, append([]string{"trace", "concat"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	for _, p := range []string{o, o + ".tmp"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a failed concat left %s behind (%v)", p, err)
		}
	}
}
