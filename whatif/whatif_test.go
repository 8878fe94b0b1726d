package whatif

import (
	"math"
	"strings"
	"testing"
)

// Worked out by hand: four waiting jobs, arrivals 0, 10, 20, 30. a1
// starts at 100 and ends at 300 (wait 100, JCT 300); a2 starts at 60 and
// never ends within the forecast (wait 50); b starts at 20 and ends at
// 120 (wait 0, JCT 100); the fourth has no VC and never starts. Started
// 3 of 4, mean wait 150/3 = 50, mean JCT 400/2 = 200; VC a 75 (2 of 2),
// VC b 0 (1 of 1).
func TestSummarize(t *testing.T) {
	s := Summarize([]Job{
		{VC: "a", Arrival: 0, Start: 100, Finish: 300},
		{VC: "a", Arrival: 10, Start: 60, Finish: -1},
		{VC: "b", Arrival: 20, Start: 20, Finish: 120},
		{Arrival: 30, Start: -1, Finish: -1},
	})
	if s.Waiting != 4 || s.Started != 3 || s.Ended != 2 || s.MeanWait != 50 || s.MeanJCT != 200 {
		t.Errorf("summary %+v, want 4 waiting, 3 started, 2 ended, mean wait 50, JCT 200", s)
	}
	if len(s.VCs) != 2 || s.VCs[0] != (VCWait{VC: "a", Waiting: 2, Started: 2, MeanWait: 75}) || s.VCs[1] != (VCWait{VC: "b", Waiting: 1, Started: 1, MeanWait: 0}) {
		t.Errorf("per VC %+v, want a 75 (2 of 2), b 0 (1 of 1)", s.VCs)
	}
	none := Summarize([]Job{{VC: "c", Arrival: 5, Start: -1, Finish: -1}})
	if !math.IsNaN(none.MeanWait) || !math.IsNaN(none.MeanJCT) || !math.IsNaN(none.VCs[0].MeanWait) {
		t.Errorf("nothing starts: %+v, want NaN means", none)
	}
	var b strings.Builder
	perVC, err := Write(&b, "waiting_jobs", s, none)
	if err != nil || !perVC {
		t.Fatal(err, perVC)
	}
	want := "waiting_jobs\tnow\twhat-if\nstarted\t3 of 4\t0 of 1\nmean_wait_s\t50.0\t-\nmean_jct_s\t200.0\t-\n" +
		"mean_wait_s VC a\t75.0 (2 of 2)\t-\nmean_wait_s VC b\t0.0 (1 of 1)\t-\nmean_wait_s VC c\t-\t- (0 of 1)\n"
	if b.String() != want {
		t.Errorf("table\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	if perVC, _ := Write(&b, "waiting_gangs", Summarize(nil), Summarize(nil)); perVC {
		t.Error("per-VC lines without VCs")
	}
}
