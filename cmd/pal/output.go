package main

import (
	"io"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/palsched/pal/internal/jsonround"
)

// DefaultOutput is the --output every results command starts with, so a
// user who learnt one command's default knows them all.
const DefaultOutput = "table"

// newTable is every command's terminal table: light box drawing and
// headers printed as written (lower case, units such as "µs" and "ρ"
// intact; go-pretty would upper-case them, turning "max ρ" into "MAX Ρ").
func newTable(w io.Writer) table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	style := table.StyleLight
	style.Format.Header = text.FormatDefault
	t.SetStyle(style)
	return t
}

// writeJSON is every command's JSON output: indented, numbers rounded
// by their keys (seconds to 0.01 s, other numbers to 6 significant
// digits) so that no float noise reaches a reader.
func writeJSON(w io.Writer, v any) error { return jsonround.Encode(w, v, "  ") }
