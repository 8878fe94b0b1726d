package variability

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// InputError locates a problem in a CSV file so that a user can open the
// file at the right line. Line is 1-based and counts physical lines, so the
// header is line 1 and a quoted field spanning lines shifts later numbers
// exactly as an editor would.
type InputError struct {
	File  string
	Line  int    // 0 when the problem is not tied to one line
	Field string // column name, empty when the whole row or file is at fault
	Msg   string
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// csvTable streams a headed CSV file and hands out typed fields with
// errors that already carry file, line and column. All input formats of
// this package go through it so they report problems the same way.
type csvTable struct {
	name string
	r    *csv.Reader
	cols map[string]int // lower-cased, trimmed header name -> index
	head []string
	rec  []string
	rows int
}

// openCSV reads the header. Lines starting with '#' are comments: the
// staged data never starts a line with '#', and hand-written inputs (the
// classifier's example table) need somewhere to say where numbers came from.
func openCSV(name string, r io.Reader) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.ReuseRecord = true
	t := &csvTable{name: name, r: cr, cols: map[string]int{}}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, &InputError{File: name, Msg: "empty file (no header)"}
	}
	if err != nil {
		return nil, t.wrap(err)
	}
	t.head = append([]string(nil), head...)
	for i, h := range t.head {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
			t.head[0] = h
		}
		k := strings.ToLower(strings.TrimSpace(h))
		if k == "" {
			continue // pandas' unnamed index column
		}
		if _, dup := t.cols[k]; dup {
			line, _ := cr.FieldPos(i)
			return nil, &InputError{File: name, Line: line, Field: strings.TrimSpace(h), Msg: "column appears twice in the header"}
		}
		t.cols[k] = i
	}
	return t, nil
}

// wrap turns encoding/csv errors into InputErrors so every message has the
// same "file:line:" shape.
func (t *csvTable) wrap(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &InputError{File: t.name, Line: pe.Line, Msg: pe.Err.Error()}
	}
	return &InputError{File: t.name, Msg: err.Error()}
}

// col finds a required column; names are matched case-insensitively
// because the upstream files are not consistent about capitalisation.
func (t *csvTable) col(names ...string) (int, error) {
	for _, n := range names {
		if i, ok := t.cols[strings.ToLower(n)]; ok {
			return i, nil
		}
	}
	return -1, &InputError{File: t.name, Line: 1, Field: names[0], Msg: fmt.Sprintf("missing column (header has %s)", strings.Join(t.head, ","))}
}

// optCol is col for columns that may be absent (-1).
func (t *csvTable) optCol(names ...string) int {
	i, _ := t.col(names...)
	return i
}

// next advances to the next data row; it returns false at the end of the
// file. The record is only valid until the following call.
func (t *csvTable) next() (bool, error) {
	rec, err := t.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, t.wrap(err)
	}
	t.rec = rec
	t.rows++
	return true, nil
}

// line is the physical line of field i of the current record.
func (t *csvTable) line(i int) int {
	if i < 0 || i >= len(t.rec) {
		i = 0
	}
	l, _ := t.r.FieldPos(i)
	return l
}

func (t *csvTable) fieldName(i int) string { return strings.TrimSpace(t.head[i]) }

func (t *csvTable) errAt(i int, format string, a ...any) error {
	return &InputError{File: t.name, Line: t.line(i), Field: t.fieldName(i), Msg: fmt.Sprintf(format, a...)}
}

func (t *csvTable) str(i int) string { return strings.TrimSpace(t.rec[i]) }

// float parses a finite number.
func (t *csvTable) float(i int) (float64, error) {
	s := t.str(i)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, t.errAt(i, "%q is out of range", s)
		}
		return 0, t.errAt(i, "%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.errAt(i, "%q is not a finite number", s)
	}
	return v, nil
}

// positive parses a finite number > 0: PM values and timings are ratios,
// and zero or negative ones would make every later division meaningless.
func (t *csvTable) positive(i int) (float64, error) {
	v, err := t.float(i)
	if err != nil {
		return 0, err
	}
	if v <= 0 {
		return 0, t.errAt(i, "%q must be positive", t.str(i))
	}
	return v, nil
}

// integer parses a non-negative integer; pandas writes integer columns
// that once held NaN as "3.0", so an integral float is accepted too.
func (t *csvTable) integer(i int) (int, error) {
	s := t.str(i)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, t.errAt(i, "%q must not be negative", s)
		}
		return n, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != math.Trunc(v) || math.IsInf(v, 0) {
		return 0, t.errAt(i, "%q is not an integer", s)
	}
	if v < 0 {
		return 0, t.errAt(i, "%q must not be negative", s)
	}
	if v > math.MaxInt32 {
		return 0, t.errAt(i, "%q is out of range", s)
	}
	return int(v), nil
}
