package workload

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/internal/quote"
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
	// file, when set, keeps the rows on disk and Jobs is empty: the trace
	// was streamed (StreamTraceFile) and is read again row by row (Rows).
	file *traceFile
}

// TrackedCount is the number of jobs that count in metrics.
func (t *Trace) TrackedCount() int {
	if t.file != nil {
		return t.file.tracked
	}
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
	if t.file != nil {
		return t.file.most.GPUs, &t.file.most
	}
	for i := range t.Jobs {
		if t.Jobs[i].GPUs > gpus {
			gpus, job = t.Jobs[i].GPUs, &t.Jobs[i]
		}
	}
	return gpus, job
}

// LatestEnd is the largest Submit + IdealRuntime of the trace's rows
// (rows whose sum is NaN left out; 0 for none), when the last job could
// end if it ran at once on median GPUs. A streamed trace has it from its
// first reading, so a check of the rows' ends needs no pass of its own
// unless one is that late.
func (t *Trace) LatestEnd() float64 {
	if t.file != nil {
		return t.file.latest
	}
	latest := 0.0
	for i := range t.Jobs {
		if e := t.Jobs[i].Submit + t.Jobs[i].IdealRuntime(); e > latest {
			latest = e
		}
	}
	return latest
}

// ReadTraceFile reads a PAL-format trace from disk.
func ReadTraceFile(path string, models *Models) (*Trace, error) {
	return readTraceFile(path, models, true)
}

// readTraceFile counts the file's lines first, so that the jobs are
// allocated once: grown by append, a million rows leave half a gigabyte
// of outgrown copies for the garbage collector.
func readTraceFile(path string, models *Models, needTracked bool, more ...csvin.Option) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := maxRows(f)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return readTrace(path, f, models, rows, needTracked, more...)
}

// minRowBytes is the shortest row a trace can have ("0,1,0,1" and a
// newline: job_id, num_gpus, submit_time, duration_s).
const minRowBytes = 8

// maxRows bounds the rows of r by its lines, and by its size over the
// shortest row, so that a file of empty lines never reserves more than a
// few bytes of jobs per byte of file.
func maxRows(r io.Reader) (int, error) {
	buf := make([]byte, 16<<10)
	lines, size := 0, 0
	for {
		k, err := r.Read(buf)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		size += k
		if err == io.EOF {
			return min(lines+1, size/minRowBytes+1), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// The PAL artifact's trace columns; `tracked` is our optional addition.
var traceColumns = []string{"job_id", "num_gpus", "submit_time", "duration", "model"}

// TraceKnown is every column a trace may have: the artifact's, the
// optional ones this package reads, and batch_size, which Sia's testbed
// traces carry and the simulator does not use. Any other column is an
// error (csvin.Known), so a misspelt optional column is not silently lost.
var TraceKnown = append(append([]string(nil), traceColumns...),
	"duration_s", "tracked", "app", "vc", "priority", "pod_gpus", "pinned_cell", "leaf_cell_type", "batch_size", "max_gpus")

// ReadTrace parses the PAL artifact trace format
// `job_id,num_gpus,submit_time,duration,model[,tracked][,app]`, where
// duration is an iteration count and app (optional, may be empty) groups
// jobs for finish-time fairness; max_gpus (optional, may be empty) makes a
// job elastic from num_gpus to max_gpus GPUs. Columns are found by header name, so their order
// is free; a column not in TraceKnown is an error (csvin.Known). Every error names the file, the
// 1-based line and the field; nothing is returned on error, so a caller
// never runs half a trace by accident.
func ReadTrace(name string, r io.Reader, models *Models) (*Trace, error) {
	return readTrace(name, r, models, 0, true)
}

// openTrace reads a trace's header.
func openTrace(name string, r io.Reader, more ...csvin.Option) (*csvin.Table, error) {
	return csvin.Open(name, r, append([]csvin.Option{csvin.Ragged(), csvin.RowLines(), csvin.InlineNames(), csvin.StripBOMs(), csvin.Known(TraceKnown...),
		csvin.EmptyMsg("empty file (want a header " + strings.Join(traceColumns, ",") + ")")}, more...)...)
}

// ReadTraceFS is ReadTrace for file p of fsys (a built-in trace), named
// by its base name. The file is read where it lies, not copied out
// first: the copy of a Sia-Philly run's 100 KB trace was 26 fresh pages,
// of some 950 page faults that are most of that run's time on a virtual
// machine. Its lines are counted first, so the jobs are allocated once.
func ReadTraceFS(fsys fs.FS, p string, models *Models) (*Trace, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := path.Base(p)
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		return ReadTraceBytes(name, b, models)
	}
	rows, err := maxRows(rs)
	if err != nil {
		return nil, err
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return readTrace(name, rs, models, rows, true)
}

// ReadTraceBytes is ReadTrace for a trace already in memory (a built-in
// one): its newlines bound the rows, so the jobs are allocated once. A
// built-in trace of a few thousand rows grown by append costs a whole
// Sia-Philly run's simulation again in copies, fresh pages and a
// collection.
func ReadTraceBytes(name string, b []byte, models *Models) (*Trace, error) {
	return readTrace(name, bytes.NewReader(b), models, bytes.Count(b, []byte{'\n'})+1, true)
}

// ReadTraceRows is ReadTrace for a part of a workload: it also accepts a
// trace whose rows are all tracked=0 (background load to concatenate or
// overlay with others).
func ReadTraceRows(name string, r io.Reader, models *Models) (*Trace, error) {
	return readTrace(name, r, models, 0, false)
}

// readTrace reads a trace of about rows rows (a capacity hint; 0: unknown).
func readTrace(name string, r io.Reader, models *Models, rows int, needTracked bool, more ...csvin.Option) (*Trace, error) {
	tr, err := parseTrace(name, r, models, rows, more...)
	if err != nil {
		return nil, err
	}
	if needTracked && tr.TrackedCount() == 0 {
		return nil, fmt.Errorf("%s: every row has tracked=0; nothing would be measured", name)
	}
	return tr, nil
}

func parseTrace(name string, r io.Reader, models *Models, rows int, more ...csvin.Option) (*Trace, error) {
	p, err := newRowParser(name, r, models, more...)
	if err != nil {
		return nil, err
	}
	tr := &Trace{Name: name, HasTracked: p.hasTracked, HasApp: p.hasApp, Jobs: make([]Spec, 0, rows)}
	p.lineOf = func(id int) int { return lineOf(tr.Jobs, id) }
	for {
		var s Spec
		ok, err := p.next(&s)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		tr.Jobs = append(tr.Jobs, s)
	}
	if len(tr.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs after the header", name)
	}
	sort.SliceStable(tr.Jobs, func(a, b int) bool { return tr.Jobs[a].Submit < tr.Jobs[b].Submit })
	return tr, nil
}

// rowParser reads a trace one row at a time, with every check of
// ReadTrace, keeping nothing of the rows it has read but their ids (a
// bit each, see idSet), the models and cells they named and each app's
// VC: a trace read whole and one streamed give the same rows and the
// same errors.
type rowParser struct {
	t                                  *csvin.Table
	name                               string
	models                             *Models
	idCol, gpusCol, submitCol          int
	durCol, durSCol, modelCol          int
	vcCol, prioCol, podCol, trackedCol int
	appCol, pinCol, leafCol, maxCol    int
	hasTracked, hasApp                 bool
	appVC                              map[string]appFirst
	seen                               idSet
	// names interns model and cell names: a field is a slice of its
	// row's string, so keeping it would keep the whole row.
	names map[string]string
	// lineOf finds the first line of an id already read, for the
	// message about a duplicate.
	lineOf func(id int) int
}

// appFirst is where an app was first seen, and in which VC.
type appFirst struct {
	vc   string
	line int
}

func newRowParser(name string, r io.Reader, models *Models, more ...csvin.Option) (*rowParser, error) {
	t, err := openTrace(name, r, more...)
	if err != nil {
		return nil, err
	}
	p := &rowParser{t: t, name: name, models: models, durCol: -1, modelCol: -1, appVC: map[string]appFirst{}, names: map[string]string{}}
	// duration_s (seconds on a median GPU) may stand in for duration
	// (iterations); the model is then optional.
	p.durSCol = t.OptCol("duration_s")
	want := traceColumns
	if p.durSCol >= 0 {
		want = traceColumns[:3]
	}
	cols, err := t.Cols(want...)
	if err != nil {
		return nil, err
	}
	p.idCol, p.gpusCol, p.submitCol = cols[0], cols[1], cols[2]
	if p.durSCol < 0 {
		p.durCol, p.modelCol = cols[3], cols[4]
	} else {
		p.modelCol = t.OptCol("model")
		if c := t.OptCol("duration"); c >= 0 {
			return nil, &csvin.Error{File: name, Line: 1, Field: "duration_s", Msg: "give duration (iterations) or duration_s (seconds), not both"}
		}
	}
	p.vcCol, p.prioCol, p.podCol = t.OptCol("vc"), t.OptCol("priority"), t.OptCol("pod_gpus")
	p.trackedCol = t.OptCol("tracked")
	p.appCol = t.OptCol("app")
	p.pinCol, p.leafCol = t.OptCol("pinned_cell"), t.OptCol("leaf_cell_type")
	p.maxCol = t.OptCol("max_gpus")
	p.hasTracked, p.hasApp = p.trackedCol >= 0, p.appCol >= 0
	return p, nil
}

// next reads the next row into s; false at the end of the file.
func (p *rowParser) next(s *Spec) (bool, error) {
	t := p.t
	for t.Next() {
		if t.Width() == 1 && t.Text(0) == "" {
			continue
		}
		return true, p.row(s)
	}
	return false, t.Err()
}

// row reads the current row into s.
func (p *rowParser) row(s *Spec) error {
	t, name, models := p.t, p.name, p.models
	idCol, gpusCol, submitCol, durSCol, durCol, modelCol := p.idCol, p.gpusCol, p.submitCol, p.durSCol, p.durCol, p.modelCol
	vcCol, prioCol, podCol, maxCol, pinCol, leafCol, trackedCol, appCol := p.vcCol, p.prioCol, p.podCol, p.maxCol, p.pinCol, p.leafCol, p.trackedCol, p.appCol
	// A longer row has shifted or extra values the header does not
	// name; reading it by column would silently drop them.
	if t.Width() > t.HeaderWidth() {
		return fmt.Errorf("%s:%d: %d fields, but the header names %d (%s)", name, t.Line(), t.Width(), t.HeaderWidth(), t.HeaderList())
	}
	s.Source, s.Line = name, t.Line()
	v, err := t.Field(idCol)
	if err != nil {
		return err
	}
	if s.ID, err = strconv.Atoi(v); err != nil || s.ID < 0 {
		return t.Errorf(idCol, "%s is not a non-negative integer", quote.Value(v))
	}
	if p.seen.add(s.ID) {
		return t.Errorf(idCol, "id %d already used on line %d", s.ID, p.lineOf(s.ID))
	}
	if v, err = t.Field(gpusCol); err != nil {
		return err
	}
	if s.GPUs, err = strconv.Atoi(v); err != nil || s.GPUs <= 0 {
		return t.Errorf(gpusCol, "%s is not a positive integer", quote.Value(v))
	}
	if v, err = t.Field(submitCol); err != nil {
		return err
	}
	if s.Submit, err = parseFinite(v); err != nil || s.Submit < 0 {
		return t.Errorf(submitCol, "%s is not a non-negative number of seconds", quote.Value(v))
	}
	seconds := 0.0
	if durSCol >= 0 {
		if v, err = t.Field(durSCol); err != nil {
			return err
		}
		if seconds, err = parseFinite(v); err != nil || seconds <= 0 {
			return t.Errorf(durSCol, "%s is not a positive number of seconds", quote.Value(v))
		}
	} else {
		if v, err = t.Field(durCol); err != nil {
			return err
		}
		if s.Iterations, err = parseFinite(v); err != nil || s.Iterations <= 0 {
			return t.Errorf(durCol, "%s is not a positive iteration count", quote.Value(v))
		}
	}
	if modelCol >= 0 {
		if v, err = t.Field(modelCol); err != nil {
			return err
		}
		it, cl, ok := models.Lookup(v)
		if !ok {
			return t.Errorf(modelCol, "unknown model %s (known: %s; add it to a --models table)", quote.Value(v), models.knownList())
		}
		m, ok := p.names[v]
		if !ok {
			m = strings.Clone(v)
			p.names[m] = m
		}
		s.Model, s.IterTime, s.Class = m, it, cl
	} else {
		// No model: one "iteration" is one second on a median GPU.
		s.Model, s.IterTime = NoModel, 1
	}
	if durSCol >= 0 {
		s.Iterations = seconds / s.IterTime
		s.Seconds = true
	}
	if vcCol >= 0 && t.Has(vcCol) {
		s.VC = t.Text(vcCol)
	}
	if prioCol >= 0 && t.Has(prioCol) && t.Text(prioCol) != "" {
		p, err := strconv.Atoi(t.Text(prioCol))
		if err != nil || p < -1 || p > 1000 {
			return t.Errorf(prioCol, "%s is not a priority (-1 opportunistic, 0..1000 guaranteed)", quote.Value(t.Raw(prioCol)))
		}
		s.VCPriority = p
	}
	if podCol >= 0 && t.Has(podCol) && t.Text(podCol) != "" {
		p, err := strconv.Atoi(t.Text(podCol))
		if err != nil || p <= 0 {
			return t.Errorf(podCol, "%s is not a positive GPU count", quote.Value(t.Raw(podCol)))
		}
		if s.GPUs%p != 0 {
			return t.Errorf(podCol, "%d GPUs per pod do not divide the job's %d GPUs", p, s.GPUs)
		}
		s.PodGPUs = p
	}
	if maxCol >= 0 && t.Has(maxCol) && t.Text(maxCol) != "" {
		m, err := strconv.Atoi(t.Text(maxCol))
		if err != nil || m < s.GPUs || m > MaxElasticGPUs {
			return t.Errorf(maxCol, "%s is not a GPU count from num_gpus (%d) to %d", quote.Value(t.Raw(maxCol)), s.GPUs, MaxElasticGPUs)
		}
		if s.PodGPUs > 0 && m != s.GPUs {
			return t.Errorf(maxCol, "an elastic job (max_gpus %d > num_gpus %d) cannot have pod_gpus", m, s.GPUs)
		}
		if m > s.GPUs {
			s.MaxGPUs = m
		}
	}
	if pinCol >= 0 && t.Has(pinCol) {
		s.PinnedCell = intern(p.names, t.Text(pinCol))
	}
	if leafCol >= 0 && t.Has(leafCol) {
		s.LeafCellType = intern(p.names, t.Text(leafCol))
	}
	s.Tracked = true
	if p.hasTracked {
		if !t.Has(trackedCol) {
			return t.Errorf(trackedCol, "missing")
		}
		switch t.Text(trackedCol) {
		case "1", "true", "True":
		case "0", "false", "False":
			s.Tracked = false
		default:
			return t.Errorf(trackedCol, "%s is not 1 or 0", quote.Value(t.Raw(trackedCol)))
		}
	}
	if appCol >= 0 && t.Has(appCol) {
		s.App = strings.TrimSpace(t.Text(appCol))
		// An app is one tenant's: all its jobs share a VC.
		if first, ok := p.appVC[s.App]; s.App != "" && ok && first.vc != s.VC {
			return t.Errorf(appCol, "app %s has jobs in VC %s (line %d) and VC %s; an app belongs to one VC", quote.Value(s.App), quote.Value(first.vc), first.line, quote.Value(s.VC))
		} else if s.App != "" && !ok {
			p.appVC[s.App] = appFirst{s.VC, s.Line}
		}
	}
	return nil
}

// MaxElasticGPUs bounds max_gpus, so that a typo cannot ask a bid for
// millions of GPU counts.
const MaxElasticGPUs = 1 << 16

// intern returns a copy of v shared by every equal field, so that a
// kept field does not keep its whole row.
func intern(names map[string]string, v string) string {
	if v == "" {
		return ""
	}
	m, ok := names[v]
	if !ok {
		m = strings.Clone(v)
		names[m] = m
	}
	return m
}

// idSet holds the job ids read so far. Ids are mostly dense from 0, so
// a bit each (up to maxDenseID) costs a million-row trace 125 kB where a
// map of ids would cost tens of megabytes; larger ids go to a map.
type idSet struct {
	bits []uint64
	big  map[int]struct{}
}

const maxDenseID = 1 << 26

// add records id and reports whether it was already there.
func (s *idSet) add(id int) (dup bool) {
	if id >= maxDenseID {
		if _, dup = s.big[id]; !dup {
			if s.big == nil {
				s.big = map[int]struct{}{}
			}
			s.big[id] = struct{}{}
		}
		return dup
	}
	w, b := id/64, uint64(1)<<(id%64)
	if w >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
	}
	dup = s.bits[w]&b != 0
	s.bits[w] |= b
	return dup
}

// lineOf is the line of the first job with id (jobs in file order).
func lineOf(jobs []Spec, id int) int {
	for i := range jobs {
		if jobs[i].ID == id {
			return jobs[i].Line
		}
	}
	return 0
}

// NoModel is the model of a job read from a trace without a model column
// (one with duration_s): it runs one iteration per second on a median GPU.
const NoModel = "-"

// openCSV reads the header of a workload input and finds its required
// columns. Names must match exactly, rows may be short (each reader says
// which field is missing), a record is known by the line it starts on,
// and problems are worded the way these readers always have; empty is
// the message for a file without a header. known is every column the
// format has; any other is an error.
func openCSV(name string, r io.Reader, want, known []string, empty string) (*csvin.Table, []int, error) {
	t, err := csvin.Open(name, r, csvin.Ragged(), csvin.RowLines(), csvin.InlineNames(), csvin.StripBOMs(), csvin.Known(known...), csvin.EmptyMsg(empty))
	if err != nil {
		return nil, nil, err
	}
	cols, err := t.Cols(want...)
	if err != nil {
		return nil, nil, err
	}
	return t, cols, nil
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
	var c TraceColumns
	for i := range jobs {
		c.Tracked = c.Tracked || !jobs[i].Tracked
		c.App = c.App || jobs[i].App != ""
		c.MaxGPUs = c.MaxGPUs || jobs[i].Elastic()
	}
	tw, err := NewTraceWriter(w, c)
	if err != nil {
		return err
	}
	for i := range jobs {
		if err := tw.Write(&jobs[i]); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// TraceColumns are the optional columns of a written trace.
type TraceColumns struct {
	// Seconds writes duration_s (seconds on a median GPU) and no model,
	// for jobs read without a model (NoModel); otherwise every job has a
	// model and duration counts its iterations.
	Seconds                             bool
	Tracked, App, VC, Priority, PodGPUs bool
	PinnedCell, LeafCellType            bool
	MaxGPUs                             bool // max_gpus (elastic jobs)
}

// columnsOf says which optional columns a trace's header has.
func columnsOf(t *csvin.Table) TraceColumns {
	return TraceColumns{
		Seconds: t.OptCol("duration_s") >= 0 && t.OptCol("model") < 0,
		Tracked: t.OptCol("tracked") >= 0, App: t.OptCol("app") >= 0,
		VC: t.OptCol("vc") >= 0, Priority: t.OptCol("priority") >= 0, PodGPUs: t.OptCol("pod_gpus") >= 0,
		PinnedCell: t.OptCol("pinned_cell") >= 0, LeafCellType: t.OptCol("leaf_cell_type") >= 0,
		MaxGPUs: t.OptCol("max_gpus") >= 0,
	}
}

// TraceWriter writes jobs in the PAL format one at a time, so a trace
// need not be held whole to be written.
type TraceWriter struct {
	cw  *csv.Writer
	c   TraceColumns
	rec []string
}

// NewTraceWriter writes the header of a trace with columns c.
func NewTraceWriter(w io.Writer, c TraceColumns) (*TraceWriter, error) {
	h := append([]string(nil), traceColumns...)
	if c.Seconds {
		h = append(h[:3], "duration_s")
	}
	for _, o := range []struct {
		on   bool
		name string
	}{{c.Tracked, "tracked"}, {c.App, "app"}, {c.VC, "vc"}, {c.Priority, "priority"}, {c.PodGPUs, "pod_gpus"},
		{c.PinnedCell, "pinned_cell"}, {c.LeafCellType, "leaf_cell_type"}, {c.MaxGPUs, "max_gpus"}} {
		if o.on {
			h = append(h, o.name)
		}
	}
	tw := &TraceWriter{cw: csv.NewWriter(w), c: c}
	return tw, tw.cw.Write(h)
}

// Write writes one job.
func (tw *TraceWriter) Write(j *Spec) error {
	if noModel := j.Model == NoModel; noModel != tw.c.Seconds {
		if noModel {
			return fmt.Errorf("job %d (%s:%d) has no model; only a trace with duration_s and no model column can hold it", j.ID, j.Source, j.Line)
		}
		return fmt.Errorf("job %d (%s:%d) has model %s, but the trace has no model column", j.ID, j.Source, j.Line, j.Model)
	}
	rec := append(tw.rec[:0], strconv.Itoa(j.ID), strconv.Itoa(j.GPUs), strconv.FormatFloat(j.Submit, 'f', -1, 64))
	if tw.c.Seconds {
		// A job without a model runs one iteration per second.
		rec = append(rec, strconv.FormatFloat(j.Iterations, 'f', -1, 64))
	} else {
		rec = append(rec, strconv.FormatFloat(j.Iterations, 'f', -1, 64), j.Model)
	}
	if tw.c.Tracked {
		t := "0"
		if j.Tracked {
			t = "1"
		}
		rec = append(rec, t)
	}
	if tw.c.App {
		rec = append(rec, j.App)
	}
	if tw.c.VC {
		rec = append(rec, j.VC)
	}
	if tw.c.Priority {
		rec = append(rec, strconv.Itoa(j.VCPriority))
	}
	if tw.c.PodGPUs {
		pod := ""
		if j.PodGPUs > 0 {
			pod = strconv.Itoa(j.PodGPUs)
		}
		rec = append(rec, pod)
	}
	if tw.c.PinnedCell {
		rec = append(rec, j.PinnedCell)
	}
	if tw.c.LeafCellType {
		rec = append(rec, j.LeafCellType)
	}
	if tw.c.MaxGPUs {
		rec = append(rec, strconv.Itoa(j.Most()))
	}
	tw.rec = rec
	return tw.cw.Write(rec)
}

// Flush writes out what is buffered and reports any write error.
func (tw *TraceWriter) Flush() error {
	tw.cw.Flush()
	return tw.cw.Error()
}
