// Package report turns experiment results into things people read: text,
// CSV and Markdown tables, and charts as specs that report/draw draws as
// PNG/SVG figures (report/page writes the self-contained HTML index).
// It knows nothing about schedulers or policies; callers hand it names and
// numbers, so every experiment lays out its results the same way.
package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// DefaultPrec is the digits after the point a table shows for floats when
// Prec is 0: enough for normalised JCTs (0.873) without drowning seconds.
const DefaultPrec = 3

// Table is a titled grid of cells. A cell may be a string, any integer or
// float type, a fmt.Stringer, or anything fmt.Sprint can print; numbers
// stay numbers so that CSV keeps full precision and numeric columns are
// right-aligned.
type Table struct {
	Title   string
	Headers []string
	Rows    [][]any
	// Prec is the digits after the point for floats in text, Markdown and
	// HTML: 0 means DefaultPrec, negative means the shortest exact form.
	// CSV always writes the shortest exact form.
	Prec int
	// colPrec overrides Prec per column (SetPrec), so that seconds,
	// percentages and ratios each show the digits their unit warrants.
	colPrec map[int]int
}

// SetPrec sets the digits after the point for floats in the column
// headed header (negative: the shortest exact form), overriding Prec.
// An unknown header panics: it is a programming error.
func (t *Table) SetPrec(header string, digits int) *Table {
	for j, h := range t.Headers {
		if h == header {
			if t.colPrec == nil {
				t.colPrec = map[int]int{}
			}
			t.colPrec[j] = digits
			return t
		}
	}
	panic("report: SetPrec: no column " + header)
}

// NewTable starts a table with the given column headers.
func NewTable(title string, headers ...string) *Table {
	return &Table{Title: title, Headers: headers}
}

// AddRow appends a row and returns the table, so rows can be chained.
func (t *Table) AddRow(cells ...any) *Table {
	t.Rows = append(t.Rows, cells)
	return t
}

// Cells is every row formatted for display, padded to the header width
// so that a short row renders as empty cells rather than vanishing.
func (t *Table) Cells() [][]string {
	out := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = t.formatRow(r, t.Prec)
	}
	return out
}

// NumericColumns reports which columns hold only numbers (ignoring empty
// cells), the ones to align right.
func (t *Table) NumericColumns() []bool {
	n := t.width()
	num := make([]bool, n)
	seen := make([]bool, n)
	for i := range num {
		num[i] = true
	}
	for _, r := range t.Rows {
		for j, c := range r {
			if c == nil || c == "" {
				continue
			}
			seen[j] = true
			if !isNumber(c) {
				num[j] = false
			}
		}
	}
	for j := range num {
		num[j] = num[j] && seen[j]
	}
	return num
}

func (t *Table) width() int {
	n := len(t.Headers)
	for _, r := range t.Rows {
		n = max(n, len(r))
	}
	return n
}

func (t *Table) formatRow(r []any, prec int) []string {
	s := make([]string, t.width())
	for j, c := range r {
		d, ok := t.colPrec[j]
		switch {
		case !ok || prec < 0: // CSV keeps the shortest exact form
			s[j] = formatCell(c, prec)
		case d == 0 && isFloat(c):
			s[j] = formatWhole(toFloat(c))
		default:
			s[j] = formatCell(c, d)
		}
	}
	return s
}

func isFloat(c any) bool {
	switch c.(type) {
	case float64, float32:
		return true
	}
	return false
}

func toFloat(c any) float64 {
	if f, ok := c.(float32); ok {
		return float64(f)
	}
	return c.(float64)
}

func isNumber(c any) bool {
	switch c.(type) {
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

func formatCell(c any, prec int) string {
	switch v := c.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return formatFloat(v, prec, 64)
	case float32:
		return formatFloat(float64(v), prec, 32)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(c)
}

// formatWhole is a float with no digits after the point.
func formatWhole(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return formatFloat(v, 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// formatFloat keeps bits so that a float32 0.1 prints as 0.1, not as
// the float64 it widens to.
func formatFloat(v float64, prec, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case prec == 0:
		prec = DefaultPrec
	case prec < 0:
		return strconv.FormatFloat(v, 'f', -1, bits)
	}
	return strconv.FormatFloat(v, 'f', prec, bits)
}

func (t *Table) writer() table.Writer {
	w := table.NewWriter()
	style := table.StyleLight
	style.Format.Header = text.FormatDefault // keep headers as written
	style.Format.HeaderAlign = text.AlignDefault
	w.SetStyle(style)
	w.AppendHeader(stringsRow(padTo(t.Headers, t.width())))
	for _, r := range t.Cells() {
		w.AppendRow(stringsRow(r))
	}
	var cfg []table.ColumnConfig
	for j, num := range t.NumericColumns() {
		if num {
			cfg = append(cfg, table.ColumnConfig{Number: j + 1, Align: text.AlignRight, AlignHeader: text.AlignRight})
		}
	}
	w.SetColumnConfigs(cfg)
	return w
}

func padTo(s []string, n int) []string {
	out := make([]string, n)
	copy(out, s)
	return out
}

func stringsRow(s []string) table.Row {
	r := make(table.Row, len(s))
	for i, v := range s {
		r[i] = v
	}
	return r
}

// WriteText writes the title, if any, and a box-drawn aligned table for a
// terminal or a log.
func (t *Table) WriteText(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	b.WriteString(t.writer().Render())
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// String is the text rendering.
func (t *Table) String() string {
	var b strings.Builder
	_ = t.WriteText(&b)
	return b.String()
}

// WriteMarkdown writes a GitHub-style pipe table, headed by the title as
// a level-4 heading when there is one.
func (t *Table) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		b.WriteString("#### " + t.Title + "\n\n")
	}
	b.WriteString(t.writer().RenderMarkdown())
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes the header and rows with floats in their shortest exact
// form, so that the CSV, not the rounded display, is what later analysis
// reads. The title is not written: a CSV has nowhere to put it.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(padTo(t.Headers, t.width())); err != nil {
		return err
	}
	for _, r := range t.Rows {
		if err := cw.Write(t.formatRow(r, -1)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
