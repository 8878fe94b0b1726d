package variability

import (
	"strings"
	"testing"
)

// Scores, event scores and hints beyond 1000x the median GPU (or under
// 1/1000 of it) are refused at their line and field; at the bounds they
// are read.
func TestScoreBounds(t *testing.T) {
	scores := func(v string) string {
		return "GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n0,0,1,1,1,1\n1,0,1," + v + ",1,1\n"
	}
	read := map[string]func(string) error{
		"scores": func(in string) error { _, err := ReadGPUScores("s.csv", strings.NewReader(in)); return err },
		"events": func(in string) error { _, err := ReadGPUEvents("s.csv", strings.NewReader(in)); return err },
		"hints":  func(in string) error { _, err := ReadGPUHints("s.csv", strings.NewReader(in)); return err },
	}
	for _, tc := range []struct {
		kind, in, want string // want "" for accepted
	}{
		{"scores", scores("1e308"), `s.csv:3: field "PerfVar_classB": "1e308" is more than 1000 times the median GPU's 1`},
		{"scores", scores("1e-300"), `s.csv:3: field "PerfVar_classB": "1e-300" is less than 1/1000 of the median GPU's 1`},
		{"scores", scores("1000"), ""},
		{"scores", scores("0.001"), ""},
		{"events", "time_s,gpu,class,new_score\n0,1,A,1.2\n60,1,*,1e6\n", `s.csv:3: field "new_score": "1e6" is more than 1000 times`},
		{"events", "time_s,gpu,class,new_score\n0,1,A,1000\n", ""},
		{"hints", "time_s,gpu,slowdown\n0,1,1001\n", `s.csv:2: field "slowdown": "1001" is more than 1000 times`},
		{"hints", "time_s,gpu,slowdown\n0,1,1\n", ""},
	} {
		err := read[tc.kind](tc.in)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s %q: %v", tc.kind, tc.in, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %q: err %v, want %s...", tc.kind, tc.in, err, tc.want)
		}
	}
}
