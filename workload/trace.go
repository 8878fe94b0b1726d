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
)

// Trace is an ordered list of jobs (by submit time, then file order).
type Trace struct {
	Name string
	Jobs []Spec
	// HasTracked is true when the file carried a `tracked` column; its
	// untracked rows are then the background load and no generated extras
	// are added on top.
	HasTracked bool
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
// `job_id,num_gpus,submit_time,duration,model[,tracked]`, where duration
// is an iteration count. Columns are found by header name, so their order
// is free and extra columns are ignored. Every error names the file, the
// 1-based line and the field; nothing is returned on error, so a caller
// never runs half a trace by accident.
func ReadTrace(name string, r io.Reader, models *Models) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file (want a header %s)", name, strings.Join(traceColumns, ","))
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := col[h]; dup && h != "" {
			return nil, fmt.Errorf("%s:1: column %q appears twice", name, h)
		}
		col[h] = i
	}
	for _, c := range traceColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s:1: missing column %q (header must include %s)", name, c, strings.Join(traceColumns, ","))
		}
	}
	trackedCol, hasTracked := col["tracked"]
	t := &Trace{Name: name, HasTracked: hasTracked}
	seen := map[int]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		field := func(c string) (string, error) {
			i := col[c]
			if i >= len(rec) {
				return "", fmt.Errorf("%s:%d: field %q: missing (row has %d fields, header %d)", name, line, c, len(rec), len(header))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		var s Spec
		s.Source, s.Line = name, line
		v, err := field("job_id")
		if err != nil {
			return nil, err
		}
		if s.ID, err = strconv.Atoi(v); err != nil || s.ID < 0 {
			return nil, fmt.Errorf("%s:%d: field \"job_id\": %q is not a non-negative integer", name, line, v)
		}
		if prev, dup := seen[s.ID]; dup {
			return nil, fmt.Errorf("%s:%d: field \"job_id\": id %d already used on line %d", name, line, s.ID, prev)
		}
		seen[s.ID] = line
		if v, err = field("num_gpus"); err != nil {
			return nil, err
		}
		if s.GPUs, err = strconv.Atoi(v); err != nil || s.GPUs <= 0 {
			return nil, fmt.Errorf("%s:%d: field \"num_gpus\": %q is not a positive integer", name, line, v)
		}
		if v, err = field("submit_time"); err != nil {
			return nil, err
		}
		if s.Submit, err = parseFinite(v); err != nil || s.Submit < 0 {
			return nil, fmt.Errorf("%s:%d: field \"submit_time\": %q is not a non-negative number of seconds", name, line, v)
		}
		if v, err = field("duration"); err != nil {
			return nil, err
		}
		if s.Iterations, err = parseFinite(v); err != nil || s.Iterations <= 0 {
			return nil, fmt.Errorf("%s:%d: field \"duration\": %q is not a positive iteration count", name, line, v)
		}
		if v, err = field("model"); err != nil {
			return nil, err
		}
		it, cl, ok := models.Lookup(v)
		if !ok {
			return nil, fmt.Errorf("%s:%d: field \"model\": unknown model %q (known: %s; add it to a --models table)", name, line, v, models.knownList())
		}
		s.Model, s.IterTime, s.Class = v, it, cl
		s.Tracked = true
		if hasTracked {
			if trackedCol >= len(rec) {
				return nil, fmt.Errorf("%s:%d: field \"tracked\": missing", name, line)
			}
			switch strings.TrimSpace(rec[trackedCol]) {
			case "1", "true", "True":
			case "0", "false", "False":
				s.Tracked = false
			default:
				return nil, fmt.Errorf("%s:%d: field \"tracked\": %q is not 1 or 0", name, line, rec[trackedCol])
			}
		}
		t.Jobs = append(t.Jobs, s)
	}
	if len(t.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs after the header", name)
	}
	if t.TrackedCount() == 0 {
		return nil, fmt.Errorf("%s: every row has tracked=0; nothing would be measured", name)
	}
	sort.SliceStable(t.Jobs, func(a, b int) bool { return t.Jobs[a].Submit < t.Jobs[b].Submit })
	return t, nil
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

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d: column %d: %v", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// WriteTrace writes jobs in the PAL format, with a tracked column when any
// job is untracked, so that ReadTrace reads back the same jobs.
func WriteTrace(w io.Writer, jobs []Spec) error {
	withTracked := false
	for i := range jobs {
		if !jobs[i].Tracked {
			withTracked = true
		}
	}
	cw := csv.NewWriter(w)
	h := append([]string(nil), traceColumns...)
	if withTracked {
		h = append(h, "tracked")
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
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
