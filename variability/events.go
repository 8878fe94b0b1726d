package variability

import (
	"cmp"
	"io"
	"slices"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/internal/quote"
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
class) at new_score (1/1000..1000; 1.2 = 20% slower than the median GPU). Rows in any
order; '#' lines are comments.`

// ReadGPUEvents reads a GPU events CSV (GPUEventsFormat), sorted by time
// (stably: rows with the same time apply in file order). GPU ids are
// checked against the cluster by the caller, with Line.
func ReadGPUEvents(name string, r io.Reader) ([]GPUEvent, error) {
	return readTimed(name, r, []string{"class", "new_score"}, func(t *csvin.Table, cols []int, e *GPUEvent) (err error) {
		if s := t.Text(cols[0]); s == "*" {
			e.All = true
		} else if e.Class, err = ParseClass(s); err != nil {
			return t.Errorf(cols[0], "%v (or * for every class)", err)
		}
		e.Score, err = score(t, cols[1])
		return err
	}, func(e *GPUEvent) (*float64, *int, *int) { return &e.T, &e.GPU, &e.Line })
}

// GPUHint is what GPU telemetry says of one GPU from time T on: it runs
// about Slowdown times slower than its profile for every class (1: not
// slowed). It goes to the learner (variability.Learner.Hint) as a prior,
// not to the GPU's true speed: a simulated DCGM exporter.
type GPUHint struct {
	T        float64
	GPU      int
	Slowdown float64
	Line     int
}

// GPUHintsFormat documents the hints CSV for help texts.
const GPUHintsFormat = `time_s,gpu,slowdown: from time_s (seconds, >= 0; at the first round
boundary at or after it) telemetry says GPU gpu runs slowdown (1/1000..1000) times
slower than its profile for every class (1: no longer slowed), as DCGM's
clock ratio would. Rows in any order; '#' lines are comments.`

// ReadGPUHints reads a GPU hints CSV (GPUHintsFormat), sorted by time
// (stably). GPU ids are checked against the cluster by the caller.
func ReadGPUHints(name string, r io.Reader) ([]GPUHint, error) {
	return readTimed(name, r, []string{"slowdown"}, func(t *csvin.Table, cols []int, h *GPUHint) (err error) {
		h.Slowdown, err = score(t, cols[0])
		return err
	}, func(h *GPUHint) (*float64, *int, *int) { return &h.T, &h.GPU, &h.Line })
}

// readTimed reads a CSV of rows that each apply to one GPU from a time
// on: the columns time_s and gpu, then rest, which row parses into a T;
// fields gives a T's time, GPU and line. The rows come back sorted by
// time, stably (rows of one time apply in file order).
func readTimed[T any](name string, r io.Reader, rest []string, row func(*csvin.Table, []int, *T) error, fields func(*T) (*float64, *int, *int)) ([]T, error) {
	names := append([]string{"time_s", "gpu"}, rest...)
	t, err := openCSV(name, r, names)
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols(names...)
	if err != nil {
		return nil, err
	}
	var out []T
	for t.Next() {
		var v T
		at, gpu, line := fields(&v)
		*line = t.Line()
		if *at, err = t.Float(cols[0]); err != nil {
			return nil, err
		}
		if *at < 0 {
			return nil, t.Errorf(cols[0], "%s must not be negative", quote.Value(t.Text(cols[0])))
		}
		if *gpu, err = t.Int(cols[1]); err != nil {
			return nil, err
		}
		if err := row(t, cols[2:], &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	slices.SortStableFunc(out, func(a, b T) int {
		ta, _, _ := fields(&a)
		tb, _, _ := fields(&b)
		return cmp.Compare(*ta, *tb)
	})
	return out, nil
}
