package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/kube/forecast"
	"github.com/palsched/pal/workload"
)

// The table and the what-if beside it, on a hand-made forecast: two
// waiting gangs that arrived 100 s and 50 s before the forecast; now
// they start at +200 and +400 (waits 300 and 450, mean 375), the what-if
// starts them at +100 and never (mean wait 200 over the one started).
func TestPrintForecastWhatIf(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &kube.ForecastState{At: at, TimeScale: 1, SchedulerName: "fifo", PlacementName: "pal", Backfill: "none",
		Jobs:    []*workload.Job{workload.NewJob(workload.Spec{ID: 1, Submit: -100}), workload.NewJob(workload.Spec{ID: 2, Submit: -50})},
		Pending: []kube.ForecastGang{{Key: "ns/a", JobID: 1, Position: 1, GPUs: 8}, {Key: "ns/b", JobID: 2, Position: 2, GPUs: 2}}}
	rows := []kube.ForecastRow{{Gang: "ns/a", Position: 1, GPUs: 8, Start: 200, Finish: 700, Reason: "does not fit: needs 8 GPUs, 4 free"},
		{Gang: "ns/b", Position: 2, GPUs: 2, Start: 400, Finish: -1, Reason: "behind gang ns/a, which waits (strict order)"}}
	alt := *st
	alt.PlacementName = "packed-sticky"
	altRows := []kube.ForecastRow{{Gang: "ns/a", Start: 100, Finish: 600}, {Gang: "ns/b", Start: -1, Finish: -1}}
	var b bytes.Buffer
	if err := printForecast(&b, st, rows, []forecast.Spread{{P10: 100, P50: 200, P90: 300}, {P10: 400, P50: -1, P90: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := printWhatIf(&b, "placement=packed-sticky", st, rows, &alt, altRows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# forecast at 2026-01-01T00:00:00Z under fifo/pal, backfill none: 2 waiting gangs",
		"position gang gpus estimated_start estimated_finish estimated_start_p10 estimated_start_p50 estimated_start_p90 reason",
		"1 ns/a 8 2026-01-01T00:03:20Z 2026-01-01T00:11:40Z 2026-01-01T00:01:40Z 2026-01-01T00:03:20Z 2026-01-01T00:05:00Z does not fit: needs 8 GPUs, 4 free",
		"2 ns/b 2 2026-01-01T00:06:40Z - 2026-01-01T00:06:40Z - - behind gang ns/a",
		"# what-if placement=packed-sticky (fifo/packed-sticky, backfill none)",
		"started 2 of 2 1 of 2",
		"mean_wait_s 375.0 200.0",
		"mean_jct_s 800.0 700.0",
		"ns/a 2026-01-01T00:03:20Z 2026-01-01T00:01:40Z",
		"ns/b 2026-01-01T00:06:40Z -",
	} {
		var lines []string
		for _, l := range strings.Split(b.String(), "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
