package csvin

import (
	"fmt"
	"io"
	"strconv"

	"github.com/palsched/pal/internal/quote"
)

// MaxLine is the longest line, and the longest row, a file may have
// (1 MiB). PAL's rows are tens of bytes; a longer one is a file that is
// not what it claims to be, and refusing it at the limit keeps a reader's
// memory bounded by it instead of by the file (encoding/csv holds a
// whole line, and a whole quoted field, before it returns anything).
const MaxLine = 1 << 20

// tooLong is the capReader's refusal, turned into an Error by wrap.
type tooLong struct {
	line int // where the line or row starts
	col  int // field index in the row (-1 unknown)
	row  bool
}

func (e *tooLong) Error() string { return e.msg() }

func (e *tooLong) msg() string {
	if e.row {
		return fmt.Sprintf("row longer than %s (a quoted field left open?); no input row is that long", sizeName(MaxLine))
	}
	return fmt.Sprintf("line longer than %s; no input line is that long", sizeName(MaxLine))
}

func sizeName(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// capReader passes a CSV file through while counting its lines and rows,
// and fails once a line or a row (several lines when a quoted field
// holds newlines) passes MaxLine. It follows the quoting itself (a quote
// toggles being inside a quoted field; a doubled quote toggles twice), so
// it knows where rows end without waiting for encoding/csv, which reads
// ahead of the rows it has returned. Comment lines (the comment byte at
// the start of a row) do not toggle quotes.
type capReader struct {
	r       io.Reader
	comment byte // 0: none
	head    []string

	line    int   // current physical line, 1-based
	lineLen int   // bytes of the current line so far
	rowLen  int   // bytes of the current row so far
	rowLine int   // line the current row starts on
	col     int   // field index inside the current row
	inQuote bool  // inside a quoted field
	inCmt   bool  // inside a comment line
	atStart bool  // at the start of a row
	err     error // sticky refusal
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	for _, b := range p[:n] {
		if c.atStart {
			c.atStart, c.rowLen, c.rowLine, c.col = false, 0, c.line, 0
			c.inCmt = c.comment != 0 && b == c.comment
		}
		c.rowLen++
		c.lineLen++
		switch {
		case b == '\n':
			c.line++
			c.lineLen = 0
			if !c.inQuote {
				c.atStart = true
			}
			continue
		case c.inCmt:
		case b == '"':
			c.inQuote = !c.inQuote
		case b == ',' && !c.inQuote:
			c.col++
		}
		if c.lineLen > MaxLine {
			c.err = &tooLong{line: c.line, col: c.fieldCol()}
		} else if c.rowLen > MaxLine {
			c.err = &tooLong{line: c.rowLine, col: c.fieldCol(), row: true}
		}
		if c.err != nil {
			return 0, c.err // and on every later call
		}
	}
	return n, err
}

func (c *capReader) fieldCol() int {
	if c.inCmt || c.head == nil {
		return -1
	}
	return c.col
}

// headList is a file's header names for a message: joined by commas,
// each quoted (as quote.Value does, cut) when it is long or holds a byte
// a terminal would act on or that is not UTF-8, and no more of them than
// fit about 400 bytes (at most 20), so that a header of a megabyte, or
// of a thousand names, makes a line.
func headList(names []string) string {
	const most, budget = 20, 400
	var b []byte
	for i, n := range names {
		if i == most || len(b) > budget {
			b = fmt.Appendf(b, ",... (%d columns)", len(names))
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		if q := quote.Value(n); len(n) > quote.Show || q[1:len(q)-1] != n {
			n = q
		}
		b = append(b, n...)
	}
	return string(b)
}
