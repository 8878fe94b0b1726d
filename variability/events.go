package variability

import (
	"io"
	"slices"
)

// GPUEvent changes one GPU's true speed during a simulated run: from
// time T on, GPU runs class Class (every class when All) at Score (the
// same time-like scale as the tables: 1.2 = 20% slower than the median
// GPU). A throttled GPU, a replaced one, a node added with no profile.
type GPUEvent struct {
	T     float64
	GPU   int
	Class Class
	All   bool
	Score float64
	Line  int
}

// GPUEventsFormat documents the events CSV for help texts.
const GPUEventsFormat = `time_s,gpu,class,new_score: from time_s (seconds, >= 0; applied at the
first round boundary at or after it) GPU gpu runs class (A-D, or * for every
class) at new_score (> 0; 1.2 = 20% slower than the median GPU). Rows in any
order; '#' lines are comments.`

// ReadGPUEvents reads a GPU events CSV (GPUEventsFormat), sorted by time
// (stably: rows with the same time apply in file order). GPU ids are
// checked against the cluster by the caller, with Line.
func ReadGPUEvents(name string, r io.Reader) ([]GPUEvent, error) {
	t, err := openCSV(name, r, []string{"time_s", "gpu", "class", "new_score"})
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("time_s", "gpu", "class", "new_score")
	if err != nil {
		return nil, err
	}
	var out []GPUEvent
	for t.Next() {
		e := GPUEvent{Line: t.Line()}
		if e.T, err = t.Float(cols[0]); err != nil {
			return nil, err
		}
		if e.T < 0 {
			return nil, t.Errorf(cols[0], "%q must not be negative", t.Text(cols[0]))
		}
		if e.GPU, err = t.Int(cols[1]); err != nil {
			return nil, err
		}
		if s := t.Text(cols[2]); s == "*" {
			e.All = true
		} else if e.Class, err = ParseClass(s); err != nil {
			return nil, t.Errorf(cols[2], "%v (or * for every class)", err)
		}
		if e.Score, err = t.Positive(cols[3]); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	slices.SortStableFunc(out, func(a, b GPUEvent) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	return out, nil
}
