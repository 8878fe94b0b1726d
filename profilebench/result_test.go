package profilebench

import (
	"math"
	"strings"
	"testing"
)

func TestParseResultLine(t *testing.T) {
	nan := math.NaN()
	good := []struct {
		line string
		want Result
	}{
		{"PAL_RESULT iter_time_s=0.1234", Result{IterTime: 0.1234, SMClock: nan, Power: nan, Temp: nan}},
		{"PAL_RESULT iter_time_s=0.1234 sm_clock_mhz=1410 power_w=250 temp_c=60", Result{IterTime: 0.1234, SMClock: 1410, Power: 250, Temp: 60}},
		{"PAL_RESULT  temp_c=-5\titer_time_s=2e-3 gpu_uuid=GPU-5a1c\r", Result{IterTime: 0.002, SMClock: nan, Power: nan, Temp: -5, UUID: "GPU-5a1c"}},
		{"PAL_RESULT iter_time_s=1 power_w=0", Result{IterTime: 1, SMClock: nan, Power: 0, Temp: nan}},
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for _, tc := range good {
		got, err := ParseResultLine(tc.line)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if !same(got.IterTime, tc.want.IterTime) || !same(got.SMClock, tc.want.SMClock) || !same(got.Power, tc.want.Power) ||
			!same(got.Temp, tc.want.Temp) || got.UUID != tc.want.UUID {
			t.Errorf("%q: got %+v, want %+v", tc.line, got, tc.want)
		}
	}
	bad := []struct{ line, want string }{
		{"", "does not start with PAL_RESULT"},
		{"RESULT iter_time_s=1", "does not start with PAL_RESULT"},
		{"PAL_RESULT", "field iter_time_s: missing"},
		{"PAL_RESULT sm_clock_mhz=1400", "field iter_time_s: missing"},
		{"PAL_RESULT iter_time_s=0", "field iter_time_s=\"0\": want seconds per iteration > 0"},
		{"PAL_RESULT iter_time_s=-1", "want seconds per iteration > 0"},
		{"PAL_RESULT iter_time_s=fast", "field iter_time_s=\"fast\": want a finite number"},
		{"PAL_RESULT iter_time_s=NaN", "want a finite number"},
		{"PAL_RESULT iter_time_s=+Inf", "want a finite number"},
		{"PAL_RESULT iter_time_s=1e999", "want a finite number"},
		{"PAL_RESULT iter_time_s=0.1 iter_time_s=0.2", "field iter_time_s: given twice"},
		{"PAL_RESULT iter_time_s=0.1 temp=60", "field temp: unknown key"},
		{"PAL_RESULT iter_time_s=0.1 power_w=-3", "field power_w=\"-3\": must not be negative"},
		{"PAL_RESULT iter_time_s=0.1 sm_clock_mhz=-1", "must not be negative"},
		{"PAL_RESULT iter_time_s", "field \"iter_time_s\": want KEY=VALUE"},
		{"PAL_RESULT =3 iter_time_s=1", "want KEY=VALUE"},
		{"PAL_RESULT iter_time_s=1 gpu_uuid=", "field gpu_uuid=\"\""},
		{"PAL_RESULT iter_time_s=1 gpu_uuid=GPU-1,GPU-2", "want the GPU's UUID"},
		{"PAL_RESULT iter_time_s=1 " + strings.Repeat("x", 1100), "more than 1024"},
	}
	for _, tc := range bad {
		_, err := ParseResultLine(tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.line, err, tc.want)
		}
	}
}

func TestFindResult(t *testing.T) {
	r, line, found, err := FindResult("warming up\nstep 10\n  PAL_RESULT iter_time_s=0.5\nbye\n")
	if err != nil || !found || line != 3 || r.IterTime != 0.5 {
		t.Fatalf("got %+v line %d found %v err %v, want 0.5 at line 3", r, line, found, err)
	}
	if _, _, found, err := FindResult("PAL_RESULTS are below\nnothing\n"); found || err != nil {
		t.Errorf("a line merely starting with the word: found %v err %v", found, err)
	}
	_, line, _, err = FindResult("PAL_RESULT iter_time_s=1\nPAL_RESULT iter_time_s=2\n")
	if err == nil || line != 2 || !strings.Contains(err.Error(), "a second PAL_RESULT line (the first is line 1)") {
		t.Errorf("two lines: line %d err %v", line, err)
	}
	_, line, found, err = FindResult("x\nPAL_RESULT iter_time_s=abc\n")
	if err == nil || line != 2 || !found {
		t.Errorf("bad line: line %d found %v err %v", line, found, err)
	}
}

// FuzzParseResultLine: any input parses or fails with an error, never a
// panic; what parses has a positive finite iteration time.
func FuzzParseResultLine(f *testing.F) {
	for _, s := range []string{"PAL_RESULT iter_time_s=0.1234 sm_clock_mhz=1410 power_w=250 temp_c=60",
		"PAL_RESULT iter_time_s=1 gpu_uuid=GPU-x", "PAL_RESULT", "PAL_RESULT iter_time_s=1 iter_time_s=1", "PAL_RESULT a=b=c", "\x00"} {
		f.Add(s)
	}
	// A line past the limit, and one just under it whose one field is a
	// key of invalid bytes (which %q writes four characters each).
	f.Add("PAL_RESULT iter_time_s=" + strings.Repeat("\x01", 8000))
	f.Add("PAL_RESULT " + strings.Repeat("\xff", 1000) + "=1")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResultLine(s)
		// A pod's log is another program's output: whatever it holds,
		// the error about it stays a line.
		if err != nil && len(err.Error()) > 1024 {
			t.Fatalf("error of %d bytes: %.300s", len(err.Error()), err)
		}
		if err == nil && !(r.IterTime > 0 && !math.IsInf(r.IterTime, 0)) {
			t.Fatalf("%q parsed to iter_time_s %v", s, r.IterTime)
		}
		if err == nil && (r.Power < 0 || r.SMClock < 0) {
			t.Fatalf("%q parsed to negative power or clock: %+v", s, r)
		}
		if _, _, _, err := FindResult(s); err != nil && len(err.Error()) > 1024 {
			t.Fatalf("FindResult: error of %d bytes: %.300s", len(err.Error()), err)
		}
	})
}
