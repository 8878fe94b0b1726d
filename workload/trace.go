package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/csvin"
)

// Trace is an ordered list of jobs (by submit time, then file order).
type Trace struct {
	Name string
	Jobs []Spec
	// HasTracked is true when the file carried a `tracked` column; its
	// untracked rows are then the background load and no generated extras
	// are added on top.
	HasTracked bool
	// HasApp is true when the file carried an `app` column.
	HasApp bool
}

// TrackedCount is the number of jobs that count in metrics.
func (t *Trace) TrackedCount() int {
	n := 0
	for i := range t.Jobs {
		if t.Jobs[i].Tracked {
			n++
		}
	}
	return n
}

// MaxGPUs is the largest gang in the trace.
func (t *Trace) MaxGPUs() (gpus int, job *Spec) {
	for i := range t.Jobs {
		if t.Jobs[i].GPUs > gpus {
			gpus, job = t.Jobs[i].GPUs, &t.Jobs[i]
		}
	}
	return gpus, job
}

// ReadTraceFile reads a PAL-format trace from disk.
func ReadTraceFile(path string, models *Models) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTrace(path, f, models)
}

// The PAL artifact's trace columns; `tracked` is our optional addition.
var traceColumns = []string{"job_id", "num_gpus", "submit_time", "duration", "model"}

// ReadTrace parses the PAL artifact trace format
// `job_id,num_gpus,submit_time,duration,model[,tracked][,app]`, where
// duration is an iteration count and app (optional, may be empty) groups
// jobs for finish-time fairness. Columns are found by header name, so their order
// is free and extra columns are ignored. Every error names the file, the
// 1-based line and the field; nothing is returned on error, so a caller
// never runs half a trace by accident.
func ReadTrace(name string, r io.Reader, models *Models) (*Trace, error) {
	t, err := csvin.Open(name, r, csvin.Ragged(), csvin.RowLines(), csvin.InlineNames(), csvin.StripBOMs(),
		csvin.EmptyMsg("empty file (want a header "+strings.Join(traceColumns, ",")+")"))
	if err != nil {
		return nil, err
	}
	// duration_s (seconds on a median GPU) may stand in for duration
	// (iterations); the model is then optional.
	durSCol := t.OptCol("duration_s")
	want := traceColumns
	if durSCol >= 0 {
		want = traceColumns[:3]
	}
	cols, err := t.Cols(want...)
	if err != nil {
		return nil, err
	}
	idCol, gpusCol, submitCol := cols[0], cols[1], cols[2]
	durCol, modelCol := -1, -1
	if durSCol < 0 {
		durCol, modelCol = cols[3], cols[4]
	} else {
		modelCol = t.OptCol("model")
		if c := t.OptCol("duration"); c >= 0 {
			return nil, &csvin.Error{File: name, Line: 1, Field: "duration_s", Msg: "give duration (iterations) or duration_s (seconds), not both"}
		}
	}
	vcCol, prioCol, podCol := t.OptCol("vc"), t.OptCol("priority"), t.OptCol("pod_gpus")
	trackedCol := t.OptCol("tracked")
	appCol := t.OptCol("app")
	tr := &Trace{Name: name, HasTracked: trackedCol >= 0, HasApp: appCol >= 0}
	appVC := map[string]struct {
		vc   string
		line int
	}{}
	seen := map[int]int{}
	for t.Next() {
		if t.Width() == 1 && t.Text(0) == "" {
			continue
		}
		// A longer row has shifted or extra values the header does not
		// name; reading it by column would silently drop them.
		if t.Width() > t.HeaderWidth() {
			return nil, fmt.Errorf("%s:%d: %d fields, but the header names %d (%s)", name, t.Line(), t.Width(), t.HeaderWidth(), strings.Join(headerNames(t), ","))
		}
		var s Spec
		s.Source, s.Line = name, t.Line()
		v, err := t.Field(idCol)
		if err != nil {
			return nil, err
		}
		if s.ID, err = strconv.Atoi(v); err != nil || s.ID < 0 {
			return nil, t.Errorf(idCol, "%q is not a non-negative integer", v)
		}
		if prev, dup := seen[s.ID]; dup {
			return nil, t.Errorf(idCol, "id %d already used on line %d", s.ID, prev)
		}
		seen[s.ID] = s.Line
		if v, err = t.Field(gpusCol); err != nil {
			return nil, err
		}
		if s.GPUs, err = strconv.Atoi(v); err != nil || s.GPUs <= 0 {
			return nil, t.Errorf(gpusCol, "%q is not a positive integer", v)
		}
		if v, err = t.Field(submitCol); err != nil {
			return nil, err
		}
		if s.Submit, err = parseFinite(v); err != nil || s.Submit < 0 {
			return nil, t.Errorf(submitCol, "%q is not a non-negative number of seconds", v)
		}
		seconds := 0.0
		if durSCol >= 0 {
			if v, err = t.Field(durSCol); err != nil {
				return nil, err
			}
			if seconds, err = parseFinite(v); err != nil || seconds <= 0 {
				return nil, t.Errorf(durSCol, "%q is not a positive number of seconds", v)
			}
		} else {
			if v, err = t.Field(durCol); err != nil {
				return nil, err
			}
			if s.Iterations, err = parseFinite(v); err != nil || s.Iterations <= 0 {
				return nil, t.Errorf(durCol, "%q is not a positive iteration count", v)
			}
		}
		if modelCol >= 0 {
			if v, err = t.Field(modelCol); err != nil {
				return nil, err
			}
			it, cl, ok := models.Lookup(v)
			if !ok {
				return nil, t.Errorf(modelCol, "unknown model %q (known: %s; add it to a --models table)", v, models.knownList())
			}
			s.Model, s.IterTime, s.Class = v, it, cl
		} else {
			// No model: one "iteration" is one second on a median GPU.
			s.Model, s.IterTime = NoModel, 1
		}
		if durSCol >= 0 {
			s.Iterations = seconds / s.IterTime
		}
		if vcCol >= 0 && t.Has(vcCol) {
			s.VC = t.Text(vcCol)
		}
		if prioCol >= 0 && t.Has(prioCol) && t.Text(prioCol) != "" {
			p, err := strconv.Atoi(t.Text(prioCol))
			if err != nil || p < -1 || p > 1000 {
				return nil, t.Errorf(prioCol, "%q is not a priority (-1 opportunistic, 0..1000 guaranteed)", t.Raw(prioCol))
			}
			s.VCPriority = p
		}
		if podCol >= 0 && t.Has(podCol) && t.Text(podCol) != "" {
			p, err := strconv.Atoi(t.Text(podCol))
			if err != nil || p <= 0 {
				return nil, t.Errorf(podCol, "%q is not a positive GPU count", t.Raw(podCol))
			}
			if s.GPUs%p != 0 {
				return nil, t.Errorf(podCol, "%d GPUs per pod do not divide the job's %d GPUs", p, s.GPUs)
			}
			s.PodGPUs = p
		}
		s.Tracked = true
		if tr.HasTracked {
			if !t.Has(trackedCol) {
				return nil, t.Errorf(trackedCol, "missing")
			}
			switch t.Text(trackedCol) {
			case "1", "true", "True":
			case "0", "false", "False":
				s.Tracked = false
			default:
				return nil, t.Errorf(trackedCol, "%q is not 1 or 0", t.Raw(trackedCol))
			}
		}
		if appCol >= 0 && t.Has(appCol) {
			s.App = strings.TrimSpace(t.Text(appCol))
			// An app is one tenant's: all its jobs share a VC.
			if first, ok := appVC[s.App]; s.App != "" && ok && first.vc != s.VC {
				return nil, t.Errorf(appCol, "app %q has jobs in VC %q (line %d) and VC %q; an app belongs to one VC", s.App, first.vc, first.line, s.VC)
			} else if s.App != "" && !ok {
				appVC[s.App] = struct {
					vc   string
					line int
				}{s.VC, s.Line}
			}
		}
		tr.Jobs = append(tr.Jobs, s)
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(tr.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs after the header", name)
	}
	if tr.TrackedCount() == 0 {
		return nil, fmt.Errorf("%s: every row has tracked=0; nothing would be measured", name)
	}
	sort.SliceStable(tr.Jobs, func(a, b int) bool { return tr.Jobs[a].Submit < tr.Jobs[b].Submit })
	return tr, nil
}

// NoModel is the model of a job read from a trace without a model column
// (one with duration_s): it runs one iteration per second on a median GPU.
const NoModel = "-"

// openCSV reads the header of a workload input and finds its required
// columns. Names must match exactly, rows may be short (each reader says
// which field is missing), a record is known by the line it starts on,
// and problems are worded the way these readers always have; empty is
// the message for a file without a header.
func openCSV(name string, r io.Reader, want []string, empty string) (*csvin.Table, []int, error) {
	t, err := csvin.Open(name, r, csvin.Ragged(), csvin.RowLines(), csvin.InlineNames(), csvin.StripBOMs(), csvin.EmptyMsg(empty))
	if err != nil {
		return nil, nil, err
	}
	cols, err := t.Cols(want...)
	if err != nil {
		return nil, nil, err
	}
	return t, cols, nil
}

func headerNames(t *csvin.Table) []string {
	out := make([]string, t.HeaderWidth())
	for i := range out {
		out[i] = t.FieldName(i)
	}
	return out
}

func parseFinite(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("not finite")
	}
	return f, nil
}

// WriteTrace writes jobs in the PAL format, with a tracked column when any
// job is untracked and an app column when any job has an app, so that
// ReadTrace reads back the same jobs.
func WriteTrace(w io.Writer, jobs []Spec) error {
	withTracked, withApp := false, false
	for i := range jobs {
		if !jobs[i].Tracked {
			withTracked = true
		}
		if jobs[i].App != "" {
			withApp = true
		}
	}
	cw := csv.NewWriter(w)
	h := append([]string(nil), traceColumns...)
	if withTracked {
		h = append(h, "tracked")
	}
	if withApp {
		h = append(h, "app")
	}
	if err := cw.Write(h); err != nil {
		return err
	}
	for i := range jobs {
		j := &jobs[i]
		rec := []string{strconv.Itoa(j.ID), strconv.Itoa(j.GPUs),
			strconv.FormatFloat(j.Submit, 'f', -1, 64), strconv.FormatFloat(j.Iterations, 'f', -1, 64), j.Model}
		if withTracked {
			t := "0"
			if j.Tracked {
				t = "1"
			}
			rec = append(rec, t)
		}
		if withApp {
			rec = append(rec, j.App)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
