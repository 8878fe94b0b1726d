package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name -> content into a fresh directory and returns
// the paths of names, in order.
func writeFiles(t *testing.T, files map[string]string, names ...string) []string {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
	}
	return paths
}

func TestConcatTraceFiles(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model\n"
	files := map[string]string{
		// Rows out of submit order, ids that repeat across files.
		"a.csv": h + "5,1,10,100,BERT\n3,2,0,50,GPT2\n",
		"b.csv": h + "0,4,0,7,vgg19\n1,1,20.5,8,resnet50\n",
		// Two rows at 10 s: they keep their row order.
		"c.csv": h + "1,3,10,1,DCGAN\n0,3,0,2,PointNet\n2,3,10,5,GPT2\n",
		// A leading idle time of 100 s, kept by the default.
		"late.csv": h + "0,1,100,3,BERT\n",
		// Columns in another order, a tracked column, one background row.
		"t.csv": "model,submit_time,duration,num_gpus,job_id,tracked\nDCGAN,0,9,8,7,0\nBERT,5,2,1,8,1\n",
		// Every row background: accepted as a part of a workload.
		"bg.csv": "job_id,num_gpus,submit_time,duration,model,tracked\n0,2,1,4,GPT2,0\n",
		// Tenancy columns and apps are kept.
		"vc.csv": "job_id,num_gpus,submit_time,duration,model,vc,priority,pod_gpus,app\n0,8,0,1,BERT,A,5,4,x\n1,1,3,1,BERT,B,-1,,\n",
		// Seconds without models.
		"s1.csv": "job_id,num_gpus,submit_time,duration_s\n0,1,0,3600\n1,2,60,0.5\n",
		"s2.csv": "job_id,num_gpus,submit_time,duration_s,vc\n9,1,0,10,A\n",
	}
	cases := []struct {
		name  string
		files []string
		opt   ConcatOptions
		want  string
		stats ConcatStats
	}{
		{"one after another", []string{"a.csv", "b.csv"}, ConcatOptions{},
			h + "0,2,0,50,GPT2\n1,1,10,100,BERT\n2,4,10,7,vgg19\n3,1,30.5,8,resnet50\n",
			ConcatStats{Jobs: 4, Tracked: 4, LastArrival: 30.5}},
		{"with a gap", []string{"a.csv", "b.csv"}, ConcatOptions{Gap: 5},
			h + "0,2,0,50,GPT2\n1,1,10,100,BERT\n2,4,15,7,vgg19\n3,1,35.5,8,resnet50\n",
			ConcatStats{Jobs: 4, Tracked: 4, LastArrival: 35.5}},
		{"file order", []string{"b.csv", "a.csv"}, ConcatOptions{},
			h + "0,4,0,7,vgg19\n1,1,20.5,8,resnet50\n2,2,20.5,50,GPT2\n3,1,30.5,100,BERT\n",
			ConcatStats{Jobs: 4, Tracked: 4, LastArrival: 30.5}},
		{"leading idle time kept", []string{"a.csv", "late.csv", "late.csv"}, ConcatOptions{},
			h + "0,2,0,50,GPT2\n1,1,10,100,BERT\n2,1,110,3,BERT\n3,1,210,3,BERT\n",
			ConcatStats{Jobs: 4, Tracked: 4, LastArrival: 210}},
		{"overlay: ties by file, then row", []string{"a.csv", "b.csv", "c.csv"}, ConcatOptions{Overlay: true},
			h + "0,2,0,50,GPT2\n1,4,0,7,vgg19\n2,3,0,2,PointNet\n3,1,10,100,BERT\n4,3,10,1,DCGAN\n5,3,10,5,GPT2\n6,1,20.5,8,resnet50\n",
			ConcatStats{Jobs: 7, Tracked: 7, LastArrival: 20.5}},
		{"overlay, files reversed", []string{"c.csv", "b.csv", "a.csv"}, ConcatOptions{Overlay: true},
			h + "0,3,0,2,PointNet\n1,4,0,7,vgg19\n2,2,0,50,GPT2\n3,3,10,1,DCGAN\n4,3,10,5,GPT2\n5,1,10,100,BERT\n6,1,20.5,8,resnet50\n",
			ConcatStats{Jobs: 7, Tracked: 7, LastArrival: 20.5}},
		{"tracked column kept", []string{"a.csv", "t.csv", "bg.csv"}, ConcatOptions{},
			h[:len(h)-1] + ",tracked\n0,2,0,50,GPT2,1\n1,1,10,100,BERT,1\n2,8,10,9,DCGAN,0\n3,1,15,2,BERT,1\n4,2,16,4,GPT2,0\n",
			ConcatStats{Jobs: 5, Tracked: 3, LastArrival: 16}},
		{"tenancy columns kept", []string{"vc.csv", "a.csv"}, ConcatOptions{Gap: 1},
			h[:len(h)-1] + ",app,vc,priority,pod_gpus\n0,8,0,1,BERT,x,A,5,4\n1,1,3,1,BERT,,B,-1,\n2,2,4,50,GPT2,,,0,\n3,1,14,100,BERT,,,0,\n",
			ConcatStats{Jobs: 4, Tracked: 4, LastArrival: 14}},
		{"seconds without models", []string{"s1.csv", "s2.csv"}, ConcatOptions{},
			"job_id,num_gpus,submit_time,duration_s,vc\n0,1,0,3600,\n1,2,60,0.5,\n2,1,60,10,A\n",
			ConcatStats{Jobs: 3, Tracked: 3, LastArrival: 60}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			st, err := ConcatTraceFiles(&buf, writeFiles(t, files, tc.files...), DefaultModels(), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", buf.String(), tc.want)
			}
			if st != tc.stats {
				t.Errorf("stats %+v, want %+v", st, tc.stats)
			}
			// The output is a trace like any other.
			if _, err := ReadTraceRows("out.csv", &buf, DefaultModels()); err != nil {
				t.Errorf("output does not read back: %v", err)
			}
		})
	}
}

func TestConcatTraceFilesErrors(t *testing.T) {
	const h = "job_id,num_gpus,submit_time,duration,model\n"
	files := map[string]string{
		"good.csv":  h + "0,1,0,1,BERT\n",
		"bad.csv":   h + "0,1,0,1,BERT\n1,1,5,1,BERT\n2,x,9,1,BERT\n",
		"model.csv": h + "0,1,0,1,alexnet\n",
		"secs.csv":  "job_id,num_gpus,submit_time,duration_s\n0,1,0,60\n",
		"empty.csv": h,
	}
	cases := []struct {
		files []string
		want  string
	}{
		{[]string{"good.csv", "bad.csv"}, `bad.csv:4: field "num_gpus": "x" is not a positive integer`},
		{[]string{"good.csv", "model.csv"}, `model.csv:2: field "model": unknown model "alexnet"`},
		{[]string{"good.csv", "secs.csv"}, `secs.csv has duration_s and no model column but `},
		{[]string{"empty.csv"}, `empty.csv: no jobs after the header`},
		{[]string{"good.csv", "missing.csv"}, `missing.csv: no such file`},
	}
	for _, tc := range cases {
		for _, overlay := range []bool{false, true} {
			var buf bytes.Buffer
			_, err := ConcatTraceFiles(&buf, writeFiles(t, files, tc.files...), DefaultModels(), ConcatOptions{Overlay: overlay})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v (overlay %v): got %v, want %q", tc.files, overlay, err, tc.want)
			}
		}
	}
}
