// Package csvin reads PAL's headed CSV inputs. It maps header names to
// column indexes, streams the rows, parses typed fields and reports every
// problem as an *Error that names the file, the line and the column, so
// that all input formats fail the same way and a user can open the file
// at the right line.
package csvin

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/palsched/pal/internal/quote"
)

// Error locates a problem in a CSV file. Line is 1-based and counts
// physical lines, so the header is line 1 and a quoted field spanning
// lines shifts later numbers exactly as an editor would.
type Error struct {
	File  string
	Line  int    // 0 when the problem is not tied to one line
	Field string // column name, empty when the whole row or file is at fault
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", quote.Value(e.Field))
	}
	b.WriteString(e.Msg)
	return b.String()
}

// An Option adapts Open to one input format.
type Option func(*config)

type config struct {
	known    []string
	comment  rune
	fold     bool
	ragged   bool
	rowLines bool
	inline   bool
	allBOMs  bool
	empty    string
	quiet    bool
}

// Known lists every column the format has, read or accepted and unused.
// Open then refuses a header with any other name (a typo such as
// "priorty" would otherwise be skipped and its values lost), naming the
// file, the column and the known columns, unless SetAllowExtraColumns
// lets unknown columns through. Without Known any column is accepted.
func Known(names ...string) Option { return func(o *config) { o.known = names } }

// extraColumns, when set, lets unknown columns through and is told of
// them; nil refuses them.
var extraColumns atomic.Pointer[func(msg string)]

// SetAllowExtraColumns is the escape hatch for Known: with warn non-nil,
// a header's unknown columns are ignored and warn gets one line per file
// naming them; with nil (the default) they are an error.
func SetAllowExtraColumns(warn func(msg string)) {
	if warn == nil {
		extraColumns.Store(nil)
		return
	}
	extraColumns.Store(&warn)
}

// Quiet leaves out the warning about unknown columns (SetAllowExtraColumns)
// for a file that is read again: its first reading gave it.
func Quiet() Option { return func(o *config) { o.quiet = true } }

// AllowExtraFlag is the command-line flag that calls SetAllowExtraColumns,
// named in the error so that a user knows the way out.
const AllowExtraFlag = "--allow-extra-columns"

// Comment makes lines that start with c comments.
func Comment(c rune) Option { return func(o *config) { o.comment = c } }

// FoldCase matches column names case-insensitively; by default a name
// must match the header exactly (after trimming spaces).
func FoldCase() Option { return func(o *config) { o.fold = true } }

// Ragged lets a row have more or fewer fields than the header. A field
// beyond the end of a short row is then reported by Field and the typed
// getters; by default such a row is a syntax error.
func Ragged() Option { return func(o *config) { o.ragged = true } }

// RowLines makes Errorf report the line a row starts on rather than the
// line of the field, for formats that identify a record by its first line.
func RowLines() Option { return func(o *config) { o.rowLines = true } }

// InlineNames words the problems Open, Cols and Next find themselves with
// the column in the message rather than in Error.Field, and with the
// column number of a syntax error:
//
//	f.csv:1: column "x" appears twice
//	f.csv:1: missing column "x" (header must include x,y)
//	f.csv:3: column 7: extraneous or missing " in quoted-field
//
// instead of the default
//
//	f.csv:1: field "x": column appears twice in the header
//	f.csv:1: field "x": missing column (header has a,b)
//	f.csv:3: extraneous or missing " in quoted-field
//
// The list a missing column's message gives is the names passed to Cols
// (or Col); header problems are placed on line 1.
func InlineNames() Option { return func(o *config) { o.inline = true } }

// StripBOMs drops a byte order mark from the start of every header name,
// not only the first, as the workload formats always have.
func StripBOMs() Option { return func(o *config) { o.allBOMs = true } }

// EmptyMsg is the message for a file without even a header line; the
// default is "empty file (no header)".
func EmptyMsg(msg string) Option { return func(o *config) { o.empty = msg } }

// Table streams a headed CSV file and hands out fields of its current row
// with errors that already carry file, line and column.
type Table struct {
	name string
	cfg  config
	r    *csv.Reader
	cols map[string]int // trimmed (and, with FoldCase, lower-cased) header name -> index
	head []string
	rec  []string
	err  error // what stopped Next

	knownDone bool // checkKnown has run
	lim       *capReader
}

// Open reads the header of r; name is the file name errors report. A
// UTF-8 byte order mark before the first name is dropped, names are
// trimmed, and empty names (such as pandas' unnamed index column) are
// never looked up. A name that appears twice is an error.
func Open(name string, r io.Reader, opts ...Option) (*Table, error) {
	t := &Table{name: name, cfg: config{empty: "empty file (no header)"}, cols: map[string]int{}}
	for _, o := range opts {
		o(&t.cfg)
	}
	t.lim = &capReader{r: r, line: 1, comment: byte(t.cfg.comment), atStart: true}
	if t.cfg.comment >= 0x80 {
		t.lim.comment = 0 // a multi-byte comment rune: quotes in comments are not tracked
	}
	cr := csv.NewReader(t.lim)
	cr.Comment = t.cfg.comment
	cr.ReuseRecord = true
	if t.cfg.ragged {
		cr.FieldsPerRecord = -1
	}
	t.r = cr
	head, err := cr.Read()
	if err == io.EOF {
		return nil, &Error{File: name, Msg: t.cfg.empty}
	}
	if err != nil {
		return nil, t.wrap(err)
	}
	t.head = append([]string(nil), head...)
	t.lim.head = t.head
	for i, h := range t.head {
		if i == 0 || t.cfg.allBOMs {
			t.head[i] = strings.TrimPrefix(h, "\ufeff")
		}
		h = strings.TrimSpace(t.head[i])
		k := t.key(h)
		if k == "" {
			continue
		}
		if _, dup := t.cols[k]; dup {
			if t.cfg.inline {
				return nil, &Error{File: name, Line: 1, Msg: fmt.Sprintf("column %s appears twice", quote.Value(h))}
			}
			line, _ := cr.FieldPos(i)
			return nil, &Error{File: name, Line: line, Field: h, Msg: "column appears twice in the header"}
		}
		t.cols[k] = i
	}
	return t, nil
}

// checkKnown refuses (or, with the escape hatch, reports) header names
// that are not in the Known list. It runs once, after the first Col or
// Cols that finds its columns (a missing column is the better message),
// or at the first Next.
func (t *Table) checkKnown() error {
	if t.cfg.known == nil || t.knownDone {
		return nil
	}
	t.knownDone = true
	known := make(map[string]bool, len(t.cfg.known))
	for _, n := range t.cfg.known {
		known[t.key(n)] = true
	}
	var unknown []string
	for i, h := range t.head {
		h = strings.TrimSpace(h)
		if k := t.key(h); k != "" && !known[k] {
			unknown = append(unknown, h)
			if len(unknown) == 1 && extraColumns.Load() == nil {
				list := strings.Join(t.cfg.known, ",")
				if t.cfg.inline {
					return &Error{File: t.name, Line: 1, Msg: fmt.Sprintf("unknown column %s (known columns: %s; %s ignores unknown columns)", quote.Value(h), list, AllowExtraFlag)}
				}
				line, _ := t.r.FieldPos(i)
				return &Error{File: t.name, Line: line, Field: h, Msg: fmt.Sprintf("unknown column (known columns: %s; %s ignores unknown columns)", list, AllowExtraFlag)}
			}
		}
	}
	if len(unknown) > 0 && !t.cfg.quiet {
		warn := *extraColumns.Load()
		warn(fmt.Sprintf("%s: ignoring unknown columns %s (known columns: %s)", t.name, headList(unknown), strings.Join(t.cfg.known, ",")))
	}
	return nil
}

func (t *Table) key(name string) string {
	if t.cfg.fold {
		return strings.ToLower(name)
	}
	return name
}

// wrap turns encoding/csv errors into Errors so every message has the
// same "file:line:" shape.
func (t *Table) wrap(err error) error {
	var tl *tooLong
	if errors.As(err, &tl) {
		e := &Error{File: t.name, Line: tl.line, Msg: tl.msg()}
		if tl.col >= 0 && tl.col < len(t.head) && t.head != nil {
			e.Field = strings.TrimSpace(t.head[tl.col])
		}
		return e
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if t.cfg.inline {
			return &Error{File: t.name, Line: pe.Line, Msg: fmt.Sprintf("column %d: %v", pe.Column, pe.Err)}
		}
		return &Error{File: t.name, Line: pe.Line, Msg: pe.Err.Error()}
	}
	return &Error{File: t.name, Msg: err.Error()}
}

// Col finds a required column by any of its names (the upstream files
// are not consistent about spelling); the error names the first.
func (t *Table) Col(names ...string) (int, error) {
	if i := t.OptCol(names...); i >= 0 {
		return i, t.checkKnown()
	}
	return -1, t.missing(names[0], names)
}

// Cols finds several required columns, one name each, in order; the
// first that is missing is the error.
func (t *Table) Cols(names ...string) ([]int, error) {
	idx := make([]int, len(names))
	for j, n := range names {
		if idx[j] = t.OptCol(n); idx[j] < 0 {
			return nil, t.missing(n, names)
		}
	}
	if err := t.checkKnown(); err != nil {
		return nil, err
	}
	return idx, nil
}

// OptCol is Col for a column that may be absent (-1).
func (t *Table) OptCol(names ...string) int {
	for _, n := range names {
		if i, ok := t.cols[t.key(n)]; ok {
			return i
		}
	}
	return -1
}

func (t *Table) missing(name string, want []string) error {
	if t.cfg.inline {
		return &Error{File: t.name, Line: 1, Msg: fmt.Sprintf("missing column %s (header must include %s)", quote.Value(name), strings.Join(want, ","))}
	}
	return &Error{File: t.name, Line: 1, Field: name, Msg: fmt.Sprintf("missing column (header has %s)", headList(t.head))}
}

// HeaderWidth is the number of fields in the header.
func (t *Table) HeaderWidth() int { return len(t.head) }

// FieldName is the header's name of column col, as the file spells it.
func (t *Table) FieldName(col int) string { return strings.TrimSpace(t.head[col]) }

// HeaderList is the header's names (as FieldName has them) for a
// message, as headList writes them (each long one cut, as many as fit
// about 400 bytes), so that a header of a megabyte makes a short message.
func (t *Table) HeaderList() string {
	names := make([]string, len(t.head))
	for i := range names {
		names[i] = t.FieldName(i)
	}
	return headList(names)
}

// Next advances to the next data row. It returns false at the end of the
// file or at a problem, which Err then reports. The row is only valid
// until the following call.
func (t *Table) Next() bool {
	if t.err != nil {
		return false
	}
	if err := t.checkKnown(); err != nil {
		t.err = err
		return false
	}
	rec, err := t.r.Read()
	if err != nil {
		if err != io.EOF {
			t.err = t.wrap(err)
		}
		return false
	}
	t.rec = rec
	return true
}

// Err is the problem that ended Next early, nil at the end of the file.
func (t *Table) Err() error { return t.err }

// Width is the number of fields in the current row.
func (t *Table) Width() int { return len(t.rec) }

// Line is the physical line the current row starts on.
func (t *Table) Line() int {
	l, _ := t.r.FieldPos(0)
	return l
}

// FieldLine is the physical line field col of the current row starts on
// (the row's line when the row has no such field).
func (t *Table) FieldLine(col int) int {
	if col < 0 || col >= len(t.rec) {
		col = 0
	}
	l, _ := t.r.FieldPos(col)
	return l
}

// Errorf reports a problem with field col of the current row, or with
// the whole row when col < 0.
func (t *Table) Errorf(col int, format string, a ...any) error {
	e := &Error{File: t.name, Msg: fmt.Sprintf(format, a...)}
	if col < 0 || t.cfg.rowLines {
		e.Line = t.Line()
	} else {
		e.Line = t.FieldLine(col)
	}
	if col >= 0 {
		e.Field = t.FieldName(col)
	}
	return e
}

// Has reports whether the current row has field col (false for col < 0).
func (t *Table) Has(col int) bool { return col >= 0 && col < len(t.rec) }

// Text is field col of the current row without surrounding spaces; ""
// when the row has no such field.
func (t *Table) Text(col int) string {
	if !t.Has(col) {
		return ""
	}
	return strings.TrimSpace(t.rec[col])
}

// Raw is field col of the current row as the file has it; "" when the
// row has no such field.
func (t *Table) Raw(col int) string {
	if !t.Has(col) {
		return ""
	}
	return t.rec[col]
}

// Field is Text for a field the row must have: with Ragged, a row too
// short to have it is an error.
func (t *Table) Field(col int) (string, error) {
	if !t.Has(col) {
		return "", t.Errorf(col, "missing (row has %d fields, header %d)", len(t.rec), len(t.head))
	}
	return strings.TrimSpace(t.rec[col]), nil
}

// Float parses a finite number.
func (t *Table) Float(col int) (float64, error) {
	s, err := t.Field(col)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, t.Errorf(col, "%s is out of range", quote.Value(s))
		}
		return 0, t.Errorf(col, "%s is not a number", quote.Value(s))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.Errorf(col, "%s is not a finite number", quote.Value(s))
	}
	return v, nil
}

// Positive parses a finite number > 0, for ratios and timings, where zero
// or a negative value would make every later division meaningless.
func (t *Table) Positive(col int) (float64, error) {
	v, err := t.Float(col)
	if err != nil {
		return 0, err
	}
	if v <= 0 {
		return 0, t.Errorf(col, "%s must be positive", quote.Value(t.Text(col)))
	}
	return v, nil
}

// Int parses a non-negative integer (ids and counts). pandas writes
// integer columns that once held NaN as "3.0", so an integral float is
// accepted too.
func (t *Table) Int(col int) (int, error) {
	s, err := t.Field(col)
	if err != nil {
		return 0, err
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, t.Errorf(col, "%s must not be negative", quote.Value(s))
		}
		return n, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != math.Trunc(v) || math.IsInf(v, 0) {
		return 0, t.Errorf(col, "%s is not an integer", quote.Value(s))
	}
	if v < 0 {
		return 0, t.Errorf(col, "%s must not be negative", quote.Value(s))
	}
	if v > math.MaxInt32 {
		return 0, t.Errorf(col, "%s is out of range", quote.Value(s))
	}
	return int(v), nil
}
