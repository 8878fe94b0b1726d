package workload

import (
	"fmt"
	"io"
	"os"
)

// ConcatOptions say how ConcatTraceFiles joins traces.
type ConcatOptions struct {
	// Gap is the seconds (>= 0) from the last arrival of the files so far
	// to the next file's time 0.
	Gap float64
	// Overlay keeps every file's own submit times and merges the files
	// by them (Gap is then unused).
	Overlay bool
}

// ConcatStats describe a joined trace.
type ConcatStats struct {
	Jobs, Tracked int
	LastArrival   float64 // seconds
}

// ConcatTraceFiles joins PAL-format trace files into one trace, written
// to w. By default the files follow one another: the first keeps its
// submit times and each next one's time 0 is put at the last arrival so
// far plus Gap, so a file keeps its own timeline, idle start included.
// With Overlay the files keep their times and are merged. Either way a
// job's place is its submit time, then its file's place in paths, then
// its row in the file (ReadTrace's order), and ids are renumbered 0..N-1
// in that order: the inputs' ids may repeat across files.
//
// The output has every optional column any input's header has (a row of
// a file without tracked is tracked=1; apps and VCs keep their names, so
// one name in two files is one app or VC). A file of duration_s rows
// without models joins only files of that kind. A file whose rows are
// all tracked=0 is accepted: it is a part of a workload.
//
// A file is read whole and checked before any of its rows is written,
// with ReadTrace's errors (file, line, field); the caller should buffer w
// if a failure must leave nothing behind. Memory is one file's rows at a
// time, and every file's with Overlay.
func ConcatTraceFiles(w io.Writer, paths []string, models *Models, opt ConcatOptions) (ConcatStats, error) {
	var st ConcatStats
	cols, err := concatColumns(paths)
	if err != nil {
		return st, err
	}
	tw, err := NewTraceWriter(w, cols)
	if err != nil {
		return st, err
	}
	emit := func(j Spec, submit float64) error {
		j.ID, j.Submit = st.Jobs, submit
		if err := tw.Write(&j); err != nil {
			return err
		}
		st.Jobs++
		if j.Tracked {
			st.Tracked++
		}
		st.LastArrival = submit
		return nil
	}
	if !opt.Overlay {
		for i, p := range paths {
			tr, err := readTraceFile(p, models, false)
			if err != nil {
				return st, err
			}
			offset := 0.0
			if i > 0 {
				offset = st.LastArrival + opt.Gap
			}
			for k := range tr.Jobs {
				if err := emit(tr.Jobs[k], tr.Jobs[k].Submit+offset); err != nil {
					return st, err
				}
			}
		}
		return st, tw.Flush()
	}
	traces := make([]*Trace, len(paths))
	for i, p := range paths {
		if traces[i], err = readTraceFile(p, models, false); err != nil {
			return st, err
		}
	}
	next := make([]int, len(traces))
	for {
		// The earliest next row; on a tie, the first file's.
		f := -1
		for i, tr := range traces {
			if next[i] < len(tr.Jobs) && (f < 0 || tr.Jobs[next[i]].Submit < traces[f].Jobs[next[f]].Submit) {
				f = i
			}
		}
		if f < 0 {
			return st, tw.Flush()
		}
		j := traces[f].Jobs[next[f]]
		next[f]++
		if err := emit(j, j.Submit); err != nil {
			return st, err
		}
	}
}

// concatColumns reads the files' headers: the output has every optional
// column one of them has.
func concatColumns(paths []string) (TraceColumns, error) {
	var out TraceColumns
	first := ""
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return out, err
		}
		t, err := openTrace(p, f)
		f.Close()
		if err != nil {
			return out, err
		}
		c := columnsOf(t)
		if i == 0 {
			out.Seconds, first = c.Seconds, p
		} else if c.Seconds != out.Seconds {
			kind := func(seconds bool) string {
				if seconds {
					return "duration_s and no model column"
				}
				return "models"
			}
			return out, fmt.Errorf("%s has %s but %s has %s: join traces of one kind", p, kind(c.Seconds), first, kind(out.Seconds))
		}
		out.Tracked = out.Tracked || c.Tracked
		out.App = out.App || c.App
		out.VC = out.VC || c.VC
		out.Priority = out.Priority || c.Priority
		out.PodGPUs = out.PodGPUs || c.PodGPUs
		out.PinnedCell = out.PinnedCell || c.PinnedCell
		out.LeafCellType = out.LeafCellType || c.LeafCellType
		out.MaxGPUs = out.MaxGPUs || c.MaxGPUs
	}
	return out, nil
}
