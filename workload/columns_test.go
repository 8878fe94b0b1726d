package workload

import (
	"strings"
	"testing"
)

// Every workload reader refuses a column its format does not have,
// naming the file, the column and the known columns.
func TestUnknownColumns(t *testing.T) {
	const hint = "; --allow-extra-columns ignores unknown columns)"
	vcs := []PhillyVC{{Name: "a", Nodes: 1}}
	cases := []struct {
		name, in, want string
		read           func(string) error
	}{
		{"trace", "job_id,num_gpus,submit_time,duration_s,pod_gpu\n0,4,0,60,2\n",
			`t.csv:1: unknown column "pod_gpu" (known columns: job_id,num_gpus,submit_time,duration,model,duration_s,tracked,app,vc,priority,pod_gpus,pinned_cell,leaf_cell_type,batch_size,max_gpus` + hint,
			func(in string) error {
				_, err := ReadTrace("t.csv", strings.NewReader(in), DefaultModels())
				return err
			}},
		{"trace rows", "job_id,num_gpus,submit_time,duration_s,tracked,Tracked\n0,4,0,60,0,0\n",
			`t.csv:1: unknown column "Tracked" (known columns: job_id,num_gpus,submit_time,duration,model,duration_s,tracked,app,vc,priority,pod_gpus,pinned_cell,leaf_cell_type,batch_size,max_gpus` + hint,
			func(in string) error {
				_, err := ReadTraceRows("t.csv", strings.NewReader(in), DefaultModels())
				return err
			}},
		{"philly jobs", "timestamp,duration,num_gpus,gpus\n0,60,1,1\n",
			`t.csv:1: unknown column "gpus" (known columns: timestamp,duration,num_gpus,gpu_time,cluster` + hint,
			func(in string) error { _, err := ReadPhillyJobs("t.csv", strings.NewReader(in)); return err }},
		{"philly VC trace", "timestamp,duration,num_gpus,cluster,user\n0,60,1,a,u\n",
			`t.csv:1: unknown column "user" (known columns: timestamp,duration,num_gpus,gpu_time,cluster` + hint,
			func(in string) error { _, err := ReadPhillyVCTrace("t.csv", strings.NewReader(in), vcs, 4); return err }},
		{"philly VCs", "vc,node num,gpus\na,1,8\n",
			`t.csv:1: unknown column "gpus" (known columns: vc,node num` + hint,
			func(in string) error { _, err := ReadPhillyVCs("t.csv", strings.NewReader(in)); return err }},
	}
	for _, c := range cases {
		if err := c.read(c.in); err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
	// Sia's testbed traces carry batch_size: known, not used.
	if _, err := ReadTrace("t.csv", strings.NewReader("job_id,num_gpus,submit_time,duration,model,batch_size\n0,1,0,10,resnet50,32\n"), DefaultModels()); err != nil {
		t.Errorf("batch_size: %v", err)
	}
}
