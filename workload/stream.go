package workload

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"time"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/variability"
)

// traceFile is what a streamed trace keeps of its rows: where they are,
// what a driver needs to know of them all before the first round, and
// the file's size and time, so that a file changed between two readings
// is an error rather than a different run.
type traceFile struct {
	path    string
	models  *Models
	rows    int
	tracked int
	most    Spec    // the first row with the largest gang (MaxGPUs)
	pods    bool    // some row has pods (HasPods)
	latest  float64 // LatestEnd
	// What Bounds reports: the largest Most, and whether some row's
	// length or end was negative or NaN.
	mostAll int
	odd     bool
	size    int64
	mod     time.Time
	// kept holds the rows as the first reading parsed them (see
	// keptRow), for a file of at most keepRowsBytes whose every row a
	// keptRow holds; nil otherwise. Rows then hands them out instead of
	// parsing the file again.
	kept   []keptRow
	source string   // every kept row's Source
	names  []string // the kept rows' models
	// fsys, for a built-in trace (StreamTraceFS), is the file system
	// it lies in; its rows are all kept, and it cannot change.
	fsys fs.FS
	// builtin is a compiled built-in trace's (BuiltinTrace): the same,
	// with no file system to read.
	builtin bool
}

// keepRowsBytes is the largest trace file whose rows StreamTraceFile
// keeps. Reading the rows again parses the whole file a second time
// (about 11 ms for the 20,000-job Synergy trace, 0.8 MB), while a kept
// row costs 48 bytes: a 4 MiB file holds at most about 200,000 rows of
// 20 bytes, so the rows kept stay under 10 MB, and a trace of a million
// jobs (about 42 MB of file) is still streamed in kilobytes. Whole
// Specs (about 240 bytes) cost more than the parse they save: on this
// kind of virtual machine the first touch of a page is dear.
const keepRowsBytes = 4 << 20

// keptRow is a row of the common kind (no elastic, app, tenancy or pod
// columns) in 48 bytes: what Spec it stands for is rebuilt field by
// field (spec), and a row that does not come back equal is not kept.
type keptRow struct {
	id                       int
	submit, iterations, iter float64
	gpus, line, class        int32
	model                    uint8
	tracked, seconds         bool
}

// keep appends s as a keptRow, or reports false when a keptRow cannot
// hold it.
func (tf *traceFile) keep(s *Spec) bool {
	if len(tf.kept) == 0 {
		tf.source = s.Source
	}
	m := slices.Index(tf.names, s.Model)
	if m < 0 {
		if len(tf.names) > math.MaxUint8 {
			return false
		}
		m = len(tf.names)
		tf.names = append(tf.names, s.Model)
	}
	k := keptRow{id: s.ID, submit: s.Submit, iterations: s.Iterations, iter: s.IterTime,
		gpus: int32(s.GPUs), line: int32(s.Line), class: int32(s.Class), model: uint8(m),
		tracked: s.Tracked, seconds: s.Seconds}
	if tf.spec(&k) != *s {
		return false
	}
	tf.kept = append(tf.kept, k)
	return true
}

// spec is the Spec a kept row stands for.
func (tf *traceFile) spec(k *keptRow) Spec {
	return Spec{ID: k.id, GPUs: int(k.gpus), Submit: k.submit, Iterations: k.iterations, IterTime: k.iter,
		Class: variability.Class(k.class), Model: tf.names[k.model], Tracked: k.tracked,
		Source: tf.source, Line: int(k.line), Seconds: k.seconds}
}

// StreamTraceFile is ReadTraceFile for a driver that takes the rows as
// its clock reaches them: it reads the whole file once, with every check
// ReadTraceFile makes and the same errors, but keeps none of its rows, so
// a trace of a million jobs costs kilobytes rather than a fifth of a
// gigabyte; Rows reads them again, in order. A file of at most
// keepRowsBytes whose rows are all of the common kind keeps them in 48
// bytes each (keptRow), and Rows hands those out instead of parsing the
// file again. A file whose rows are not in
// submit order would need them all to sort, so it is read whole, as by
// ReadTraceFile (Streamed says which).
func StreamTraceFile(path string, models *Models) (*Trace, error) {
	p, f, st, err := firstReading(func() (fs.File, error) { return os.Open(path) }, path, models)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tf := &traceFile{path: path, models: models, size: st.Size(), mod: st.ModTime()}
	sorted, err := tf.scan(p, st.Size() <= keepRowsBytes)
	if err != nil {
		return nil, err
	}
	if !sorted {
		return readTraceFile(path, models, true, csvin.Quiet())
	}
	return &Trace{Name: path, HasTracked: p.hasTracked, HasApp: p.hasApp, file: tf}, nil
}

// StreamTraceFS is StreamTraceFile for file p of fsys (a built-in trace),
// named by its base name as ReadTraceFS names it: its rows are kept
// (keptRow) and Rows hands them out. A trace whose rows a keptRow cannot
// all hold, or that is not in submit order, is read whole (ReadTraceFS).
// A Sia-Philly run's trace of 3,160 rows then holds 152 KB of rows
// rather than 607 KB of Specs: 110 fewer fresh pages, on a virtual
// machine where the first touch of one costs 15-25 us.
func StreamTraceFS(fsys fs.FS, p string, models *Models) (*Trace, error) {
	name := path.Base(p)
	pr, f, st, err := firstReading(func() (fs.File, error) { return fsys.Open(p) }, name, models)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tf := &traceFile{path: name, models: models, size: st.Size(), fsys: fsys}
	sorted, err := tf.scan(pr, true)
	if err != nil {
		return nil, err
	}
	if !sorted || tf.kept == nil {
		return ReadTraceFS(fsys, p, models)
	}
	return &Trace{Name: name, HasTracked: pr.hasTracked, HasApp: pr.hasApp, file: tf}, nil
}

// firstReading opens a trace to stream (open, named name) and starts
// reading it: the file, to close once scanned, its size and time, and a
// parser whose message about a duplicate id reads the trace again
// through open (the streamed reader keeps no lines).
func firstReading(open func() (fs.File, error), name string, models *Models) (*rowParser, fs.File, fs.FileInfo, error) {
	f, err := open()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := f.Stat()
	if err == nil {
		var p *rowParser
		if p, err = newRowParser(name, f, models); err == nil {
			p.lineOf = func(id int) int { return firstLineOf(open, name, models, id) }
			return p, f, st, nil
		}
	}
	f.Close()
	return nil, nil, nil, err
}

// scan is a streamed trace's first reading: every row through p, with
// every check, noting what the drivers need of them all, and keeping
// them (keptRow) if keep and a keptRow holds each; it reports whether
// the rows were in submit order.
func (tf *traceFile) scan(p *rowParser, keep bool) (sorted bool, err error) {
	if keep {
		// A row is at least about 20 bytes; capacity never written is
		// never touched, so sizing by the smallest row costs nothing.
		tf.kept = make([]keptRow, 0, tf.size/20+1)
	}
	sorted, last := true, 0.0
	for {
		var s Spec
		ok, err := p.next(&s)
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
		if tf.rows > 0 && s.Submit < last {
			sorted = false
		}
		last = s.Submit
		if s.Tracked {
			tf.tracked++
		}
		if s.GPUs > tf.most.GPUs {
			tf.most = s
		}
		tf.pods = tf.pods || s.PodGPUs > 0
		e := s.Submit + s.IdealRuntime()
		if e > tf.latest {
			tf.latest = e
		}
		if !(e == e) || !(s.IdealRuntime() >= 0) {
			tf.odd = true
		}
		tf.mostAll = max(tf.mostAll, s.Most())
		tf.rows++
		if keep && !tf.keep(&s) {
			keep, tf.kept, tf.names = false, nil, nil
		}
	}
	if tf.rows == 0 {
		return false, fmt.Errorf("%s: no jobs after the header", tf.path)
	}
	if tf.tracked == 0 {
		return false, fmt.Errorf("%s: every row has tracked=0; nothing would be measured", tf.path)
	}
	return sorted, nil
}

// firstLineOf is the line of the first row with id of the trace open
// opens (named name), read again for the message about a duplicate id (0
// if none).
func firstLineOf(open func() (fs.File, error), name string, models *Models, id int) int {
	f, err := open()
	if err != nil {
		return 0
	}
	defer f.Close()
	p, err := newRowParser(name, f, models, csvin.Quiet())
	if err != nil {
		return 0
	}
	// Every row before the duplicate passed its checks, so none of them
	// is a duplicate and this never asks again.
	p.lineOf = func(int) int { return 0 }
	for {
		var s Spec
		if ok, err := p.next(&s); !ok || err != nil {
			return 0
		}
		if s.ID == id {
			return s.Line
		}
	}
}

// Bounds is what a streamed trace's first reading saw of all its rows:
// the most GPUs any can use (Spec.Most) and LatestEnd, the latest
// Submit + IdealRuntime, which bounds every row's Submit too. ok is false
// for a trace held whole (reading its rows costs no more) and when some
// row's IdealRuntime or end was negative or NaN, which LatestEnd cannot
// bound. A driver whose checks of every row these bound then needs no
// pass over the file of its own to find that none fails.
func (t *Trace) Bounds() (most int, latestEnd float64, ok bool) {
	if t.file == nil || t.file.odd {
		return 0, 0, false
	}
	return t.file.mostAll, t.file.latest, true
}

// Streamed reports whether the trace's rows are on disk (StreamTraceFile):
// Jobs is then empty and Rows or Each reads them.
func (t *Trace) Streamed() bool { return t.file != nil }

// Len is the number of rows.
func (t *Trace) Len() int {
	if t.file != nil {
		return t.file.rows
	}
	return len(t.Jobs)
}

// HasPods reports whether some row has pods (pod_gpus).
func (t *Trace) HasPods() bool {
	if t.file != nil {
		return t.file.pods
	}
	for i := range t.Jobs {
		if t.Jobs[i].PodGPUs > 0 {
			return true
		}
	}
	return false
}

// Whole is a streamed trace read into memory (the trace itself when it
// is held whole already), for a use that needs its rows all at once.
func (t *Trace) Whole() (*Trace, error) {
	if t.file == nil {
		return t, nil
	}
	w := &Trace{Name: t.Name, HasTracked: t.HasTracked, HasApp: t.HasApp, Jobs: make([]Spec, 0, t.file.rows)}
	err := t.Each(func(s *Spec) error {
		w.Jobs = append(w.Jobs, *s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Each calls fn on every row in order (submit time, then file order) and
// stops at its first error, which it returns.
func (t *Trace) Each(fn func(*Spec) error) error {
	if t.file == nil {
		for i := range t.Jobs {
			if err := fn(&t.Jobs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	r, err := t.Rows()
	if err != nil {
		return err
	}
	defer r.Close()
	var s Spec
	for {
		ok, err := r.Next(&s)
		if err != nil || !ok {
			return err
		}
		if err := fn(&s); err != nil {
			return err
		}
	}
}

// RowReader reads a streamed trace's rows again, one at a time: from
// its file, or from the rows its first reading kept.
type RowReader struct {
	f    *os.File
	p    *rowParser
	tf   *traceFile
	n    int
	last float64
}

// errChanged is the error of a file changed since it was first read.
var errChanged = errors.New("changed since it was first read; a run reads its trace file more than once, so it must stay as it was")

// Rows opens a streamed trace's file again to read its rows in order.
func (t *Trace) Rows() (*RowReader, error) {
	tf := t.file
	if tf == nil {
		return nil, fmt.Errorf("%s: not a streamed trace", t.Name)
	}
	if tf.fsys != nil || tf.builtin {
		return &RowReader{tf: tf}, nil // a built-in trace's rows are all kept
	}
	f, err := os.Open(tf.path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || st.Size() != tf.size || !st.ModTime().Equal(tf.mod) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", tf.path, errChanged)
	}
	if tf.kept != nil {
		// The rows the first reading checked are the run's: the file
		// was opened only to tell a change (as above) or a removal.
		f.Close()
		return &RowReader{tf: tf}, nil
	}
	p, err := newRowParser(tf.path, f, tf.models, csvin.Quiet())
	if err != nil {
		f.Close()
		return nil, err
	}
	p.lineOf = func(id int) int {
		return firstLineOf(func() (fs.File, error) { return os.Open(tf.path) }, tf.path, tf.models, id)
	}
	return &RowReader{f: f, p: p, tf: tf}, nil
}

// Next reads the next row into s; false after the last.
func (r *RowReader) Next(s *Spec) (bool, error) {
	if r.p == nil {
		if r.n == len(r.tf.kept) {
			return false, nil
		}
		*s = r.tf.spec(&r.tf.kept[r.n])
		r.n++
		return true, nil
	}
	*s = Spec{}
	ok, err := r.p.next(s)
	switch {
	case err != nil:
		return false, err
	case !ok && r.n != r.tf.rows, ok && (r.n >= r.tf.rows || (r.n > 0 && s.Submit < r.last)):
		return false, fmt.Errorf("%s: %w", r.tf.path, errChanged)
	case !ok:
		return false, nil
	}
	r.n++
	r.last = s.Submit
	return true, nil
}

// Close closes the file (none for kept rows).
func (r *RowReader) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
