package variability

import (
	"io"

	"github.com/palsched/pal/internal/csvin"
)

// InputError locates a problem in a CSV file so that a user can open the
// file at the right line. Line is 1-based and counts physical lines, so the
// header is line 1 and a quoted field spanning lines shifts later numbers
// exactly as an editor would.
type InputError = csvin.Error

// openCSV reads the header of one of this package's inputs. Lines
// starting with '#' are comments: the staged data never starts a line with
// '#', and hand-written inputs (the classifier's example table) need
// somewhere to say where numbers came from. Column names are matched
// case-insensitively because the upstream files are not consistent about
// capitalisation. known lists every column of the format (any other is
// an error); nil accepts any column.
func openCSV(name string, r io.Reader, known []string) (*csvin.Table, error) {
	opts := []csvin.Option{csvin.Comment('#'), csvin.FoldCase()}
	if known != nil {
		opts = append(opts, csvin.Known(known...))
	}
	return csvin.Open(name, r, opts...)
}
