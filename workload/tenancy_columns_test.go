package workload

import (
	"strings"
	"testing"
)

// The tenancy columns vc, priority, pod_gpus and duration_s.
func TestReadTraceTenancyColumns(t *testing.T) {
	in := "job_id,num_gpus,pod_gpus,submit_time,duration_s,vc,priority\n" +
		"0,8,4,0,3600,A,5\n" +
		"1,1,,10,60,B,-1\n" +
		"2,2,,20,1.5,,\n"
	tr, err := ReadTrace("t.csv", strings.NewReader(in), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		vc         string
		prio, pod  int
		iterations float64
	}{{"A", 5, 4, 3600}, {"B", -1, 0, 60}, {"", 0, 0, 1.5}}
	for i, w := range want {
		j := tr.Jobs[i]
		if j.VC != w.vc || j.VCPriority != w.prio || j.PodGPUs != w.pod || j.Iterations != w.iterations || j.IterTime != 1 || j.Model != NoModel {
			t.Errorf("job %d = %+v, want %+v", i, j, w)
		}
	}
	// With a model, duration_s is seconds on a median GPU.
	tr, err = ReadTrace("m.csv", strings.NewReader("job_id,num_gpus,submit_time,duration_s,model\n0,1,0,100,resnet50\n"), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Jobs[0].IdealRuntime(); got < 99.999 || got > 100.001 {
		t.Errorf("runtime %g s, want 100", got)
	}
}

func TestReadTraceTenancyErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"job_id,num_gpus,submit_time,duration_s,priority\n0,1,0,60,1001\n", `w.csv:2: field "priority": "1001" is not a priority`},
		{"job_id,num_gpus,submit_time,duration_s,priority\n0,1,0,60,-2\n", `field "priority"`},
		{"job_id,num_gpus,submit_time,duration_s,pod_gpus\n0,4,0,60,3\n", `w.csv:2: field "pod_gpus": 3 GPUs per pod do not divide the job's 4 GPUs`},
		{"job_id,num_gpus,submit_time,duration_s,pod_gpus\n0,4,0,60,0\n", `field "pod_gpus": "0" is not a positive GPU count`},
		{"job_id,num_gpus,submit_time,duration_s\n0,4,0,-1\n", `w.csv:2: field "duration_s": "-1" is not a positive number of seconds`},
		{"job_id,num_gpus,submit_time,duration_s,duration,model\n0,4,0,1,1,BERT\n", `field "duration_s": give duration (iterations) or duration_s (seconds), not both`},
		{"job_id,num_gpus,submit_time,duration_s,model\n0,4,0,1,alexnet\n", `field "model": unknown model`},
	}
	for _, tc := range cases {
		_, err := ReadTrace("w.csv", strings.NewReader(tc.in), DefaultModels())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("input %q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}
