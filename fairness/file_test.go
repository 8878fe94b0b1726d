package fairness

import (
	"os"
	"strings"
	"testing"
)

func FuzzParseAuctionFile(f *testing.F) {
	for _, name := range []string{"testdata/t4.yaml", "testdata/t5.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("cluster: 1x2\napps: [{name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 2, held: [0]}]\noffer: [1]\ngpu_scores: {A: [1, 2]}\n"))
	f.Add([]byte("cluster: 2x2\nmachines_per_rack: 1\nmetric: gavel\napps: [{name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 3, rack_factor: 0.5, spread_factor: 0.7}]\noffer: [0, 1, 2, 3]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		af, err := ParseAuctionFile("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if af.Input.Topo.NumGPUs() > 1024 {
			return
		}
		r, err := Run(af.Input, af.Opt)
		if err != nil {
			t.Fatalf("parsed file failed to run: %v", err)
		}
		checkResult(t, af.Input, r)
	})
}

func TestParseAuctionFileDefaults(t *testing.T) {
	af, err := ParseAuctionFile("x.yaml", []byte("cluster: 2x2\napps:\n  - {name: a, remaining_gpu_s: 10, total_gpu_s: 20, max_gpus: 2}\n  - {name: b, remaining_gpu_s: 10, total_gpu_s: 10, max_gpus: 2, held: [3]}\noffer: [0, 1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if af.Opt.Knob.F() != 0.8 || af.Opt.Payment != PayRandom || af.Opt.Leftover != NonbiddersFirst || af.Opt.Metric.Name() != "themis" {
		t.Errorf("defaults: %+v", af.Opt)
	}
	a := af.Input.Apps[0]
	if a.NAvg != 2 || a.Sens.Machine != 1 || a.Arrival != 0 || a.Noise != 1 {
		t.Errorf("app defaults: %+v", a)
	}
	// Gavel's isolated time of a's 10 done GPU-s at min(4/2, 2) = 2 GPUs.
	if a.IsoTime != 5 {
		t.Errorf("iso time %v, want 5", a.IsoTime)
	}
}
