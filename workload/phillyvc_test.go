package workload

import (
	"strings"
	"testing"
)

func TestPhillyVCTrace(t *testing.T) {
	vcs, err := ReadPhillyVCs("vc.csv", strings.NewReader("vc,node num\nA,2\nB,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,A\n" +
		"2017-10-09 06:00:00,100,16,1600,A\n" +
		"2017-10-09 06:00:01,10,12,120,B\n" +
		"2017-10-09 06:00:02,10,1,10,Z\n" +
		"2017-10-09 06:00:03,10,8,80,B\n"
	p, err := ReadPhillyVCTrace("p.csv", strings.NewReader(in), vcs, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Dropped; got["larger than its VC"] != 1 || got["VC not among the large VCs"] != 1 {
		t.Fatalf("dropped %v", got)
	}
	want := []struct {
		vc          string
		gpus, pod   int
		submit, dur float64
	}{{"A", 16, 8, 0, 100}, {"B", 8, 8, 3, 10}, {"A", 1, 1, 3715, 66}}
	for i, w := range want {
		j := p.Trace.Jobs[i]
		if j.ID != i || j.VC != w.vc || j.GPUs != w.gpus || j.PodGPUs != w.pod || j.Submit != w.submit || j.IdealRuntime() != w.dur {
			t.Errorf("job %d = %+v, want %+v", i, j, w)
		}
	}
	for _, bad := range []struct{ in, want string }{
		{"timestamp,duration,num_gpus,cluster\nyesterday,1,1,A\n", `p.csv:2: field "timestamp": "yesterday" is not a YYYY-MM-DD HH:MM:SS time`},
		{"timestamp,duration,num_gpus,cluster\n2017-10-09 06:00:00,0,1,A\n", `field "duration"`},
		{"timestamp,duration,num_gpus,cluster\n2017-10-09 06:00:00,1,0,A\n", `field "num_gpus"`},
	} {
		if _, err := ReadPhillyVCTrace("p.csv", strings.NewReader(bad.in), vcs, 8); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: got %v, want %q", bad.in, err, bad.want)
		}
	}
	if _, err := ReadPhillyVCs("vc.csv", strings.NewReader("vc,node num\nA,0\n")); err == nil {
		t.Error("a VC of 0 nodes accepted")
	}
	if PhillyPod(12, 8) != 6 || PhillyPod(24, 8) != 8 || PhillyPod(6, 8) != 6 || PhillyPod(128, 8) != 8 {
		t.Error("PhillyPod")
	}
	// The embedded trace: every job of the 11 VCs, 18 rows of small VCs out.
	e, err := EmbeddedPhillyVCTrace(8)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Trace.Jobs) != 82229 || len(e.VCs) != 11 || e.Dropped["VC not among the large VCs"] != 18 || len(e.Dropped) != 1 {
		t.Fatalf("embedded: %d jobs, %d VCs, dropped %v", len(e.Trace.Jobs), len(e.VCs), e.Dropped)
	}
}

// The VC table and the trace read against it: every kept job fits its
// VC, ids run in submission order from 0 and submissions from time 0;
// anything else is an error naming the file, a short one whatever the
// input.
func FuzzReadPhillyVCTrace(f *testing.F) {
	f.Add("vc,node num\nA,2\nB,1\n", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,A\n2017-10-09 06:00:00,100,16,1600,A\n2017-10-09 06:00:01,10,12,120,B\n")
	f.Add("vc,node num\nA,0\n", "timestamp,duration,num_gpus,cluster\n")
	f.Add("node num,vc\n3,A\n3,A\n", "cluster,num_gpus,duration,timestamp\nA,8,1e9,2017-10-09 07:01:55\n")
	f.Add("vc,node num\nA,1\n", "timestamp,duration,num_gpus,cluster\n2017-13-40 99:00:00,1,1,A\n2017-10-09 07:01:55,-1,1,A\n")
	short := func(t *testing.T, err error, file string) {
		if msg := err.Error(); !strings.HasPrefix(msg, file) || len(msg) > 1024 {
			t.Fatalf("error of %d bytes, or not naming %s: %.300s", len(msg), file, msg)
		}
	}
	f.Fuzz(func(t *testing.T, vcIn, traceIn string) {
		vcs, err := ReadPhillyVCs("vc.csv", strings.NewReader(vcIn))
		if err != nil {
			short(t, err, "vc.csv")
			return
		}
		size := map[string]int{}
		for _, v := range vcs {
			if _, dup := size[v.Name]; dup || v.Nodes <= 0 {
				t.Fatalf("VC table accepted %+v", vcs)
			}
			size[v.Name] = v.Nodes * 8
		}
		tr, err := ReadPhillyVCTrace("t.csv", strings.NewReader(traceIn), vcs, 8)
		if err != nil {
			short(t, err, "t.csv")
			return
		}
		for i, j := range tr.Trace.Jobs {
			if j.ID != i || !(j.Submit >= 0) || (i > 0 && j.Submit < tr.Trace.Jobs[i-1].Submit) || (i == 0 && j.Submit != 0) {
				t.Fatalf("job %d: id %d submitted at %v", i, j.ID, j.Submit)
			}
			if j.GPUs < 1 || j.GPUs > size[j.VC] || j.PodGPUs < 1 || j.GPUs%j.PodGPUs != 0 || j.PodGPUs > 8 || !(j.Iterations > 0) {
				t.Fatalf("job %d accepted: %+v (VC of %d GPUs)", i, j, size[j.VC])
			}
		}
	})
}
