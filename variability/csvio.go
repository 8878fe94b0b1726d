package variability

import (
	"io"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/internal/quote"
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

// MaxScore bounds a time-like score or slowdown from an input file: GPU
// scores, event scores and telemetry hints are on a scale where the median
// GPU is 1, so 1000 is a GPU a thousand times slower than the median, and
// MinScore (1/1000) one a thousand times faster. Nothing real is either;
// such a value is a typo or a crafted file, and accepted it would stretch
// a run to its horizon (or past what float64 holds) without naming the
// input that did it.
const (
	MaxScore = 1000
	MinScore = 1.0 / MaxScore
)

// CheckScore says whether v is a score or slowdown inside MinScore..
// MaxScore, in the words an input error uses ("" when it is).
func CheckScore(v float64) string {
	switch {
	case !(v > 0):
		return "must be positive"
	case v > MaxScore:
		return "is more than 1000 times the median GPU's 1 (a GPU that slow is a typo or a broken reading)"
	case v < MinScore:
		return "is less than 1/1000 of the median GPU's 1 (a GPU that fast is a typo or a broken reading)"
	}
	return ""
}

// score reads field col of t's row as a score or slowdown (CheckScore).
func score(t *csvin.Table, col int) (float64, error) {
	v, err := t.Positive(col)
	if err != nil {
		return 0, err
	}
	if msg := CheckScore(v); msg != "" {
		return 0, t.Errorf(col, "%s %s", quote.Value(t.Text(col)), msg)
	}
	return v, nil
}
