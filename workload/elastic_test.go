package workload

import (
	"bytes"
	"strings"
	"testing"
)

// The max_gpus column: elastic jobs read, written back, and every bad
// value refused with its file, line and field.
func TestMaxGPUsColumn(t *testing.T) {
	in := "job_id,num_gpus,submit_time,duration,model,app,max_gpus\n" +
		"0,1,0,10,vgg19,a,4\n" + // elastic 1..4
		"1,2,5,10,vgg19,a,\n" + // empty: rigid
		"2,2,6,1,BERT,,2\n" // equal to num_gpus: rigid
	tr, err := ReadTrace("e.csv", strings.NewReader(in), DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		max, most int
		elastic   bool
	}
	for i, w := range []want{{4, 4, true}, {0, 2, false}, {0, 2, false}} {
		j := &tr.Jobs[i]
		if j.MaxGPUs != w.max || j.Most() != w.most || j.Elastic() != w.elastic {
			t.Errorf("job %d: MaxGPUs %d Most %d Elastic %v, want %+v", i, j.MaxGPUs, j.Most(), j.Elastic(), w)
		}
	}
	if !tr.Jobs[0].Fits(1) || !tr.Jobs[0].Fits(3) || !tr.Jobs[0].Fits(4) || tr.Jobs[0].Fits(5) || tr.Jobs[0].Fits(0) {
		t.Error("elastic 1..4 fits wrong counts")
	}
	if !tr.Jobs[1].Fits(2) || tr.Jobs[1].Fits(1) || tr.Jobs[1].Fits(3) {
		t.Error("rigid 2 fits wrong counts")
	}
	var b bytes.Buffer
	if err := WriteTrace(&b, tr.Jobs); err != nil {
		t.Fatal(err)
	}
	const out = "job_id,num_gpus,submit_time,duration,model,app,max_gpus\n0,1,0,10,vgg19,a,4\n1,2,5,10,vgg19,a,2\n2,2,6,1,BERT,,2\n"
	if b.String() != out {
		t.Errorf("written:\n%s\nwant:\n%s", b.String(), out)
	}
	h := "job_id,num_gpus,submit_time,duration,model,max_gpus,pod_gpus\n"
	for _, c := range []struct{ row, want string }{
		{"0,2,0,1,BERT,1,", `e.csv:2: field "max_gpus": "1" is not a GPU count from num_gpus (2) to 65536`},
		{"0,2,0,1,BERT,2.5,", `e.csv:2: field "max_gpus": "2.5" is not a GPU count from num_gpus (2) to 65536`},
		{"0,2,0,1,BERT,-4,", `e.csv:2: field "max_gpus": "-4" is not a GPU count from num_gpus (2) to 65536`},
		{"0,2,0,1,BERT,99999999,", `e.csv:2: field "max_gpus": "99999999" is not a GPU count from num_gpus (2) to 65536`},
		{"0,2,0,1,BERT,4,2", `e.csv:2: field "max_gpus": an elastic job (max_gpus 4 > num_gpus 2) cannot have pod_gpus`},
	} {
		_, err := ReadTrace("e.csv", strings.NewReader(h+c.row+"\n"), DefaultModels())
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v, want %q", c.row, err, c.want)
		}
	}
}

// The generator's elastic mode (the macro preset): every job starts on 1
// GPU and may use up to Elastic, keeping the GPU-seconds of its Philly
// draw on at most Elastic GPUs: 1000 s on 8 GPUs becomes 4000 one-GPU
// seconds with Elastic 4, 1000 s on 2 GPUs 2000; Elastic 1 is rigid.
func TestGenerateThemisElastic(t *testing.T) {
	for _, c := range []struct {
		gpus, elastic int
		iters         float64
		max           int
	}{{8, 4, 4000, 4}, {2, 4, 2000, 4}, {8, 1, 1000, 0}, {8, 0, 1000, 0}} {
		jobs, err := GenerateThemis([]PhillyJob{{Seconds: 1000, GPUs: c.gpus}}, ThemisOptions{Apps: 3, Rate: 1, Seed: 1, MaxJobs: 3, ModelNames: []string{"synergy"}, Elastic: c.elastic})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			wantGPUs := 1
			if c.elastic == 0 {
				wantGPUs = c.gpus
			}
			if j.GPUs != wantGPUs || j.MaxGPUs != c.max || j.Iterations != c.iters {
				t.Fatalf("%+v: job GPUs %d..%d, %v iterations; want %d..%d, %v", c, j.GPUs, j.MaxGPUs, j.Iterations, wantGPUs, c.max, c.iters)
			}
		}
	}
	if _, err := GenerateThemis([]PhillyJob{{Seconds: 1, GPUs: 1}}, ThemisOptions{Apps: 1, Rate: 1, MaxJobs: 1, Elastic: -1}); err == nil {
		t.Error("negative --elastic accepted")
	}
}
