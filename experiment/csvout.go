package experiment

import (
	"encoding/csv"
	"os"
	"strconv"
	"strings"
)

// WriteJobsCSV writes one row per job of every run (pal sim --jobs-out,
// pal-kube replay --jobs-out; docs/reference/outputs.md has the columns).
func WriteJobsCSV(path string, runs []*RunResult) error {
	return WriteCSV(path, []string{"placement", "job_id", "origin", "model", "class", "gpus", "tracked", "arrival_s", "first_start_s", "completion_s", "jct_s", "run_s", "wait_s", "preemptions", "migrations", "lost_gpu_s",
		"vc", "priority", "nodes", "gpu_ids", "move_gain_s", "min_move_margin_s"},
		func(cw *csv.Writer) {
			for _, r := range runs {
				for _, j := range r.JobRecords {
					cw.Write([]string{r.Placement, strconv.Itoa(j.ID), j.Origin, j.Model, j.Class, strconv.Itoa(j.GPUs), strconv.FormatBool(j.Tracked),
						f2(j.Arrival), f2(j.FirstStart), f2(j.Completion), f2(j.JCT), f2(j.Run), f2(j.Wait), strconv.Itoa(j.Preemptions), strconv.Itoa(j.Migrations), f2(j.LostGPUSeconds),
						j.VC, strconv.Itoa(j.Priority), intsJoin(j.Nodes), intsJoin(j.GPUIDs),
						ifMoved(j.Migrations, j.MoveGain), ifMoved(j.Migrations, j.MinMoveMargin)})
				}
			}
		})
}

// ifMoved renders a move figure, empty when there was no migration.
func ifMoved(migrations int, x float64) string {
	if migrations == 0 {
		return ""
	}
	return f2(x)
}

// intsJoin renders a list as "0;1;2" (a CSV field without quoting).
func intsJoin(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ";")
}

// WriteRoundsCSV writes one row per round of every run (pal sim
// --rounds-out).
func WriteRoundsCSV(path string, runs []*RunResult) error {
	return WriteCSV(path, []string{"placement", "t_s", "gpus_in_use", "running", "queued", "migrations", "move_gain_s", "min_move_margin_s"}, func(cw *csv.Writer) {
		for _, r := range runs {
			for _, s := range r.RoundStats {
				cw.Write([]string{r.Placement, f0(s.T), strconv.Itoa(s.GPUsInUse), strconv.Itoa(s.Running), strconv.Itoa(s.Queued),
					strconv.Itoa(s.Migrations), ifMoved(s.Migrations, s.MoveGain), ifMoved(s.Migrations, s.MinMoveMargin)})
			}
		}
	})
}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f0(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// WriteCSV writes header and then what rows writes to path, and reports
// a write error of any row, which csv.Writer only keeps until Flush.
func WriteCSV(path string, header []string, rows func(*csv.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write(header)
	rows(cw)
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
