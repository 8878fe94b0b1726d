package fairness

import (
	"bytes"
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
	// Bad input that must be refused, not truncated.
	f.Add([]byte("cluster: 1x2\napps: [{name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 2}]\noffer: [0.5]\n"))
	f.Add([]byte("cluster: 1x2\napps: [{name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 2, held: [1.99]}]\noffer: [0]\n"))
	f.Add([]byte("cluster: 1x2\nnow_s: 1e300\napps: [{name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 2}]\noffer: [0, 1]\n"))
	f.Add([]byte("cluster: 2x2\npayments: lease\nleftover: reauction\nvaluation: speedup\napps: [{name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 3}, {name: b, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 3}]\noffer: [0, 1, 2, 3]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		af, err := ParseAuctionFile("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") || len(err.Error()) > 2048 {
				t.Fatalf("error does not name the file, or is over 2 KiB: %.300v", err)
			}
			return
		}
		if bytes.Contains(data, []byte("0.5]")) && strings.Contains(string(data), "offer: [0.5]") {
			t.Fatalf("a fractional GPU id was accepted")
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
	if af.Opt.Knob.F() != 0.8 || af.Opt.Payment != PayRandom || af.Opt.Leftover != Reauction || af.Opt.Valuation != ValueSpeedup || af.Opt.Metric.Name() != "themis" {
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

// Bad input is refused with the file, the line and the field: fractional
// GPU ids (YAML would decode 0.5 and 1.99 into ints as 0 and 1), an auction
// time past MaxNow, and fractional counts.
func TestParseAuctionFileRefusesBadInput(t *testing.T) {
	app := "apps:\n  - {name: a, remaining_gpu_s: 1, total_gpu_s: 2, max_gpus: 2%s}\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"fractional offer", "cluster: 1x2\n" + strings.Replace(app, "%s", "", 1) + "offer: [0.5]\n", `x.yaml:4: field "offer[0]": want an integer, got "0.5"`},
		{"fractional held", "cluster: 1x2\n" + strings.Replace(app, "%s", ", held: [1.99]", 1) + "offer: [0]\n", `x.yaml:3: field "apps[0].held[0]": want an integer, got "1.99"`},
		{"integral float offer", "cluster: 1x2\n" + strings.Replace(app, "%s", "", 1) + "offer: [1.0]\n", `x.yaml:4: field "offer[0]": want an integer, got "1.0"`},
		{"fractional max_gpus", "cluster: 1x2\n" + strings.Replace(app, "max_gpus: 2%s", "max_gpus: 1.5", 1) + "offer: [0]\n", `x.yaml:3: field "apps[0].max_gpus": want an integer, got "1.5"`},
		{"now past MaxNow", "cluster: 1x2\nnow_s: 1e10\n" + strings.Replace(app, "%s", "", 1) + "offer: [0]\n", `x.yaml:2: field "now_s": 1e+10 s is past 4294967296 s`},
		{"now NaN", "cluster: 1x2\nnow_s: .nan\n" + strings.Replace(app, "%s", "", 1) + "offer: [0]\n", `x.yaml:2: field "now_s": want a finite number`},
		{"fractional seed", "cluster: 1x2\nseed: 1.5\n" + strings.Replace(app, "%s", "", 1) + "offer: [0]\n", `x.yaml:2: field "seed": want a non-negative integer`},
		{"unknown payment", "cluster: 1x2\npayments: maybe\n" + strings.Replace(app, "%s", "", 1) + "offer: [0]\n", `x.yaml:2: field "payments": unknown payment form "maybe"`},
	} {
		_, err := ParseAuctionFile("x.yaml", []byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.name, err, tc.want)
		}
	}
	// At MaxNow itself the file is fine; Run refuses a later time too.
	ok := "cluster: 1x2\nnow_s: 4294967296\n" + strings.Replace(app, "%s", "", 1) + "offer: [0, 1]\n"
	af, err := ParseAuctionFile("x.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	af.Input.Now = MaxNow * 2
	if _, err := Run(af.Input, af.Opt); err == nil {
		t.Error("Run accepted a time past MaxNow")
	}
}
