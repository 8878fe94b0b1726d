package workload

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestGenerateThemis(t *testing.T) {
	opt := ThemisOptions{Apps: 400, Rate: 2, Seed: 3, MaxJobs: 100, SingleShare: 0.1, Kill: 0.3}
	jobs, err := GenerateThemisEmbedded(opt)
	if err != nil {
		t.Fatal(err)
	}
	apps := map[string][]Spec{}
	var order []string
	for i, j := range jobs {
		if j.ID != i {
			t.Fatalf("job %d has id %d", i, j.ID)
		}
		if i > 0 && j.Submit < jobs[i-1].Submit {
			t.Fatalf("arrivals out of order at job %d", i)
		}
		if _, ok := apps[j.App]; !ok {
			order = append(order, j.App)
		}
		apps[j.App] = append(apps[j.App], j)
	}
	if len(apps) != 400 {
		t.Fatalf("%d apps, want 400", len(apps))
	}
	single := 0
	var gaps []float64
	for k, name := range order {
		a := apps[name]
		if len(a) < 1 || len(a) > 100 {
			t.Fatalf("%s has %d jobs", name, len(a))
		}
		if len(a) == 1 {
			single++
		}
		for _, j := range a {
			if j.Submit != a[0].Submit || j.GPUs != a[0].GPUs || j.Model != a[0].Model || j.Model == "synergy" {
				t.Fatalf("%s: jobs differ in arrival, size or model, or train synergy: %+v vs %+v", name, j, a[0])
			}
		}
		if k > 0 {
			gaps = append(gaps, a[0].Submit-apps[order[k-1]][0].Submit)
		}
	}
	// About 10% single-job apps: 40 expected, binomial sd 6.
	if single < 22 || single > 58 {
		t.Errorf("%d single-job apps of 400, want about 40", single)
	}
	mean := 0.0
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	// Poisson at 2 apps/h: mean gap 1800 s (sd of the mean ~ 90 s).
	if math.Abs(mean-1800) > 400 {
		t.Errorf("mean gap %v s, want about 1800", mean)
	}
	// Deterministic, and it round-trips through the trace format.
	again, _ := GenerateThemisEmbedded(opt)
	var a, b bytes.Buffer
	if err := WriteTrace(&a, jobs); err != nil {
		t.Fatal(err)
	}
	_ = WriteTrace(&b, again)
	if a.String() != b.String() {
		t.Fatal("same seed, different trace")
	}
	tr, err := ReadTrace("gen.csv", &a, DefaultModels())
	if err != nil {
		t.Fatal(err)
	}
	if !tr.HasApp || len(tr.Jobs) != len(jobs) || tr.Jobs[7].App != jobs[7].App {
		t.Errorf("round trip lost the app column")
	}
	for _, bad := range []ThemisOptions{{Apps: 0, Rate: 1, MaxJobs: 1}, {Apps: 1, Rate: -1, MaxJobs: 1}, {Apps: 1, Rate: 1, MaxJobs: 1, Kill: 2}} {
		if _, err := GenerateThemisEmbedded(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestModelSensitivity(t *testing.T) {
	m := DefaultModels()
	if s, r := m.Sensitivity("vgg19"); s != 0.8 || r != 0.7 {
		t.Errorf("vgg19 %v/%v, want 0.8/0.7", s, r)
	}
	if s, r := m.Sensitivity("synergy"); s != 1 || r != 1 {
		t.Errorf("synergy %v/%v, want 1/1", s, r)
	}
	if _, err := ParseModels("m.yaml", []byte("models:\n  - {name: x, iter_time_s: 1, class: A, spread_factor: 1.5}\n")); err == nil {
		t.Error("spread factor 1.5 accepted")
	}
	if _, err := ParseModels("m.yaml", []byte("models:\n  - {name: x, iter_time_s: 1, class: A, spread_factor: 0.5, rack_factor: 0.7}\n")); err == nil {
		t.Error("rack factor above spread factor accepted")
	}
}

func TestAppAcrossVCsRejected(t *testing.T) {
	in := "job_id,num_gpus,submit_time,duration,model,vc,app\n0,1,0,10,resnet50,a,x\n1,1,0,10,resnet50,b,x\n"
	_, err := ReadTrace("apps.csv", strings.NewReader(in), DefaultModels())
	if err == nil || !strings.Contains(err.Error(), "apps.csv:3") || !strings.Contains(err.Error(), `"app"`) || !strings.Contains(err.Error(), "one VC") {
		t.Fatalf("got %v", err)
	}
	ok := "job_id,num_gpus,submit_time,duration,model,vc,app\n0,1,0,10,resnet50,a,x\n1,1,0,10,resnet50,a,x\n2,1,0,10,resnet50,b,\n"
	if _, err := ReadTrace("apps.csv", strings.NewReader(ok), DefaultModels()); err != nil {
		t.Fatal(err)
	}
}
