package variability

import (
	"io"

	"github.com/palsched/pal/internal/quote"
)

// ReadAppClasses reads an application-to-class table: a CSV with columns
// app and class, as pal classify -o csv writes it (its other columns are
// ignored; '#' lines are comments).
func ReadAppClasses(name string, r io.Reader) (map[string]Class, error) {
	t, err := openCSV(name, r, []string{"app", "dram_util", "fu_util", "class"})
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("app", "class")
	if err != nil {
		return nil, err
	}
	out := map[string]Class{}
	line := map[string]int{}
	for t.Next() {
		app := t.Text(cols[0])
		if app == "" {
			return nil, t.Errorf(cols[0], "empty")
		}
		if prev, dup := line[app]; dup {
			return nil, t.Errorf(cols[0], "%s repeats line %d", quote.Value(app), prev)
		}
		c, err := ParseClass(t.Text(cols[1]))
		if err != nil {
			return nil, t.Errorf(cols[1], "%v", err)
		}
		out[app], line[app] = c, t.FieldLine(cols[0])
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	return out, nil
}
